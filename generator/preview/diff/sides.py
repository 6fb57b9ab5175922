"""Reading the sides of a diff (a spec file or ``GIT_REF:path``) and turning each into a mock resource graph.

Each side is loaded, checked, planned and rendered by *this* trainstack, and the rendered program is run under
Pulumi's mock runtime (:mod:`generator.preview.mockrun`); :func:`diff_sides` then compares the two graphs and
prices the two plans (:mod:`generator.preview.diff.cost`; an empty BASE costs 0).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from generator.preview.diff.classify import paused
from generator.preview.diff.compare import diff_graphs
from generator.preview.diff.cost import cost_delta
from generator.preview.diff.model import NODE_TYPES, DiffError, DiffResult, SideInfo

if TYPE_CHECKING:  # mockrun imports pulumi lazily; only its types are needed here
    from generator.catalog import Catalog
    from generator.plan.model import Plan
    from generator.preview.mockrun import Graph


@dataclass(frozen=True, slots=True)
class Side:
    """One side's spec text and how to name it: ``examples/x.yaml`` or ``origin/main:examples/x.yaml``."""

    label: str  # used in FILE:LINE messages
    text: str
    path: str  # the spec path recorded in the rendered files


EMPTY_SIDES = ("-", "/dev/null")  # BASE for a spec that does not exist yet (as in `git diff /dev/null file`)


def read_side(arg: str, cwd: str | Path | None = None) -> Side:
    """A spec file path, or ``GIT_REF:path`` read from git (the path relative to ``cwd`` or to the repository)."""
    from generator.render.stackdir import spec_record
    from generator.spec import loader

    local = Path(arg) if cwd is None else Path(cwd) / arg
    if local.exists() or ":" not in arg or re.match(r"^[A-Za-z]:[\\/]", arg):
        return Side(str(arg), loader.read_text(local), spec_record(local))
    cwd = Path(cwd) if cwd is not None else Path.cwd()
    ref, path = arg.split(":", 1)
    if not ref or not path:
        raise DiffError(
            f"'{arg}' is neither a spec file nor GIT_REF:path (e.g. origin/main:examples/pretrain-70b.yaml)"
        )
    return _read_git(ref, path, cwd)


def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=60, env=env, check=False)
    except FileNotFoundError:
        raise DiffError("git is not installed; it is needed to read GIT_REF:path sides") from None
    except subprocess.TimeoutExpired:
        raise DiffError(f"git {' '.join(args)} did not finish within 60 s") from None


def _read_git(ref: str, path: str, cwd: Path) -> Side:
    from generator.spec import loader

    what = f"{ref}:{path}"
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise DiffError(f"cannot read {what}: {cwd} is not inside a git repository")
    root = Path(top.stdout.decode().strip()).resolve()
    if _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd).returncode != 0:
        raise DiffError(
            f"cannot read {what}: git does not know the revision '{ref}' (a CI checkout may need "
            f"the base branch fetched, e.g. 'git fetch origin main' or fetch-depth: 0)"
        )
    candidates: list[str] = []
    relative = os.path.relpath(os.path.normpath(cwd.resolve() / path), root).replace(os.sep, "/")
    if not relative.startswith("../"):
        candidates.append(relative)  # relative to the working folder, like the other side's file path
    rooted = os.path.normpath(path).replace(os.sep, "/").lstrip("/")
    if rooted not in candidates and not rooted.startswith("../"):
        candidates.append(rooted)  # relative to the repository root, as `git show` reads it
    for candidate in candidates:
        kind = _git(["cat-file", "-t", f"{ref}:{candidate}"], cwd)
        if kind.returncode != 0:
            continue
        if kind.stdout.decode().strip() != "blob":
            raise DiffError(f"cannot read {what}: '{candidate}' is a folder in {ref}, not a spec file")
        _check_blob(ref, candidate, what, cwd)
        shown = _git(["show", f"{ref}:{candidate}"], cwd)
        if shown.returncode != 0:
            raise DiffError(f"cannot read {what}: {shown.stderr.decode(errors='replace').strip()}")
        label = f"{ref}:{candidate}"
        return Side(label, loader.decode(shown.stdout, label), candidate)
    raise DiffError(f"cannot read {what}: '{path}' does not exist in {ref}")


def _check_blob(ref: str, candidate: str, what: str, cwd: Path) -> None:
    """A committed spec is read like a file on disk: a symbolic link is refused (its target is not read) and a blob
    over the spec size limit is refused before ``git show`` reads it (docs/spec.md, "Limits")."""
    from generator.spec.source import MAX_SPEC_BYTES

    listed = _git(["ls-tree", "-z", ref, "--", candidate], cwd)
    mode = listed.stdout.decode(errors="replace").split(" ", 1)[0] if listed.returncode == 0 else ""
    if mode == "120000":
        raise DiffError(
            f"cannot read {what}: it is a symbolic link in {ref}; trainstack reads specs from regular "
            "files only"
        )
    size = _git(["cat-file", "-s", f"{ref}:{candidate}"], cwd)
    if size.returncode == 0 and int(size.stdout.decode().strip() or 0) > MAX_SPEC_BYTES:
        raise DiffError(
            f"cannot read {what}: it holds more than {MAX_SPEC_BYTES:,} bytes (1 MiB), the most a spec "
            "may hold"
        )


@dataclass(frozen=True)
class _Planned:
    """A side checked, planned and rendered to files, ready to run (the slow part); or, when its inputs were seen
    before (:mod:`generator.preview.side_cache`), its stored plan and graph, and nothing to run."""

    side: Side
    plan: Plan
    files: Mapping[str, str] | None  # None: answered from the side cache
    key: str | None = None  # the side cache's key (None: not cached)
    graph: Graph | None = None  # the stored graph of a side cache hit


def _plan_side(side: Side, catalog: Catalog) -> _Planned:
    """Load, check, plan and render one side; a bad spec raises SpecErrors with the side's label as FILE. A side
    the side cache holds is answered from it: no loading, planning, rendering or Pulumi import."""
    from generator.plan import pipeline
    from generator.preview import side_cache
    from generator.render import files
    from generator.spec import loader

    key = side_cache.key(side.text, side.path, catalog)
    stored = side_cache.load(key) if key is not None else None
    if stored is not None:
        return _Planned(side, stored[0], None, key, stored[1])
    located = pipeline.checked(loader.load_text(side.text, file=side.label), catalog)
    plan = pipeline.plan_located(located, catalog)
    return _Planned(side, plan, files.render(plan, side.path), key)


def _run_side(planned: _Planned) -> tuple[Graph, SideInfo]:
    """Run the rendered program under the mock runtime (:func:`generator.preview.cache.run_files`) and record the
    side in the side cache; a side answered from that cache is not run."""
    from generator.preview import cache, side_cache

    plan = planned.plan
    if planned.graph is not None:
        graph = planned.graph
    else:
        assert planned.files is not None
        graph, _ = cache.run_files(planned.files, project=plan.name, stack=plan.stack, region=plan.region)
        graph_key = cache.last_key()
        if planned.key is not None and graph_key is not None:
            side_cache.store(planned.key, plan, graph_key)
    return graph, SideInfo(planned.side.label, plan.name, plan.stack, plan.region, len(graph.resources))


def render_side(side: Side, catalog: Catalog | None = None) -> tuple[Graph, SideInfo]:
    """Load, check, plan and render one side, then run its program under the mock runtime."""
    from generator.catalog import load_catalog

    return _run_side(_plan_side(side, catalog or load_catalog()))


def diff_sides(
    base: str, head: str, *, cwd: str | Path | None = None, catalog: Catalog | None = None
) -> DiffResult:
    """Diff two sides given as spec paths or ``GIT_REF:path``.

    Both sides are read first (a bad ref fails fast), then both specs are checked and planned (a bad spec
    fails before anything slow), then both programs run; identical spec texts run once. A spec error raises
    :class:`~generator.errors.SpecErrors` with FILE:LINE, the FILE naming the side
    (``origin/main:examples/x.yaml:12:3: ...``).
    """
    from generator.catalog import load_catalog

    catalog = catalog or load_catalog()
    if base in EMPTY_SIDES and head in EMPTY_SIDES:
        raise DiffError("BASE and HEAD cannot both be empty")
    if head in EMPTY_SIDES or _deleted(base, head, cwd):  # the spec is gone: its stack's deletion
        from generator.preview.mockrun import Graph

        gone = _plan_side(read_side(base, cwd), catalog)
        gone_graph, gone_info = _run_side(gone)
        result = diff_graphs(
            gone_graph, Graph(), base_info=gone_info, head_info=SideInfo(label=f"{head} (deleted)")
        )
        return _finish(result, gone.plan, None, catalog)
    if base in EMPTY_SIDES:  # a spec new in this change: everything it declares is created (and costs from 0)
        head_planned = _plan_side(read_side(head, cwd), catalog)
        head_graph, head_info = _run_side(head_planned)
        from generator.preview.mockrun import Graph

        result = diff_graphs(Graph(), head_graph, base_info=SideInfo(label="(none)"), head_info=head_info)
        return _finish(result, None, head_planned.plan, catalog)
    base_side, head_side = read_side(base, cwd), read_side(head, cwd)
    head_planned = _plan_side(head_side, catalog)
    base_planned = _plan_side(base_side, catalog) if base_side.text != head_side.text else None
    # BASE runs first: HEAD's run then registers only what changed and reuses the rest from BASE's graph
    # (generator/preview/memo.py), whose result is byte for byte a full run's
    base_run = _run_side(base_planned) if base_planned is not None else None
    head_graph, head_info = _run_side(head_planned)
    if base_run is None:  # the spec path only appears in comments of the rendered files
        base_graph, base_info = (
            head_graph,
            SideInfo(
                base_side.label, head_info.project, head_info.stack, head_info.region, head_info.resources
            ),
        )
    else:
        base_graph, base_info = base_run
    result = diff_graphs(base_graph, head_graph, base_info=base_info, head_info=head_info)
    return _finish(result, (base_planned or head_planned).plan, head_planned.plan, catalog)


def _deleted(base: str, head: str, cwd: str | Path | None) -> bool:
    """``trainstack diff REF:path path`` where the working file is gone: the pull request deletes the spec."""
    local = Path(head) if cwd is None else Path(cwd) / head
    if local.exists() or ":" not in base or base in EMPTY_SIDES:
        return False
    return os.path.normpath(base.split(":", 1)[1]) == os.path.normpath(head)


def _finish(result: DiffResult, base: Plan | None, head: Plan | None, catalog: Catalog) -> DiffResult:
    """Price both plans, say what changed in spec terms and draw the change (:mod:`~generator.preview.diff.picture`)."""
    from generator.preview.diff.picture import diagram
    from generator.preview.diff.summary import what_changed

    cost = cost_delta(base, head, catalog)
    what = what_changed(base, head, result, cost)
    if what.kind == "pause":  # a released node comes back on resume: say so instead of "loses a rank"
        result = replace(
            result,
            changes=tuple(
                paused(c) if c.action == "delete" and c.type in NODE_TYPES else c for c in result.changes
            ),
        )
    return replace(result, cost=cost, what=what, picture=diagram(base, head, result, what))
