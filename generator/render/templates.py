"""Where the shared templates live, found without importing the renderer (the side cache keys them by their bytes)."""

from __future__ import annotations

from pathlib import Path


def templates_dir() -> Path:
    """Templates live at the repository's top level and are shipped in the wheel as ``generator/_templates``."""
    package = Path(__file__).resolve().parents[1]  # generator/
    for candidate in (package / "_templates", package.parent / "templates"):
        if (candidate / "stack" / "__main__.py.j2").is_file():
            return candidate
    raise FileNotFoundError("trainstack's templates are missing; reinstall the package")


__all__ = ["templates_dir"]
