"""Files replaced whole or not at all: the one way trainstack writes a cache entry, a journal or a quarantine file.

The bytes go to a temporary file in the target's folder, which is then renamed over the target (``os.replace``,
atomic on POSIX within one file system): a reader sees the old file or the new one, never half of one, and a writer
killed mid-way leaves at most its temporary file (``.<prefix>...<suffix>``), which the owner's pruning removes.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def replace(path: Path, chunks: Iterable[bytes], prefix: str | None = None, suffix: str = ".tmp") -> None:
    """Write ``chunks`` (written one after another: a megabyte body is not copied to join it to its header) to
    ``path`` atomically, creating its folder. ``prefix`` names the temporary file (default ``.<name[:16]>.``).
    OSError when the folder or the file cannot be written; the temporary file is removed on any failure."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=prefix if prefix is not None else f".{path.name[:16]}.", suffix=suffix, dir=path.parent
    )
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


__all__ = ["replace"]
