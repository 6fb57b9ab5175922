"""The live preview: what ``trainstack preview --live`` prints for a SPEC or STACK_DIR, against the real stack
state, with the digest to deploy exactly what was previewed."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from generator.live.checks import preflight
from generator.live.engine import Engine, Target
from generator.live.mountaddr import needs_mount_address
from generator.live.progress import ProgressPrinter
from generator.live.pulumi_engine import PulumiEngine
from generator.live.redaction import display_backend, redact
from generator.live.target import (
    check_fresh,
    default_backend,
    planned_target,
    stack_digest,
    stale_files,
    target_for,
)
from generator.plan import pipeline
from generator.render import files as stack_files
from generator.render import stackdir


def live_preview(
    target: str | Path,
    backend: str | None = None,
    engine: Engine | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Preview SPEC or STACK_DIR against the real stack state; the text ``trainstack preview --live`` prints.

    A folder is previewed as it is. A spec is previewed as it renders now: from its stack folder when that is
    fresh, otherwise from a temporary render that uses the folder's state backend (and venv, if any), so the
    preview diffs against what is really deployed without touching the folder.
    """
    engine = engine or PulumiEngine()
    env = os.environ if env is None else env
    p = Path(target)
    notes: list[str] = []
    if p.is_dir():
        t = target_for(p, backend, env)
        preflight(t, env=env)
        fresh = check_fresh(p)
        if fresh.stale:
            notes.append(
                f"warning: the folder is stale against its spec ({', '.join(fresh.stale)} differ); "
                "`trainstack up` will refuse it until it is re-rendered"
            )
        return _preview_text(engine, t, notes)
    t = planned_target(p, backend, env)
    preflight(t, env=env)
    the_plan = pipeline.plan_file(p)
    files: Mapping[str, str] = dict(stack_files.render(the_plan, stackdir.spec_record(p)))
    if stackdir.is_stack_dir(t.stack_dir) and not stale_files(files, t.stack_dir, t.stack):
        return _preview_text(engine, target_for(t.stack_dir, backend, env), notes)
    try:  # preview with the config the folder has (salt, `pulumi config set` values), as `up` would deploy it
        files = stackdir.keep_stack_config(files, t.stack_dir, t.stack)
    except stackdir.ConfigNotCarried:
        pass  # `up` will refuse this folder until re-rendered; preview the render as it is
    deployed_here = stackdir.is_stack_dir(t.stack_dir)
    notes.append(
        f"previewing {p} as it renders now ({t.stack_dir} is {'stale' if deployed_here else 'missing'}; "
        f"`trainstack up {p}` re-renders it)"
    )
    with tempfile.TemporaryDirectory(prefix="trainstack-live-") as tmp:
        work = Path(tmp) / t.stack_dir.name
        stackdir.write(files, work, durable=False)
        venv = t.stack_dir / "venv"
        if venv.is_dir():
            (work / "venv").symlink_to(venv.resolve(), target_is_directory=True)
        if not deployed_here and not (backend or env.get("TRAINSTACK_BACKEND")):
            t = replace(
                t, backend=default_backend(work)
            )  # nothing deployed from a folder that does not exist
        return _preview_text(engine, replace(t, stack_dir=work), notes, folder=t.stack_dir)


def _preview_text(engine: Engine, t: Target, notes: list[str], folder: Path | None = None) -> str:
    """The preview report; ``folder`` is the stack folder to name when ``t`` is a temporary render of it."""
    digest = stack_digest(t.stack_dir, t.stack)
    said: list[str] = []  # warnings the engine reported, in the progress printer's format
    printer = ProgressPrinter(lambda line, err: said.append(line))
    summary = engine.preview(t, lambda ev: printer(ev) if ev.kind == "diagnostic" else None)
    if needs_mount_address(t):
        notes = [
            *notes,
            (
                "CPFS: these are the changes of the first pass; `trainstack up` then looks up the export's "
                "mount address, sets trainstack:sharedFsAddress and deploys the nodes in a second pass"
            ),
        ]
    lines = [
        f"Live preview of {t.project} (stack {t.stack}), state in {display_backend(t.backend)}",
        *notes,
        *said,
        summary.text().rstrip("\n"),
        f"stack digest: {digest}",
        f"spec digest:  {t.spec_digest}",
        f"to deploy exactly this: trainstack up {folder or t.stack_dir} --expect-digest {digest}",
    ]
    return redact("\n".join(lines) + "\n")
