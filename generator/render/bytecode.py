"""Compiled templates kept between processes, as Python keeps compiled modules: jinja compiles every template it
renders, about 0.1 s per process for a stack's twenty, in every command that renders (each side of a ``diff``).

A template's compiled code is stored where Python stores the package's bytecode, with the same trust: under
``sys.pycache_prefix`` when it is set (``PYTHONPYCACHEPREFIX``), else in a ``__pycache__`` folder beside the shared
templates. Not in the user's cache folder: that folder may be restored from a shared CI cache, and what it holds is
data that is checked (graphs, plans as exact JSON), never code that would run. Nothing is written when Python writes
no bytecode (``PYTHONDONTWRITEBYTECODE``, ``sys.dont_write_bytecode``) or the folder is not writable.

The folder's name is a digest of everything that decides the compiled code beside the template's text: the Python
version (marshal's format and the code objects), the jinja2 and markupsafe versions (the compiler) and the source of
the module that sets the environment's options (:mod:`generator.render.files`: trim_blocks, lstrip_blocks,
finalize, ...). Each entry is named by jinja's key (the template's name and file) and holds the SHA-1 jinja gives
the template's source, so an edited template compiles anew; an entry is a header with the SHA-256 of its body, so a
truncated or altered one is ignored (and compiled anew), and it is written to a temporary file and renamed into
place, so a killed writer leaves the old entry or none. The code is the code jinja compiles from the same source
with the same options, so the rendered text is the same byte for byte (``tests/test_template_bytecode.py``).
``TRAINSTACK_TEMPLATE_BYTECODE=off`` compiles every template in every process.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
from pathlib import Path
from typing import Any

import jinja2

from generator import atomic, dists

HEADER = b"trainstack-template-bytecode 1"


def enabled() -> bool:
    return os.environ.get("TRAINSTACK_TEMPLATE_BYTECODE", "on").strip().lower() not in (
        "off",
        "0",
        "no",
        "false",
    )


def folder(templates: Path, options_source: Path) -> Path:
    """Where this interpreter, compiler and set of options keep compiled templates."""
    h = hashlib.sha256()
    for part in (sys.version, _version("jinja2"), _version("markupsafe")):
        h.update(part.encode() + b"\0")
    h.update(options_source.read_bytes())
    name = f"trainstack-templates-{h.hexdigest()[:32]}"
    if sys.pycache_prefix:
        return Path(sys.pycache_prefix) / name
    return templates / "__pycache__" / name


_version = dists.version


class Cache(jinja2.BytecodeCache):
    """jinja's bytecode cache over files of :data:`HEADER`, the body's SHA-256, then the source's SHA-1 and the
    marshalled code (jinja's own file cache reads its checksum with pickle and fails on a truncated file)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, bucket: jinja2.bccache.Bucket) -> Path:
        return self.root / f"{bucket.key}.jbc"

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            raw = self._path(bucket).read_bytes()
        except OSError:
            return
        head, _, body = raw.partition(b"\n")
        if head != HEADER + b" " + hashlib.sha256(body).hexdigest().encode():
            return
        checksum, _, code = body.partition(b"\n")
        if checksum != bucket.checksum.encode():
            return  # the template was edited
        try:
            loaded: Any = marshal.loads(code)
        except (EOFError, ValueError, TypeError):
            return
        bucket.code = loaded

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if sys.dont_write_bytecode or bucket.code is None:
            return
        body = bucket.checksum.encode() + b"\n" + marshal.dumps(bucket.code)
        head = HEADER + b" " + hashlib.sha256(body).hexdigest().encode() + b"\n"
        try:
            atomic.replace(self._path(bucket), (head, body), prefix=f".{bucket.key[:16]}.")
        except OSError:  # a read-only install compiles in every process, as without this cache
            return


__all__ = ["HEADER", "Cache", "enabled", "folder"]
