"""Content-addressed packs of graph rows: a large row is written once, however many entries hold it.

A graph entry of a 1,024-node cluster is ~16 MB, nearly all of it the node rows (each ~15 KB, mostly its user
data), and an entry made after a change of 8 nodes shares every other row with the entry its run reused. So the rows
whose JSON is at least :data:`MIN_BYTES` are stored apart: an entry's new rows are written together as one *pack*,
``blobs/<2 hex>/<sha256>.pack`` under the cache folder, named by the SHA-256 of its bytes, and the entry refers to
each row by pack, start and end. Writing an entry then encodes and writes only the rows no pack holds yet, in one
file (a file per row would cost its creation, ~0.3 ms of system time each: more than the rows' encoding); a row read
from a pack by this process (or written to one) is known by its place (:func:`remember`, by identity: the resource
object itself) and costs a ``stat``. An entry naming :data:`MAX_PACKS` packs or more is written as one new pack, so
a chain of small changes never makes a read open many files.

A pack is checked against its name when read (:func:`get`): a missing, truncated or altered pack makes its entry a
miss, never a different graph, and is removed. Packs are written to a temporary file and renamed into place before
the entry that names them, so a writer killed in between leaves the old entry whole and at most an unreferenced
pack, which :func:`sweep` removes: a pack that no entry names and that is over an hour old (a live writer's newest
pack is seconds old and its entry is on its way). A pack lives while an entry names it, so the rows of removed
entries it also holds are bounded by the kept entries: at most :data:`MAX_PACKS` packs each.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable
from pathlib import Path

from generator import atomic

# smaller rows (role attachments, singletons) stay inline: a file each would cost more than they do
MIN_BYTES = 1024
FOLDER = "blobs"
SUFFIX = ".pack"
MAX_PACKS = 8  # an entry naming this many packs or more is written whole, as one pack
# an unreferenced blob younger than this may be a live writer's, whose entry is not written yet
GRACE_SECONDS = 3600
MAX_KNOWN = 50_000  # rows remembered by place: both sides of a diff of 10,000 nodes, with room
Ref = tuple[str, int, int]  # where a row's JSON is: the pack's digest, start and end

# id(resource) -> (resource, where its row is), for rows read from or written to packs by this process: the object
# is kept, so an id is never reused while it is here (resources are frozen and their inputs came from JSON)
_KNOWN: dict[int, tuple[object, Ref]] = {}


def path(root: Path, digest: str) -> str:
    # a string, not a Path: an entry names ~1,000 blobs, and pathlib's joins would cost as much as reading them
    return f"{os.fspath(root)}/{FOLDER}/{digest[:2]}/{digest}{SUFFIX}"


def remember(resource: object, ref: Ref) -> None:
    if len(_KNOWN) >= MAX_KNOWN:  # a long-lived process (a test session) would keep every row it ever saw
        _KNOWN.clear()  # forgetting only costs encoding those rows again
    _KNOWN[id(resource)] = (resource, ref)


def known(root: Path, resource: object, present: dict[str, bool] | None = None) -> Ref | None:
    """Where ``resource``'s row is, if this process read or wrote it and its pack is there (``present``: pack ->
    whether it is, for the rows of one entry, whose ~1,000 rows are in one or a few packs)."""
    found = _KNOWN.get(id(resource))
    if found is None or found[0] is not resource:
        return None
    pack = found[1][0]
    there = present.get(pack) if present is not None else None
    if there is None:
        there = os.path.isfile(path(root, pack))
        if present is not None:
            present[pack] = there
    return found[1] if there else None


def put(root: Path, data: bytes) -> str:
    """Store ``data`` under its SHA-256 (atomically; nothing to do when a blob already holds it); its digest."""
    digest = hashlib.sha256(data).hexdigest()
    target = path(root, digest)
    if os.path.isfile(target):
        return digest
    atomic.replace(Path(target), (data,), prefix=f".{digest[:16]}.")
    return digest


def get(root: Path, digest: str) -> bytes | None:
    """The bytes stored under ``digest``, or None (no pack, or one whose bytes do not hash to its name: it is
    removed, since :func:`put` trusts a pack that is there and the next write of its rows must make it again)."""
    target = path(root, digest)
    try:
        with open(target, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() == digest:
        return data
    try:
        os.unlink(target)
    except OSError:
        pass
    return None


def sweep(root: Path, live: Iterable[str]) -> int:
    """Remove the packs (and a killed writer's temporary files) that ``live`` does not name and that are older than
    :data:`GRACE_SECONDS`; how many were removed."""
    keep = set(live)
    cutoff = time.time() - GRACE_SECONDS
    removed = 0
    for candidate in [*(root / FOLDER).glob(f"*/*{SUFFIX}"), *(root / FOLDER).glob("*/.*.tmp")]:
        if candidate.name.removesuffix(SUFFIX) in keep:
            continue
        try:
            if candidate.stat().st_mtime < cutoff:
                candidate.unlink()
                removed += 1
        except OSError:
            pass
    return removed


__all__ = ["MAX_PACKS", "MIN_BYTES", "Ref", "get", "known", "path", "put", "remember", "sweep"]
