"""The mock-run graph cache: one program run per distinct stack, whatever command asks (validate, render, lint,
preview, diff).

A graph is stored under a key that is the SHA-256 of everything its run depends on: every file of the program
folder (path and bytes; not the venv, ``__pycache__``, ``.git`` or ``.trainstack/``, where Pulumi's state lives),
the project and stack names, the config the mock run sees, the Python, trainstack, pulumi and pulumi_alicloud
versions, :data:`GRAPH_SCHEMA` and the source of the mock runner itself (mockrun, sdkload and this module). Any byte
of input changes the key, so an entry is never stale. Entries live in the user's cache folder
(``$XDG_CACHE_HOME/trainstack/graphs``, by default ``~/.cache/trainstack/graphs``), outside every repository and
stack folder, so nothing here is committed and the stack folder's journaled writes never see it.

An entry is a file: a header line with the schema and the SHA-256 of the body; the body is a line naming the packs of
rows the entry refers to, then the JSON. A row of at least :data:`generator.preview.blobs.MIN_BYTES` (a node's, with
its user data) is stored once, in a pack named by its SHA-256 (:mod:`generator.preview.blobs`), and the entry holds
its place, so an entry sharing most rows with an earlier one writes only the new rows. A file that is truncated,
altered or unreadable, or names a pack that is missing or damaged, fails those checks and is ignored (and removed);
the program runs and a new entry replaces it. Writes (packs first, then the entry) go to a temporary file in the same
folder and are renamed into place (``os.replace``), so concurrent writers and a process killed mid-write leave
either the old entry, the new one, or a stray temporary file (or unreferenced pack) that is never read.
``TRAINSTACK_GRAPH_CACHE=off`` turns the cache off. Nothing here imports pulumi: a hit runs no program and imports no
SDK.

A miss still reuses what it can: each entry also holds the key of every registration (:mod:`generator.preview.memo`),
and ``memo/<salt>`` lists the newest entries of each project and stack (:data:`MEMO_ENTRIES`). A run whose program
changed loads those entries and registers under the mock runtime only the resources whose inputs are new, so a
change to a few nodes of a large cluster costs those nodes, not the cluster. Likewise ``memo/<salt>.deflate`` holds
the newest run's compressions (:mod:`generator.preview.deflate`), so an unchanged node's user data is not compressed
again. ``TRAINSTACK_INCREMENTAL=off`` runs every registration and compresses everything (the graph is the same
either way).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from generator import atomic, dists
from generator.preview import blobs, calls, deflate, lean, memo, mockrun, rows, sdkload
from generator.preview.mockrun import Graph, Resource

# bump when Graph, Resource or the entry's layout changes (2: registration keys; 3: packs of rows)
GRAPH_SCHEMA = 3
HEADER = b"trainstack-graph"
MAX_ENTRIES = 64  # the oldest entries beyond this many are removed after each write
SKIPPED_DIRS = frozenset({"venv", ".venv", "__pycache__", ".git", ".trainstack", "node_modules"})
T = TypeVar("T")
# the longest a killed writer's unreferenced pack waits for a sweep when no entry is removed
SWEEP_SECONDS = 86400
MEMO_ENTRIES = 2  # the newest entries of a project and stack that a changed program's run reuses from
MEMO_FILES = (
    8  # the stacks whose newest compressions are kept (memo/<salt>.deflate: up to 110 MB at 10,000 nodes)
)
_SOURCES = (
    Path(mockrun.__file__),
    Path(sdkload.__file__),
    Path(memo.__file__),
    Path(deflate.__file__),
    Path(rows.__file__),
    Path(calls.__file__),
    Path(blobs.__file__),
    Path(__file__),
)


def enabled() -> bool:
    return os.environ.get("TRAINSTACK_GRAPH_CACHE", "on").strip().lower() not in ("off", "0", "no", "false")


def incremental() -> bool:
    """Whether a changed program reuses the registrations of earlier runs (``TRAINSTACK_INCREMENTAL``, on)."""
    return os.environ.get("TRAINSTACK_INCREMENTAL", "on").strip().lower() not in ("off", "0", "no", "false")


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/trainstack/graphs`` (XDG Base Directory spec), else ``~/.cache/trainstack/graphs``."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "trainstack" / "graphs"


def program_files(program_dir: Path) -> list[tuple[str, bytes]]:
    """Every file of the program folder a run can read, as sorted (relative POSIX path, bytes)."""
    out: list[tuple[str, bytes]] = []
    for root, dirs, files in os.walk(program_dir):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        rel_root = Path(root).relative_to(program_dir).as_posix()
        for name in files:
            if name.endswith(".pyc"):
                continue
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            out.append((rel, (Path(root) / name).read_bytes()))
    return sorted(out)


_version = dists.version


@functools.cache
def _runner_digest() -> str:
    """SHA-256 of the mock runner's source, read once a process (a command asks for the environment ~4 times)."""
    runner = hashlib.sha256()
    for source in _SOURCES:
        runner.update(source.read_bytes())
    return runner.hexdigest()


def environment() -> dict[str, str]:
    """What, besides the program, decides a mock run: the interpreter, the SDKs and trainstack's own runner."""
    return {
        "python": sys.version,
        "trainstack": _version("trainstack"),
        "pulumi": _version("pulumi"),
        "pulumi_alicloud": _version("pulumi-alicloud"),
        "schema": str(GRAPH_SCHEMA),
        "runner": _runner_digest(),
    }


def key(files: Iterable[tuple[str, bytes]], project: str, stack: str, config: Mapping[str, str]) -> str:
    """The SHA-256 that names a run's graph: each part length-prefixed, so no two inputs share a byte stream."""
    h = hashlib.sha256()

    def part(data: bytes) -> None:
        h.update(len(data).to_bytes(8, "big") + data)

    head = {"project": project, "stack": stack, "config": dict(config), "env": environment()}
    part(json.dumps(head, sort_keys=True).encode())
    for rel, data in files:
        part(rel.encode())
        part(data)
    return h.hexdigest()


def _entry(digest: str) -> Path:
    return cache_dir() / digest[:2] / f"{digest}.graph"


def _to_json(graph: Graph) -> dict[str, Any]:
    return {
        "resources": [
            [r.type, r.name, r.inputs, r.protect, r.retain_on_delete, r.parent, r.delete_before_replace]
            for r in graph.resources
        ],
        "outputs": graph.outputs,
        "warnings": graph.warnings,
        "keys": graph.keys,
    }


def _resource(row: list[Any]) -> Resource:
    t, n, i, p, k, parent, d = row
    return Resource(t, n, i, bool(p), bool(k), str(parent), bool(d))


def _from_json(data: Mapping[str, Any], root: Path, packs: list[str]) -> Graph:
    """The graph of an entry's JSON; a row held by a pack ("N:START:END", pack N of ``packs``) is read from
    ``root``'s packs, each checked once, and a missing or damaged pack is a ValueError (the entry is a miss)."""
    read: dict[int, bytes] = {}
    resources = []
    for item in data["resources"]:
        if type(item) is str:
            n, start, end = (int(part) for part in item.split(":"))
            pack = read.get(n)
            if pack is None:
                pack = blobs.get(root, packs[n])
                if pack is None:
                    raise ValueError("a pack of rows is missing or damaged")
                read[n] = pack
            r = _resource(json.loads(pack[start:end]))
            blobs.remember(r, (packs[n], start, end))  # a later entry refers to the row without encoding it
        else:
            r = _resource(item)
        resources.append(r)
    return Graph(resources, dict(data["outputs"]), list(data["warnings"]), dict(data.get("keys") or {}))


def _pack_rows(root: Path, resources: list[Resource], rows_json: list[Any]) -> tuple[list[bytes], list[str]]:
    """The entry's rows as JSON, each large one replaced by where a pack holds it ("N:START:END"; the rows no pack
    holds are written as one new pack), and the packs named; a ValueError for a non-finite float."""
    present: dict[str, bool] = {}  # pack -> whether it is there (one stat per pack, not per row)
    refs = [blobs.known(root, r, present) for r in resources]
    if len({ref[0] for ref in refs if ref is not None}) >= blobs.MAX_PACKS:
        refs = [None] * len(refs)  # one new pack holds them all: a read stays a few files
    items: list[Any] = []
    fresh: list[bytes] = []
    placed: list[tuple[int, Resource, int, int]] = []  # (item, resource, start, end) of the new pack's rows
    size = 0
    for r, row, ref in zip(resources, rows_json, refs):
        if ref is None:
            data = json.dumps(row, separators=(",", ":"), allow_nan=False).encode()
            if len(data) < blobs.MIN_BYTES:
                items.append(data)  # the row as the entry holds it, encoded once (_body)
                continue
            placed.append((len(items), r, size, size + len(data)))
            fresh.append(data)
            size += len(data)
        items.append(ref)
    if fresh:
        digest = blobs.put(root, b"".join(fresh))
        for i, r, start, end in placed:
            items[i] = (digest, start, end)
            blobs.remember(r, items[i])
    order: dict[str, int] = {}
    for i, item in enumerate(items):
        if type(item) is tuple:
            items[i] = b'"%d:%d:%d"' % (order.setdefault(item[0], len(order)), item[1], item[2])
    return items, list(order)


def _body(items: list[bytes], data: Mapping[str, Any]) -> bytes:
    """``json.dumps(data, separators=(",", ":"), allow_nan=False)`` with ``data["resources"]`` the rows ``items``
    already encode (the same bytes: the encoder joins a list's items and a dict's members with those separators)."""
    parts = [b'{"resources":[', b",".join(items), b"]"]
    for name in ("outputs", "warnings", "keys"):
        parts.append(b',"%s":' % name.encode())
        parts.append(json.dumps(data[name], separators=(",", ":"), allow_nan=False).encode())
    parts.append(b"}")
    return b"".join(parts)


def _json_exact(value: Any) -> bool:
    """Whether JSON gives ``value`` back as it is (str-keyed dicts, lists, str, bool, None, int, finite float): the
    check that a stored graph reads back equal, made without decoding a second copy of a graph of gigabytes."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            if any(type(k) is not str for k in item):
                return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is float:
            if math.isnan(item) or item in (float("inf"), float("-inf")):
                return False
        elif kind not in (str, int, bool, type(None)):
            return False
    return True


def load(digest: str) -> Graph | None:
    """The graph stored under ``digest``, or None (no entry, or one that fails its checksum: it is removed)."""
    path = _entry(digest)
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    head, _, body = raw.partition(b"\n")
    parts = head.split(b" ")
    try:
        if (
            len(parts) != 3
            or parts[0] != HEADER
            or parts[1] != str(GRAPH_SCHEMA).encode()
            or parts[2].decode() != hashlib.sha256(body).hexdigest()
        ):
            raise ValueError("bad header or checksum")
        packs, _, text = body.partition(b"\n")
        return _from_json(json.loads(text), cache_dir(), packs.decode("ascii").split())
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError):
        with _ignored():
            path.unlink()
        return None


def store(digest: str, graph: Graph, decoded: Mapping[int, Resource] | None = None) -> bool:
    """Write ``graph`` under ``digest`` atomically; False (and nothing written) if it does not survive JSON exactly.

    ``decoded`` (id -> resource) holds resources read back from entries (what :func:`reusable` gives a run): JSON
    made them, so only the others are walked for exactness; a non-finite float, which JSON's reader accepts, is
    refused by the writer (``allow_nan=False``) wherever it is."""
    data = _to_json(graph)
    fresh = [row for r, row in zip(graph.resources, data["resources"]) if (decoded or {}).get(id(r)) is not r]
    if not _json_exact([fresh, data["outputs"], data["warnings"], data["keys"]]):
        return False  # e.g. a tuple or a non-JSON output: not cached rather than cached differently
    del fresh
    root = cache_dir()
    with _ignored():  # a read-only or full cache folder only costs the next run its time
        try:  # insertion order kept: a hit prints what a run does
            items, named = _pack_rows(root, graph.resources, data["resources"])
            body = _body(items, data)
        except ValueError:
            return False
        del data
        _write_entry(_entry(digest), " ".join(named).encode() + b"\n" + body)  # after the pack it names
        _prune(root)
        return True
    return False


def _write_entry(path: Path, body: bytes) -> None:
    """The header and ``body`` to a temporary file renamed to ``path``: a reader sees the old entry or the new."""
    head = b"%s %d %s\n" % (HEADER, GRAPH_SCHEMA, hashlib.sha256(body).hexdigest().encode())
    atomic.replace(path, (head, body))  # header and body written apart: no copy of a body of megabytes


def _prune(root: Path) -> None:
    """Keep the :data:`MAX_ENTRIES` most recently used entries; remove temporary files a killed writer left over an
    hour ago (a live writer's is seconds old). When an entry was removed, and at least daily (what a killed writer
    left), the packs no kept entry names are swept (:func:`generator.preview.blobs.sweep`)."""
    entries = sorted(root.glob("*/*.graph"), key=lambda p: _mtime(p), reverse=True)
    stale = [p for p in root.glob("*/.*.tmp") if _mtime(p) < time.time() - 3600]
    for old in entries[MAX_ENTRIES:] + stale:
        with _ignored():
            old.unlink()
    swept = root / blobs.FOLDER / ".swept"
    if len(entries) > MAX_ENTRIES or _mtime(swept) < time.time() - SWEEP_SECONDS:
        blobs.sweep(root, (d for p in entries[:MAX_ENTRIES] for d in _named(p)))
        with _ignored():
            swept.parent.mkdir(parents=True, exist_ok=True)
            swept.touch()


def _named(entry: Path) -> list[str]:
    """The packs an entry names (its body's first line; an unreadable entry names none and will miss anyway)."""
    try:
        with entry.open("rb") as f:
            f.readline()
            return f.readline().decode("ascii").split()
    except (OSError, UnicodeDecodeError):
        return []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


class _ignored:
    """``with _ignored():`` swallows OSError (the cache is an optimisation, never a failure)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, value: object, tb: object) -> bool:
        return kind is not None and issubclass(kind, OSError)


def run_program(
    program_dir: str | Path,
    project: str = "trainstack",
    stack: str = "dev",
    config: Mapping[str, str] | None = None,
) -> Graph:
    """:func:`generator.preview.mockrun.run_program`, answered from the cache when this exact run was made before."""
    program_dir = Path(program_dir).resolve()
    _LAST_KEY.clear()
    if not enabled() or not (program_dir / "__main__.py").is_file():
        return mockrun.run_program(program_dir, project=project, stack=stack, config=config)
    effective = mockrun.effective_config(config)
    digest = key(program_files(program_dir), project, stack, effective)
    graph = hit(digest)
    if graph is not None:
        _LAST_KEY.append(digest)
        return graph
    run_salt = memo.salt(environment(), project, stack)
    reuse = incremental()
    known = reusable(run_salt) if reuse else {}
    with deflate.Memo(deflate.load(cache_dir(), run_salt) if reuse else None) as compressed:
        graph = mockrun.run_program(
            program_dir,
            project=project,
            stack=stack,
            config=config,
            memo_salt=run_salt,
            reuse=known if reuse else None,
        )
    with lean.tuned_gc(lean.gc_mode()):  # writing a large graph allocates much; nothing of it is garbage
        stored = store(digest, graph, decoded={id(r): r for r in known.values()})
        if stored and compressed.changed() and deflate.store(cache_dir(), run_salt, compressed.used):
            deflate.prune(cache_dir(), MEMO_FILES)
    if stored:
        _remember(run_salt, digest)
        _LAST_KEY.append(digest)
    return graph


def hit(digest: str) -> Graph | None:
    """The graph stored under ``digest`` (checked, as :func:`load`), marked most recently used and kept as this
    process's last hit (a later run of the same stack reuses its registrations without reading it again)."""
    graph = load(digest)
    if graph is not None:
        with _ignored():
            os.utime(_entry(digest))  # most recently used
        _LAST_HIT[:] = [(digest, graph)]
    return graph


def last_key() -> str | None:
    """The key of the graph the last :func:`run_program` call of this process answered from or stored in the cache
    (None when it was not cached): ``diff``'s side cache (:mod:`generator.preview.side_cache`) records it."""
    return _LAST_KEY[-1] if _LAST_KEY else None


def run_files(
    files: Mapping[str, str],
    *,
    project: str,
    stack: str,
    region: str,
    inspect: Callable[[Path], T] | None = None,
) -> tuple[Graph, T | None]:
    """The one way trainstack runs rendered files under the mocks (``preview``, ``validate``, ``lint``, each side of
    ``diff``): they are written to a temporary folder and run through :func:`run_program` with the region as the
    stack's config. ``inspect`` is called on that folder before it is removed (e.g. to digest it)."""
    from generator.render import stackdir

    with tempfile.TemporaryDirectory(prefix="trainstack-run-") as tmp:
        dest = Path(tmp) / project
        stackdir.write(dict(files), dest, durable=False)
        graph = run_program(dest, project=project, stack=stack, config={"alicloud:region": region})
        return graph, (inspect(dest) if inspect is not None else None)


# The graph this process last answered from the cache: `diff` reads BASE's entry, then HEAD's run reuses it; a large
# cluster's entry is not read and checked twice.
_LAST_HIT: list[tuple[str, Graph]] = []
_LAST_KEY: list[str] = []  # the key of the last run_program's graph, if it is in the cache (last_key)


def _memo_index(run_salt: str) -> Path:
    return cache_dir() / "memo" / run_salt


def reusable(run_salt: str) -> dict[str, Resource]:
    """key -> resource, from the newest entries stored for this salt (a missing or corrupt entry gives nothing)."""
    try:
        digests = _memo_index(run_salt).read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return {}
    out: dict[str, Resource] = {}
    last = dict(_LAST_HIT)
    for digest in digests[:MEMO_ENTRIES]:
        graph = last.get(digest) or (load(digest) if len(digest) == 64 else None)
        if graph is None:
            continue
        for k, r in known_keys(graph):
            out.setdefault(k, r)
    return out


def known_keys(graph: Graph) -> Iterable[tuple[str, Resource]]:
    """(key, resource) for every key ``graph`` holds: each registration's, each constructor call's
    (:mod:`generator.preview.rows`) and each row call's (:mod:`generator.preview.calls`)."""
    keys = graph.keys
    for r in graph.resources:
        k = keys.get(r.urn_key)
        if k is not None:
            yield k, r
        k = keys.get(rows.ROW_PREFIX + r.urn_key)
        if k is not None:
            yield k, r
        k = keys.get(calls.CALL_PREFIX + r.urn_key)
        if k is not None:
            yield k, r


def _remember(run_salt: str, digest: str) -> None:
    """Put ``digest`` first in the salt's list of newest entries (written atomically, like an entry)."""
    index = _memo_index(run_salt)
    with _ignored():
        try:
            old = index.read_text(encoding="ascii").split()
        except (OSError, UnicodeDecodeError):
            old = []
        kept = [digest] + [d for d in old if d != digest and len(d) == 64][: MEMO_ENTRIES - 1]
        atomic.replace(index, ["\n".join(kept).encode("ascii") + b"\n"], prefix=f".{run_salt[:16]}.")


__all__ = [
    "GRAPH_SCHEMA",
    "MEMO_ENTRIES",
    "cache_dir",
    "enabled",
    "hit",
    "incremental",
    "key",
    "known_keys",
    "last_key",
    "load",
    "program_files",
    "reusable",
    "run_files",
    "run_program",
    "store",
]
