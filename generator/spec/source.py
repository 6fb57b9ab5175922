"""Where a spec file is and how it is read: bounded, regular files only, never through a link that leaves home.

A spec's bytes are read with a bound (at most :data:`MAX_SPEC_BYTES` plus one byte, within
:data:`READ_SECONDS`), from a regular file only: a device (``/dev/zero``), a FIFO, a socket or a terminal is refused
before a byte is read, because it may never end. A spec reached through a symbolic link whose target lies outside
the spec's git repository (outside the folder the link is in, for a spec in no repository) is refused too, since it
may be a credentials file; the error quotes nothing of it. Every path is then used resolved (:func:`resolved`), so
a spec reached through a symlinked folder and the real one are the same spec, with the same stack folder.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from generator.errors import SpecErrors
from generator.spec import codes

MAX_SPEC_BYTES = 1 << 20  # a spec is a page of YAML; anything over 1 MiB is a mistake
READ_SECONDS = 10.0  # a local file of 1 MiB reads in milliseconds; a slower one is a hung mount
_CHUNK = 64 * 1024


def repository_root(path: str | Path) -> Path | None:
    """The work tree of the git repository that holds ``path`` (a ``.git`` folder or worktree file), if any."""
    here = Path(os.path.abspath(path))
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def home_of(path: str | Path) -> Path:
    """The folder a spec may not leave through a symlink: its repository, else the folder it is named in (resolved)."""
    given = Path(os.path.abspath(path))
    return Path(os.path.realpath(repository_root(given.parent) or given.parent))


def leaves_home(path: str | Path) -> bool:
    """True when ``path`` resolves (through symlinks) to a file outside :func:`home_of` ``path``."""
    real = Path(os.path.realpath(path))
    home = home_of(path)
    return real != home and home not in real.parents


def resolved(path: str | Path) -> Path:
    """The spec's real path (symlinks resolved): the one identity render, ``--check``, preview and up agree on."""
    return Path(os.path.realpath(path))


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bytes(path: str | Path) -> bytes:
    """At most ``MAX_SPEC_BYTES + 1`` bytes of the spec file, or :class:`SpecErrors` that quotes none of its bytes."""
    name = str(path)

    def refuse(code: codes.SpecCode, message: str, hint: str = "", **fields: object) -> SpecErrors:
        return SpecErrors([code.make((), message, hint, fields, file=name)])

    if os.path.lexists(path) and leaves_home(path):
        where = (
            "its repository" if repository_root(Path(os.path.abspath(path)).parent) else "the folder it is in"
        )
        raise refuse(
            codes.LINK_OUT,
            f"the spec is reached through a symbolic link that leaves {where}; trainstack reads no "
            "file there",
            "give the spec file itself, or copy it into the repository",
        )
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(path, flags)  # O_NONBLOCK: opening a FIFO without a writer does not wait
    except FileNotFoundError:
        raise refuse(codes.NO_FILE, "no such file") from None
    except IsADirectoryError:
        raise refuse(codes.FOLDER, "is a folder, not a spec file") from None
    except OSError as e:
        raise refuse(codes.UNREADABLE, f"cannot read the file ({e.strerror})", error=e.strerror) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise refuse(codes.FOLDER, "is a folder, not a spec file")
        if not stat.S_ISREG(mode):
            raise refuse(
                codes.NOT_REGULAR,
                f"is {_kind(mode)}, not a spec file; trainstack reads specs from regular files only",
                "save the spec to a file and give its path",
                kind=_kind(mode),
            )
        return _bounded(fd, name)
    except OSError as e:
        raise refuse(codes.UNREADABLE, f"cannot read the file ({e.strerror})", error=e.strerror) from None
    finally:
        os.close(fd)


def _bounded(fd: int, name: str) -> bytes:
    deadline = time.monotonic() + READ_SECONDS
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_SPEC_BYTES:
        chunk = os.read(fd, min(_CHUNK, MAX_SPEC_BYTES + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if time.monotonic() > deadline:
            raise SpecErrors(
                [
                    codes.SLOW_READ.problem(
                        (),
                        f"reading the file took over {READ_SECONDS:g} s; a spec is a small local file",
                        file=name,
                        seconds=READ_SECONDS,
                    )
                ]
            )
    return b"".join(chunks)
