"""The only module that writes stack folders. Writes are atomic and never clobber a folder trainstack did not make.

A stack folder is rendered into a temporary sibling, then swapped in with renames, so an interrupted render
leaves either the old folder or the new one, never a mix. A folder without the ``.trainstack`` marker is
refused. Files are compared byte for byte so a re-render reports ``identical`` / ``update`` / ``create``.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import TrainstackError
from .render import MARKER


class StackDirError(TrainstackError):
    """A stack folder cannot be written (not ours, not writable)."""


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    action: str  # "create", "update", "identical" or "delete"


def compare(files: Mapping[str, str], dest: Path) -> list[FileChange]:
    """What writing ``files`` to ``dest`` would change, without writing anything."""
    changes = []
    for rel, text in sorted(files.items()):
        target = dest / rel
        if not target.exists():
            changes.append(FileChange(rel, "create"))
        elif target.read_bytes() != text.encode():
            changes.append(FileChange(rel, "update"))
        else:
            changes.append(FileChange(rel, "identical"))
    if dest.is_dir():
        for p in sorted(dest.rglob("*")):
            rel = p.relative_to(dest).as_posix()
            if p.is_file() and rel not in files and not _ignored(rel):
                changes.append(FileChange(rel, "delete"))
    return changes


def _ignored(rel: str) -> bool:
    """Files a user's tools leave in a stack folder, which render neither owns nor removes."""
    parts = rel.split("/")
    return (parts[0] in ("venv", ".venv", "__pycache__") or rel.startswith(f"{MARKER}/state")
            or parts[-1].endswith(".pyc") or parts[0].startswith("Pulumi.") and rel not in ("Pulumi.yaml",)
            and not rel.endswith(".yaml"))


def write(files: Mapping[str, str], dest: str | Path) -> list[FileChange]:
    """Write a rendered stack to ``dest`` atomically; return what changed."""
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise StackDirError(f"{dest} exists and is not a folder")
    if dest.is_dir() and any(dest.iterdir()) and not (dest / MARKER).is_dir():
        raise StackDirError(f"{dest} exists and was not created by trainstack (no {MARKER}/ inside); "
                            "refusing to overwrite it. Choose another folder with -o, or remove it yourself.")
    changes = compare(files, dest)
    if all(c.action == "identical" for c in changes):
        return changes
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    try:
        if dest.is_dir():  # carry over what the user's tools keep there (venv, Pulumi state)
            for p in dest.iterdir():
                rel = p.name
                if rel in ("venv", ".venv") or (p.is_dir() and rel == MARKER and (p / "state").exists()):
                    if rel == MARKER:
                        shutil.copytree(p / "state", tmp / MARKER / "state", symlinks=True)
                    else:
                        os.rename(p, tmp / rel)
        for rel, text in files.items():
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
            if rel.endswith(".sh"):
                target.chmod(0o755)
            else:
                target.chmod(0o644)
        old = None
        if dest.exists():
            old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
            os.rename(dest, old)
        os.rename(tmp, dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return changes


def is_stack_dir(path: Path) -> bool:
    return path.is_dir() and (path / "__main__.py").is_file() and (path / MARKER).is_dir()


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


def keep_stack_config(files: dict[str, str], dest: Path, stack: str) -> dict[str, str]:
    """``files`` with ``Pulumi.<stack>.yaml`` merged with what the existing folder added to it."""
    name = f"Pulumi.{stack}.yaml"
    existing = dest / name
    if name not in files or not existing.is_file():
        return files
    old = existing.read_text(encoding="utf-8")
    if old == files[name] or config_compatible(files[name], old):
        return {**files, name: old}  # every rendered setting is already there; keep the file as Pulumi left it
    merged = merge_stack_config(files[name], old)
    if merged is None:
        raise StackDirError(f"{existing} holds settings trainstack cannot carry over into the new render; "
                            "move them into the spec or remove them, then render again")
    return {**files, name: merged}
