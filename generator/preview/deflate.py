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
(:mod:`generator.preview.cache`), atomically (a temporary file renamed into place): a header with the zlib version
and the SHA-256 of an index (each record's key, the SHA-256 of its bytes and their length), the index, then the
bytes. :func:`load` reads and checks the header and the index only, and gives nothing for a missing file, a damaged
header or index, or one another zlib wrote; a record's bytes are read at the first hit and checked against the
index, so a record cut off or altered is a miss (compressed again). Only the newest run's compressions are kept: the file holds one run's nodes, not a history; and
only the newest files of :data:`generator.preview.cache.MEMO_FILES` stacks (:func:`prune`).
Nothing here imports pulumi.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from generator import atomic

HEADER = b"trainstack-deflate"
FORMAT = (
    2  # 2: an index of records, then their bytes (1: each record followed by its bytes, one digest of all)
)
MIN_BYTES = 1024  # smaller inputs compress in microseconds: not worth a digest and a record
# an index record: key, the SHA-256 of the compressed bytes, their length (the bytes follow the index, in its order)
_RECORD = struct.Struct(">32s32sI")


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


def _head(count: int, index_digest: str) -> bytes:
    return (
        b" ".join(
            (
                HEADER,
                str(FORMAT).encode(),
                zlib.ZLIB_RUNTIME_VERSION.encode(),
                b"%d" % count,
                index_digest.encode(),
            )
        )
        + b"\n"
    )


class Stored(Mapping[bytes, bytes]):
    """The compressions of a memo file: its index is read and checked when loaded, the compressed bytes only at the
    first lookup that finds its key (a diff's HEAD answers its unchanged rows at the call and compresses only its
    new nodes: it never reads the 10 MB of a 1,024-node file). Each record is checked against the SHA-256 of its
    bytes in the index, so a record cut off or altered (or a file replaced since the index was read) is absent."""

    def __init__(self, path: Path, index: dict[bytes, tuple[bytes, int, int]], data_at: int) -> None:
        self._path, self._index, self._data_at = path, index, data_at
        self._raw: bytes | None = None

    def __getitem__(self, key: bytes) -> bytes:
        digest, start, end = self._index[key]
        if self._raw is None:
            try:
                self._raw = self._path.read_bytes()
            except OSError:
                self._raw = b""
        value = self._raw[self._data_at + start : self._data_at + end]
        if len(value) != end - start or hashlib.sha256(value).digest() != digest:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def load(root: Path, run_salt: str) -> Mapping[bytes, bytes]:
    """The compressions stored for ``run_salt`` under the cache folder ``root`` (empty if none, or if the header or
    the index is not intact: :class:`Stored`)."""
    path = _path(root, run_salt)
    try:
        with path.open("rb") as f:
            head = f.readline()
            parts = head.split()
            count = int(parts[3]) if len(parts) == 5 and parts[3].isdigit() else -1
            raw = f.read(_RECORD.size * count) if count >= 0 else b""
    except OSError:
        return {}
    if count < 0 or len(raw) != _RECORD.size * count or head != _head(count, hashlib.sha256(raw).hexdigest()):
        return {}
    index: dict[bytes, tuple[bytes, int, int]] = {}
    at = 0
    for key, digest, size in _RECORD.iter_unpack(raw):
        index[key] = (digest, at, at + size)
        at += size
    return Stored(path, index, len(head) + len(raw))


def store(root: Path, run_salt: str, used: Mapping[bytes, bytes]) -> bool:
    """Write ``used`` as the compressions of ``run_salt`` (atomically); False if the folder cannot be written."""
    items = sorted(used.items())
    index = b"".join(_RECORD.pack(key, hashlib.sha256(value).digest(), len(value)) for key, value in items)
    head = _head(len(items), hashlib.sha256(index).hexdigest())
    try:
        atomic.replace(
            _path(root, run_salt), (head, index, *(value for _, value in items)), f".{run_salt[:16]}."
        )
    except OSError:
        return False
    return True


__all__ = ["MIN_BYTES", "Memo", "load", "prune", "store"]
