"""The deflate memo: ``zlib.compress`` answered from earlier mock runs, so an unchanged node's user data is not
compressed again.

A rendered ECS or Lingjun program compresses every node's user data (``gzip.compress(script, 9, mtime=0)``, which is
``zlib.compress(script, level=9, wbits=31)``; Python's ``gzip`` module). At level 9 a 34 KB script takes about 1.4 ms,
so a program of 10,000 nodes spends 14 s compressing, in a diff that adds 8 nodes to a cached BASE as much as in a
cold run. The result of ``zlib.compress`` is a pure function of its input bytes, level and window bits for one zlib
build, so :class:`Memo` wraps it for a run: each call of at least :data:`MIN_BYTES` is keyed by the SHA-256 of the
level, the window bits and the data, and a key found in ``known`` is answered with the stored bytes; any other call
compresses and is remembered. The bytes given back are the bytes zlib gives (``tests/test_deflate.py`` compares the
graphs of runs with and without the memo byte for byte).

:func:`store` writes the compressions a run used to ``memo/<salt>.deflate`` in the graph cache folder
(:mod:`generator.preview.cache`), atomically (a temporary file renamed into place) and with the SHA-256 of its body
and the zlib version in its header; :func:`load` gives nothing for a missing, truncated or altered file, or for one
another zlib wrote. Only the newest run's compressions are kept: the file holds one run's nodes, not a history; and
only the newest files of :data:`generator.preview.cache.MEMO_FILES` stacks (:func:`prune`).
Nothing here imports pulumi.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from generator import atomic

HEADER = b"trainstack-deflate"
FORMAT = 1
MIN_BYTES = 1024  # smaller inputs compress in microseconds: not worth a digest and a record
_RECORD = struct.Struct(">32sI")  # key, length of the compressed bytes (followed by them)


def _key(data: Any, level: int, wbits: int) -> bytes:
    h = hashlib.sha256(struct.pack(">ii", level, wbits))
    h.update(data)
    return h.digest()


class Memo:
    """``with Memo(known) as m:`` answers ``zlib.compress`` from ``known`` (key -> compressed bytes) for the block;
    ``m.used`` is every compression the block made or reused, ``m.misses`` how many it made."""

    def __init__(self, known: Mapping[bytes, bytes] | None = None) -> None:
        self.known: Mapping[bytes, bytes] = known or {}
        self.used: dict[bytes, bytes] = {}
        self.misses = 0
        self._original: Callable[..., bytes] | None = None

    def __enter__(self) -> Memo:  # noqa: PYI034 (a final class in practice)
        self._original = zlib.compress
        zlib.compress = self._compress  # gzip.compress looks zlib.compress up at each call
        return self

    def __exit__(self, *exc: object) -> None:
        if self._original is not None:
            zlib.compress = self._original
            self._original = None

    def _compress(self, data: Any, /, level: int = -1, wbits: int = zlib.MAX_WBITS) -> bytes:
        original = self._original
        assert original is not None
        try:
            size = memoryview(data).nbytes
            key = (
                _key(data, level, wbits) if size >= MIN_BYTES and type(level) is type(wbits) is int else None
            )
        except (TypeError, ValueError, BufferError, struct.error):
            key = None  # not a contiguous buffer, or no level zlib takes: zlib answers (or raises) itself
        if key is None:
            return original(data, level, wbits)
        out = self.known.get(key)
        if out is None:
            out = original(data, level, wbits)
            self.misses += 1
        self.used[key] = out
        return out

    def changed(self) -> bool:
        """Whether the block used a compression ``known`` lacks, or left one of ``known`` unused (worth a store)."""
        return self.misses > 0 or len(self.used) != len(self.known)


def prune(root: Path, keep: int) -> None:
    """Keep the ``keep`` most recently written memo files under ``root`` (each holds one stack's nodes)."""
    try:
        found = [(p.stat().st_mtime, p) for p in (root / "memo").glob("*.deflate")]
    except OSError:
        return
    for _, old in sorted(found, reverse=True)[keep:]:
        try:
            old.unlink()
        except OSError:
            pass


def _path(root: Path, run_salt: str) -> Path:
    return root / "memo" / f"{run_salt}.deflate"


def _head(body_digest: str) -> bytes:
    return (
        b" ".join((HEADER, str(FORMAT).encode(), zlib.ZLIB_RUNTIME_VERSION.encode(), body_digest.encode()))
        + b"\n"
    )


def load(root: Path, run_salt: str) -> dict[bytes, bytes]:
    """The compressions stored for ``run_salt`` under the cache folder ``root`` (empty if none or not intact)."""
    try:
        raw = _path(root, run_salt).read_bytes()
    except OSError:
        return {}
    head, _, body = raw.partition(b"\n")
    if head + b"\n" != _head(hashlib.sha256(body).hexdigest()):
        return {}
    out: dict[bytes, bytes] = {}
    view, at = memoryview(body), 0
    while at < len(body):
        if at + _RECORD.size > len(body):
            return {}
        key, size = _RECORD.unpack_from(body, at)
        at += _RECORD.size
        if at + size > len(body):
            return {}
        out[key] = bytes(view[at : at + size])
        at += size
    return out


def store(root: Path, run_salt: str, used: Mapping[bytes, bytes]) -> bool:
    """Write ``used`` as the compressions of ``run_salt`` (atomically); False if the folder cannot be written."""
    body = b"".join(_RECORD.pack(key, len(value)) + value for key, value in sorted(used.items()))
    try:
        atomic.replace(
            _path(root, run_salt), (_head(hashlib.sha256(body).hexdigest()), body), f".{run_salt[:16]}."
        )
    except OSError:
        return False
    return True


__all__ = ["MIN_BYTES", "Memo", "load", "prune", "store"]
