"""Stack-folder targets: which folder, project, stack and backend a SPEC or STACK_DIR argument means, the stack
digest, freshness against the spec, and the preparation of a deploy (``prepare_up``, ``--expect-digest``).

``up`` deploys a stack folder only if it still is what its spec renders (:func:`stale_files`), and
``--expect-digest`` pins a deploy to the exact folder a reviewer saw (:func:`stack_digest`). By default the Pulumi
state lives next to the program, in ``<stack>/.trainstack/state`` (a ``file://`` backend).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.live.engine import DEFAULT_SECRETS_PROVIDER, Target
from generator.live.errors import BadTarget, DigestMismatch, StackNotDeployed, StaleStack
from generator.plan import pipeline
from generator.render import files as stack_files
from generator.render import stackdir
from generator.render.files import MARKER
from generator.render.stackdir import load_yaml as _load_yaml

STATE_DIR = f"{MARKER}/state"  # relative to the stack folder; ignored by render and by the stack's .gitignore
PULUMI_BOOKKEEPING_KEYS = (
    "encryptionsalt",
    "secretsprovider",
    "encryptedkey",
)  # Pulumi writes these, not render


def _read_plan_json(stack_dir: Path) -> dict[str, Any]:
    """plan.json, once :func:`stackdir.stack_identity` (the one home of "which stack is this folder") accepts it."""
    _identity(stack_dir)
    return json.loads((stack_dir / "plan.json").read_text(encoding="utf-8"))


def _identity(stack_dir: Path) -> stackdir.StackIdentity:
    try:
        return stackdir.stack_identity(stack_dir)
    except stackdir.StackDirError as e:
        raise BadTarget(str(e)) from None


def default_backend(stack_dir: Path) -> str:
    """``file://`` state inside the stack folder: zero setup, and it travels with the folder it describes."""
    return "file://" + (stack_dir.resolve() / STATE_DIR).as_posix()


def check_backend(url: str) -> str:
    if url.startswith("oss://"):
        raise BadTarget(
            "Pulumi has no oss:// backend; OSS speaks S3, so use "
            "s3://BUCKET?endpoint=oss-REGION.aliyuncs.com&region=REGION with AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY set to an Alibaba Cloud AccessKey (see docs/live.md)."
        )
    if "://" not in url:
        raise BadTarget(
            f"backend {url!r} is not a URL: use file:///path, s3://bucket?..., https://api.pulumi.com, ..."
        )
    return url


def target_for(
    stack_dir: str | Path, backend: str | None = None, env: Mapping[str, str] | None = None
) -> Target:
    """The engine target for a rendered stack folder (names from plan.json; backend from flag, env or default)."""
    env = os.environ if env is None else env
    stack_dir = Path(stack_dir)
    stackdir.settle(stack_dir)
    if not stackdir.is_stack_dir(stack_dir):
        raise BadTarget(
            f"{stack_dir} is not a stack folder rendered by trainstack (no __main__.py and {MARKER}/)."
        )
    identity = _identity(stack_dir)
    data = _read_plan_json(stack_dir)
    url = check_backend(backend or env.get("TRAINSTACK_BACKEND") or default_backend(stack_dir))
    return Target(
        stack_dir=stack_dir,
        project=identity.project,
        stack=identity.stack,
        backend=url,
        secrets_provider=env.get("TRAINSTACK_SECRETS_PROVIDER") or DEFAULT_SECRETS_PROVIDER,
        spec_digest=str(data.get("spec_digest", "")),
        shared_fs=_shared_fs(data),
        platform=_platform(data),
    )


def _platform(plan_data: Mapping[str, Any]) -> str:
    compute = plan_data.get("compute")
    return str(compute.get("platform") or "") if isinstance(compute, dict) else ""


def _shared_fs(plan_data: Mapping[str, Any]) -> str:
    storage = plan_data.get("storage")
    return str(storage.get("kind") or "") if isinstance(storage, dict) else ""


def _digest_files(stack_dir: Path, stack: str) -> list[tuple[str, bytes]]:
    """The files that make up what is deployed: not the venv, caches, Pulumi state or other stacks' configs."""
    out: list[tuple[str, bytes]] = []
    for root, dirs, files in os.walk(stack_dir):
        rel_root = Path(root).relative_to(stack_dir).as_posix()
        rel_root = "" if rel_root == "." else rel_root + "/"
        dirs[:] = [
            d
            for d in dirs
            if not (
                d in ("__pycache__", ".git")
                or (not rel_root and d in ("venv", ".venv"))
                or (rel_root == f"{MARKER}/")
            )
        ]
        for name in files:
            rel = rel_root + name
            if name.endswith(".pyc") or name == ".DS_Store":
                continue
            if rel.startswith(f"{MARKER}/") and rel != f"{MARKER}/DO_NOT_EDIT":
                continue
            if (
                not rel_root
                and name.startswith("Pulumi.")
                and name not in ("Pulumi.yaml", f"Pulumi.{stack}.yaml")
            ):
                continue
            data = (Path(root) / name).read_bytes()
            if rel == f"Pulumi.{stack}.yaml":
                data = _canonical_stack_config(data)
            out.append((rel, data))
    return sorted(out)


def _canonical_stack_config(data: bytes) -> bytes:
    """Stack config by meaning: comments, layout and Pulumi's own keys (the passphrase salt) do not count.

    Pulumi adds ``encryptionsalt`` when the stack is created and may reformat the file; neither changes what
    is deployed, so neither may change the digest a reviewer pinned. Config values (``pulumi config set``) do.
    """
    parsed = _load_yaml(data.decode("utf-8", errors="replace"))
    if not isinstance(parsed, dict):
        return data
    kept = {k: v for k, v in parsed.items() if k not in PULUMI_BOOKKEEPING_KEYS}
    return json.dumps(kept, sort_keys=True, default=str).encode()


def stack_digest(stack_dir: str | Path, stack: str | None = None) -> str:
    """SHA-256 over the sorted (path, bytes) of the stack folder's deployable files.

    It covers the program, its config and plan.json (hence the spec digest), so a deploy pinned with
    ``--expect-digest`` applies byte for byte the folder that was reviewed.
    """
    stack_dir = Path(stack_dir)
    stack = stack or _identity(stack_dir).stack
    h = hashlib.sha256()
    for rel, data in _digest_files(stack_dir, stack):
        raw = rel.encode()
        h.update(len(raw).to_bytes(8, "big") + raw + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def recorded_spec(stack_dir: Path) -> str:
    """The spec path the folder was rendered from, as recorded in .trainstack/DO_NOT_EDIT ("" when unknown)."""
    try:
        lines = (stack_dir / MARKER / "DO_NOT_EDIT").read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    for line in lines:
        if line.startswith("spec: "):  # a JSON string, so any file name reads back exactly
            try:
                value = json.loads(line[len("spec: ") :])
            except ValueError:
                return ""
            return value if isinstance(value, str) else ""
    m = re.search(r"generated by trainstack from (.+)\.\s*$", lines[0]) if lines else None  # trainstack 0.1
    return m.group(1) if m and m.group(1) != "a spec" else ""


def find_spec(stack_dir: Path, recorded: str) -> Path | None:
    """The spec file behind a folder: the path is relative to the repository that holds both (or the folder's)."""
    found = next((c for c in stackdir.spec_candidates(stack_dir, recorded) if c.is_file()), None)
    return stackdir.shown(found) if found is not None else None


def stale_files(files: Mapping[str, str], dest: Path, stack: str) -> list[str]:
    """Files that differ between a render (in memory) and the folder, ignoring what Pulumi and users add."""
    try:  # the stack config as a render would leave it: Pulumi's salt and `pulumi config set` values kept
        files = stackdir.keep_stack_config(dict(files), dest, stack)
    except stackdir.ConfigNotCarried:
        pass  # settings a render cannot carry over: the file differs, so the folder is stale
    return [change.path for change in stackdir.compare(files, dest) if change.changed]


@dataclass(frozen=True, slots=True)
class Freshness:
    spec: Path | None  # the spec found for the folder, if any
    stale: tuple[str, ...] = ()
    note: str = ""  # why freshness could not be checked, for the user


def check_fresh(stack_dir: Path) -> Freshness:
    """Re-render the folder's spec in memory and compare; the spec path is taken from the folder itself."""
    recorded = recorded_spec(stack_dir)
    spec = find_spec(stack_dir, recorded)
    if spec is None:
        why = f"its spec {recorded} was not found" if recorded else "it does not record its spec"
        return Freshness(None, (), f"not checked against a spec ({why}); deploying the folder as rendered")
    the_plan = pipeline.plan_file(spec)
    files = stack_files.render(the_plan, stackdir.spec_record(spec))
    return Freshness(spec, tuple(stale_files(files, stack_dir, the_plan.stack)))


@dataclass(frozen=True, slots=True)
class Prepared:
    """A stack folder ready to deploy: its target, digest, and what was done or noticed on the way."""

    target: Target
    digest: str
    rendered: tuple[stackdir.FileChange, ...] = ()
    notes: tuple[str, ...] = ()


def _is_spec(arg: Path) -> bool:
    return arg.is_file()


def locate(arg: str | Path, backend: str | None = None, env: Mapping[str, str] | None = None) -> Target:
    """The target for a SPEC or STACK_DIR argument, without writing anything (a spec maps to its stacks/<name>)."""
    p = Path(arg)
    if p.is_dir():
        return target_for(p, backend, env)
    if not _is_spec(p):
        raise BadTarget(f"{arg}: no such spec file or stack folder")
    the_plan = pipeline.plan_file(p)
    dest = stackdir.default_stack_dir(p, the_plan.name, the_plan.stack)
    if not stackdir.is_stack_dir(dest):
        raise BadTarget(
            f"{arg} has no stack folder at {dest}: run `trainstack up {arg}` (or render it) first."
        )
    return target_for(dest, backend, env)


def planned_target(
    arg: str | Path, backend: str | None = None, env: Mapping[str, str] | None = None
) -> Target:
    """Like :func:`locate`, but for a spec whose folder may not exist yet (names come from the plan)."""
    env = os.environ if env is None else env
    p = Path(arg)
    if p.is_dir() or not _is_spec(p):
        return locate(p, backend, env)
    the_plan = pipeline.plan_file(p)
    dest = stackdir.default_stack_dir(p, the_plan.name, the_plan.stack)
    url = check_backend(backend or env.get("TRAINSTACK_BACKEND") or default_backend(dest))
    return Target(
        stack_dir=dest,
        project=the_plan.name,
        stack=the_plan.stack,
        backend=url,
        secrets_provider=env.get("TRAINSTACK_SECRETS_PROVIDER") or DEFAULT_SECRETS_PROVIDER,
        spec_digest=the_plan.spec_digest,
        shared_fs=the_plan.storage.kind,
        platform=the_plan.compute.platform,
    )


def has_state(stack_dir: Path, project: str, stack: str) -> bool:
    """True when the folder's default file:// backend holds a Pulumi stack for ``project``/``stack``."""
    stacks = Path(stack_dir) / STATE_DIR / ".pulumi" / "stacks"
    return any((stacks / project / f"{stack}.json{ext}").is_file() for ext in ("", ".gz")) or any(
        (stacks / f"{stack}.json{ext}").is_file() for ext in ("", ".gz")
    )  # legacy non-project layout


def other_state_folders(dest: Path, spec: Path, project: str, stack: str) -> list[Path]:
    """Stack folders elsewhere that already hold this stack's file:// state (e.g. rendered from a subfolder by
    trainstack 0.1, which put ``stacks/`` under the working folder)."""
    here = Path(os.path.abspath(dest))
    places: list[Path] = []
    for base in (Path.cwd(), Path(os.path.abspath(spec)).parent):
        for folder in (base, *base.parents):
            places.append(folder / stackdir.STACKS_DIR / project)
            places.append(folder / stackdir.STACKS_DIR / stackdir.stack_folder_name(project, stack))
    found = []
    for place in dict.fromkeys(places):
        if place != here and place.is_dir() and has_state(place, project, stack):
            found.append(place)
    return found


def render_for_up(spec: Path) -> tuple[Path, tuple[stackdir.FileChange, ...]]:
    """Render a spec into its stack folder like ``trainstack render``, keeping Pulumi's and the user's settings."""
    the_plan = pipeline.plan_file(spec)
    files = dict(stack_files.render(the_plan, stackdir.spec_record(spec)))
    dest = stackdir.default_stack_dir(spec, the_plan.name, the_plan.stack)
    if stackdir.is_stack_dir(dest) and not stale_files(files, dest, the_plan.stack):
        return dest, ()  # already what the spec renders; leave Pulumi's additions untouched
    try:
        changes = stackdir.write(files, dest, stack=the_plan.stack)
    except stackdir.ConfigNotCarried as e:
        raise StaleStack(f"{e}; or re-render with `trainstack render` and set them again.") from None
    return dest, tuple(c for c in changes if c.changed)


def prepare_up(arg: str | Path, backend: str | None = None, env: Mapping[str, str] | None = None) -> Prepared:
    """Render (for a spec) or check freshness (for a folder), then compute the digest of what will be deployed."""
    env = os.environ if env is None else env
    p = Path(arg)
    notes: list[str] = []
    rendered: tuple[stackdir.FileChange, ...] = ()
    if p.is_dir():
        target = target_for(p, backend, env)
        fresh = check_fresh(p)
        if fresh.stale:
            spec = str(fresh.spec) if fresh.spec else "its spec"
            raise StaleStack(
                f"{p} is stale against {spec} ({', '.join(fresh.stale)} differ): run "
                f"`trainstack render {spec}` and review the change, or deploy the spec with "
                f"`trainstack up {spec}`."
            )
        if fresh.note:
            notes.append(fresh.note)
    elif _is_spec(p):
        planned = planned_target(p, backend, env)
        if not (backend or env.get("TRAINSTACK_BACKEND")) and not has_state(
            planned.stack_dir, planned.project, planned.stack
        ):
            others = other_state_folders(planned.stack_dir, p, planned.project, planned.stack)
            if others:
                raise BadTarget(
                    f"{others[0]} already holds the Pulumi state of {planned.project} (stack "
                    f"{planned.stack}), but {arg} renders to {planned.stack_dir}: deploying would start "
                    f"a second, empty state and a second cluster. Move {others[0]} to "
                    f"{planned.stack_dir} (or deploy the folder: `trainstack up {others[0]}`)."
                )
        dest, rendered = render_for_up(p)
        target = target_for(dest, backend, env)
    else:
        raise BadTarget(f"{arg}: no such spec file or stack folder")
    return Prepared(target, stack_digest(target.stack_dir, target.stack), rendered, tuple(notes))


def check_digest(prepared: Prepared, expected: str | None) -> None:
    """Refuse to deploy anything but the folder a reviewer pinned with ``--expect-digest``."""
    if not expected:
        return
    want = expected.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", want):
        if prepared.target.spec_digest and want == prepared.target.spec_digest:
            raise DigestMismatch(
                "--expect-digest takes the 64-hex stack digest printed by `trainstack preview` "
                "or `trainstack up`, not the spec digest."
            )
        raise DigestMismatch(f"--expect-digest {expected!r} is not a 64-character hex stack digest.")
    if want != prepared.digest:
        raise DigestMismatch(
            f"{prepared.target.stack_dir} has stack digest {prepared.digest}, not the reviewed "
            f"{want}: the folder changed since it was reviewed; preview it again and re-approve."
        )


def stack_outputs(engine: Any, target: Target | None) -> dict[str, Any]:
    """The stack's output values (secret ones included: the job needs ids, not the terminal) or {} when the stack
    folder or its state does not exist yet."""
    if target is None:
        return {}
    try:
        return {k: v.value for k, v in engine.outputs(target).items()}
    except StackNotDeployed:
        return {}
