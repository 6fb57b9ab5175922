"""``diff``'s side cache: a side whose inputs were seen before is answered with its stored Plan and graph, without
loading, planning, rendering or running it (and without importing Pulumi).

The graph cache (:mod:`generator.preview.cache`) is keyed by the rendered program, so a hit there still pays for
planning and rendering the side, and the first side pays the imports and the templates' compilation. What a side's
plan and graph depend on is known before any of that: the spec text and the path recorded in the rendered files, the
catalog, and the code that plans and renders. The key of a side entry is the SHA-256 of the spec text and path, every
file of the installed ``generator`` package (the planner, the renderer, the templates, the catalog's CSV files, the
mock runner; not ``__pycache__``) and of the shared templates folder when it lies outside the package (a source
checkout's ``templates/``), the graph cache's environment (Python, trainstack, pulumi and pulumi_alicloud
versions, the graph schema, the mock runner's source), the versions of the libraries that load a spec and render it
(pydantic, ruamel.yaml, jinja2, markupsafe), and :data:`SIDE_SCHEMA` with the exact plan's codec and schema. Only the
packaged catalog is keyed: a side planned against another catalog is not cached.

An entry holds the side's Plan as exact JSON (:mod:`generator.plan.exact_json`, read back by the dataclasses'
annotations: a document from a shared CI cache can build a plan, never run code) and the key of its graph in the
graph cache, which stores the graph once for every command. It lives in ``sides/`` beside the graph entries, is
written to a temporary file and renamed into place, and carries the SHA-256 of its body: a truncated or altered entry,
one whose plan does not read back, or one whose graph entry is gone or damaged, is removed and the side is planned,
rendered and run again. ``TRAINSTACK_GRAPH_CACHE=off`` turns this off too; ``TRAINSTACK_SIDE_CACHE=off`` turns off
only this.

Entries are written by every ``diff`` for the sides it ran and by ``preview`` (so ``validate`` and ``lint``) of a spec
file (:func:`remember`): the key is made from the same text the plan was made from, and the plan and graph are what
``diff`` would have made of that text and path, so a previewed spec is a side the next diff need not plan or run.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from generator import atomic, dists
from generator.plan import exact_json
from generator.plan.model import PLAN_SCHEMA_VERSION

if TYPE_CHECKING:
    from generator.catalog import Catalog
    from generator.plan.model import Plan
    from generator.preview.mockrun import Graph

SIDE_SCHEMA = 2  # bump when an entry's layout or what its key covers changes
HEADER = b"trainstack-side"
MAX_ENTRIES = 64  # the most recently used side entries kept (each a plan: ~35 KB at 8 nodes, ~1 MB at 1,024)
LIBRARIES = ("pydantic", "pydantic-core", "ruamel.yaml", "jinja2", "markupsafe")  # spec loading and rendering


def enabled() -> bool:
    from generator.preview import cache

    off = os.environ.get("TRAINSTACK_SIDE_CACHE", "on").strip().lower() in ("off", "0", "no", "false")
    return cache.enabled() and not off


def code_roots() -> list[Path]:
    """The folders whose files plan and render read: the installed ``generator`` package, and the shared templates
    when they lie outside it (a source checkout keeps them at the repository's top level, a wheel in the package)."""
    import generator
    from generator.render.templates import templates_dir

    root = Path(generator.__file__).resolve().parent
    shared = templates_dir().resolve()
    return [root] if shared.is_relative_to(root) else [root, shared]


@functools.cache
def _code_digest() -> str:
    return code_digest(code_roots())


def code_digest(roots: list[Path]) -> str:
    """SHA-256 of every file under ``roots`` (each root's index, relative path and bytes), sorted; not
    ``__pycache__``."""
    h = hashlib.sha256()
    for index, root in enumerate(roots):
        found: list[Path] = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            found.extend(Path(folder) / f for f in files if not f.endswith((".pyc", ".pyo")))
        for path in sorted(found):
            data = path.read_bytes()
            rel = f"{index}/{path.relative_to(root).as_posix()}".encode()
            h.update(len(rel).to_bytes(8, "big") + rel + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def key(text: str, path: str, catalog: Catalog) -> str | None:
    """The SHA-256 naming a side's entry, or None when the side cannot be cached (another catalog than the
    packaged one, or the cache turned off)."""
    from generator.catalog import load_catalog
    from generator.preview import cache

    if not enabled() or catalog is not load_catalog():
        return None
    head = {
        "schema": SIDE_SCHEMA,
        "plan": [exact_json.FORMAT, exact_json.CODEC_VERSION, PLAN_SCHEMA_VERSION],
        "code": _code_digest(),
        "env": cache.environment(),
        "libraries": {name: _version(name) for name in LIBRARIES},
        "catalog": [catalog.version, catalog.date],
        "path": path,
    }
    h = hashlib.sha256()
    for part in (json.dumps(head, sort_keys=True).encode(), text.encode("utf-8", "surrogatepass")):
        h.update(len(part).to_bytes(8, "big") + part)
    return h.hexdigest()


_version = dists.version


def _entry(digest: str) -> Path:
    from generator.preview import cache

    return cache.cache_dir() / "sides" / digest[:2] / f"{digest}.side"


def load(digest: str) -> tuple[Plan, Graph] | None:
    """The Plan and graph stored for a side, or None (no entry; a damaged one is removed)."""
    from generator.preview import cache

    path = _entry(digest)
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    head, _, body = raw.partition(b"\n")
    graph_key, _, plan_text = body.partition(b"\n")
    try:
        if (
            head
            != HEADER + b" " + str(SIDE_SCHEMA).encode() + b" " + hashlib.sha256(body).hexdigest().encode()
        ):
            raise ValueError("bad header or checksum")
        plan = exact_json.read(plan_text)
        graph = cache.hit(graph_key.decode("ascii")) if len(graph_key) == 64 else None
        if graph is None:
            raise ValueError("the graph entry is gone or damaged")
    except (ValueError, UnicodeDecodeError):
        _remove(path)
        return None
    try:
        os.utime(path)  # most recently used
    except OSError:
        pass
    return plan, graph


def store(digest: str, plan: Plan, graph_key: str) -> bool:
    """Write a side's entry atomically; False when nothing was written (a plan that does not read back exactly, or
    a cache folder that cannot be written)."""
    try:
        text = exact_json.write(plan)
        if exact_json.read(text) != plan:
            return False
    except ValueError:
        return False
    body = graph_key.encode("ascii") + b"\n" + text.encode()
    path = _entry(digest)
    head = (
        HEADER + b" " + str(SIDE_SCHEMA).encode() + b" " + hashlib.sha256(body).hexdigest().encode() + b"\n"
    )
    try:
        atomic.replace(path, (head, body))
    except OSError:
        return False
    _prune(path.parent.parent)
    return True


def remember(text: str, path: str, catalog: Catalog, plan: Plan, graph_key: str | None) -> bool:
    """Record a side that another command planned and ran (``preview``, ``validate``, ``lint`` of a spec file), so
    the next ``diff`` with this spec on a side neither plans nor runs it; False when nothing was recorded."""
    digest = key(text, path, catalog)
    return digest is not None and graph_key is not None and store(digest, plan, graph_key)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _prune(root: Path) -> None:
    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    for old in sorted(root.glob("*/*.side"), key=mtime, reverse=True)[MAX_ENTRIES:]:
        _remove(old)


__all__ = ["SIDE_SCHEMA", "enabled", "key", "load", "remember", "store"]
