"""The installed distributions' versions, each looked up once a process: ``importlib.metadata`` scans every folder
of ``sys.path`` at each lookup (about 0.5 ms here), and the keys of the caches (graphs, diff sides, compiled
templates) ask for the same few names several times a command. An installed version does not change under a running
process that has imported it."""

from __future__ import annotations

import functools


@functools.cache
def version(dist: str) -> str:
    """``dist``'s installed version, or ``"none"`` when it is not installed (a source checkout's trainstack)."""
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "none"


__all__ = ["version"]
