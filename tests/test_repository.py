"""The repository stands on its own: it cites public sources, never a notebook outside it."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRIVATE_NOTES = "shared" + "/reference"  # spelled in two parts so this file does not match itself
SKIP = {".git", ".venv", "venv", ".hypothesis", ".pytest_cache", "__pycache__", "node_modules"}


def repository_files() -> list[Path]:
    """Tracked and untracked-but-not-ignored files (git), or every file outside tool folders without git."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, check=True).stdout
        return [ROOT / name for name in out.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        return [p for p in ROOT.rglob("*") if p.is_file() and not SKIP & set(p.relative_to(ROOT).parts)]


def test_no_file_cites_the_private_reference_notes() -> None:
    files = [p for p in repository_files() if p.is_file()]
    assert len(files) > 50
    citing = [str(p.relative_to(ROOT)) for p in files if PRIVATE_NOTES.encode() in p.read_bytes()]
    assert not citing, f"cite the public source itself (a URL, the provider file, the paper), not {PRIVATE_NOTES}: {citing}"
