"""The only module that writes stack folders; a write never loses state, a venv or a file it did not write.

A stack folder holds the only local copy of a deployed cluster's Pulumi state (``.trainstack/state``), so:

- **A new folder** is written into a sibling (``.NAME.new-PID``) and renamed into place.
- **An existing folder** is updated in place through a journal: the new files are staged in
  ``.trainstack/pending/`` with a manifest, a ``COMMITTED`` mark is renamed in (the commit point), then each file
  is renamed over its old version and the journal removed. The folder itself, its state and its venv are never
  moved or copied. Whatever instant a write is killed at, the next command (:func:`settle`) rolls an
  uncommitted journal back or a committed one forward, so the folder is the old render or the new one.
- **Writers are serialized** by an advisory lock on the parent folder; SIGINT and SIGTERM wait until the write
  is done.
- **Only trainstack's files are written or removed.** Files it does not own (notes, scripts, other stacks'
  ``Pulumi.<stack>.yaml``) are kept and reported as ``kept``.
- Folders left by trainstack 0.1's rename-based writer (``.NAME.old-PID``, ``.NAME.XXXX.tmp``) are recovered.
- **Never outside its place, never over a user's file, never another spec's folder:** the rules of
  :mod:`generator.render.stackfolder` (placement, ownership headers, claims) are checked before anything is written.

Filesystem failures raise :class:`StackDirError` with one sentence that names the path.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import shutil
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.render.files import MARKER
from generator.render.stackfolder import (  # noqa: F401 - re-exported: where folders live is asked of stackdir too
    CONDITIONAL,
    DEFAULT_STACK,
    STACKS_DIR,
    ConfigNotCarried,
    StackDirError,
    StackIdentity,
    UnsafeStackDir,
    check_claim,
    check_placement,
    check_user_files,
    claimed_by,
    collision,
    default_stack_dir,
    ours,
    placement_problem,
    recorded,
    repository_root,
    same_folder,
    shown,
    spec_candidates,
    spec_folder,
    spec_record,
    stack_folder_name,
    stack_identity,
    user_files,
)

PENDING = f"{MARKER}/pending"  # the journal of an update in progress
STATE = f"{MARKER}/state"  # trainstack's default file:// Pulumi backend
COMMITTED = "COMMITTED"
# Files earlier versions of trainstack wrote and this one no longer does: removed on the next render. Anything
# else that a render does not produce is the user's (or Pulumi's) and is kept.
RETIRED: tuple[str, ...] = ()
LOCK_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    # "create", "update", "identical", "delete" (a retired or left-over trainstack file) or "kept" (not ours)
    action: str

    @property
    def changed(self) -> bool:
        return self.action in ("create", "update", "delete")


def _fs_error(e: OSError, what: str, path: Path | str) -> StackDirError:
    reason = e.strerror or str(e)
    return StackDirError(f"cannot {what} {path}: {reason}")


def _ignored(rel: str, files: Mapping[str, str]) -> bool:
    """Paths render neither owns nor mentions: the venv, caches, Pulumi's state, the journal, stack configs."""
    parts = rel.split("/")
    if parts[0] in ("venv", ".venv", "__pycache__") or parts[-1].endswith(".pyc") or "__pycache__" in parts:
        return True
    if rel.startswith((f"{STATE}/", f"{PENDING}/")) or rel in (STATE, PENDING):
        return True
    return len(parts) == 1 and rel.startswith("Pulumi.") and rel.endswith(".yaml") and rel not in files


def _left_over(path: Path, rel: str) -> bool:
    """A file this version writes for some plans only, written by an earlier render (its header is trainstack's)."""
    return rel in CONDITIONAL and ours(path, rel)


# How trainstack recognises a file it wrote, for every path it writes (its header, or its shape). A file at one of
# these paths that does not match is the user's and is never overwritten or removed (write refuses instead).
def compare(files: Mapping[str, str], dest: Path) -> list[FileChange]:
    """What writing ``files`` to ``dest`` would change, without writing anything."""
    dest = Path(dest)
    changes = []
    try:
        for rel, text in sorted(files.items()):
            target = dest / rel
            if not os.path.lexists(target):
                changes.append(FileChange(rel, "create"))
            elif os.path.islink(target) or not target.is_file() or target.read_bytes() != text.encode():
                changes.append(FileChange(rel, "update"))
            else:
                changes.append(FileChange(rel, "identical"))
        if dest.is_dir():
            for root, dirs, names in os.walk(dest):
                rel_root = Path(root).relative_to(dest).as_posix()
                prefix = "" if rel_root == "." else rel_root + "/"
                dirs[:] = sorted(d for d in dirs if not _ignored(prefix + d, files))
                for name in sorted(names):
                    rel = prefix + name
                    if rel in files or _ignored(rel, files):
                        continue
                    ours = rel in RETIRED or _left_over(dest / rel, rel)
                    changes.append(FileChange(rel, "delete" if ours else "kept"))
    except OSError as e:
        raise _fs_error(e, "read", e.filename or dest) from None
    return sorted(changes, key=lambda c: c.path)


def is_stack_dir(path: Path) -> bool:
    path = Path(path)
    return (
        path.is_dir()
        and (path / MARKER).is_dir()
        and ((path / "__main__.py").is_file() or (path / PENDING / COMMITTED).is_file())
    )


# ----------------------------------------------------------------------------- locking and signals
@contextlib.contextmanager
def _locked(parent: Path, timeout: float | None = None) -> Iterator[None]:
    """An exclusive advisory lock on the folder that holds stack folders; released even if the process dies."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock (documented in docs/gitops.md)
        yield
        return
    try:
        fd = os.open(parent, os.O_RDONLY)
    except OSError as e:
        raise _fs_error(e, "open", parent) from None
    timeout = LOCK_TIMEOUT_SECONDS if timeout is None else timeout
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise _fs_error(e, "lock", parent) from None
                if time.monotonic() >= deadline:
                    raise StackDirError(
                        f"another trainstack command has been writing in {parent} for over "
                        f"{timeout:.0f} s; try again when it has finished"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block is done, then deliver them (Ctrl-C never splits a write)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, lambda signum, frame: caught.append(signum))
        except (ValueError, OSError):  # pragma: no cover - not allowed here
            pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in caught[:1]:
            os.kill(os.getpid(), signum)


# ----------------------------------------------------------------------------- writing
def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_file(target: Path, text: str, rel: str, durable: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
    os.chmod(target, 0o755 if rel.endswith(".sh") else 0o644)


def write(
    files: Mapping[str, str], dest: str | Path, *, stack: str | None = None, durable: bool = True
) -> list[FileChange]:
    """Write a rendered stack to ``dest``; return what changed.

    ``stack``: merge ``Pulumi.<stack>.yaml`` with what Pulumi or the user added to the existing one (salt,
    ``pulumi config set`` values) under the lock. ``durable``: fsync (off for throw-away folders).
    """
    dest = Path(dest)
    parent = dest.parent
    check_placement(dest)
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _fs_error(e, "create", e.filename or parent) from None
    with _locked(parent), _signals_deferred():
        _settle_locked(dest)
        if dest.exists() and not dest.is_dir():
            raise StackDirError(f"{dest} exists and is not a folder")
        if dest.is_dir() and any(dest.iterdir()) and not (dest / MARKER).is_dir():
            raise StackDirError(
                f"{dest} exists and was not created by trainstack (no {MARKER}/ inside); "
                "refusing to write into it. Choose another folder with -o, or remove it yourself."
            )
        check_claim(files, dest)
        check_user_files(files, dest)
        if stack is not None:
            files = keep_stack_config(files, dest, stack)
        changes = compare(files, dest)
        if not any(c.changed for c in changes):
            return changes
        try:
            if dest.is_dir():
                _update(files, dest, changes, durable)
            else:
                _create(files, dest, durable)
        except OSError as e:
            raise _fs_error(e, "write", e.filename or dest) from None
    return changes


def _create(files: Mapping[str, str], dest: Path, durable: bool) -> None:
    tmp = dest.with_name(f".{dest.name}.new-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    os.mkdir(tmp)  # the umask's mode, like any folder the user makes (mkdtemp would make it 0700)
    try:
        for rel, text in files.items():
            _write_file(tmp / rel, text, rel, durable)
        if durable:
            for d in {(tmp / rel).parent for rel in files}:
                _fsync_dir(d)
        os.rename(tmp, dest)
        if durable:
            _fsync_dir(dest.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _update(files: Mapping[str, str], dest: Path, changes: list[FileChange], durable: bool) -> None:
    pending = dest / PENDING
    shutil.rmtree(pending, ignore_errors=True)
    write_rel = [c.path for c in changes if c.action in ("create", "update")]
    delete_rel = [c.path for c in changes if c.action == "delete"]
    try:
        os.makedirs(pending / "files")
        for rel in write_rel:
            _write_file(pending / "files" / rel, files[rel], rel, durable)
        manifest = json.dumps({"write": write_rel, "delete": delete_rel}, sort_keys=True)
        _write_file(pending / "manifest.json", manifest, "manifest.json", durable)
        if durable:
            for d in {(pending / "files" / rel).parent for rel in write_rel} | {pending}:
                _fsync_dir(d)
        mark = pending / f"{COMMITTED}.tmp"
        _write_file(mark, "", COMMITTED, durable)
        os.rename(mark, pending / COMMITTED)  # the commit point
        if durable:
            _fsync_dir(pending)
    except BaseException:
        shutil.rmtree(pending, ignore_errors=True)  # not committed: the folder is still the old render
        raise
    _apply(dest, durable)


def _apply(dest: Path, durable: bool = True) -> None:
    """Roll a committed journal forward (idempotent: safe to repeat after a crash half-way through)."""
    pending = dest / PENDING
    manifest = json.loads((pending / "manifest.json").read_text(encoding="utf-8"))
    for rel in manifest["write"]:
        staged = pending / "files" / rel
        if staged.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, dest / rel)
    for rel in manifest["delete"]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(dest / rel)
    if durable:
        for d in {(dest / rel).parent for rel in manifest["write"] + manifest["delete"]}:
            _fsync_dir(d)
    os.rename(pending / COMMITTED, pending / "APPLIED")  # so a crash below never re-applies stale files
    shutil.rmtree(pending)


# ----------------------------------------------------------------------------- recovery
def _leftovers(dest: Path) -> list[tuple[str, Path]]:
    """Siblings an interrupted write left: ``new`` (this version), ``old`` and ``tmp`` (trainstack 0.1)."""
    try:
        siblings = list(dest.parent.iterdir()) if dest.parent.is_dir() else []
    except OSError:
        return []
    name = re.escape(dest.name)
    pattern = re.compile(rf"\.{name}\.(?:(new|old)-[0-9]+|[a-z0-9_]{{8}}(\.tmp))")
    found = []
    for p in siblings:
        m = pattern.fullmatch(p.name)
        if m and p.is_dir():
            found.append((m.group(1) or "tmp", p))
    return sorted(found)


def needs_settling(dest: Path) -> bool:
    dest = Path(dest)
    return (dest / PENDING).exists() or bool(_leftovers(dest))


def settle(dest: str | Path) -> None:
    """Finish or roll back whatever an interrupted write left in or beside ``dest``; wait for a running writer."""
    dest = Path(dest)
    check_placement(dest)
    if not dest.parent.is_dir() or not needs_settling(dest):
        return
    try:
        with _locked(dest.parent), _signals_deferred():
            _settle_locked(dest)
    except OSError as e:
        raise _fs_error(e, "repair", e.filename or dest) from None


def _settle_locked(dest: Path) -> None:
    pending = dest / PENDING
    if pending.is_dir():
        if (pending / COMMITTED).is_file() and (pending / "manifest.json").is_file():
            _apply(dest)
        else:
            shutil.rmtree(pending)
    for kind, leftover in _leftovers(dest):
        if kind == "new":
            shutil.rmtree(leftover, ignore_errors=True)  # a new folder never finished: it held nothing else
        elif kind == "old":
            _recover_legacy_old(leftover, dest)
        else:
            _recover_legacy_tmp(leftover, dest)


def _recover_legacy_old(old: Path, dest: Path) -> None:
    """trainstack 0.1 renamed the folder to ``.NAME.old-PID`` before moving the new one in."""
    if not dest.exists():
        os.rename(old, dest)  # killed between its two renames: the old folder is the folder
        return
    _rescue(old, dest)
    shutil.rmtree(old, ignore_errors=True)


def _recover_legacy_tmp(tmp: Path, dest: Path) -> None:
    """trainstack 0.1 built the new folder in ``.NAME.XXXX.tmp``, moving the venv and copying the state into it."""
    if not dest.exists():
        if (tmp / MARKER).is_dir():
            os.rename(tmp, dest)  # the only copy left; files the kill cut short are re-rendered next time
            return
    else:
        _rescue(tmp, dest)
    shutil.rmtree(tmp, ignore_errors=True)


def _rescue(src: Path, dest: Path) -> None:
    """Move the venv and the Pulumi state from a leftover folder back into ``dest`` when ``dest`` lacks them."""
    for rel in ("venv", ".venv", STATE):
        if (src / rel).is_dir() and not (dest / rel).exists():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            os.rename(src / rel, dest / rel)


# ----------------------------------------------------------------------------- Pulumi.<stack>.yaml
# Pulumi and users add to the stack config (the passphrase salt, `pulumi config set` values); a re-render keeps them.


def load_yaml(text: str) -> Any:
    from ruamel.yaml import YAML

    try:
        return YAML(typ="safe", pure=True).load(text)
    except Exception:  # noqa: BLE001 unparsable YAML simply does not match
        return None


def config_compatible(rendered: str, existing: str) -> bool:
    """True when every key render writes has the rendered value; extra keys (salt, user config) are allowed."""
    want, have = load_yaml(rendered), load_yaml(existing)
    if not isinstance(want, dict) or not isinstance(have, dict):
        return rendered == existing
    for key, value in want.items():
        if key == "config" and isinstance(value, dict):
            got = have.get("config")
            if not isinstance(got, dict) or any(got.get(k) != v for k, v in value.items()):
                return False
        elif have.get(key) != value:
            return False
    return True


def merge_stack_config(rendered: str, existing: str) -> str | None:
    """The rendered stack config plus what Pulumi or the user added to the old one (salt, ``pulumi config set``).

    Re-rendering must not silently drop a passphrase salt or an image id set with ``pulumi config set``. The
    additions are appended (config keys inside the trailing ``config:`` mapping); None if that would not
    round-trip, so the caller can refuse instead of losing settings.
    """
    from ruamel.yaml import YAML

    want, have = load_yaml(rendered), load_yaml(existing)
    if not isinstance(want, dict) or not isinstance(have, dict):
        return None
    want_config: dict[str, Any] = want["config"] if isinstance(want.get("config"), dict) else {}
    have_config: dict[str, Any] = have["config"] if isinstance(have.get("config"), dict) else {}
    extra_config = {k: v for k, v in have_config.items() if k not in want_config}
    extra_top = {k: v for k, v in have.items() if k not in want and k != "config"}
    if not extra_config and not extra_top:
        return rendered

    def dump(data: dict[str, Any], indent: str) -> str:
        buf = io.StringIO()
        y = YAML(typ="safe", pure=True)
        y.default_flow_style = False
        y.dump(data, buf)
        return "".join(indent + line + "\n" for line in buf.getvalue().splitlines())

    text = rendered
    if extra_config:
        text += "  # kept from the previous Pulumi.*.yaml (set outside the spec)\n" + dump(extra_config, "  ")
    if extra_top:
        text += dump(extra_top, "")
    merged = load_yaml(text)
    expected = dict(want, **extra_top)
    expected["config"] = dict(want_config, **extra_config)
    return text if merged == expected else None


def keep_stack_config(files: Mapping[str, str], dest: Path, stack: str) -> Mapping[str, str]:
    """``files`` with ``Pulumi.<stack>.yaml`` merged with what the existing folder added to it."""
    name = f"Pulumi.{stack}.yaml"
    existing = dest / name
    if name not in files or not existing.is_file():
        return files
    old = existing.read_text(encoding="utf-8")
    if old == files[name] or config_compatible(files[name], old):
        return {
            **files,
            name: old,
        }  # every rendered setting is already there; keep the file as Pulumi left it
    merged = merge_stack_config(files[name], old)
    if merged is None:
        raise ConfigNotCarried(
            f"{existing} holds settings trainstack cannot carry over into the new render; "
            "move them into the spec or remove them, then render again"
        )
    return {**files, name: merged}
