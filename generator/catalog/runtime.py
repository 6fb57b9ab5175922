"""What a node downloads when its image lacks it, pinned: ``data/v1/node_wheels.csv`` (PyTorch and every wheel it
depends on for Linux x86_64 and CPython 3.11, each with its sha256 from PyPI), ``data/v1/modelscope_wheels.csv``
(ModelScope's CLI and its dependencies, pure-Python wheels for CPython 3.9 and later, for trainstack-weights) and
``data/v1/node_downloads.csv`` (other files, with a sha256 where one could be recorded). The renderer turns each
wheel set into a hash-pinned requirements file that the node installs with ``pip install --require-hashes``, so a
wheel that differs from PyPI's by one byte is refused. Standard library only.
"""

from __future__ import annotations

import csv
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from generator.catalog.checks import source_tags
from generator.catalog.load import _DEFAULT_DIR, load_catalog
from generator.catalog.model import CatalogError

WHEEL_COLUMNS = ("package", "version", "file", "sha256", "uploaded", "checked", "source")
DOWNLOAD_COLUMNS = ("key", "url", "version", "sha256", "checked", "source", "notes")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(r"[a-z0-9]+(?:[-_.][a-z0-9]+)*")
_VERSION = re.compile(r"[0-9A-Za-z.+!-]+")


@dataclass(frozen=True, slots=True)
class Wheel:
    package: str
    version: str
    file: str
    sha256: str
    uploaded: str
    checked: str
    source: str


@dataclass(frozen=True, slots=True)
class Download:
    key: str
    url: str
    version: str
    sha256: str  # "" when no checksum could be recorded (the row's notes say why)
    checked: str
    source: str
    notes: str


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    tags = {s.tag for s in load_catalog().sources} if path.parent == _DEFAULT_DIR else None
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != columns:
            raise CatalogError(f"{path}:1: columns must be {', '.join(columns)}")
        out = []
        for line, row in enumerate(reader, start=2):
            values = {c: (row.get(c) or "").strip() for c in columns}
            if tags is not None and not set(source_tags(values["source"])) <= tags:
                raise CatalogError(f"{path}:{line}: source {values['source']} is not in sources.csv")
            out.append((line, values))
    return out


@functools.lru_cache(maxsize=4)
def wheels(path: Path | None = None) -> tuple[Wheel, ...]:
    """Every row of node_wheels.csv; a bad name, version or sha256, or a file of another package and version, is a
    :class:`CatalogError` naming the file and line."""
    path = path or _DEFAULT_DIR / "node_wheels.csv"
    out = []
    for line, v in _rows(path, WHEEL_COLUMNS):
        w = Wheel(**v)
        stem = w.file.removesuffix(".whl").split("-")
        if (
            not _NAME.fullmatch(w.package)
            or not _VERSION.fullmatch(w.version)
            or not _SHA256.fullmatch(w.sha256)
            or not w.file.endswith(".whl")
            or len(stem) < 5
            or stem[1] != w.version
            or re.sub(r"[-_.]+", "_", stem[0]).lower() != re.sub(r"[-_.]+", "_", w.package)
        ):
            raise CatalogError(
                f"{path}:{line}: a package name, its version, a wheel of that version and its "
                "sha256 (64 lowercase hex digits) are required"
            )
        out.append(w)
    return tuple(out)


@functools.lru_cache(maxsize=1)
def downloads(path: Path | None = None) -> dict[str, Download]:
    path = path or _DEFAULT_DIR / "node_downloads.csv"
    out: dict[str, Download] = {}
    for line, v in _rows(path, DOWNLOAD_COLUMNS):
        d = Download(**v)
        if (
            not d.key
            or d.key in out
            or not d.url.startswith("https://")
            or (d.sha256 and not _SHA256.fullmatch(d.sha256))
        ):
            raise CatalogError(
                f"{path}:{line}: a key (each once), an https:// URL and an empty or 64-hex sha256 "
                "are required"
            )
        out[d.key] = d
    return out


def hashed_requirements(rows: tuple[Wheel, ...] | None = None) -> str:
    """The requirements file of the node's PyTorch (or of ``rows``), one ``NAME==VERSION --hash=sha256:...`` line per
    package (every wheel of it that Linux x86_64 may pick), for ``pip install --require-hashes``."""
    by_package: dict[tuple[str, str], list[str]] = {}
    for w in wheels() if rows is None else rows:
        by_package.setdefault((w.package, w.version), []).append(w.sha256)
    return "".join(
        f"{name}=={version} " + " ".join(f"--hash=sha256:{h}" for h in hashes) + "\n"
        for (name, version), hashes in by_package.items()
    )


def modelscope_wheels() -> tuple[Wheel, ...]:
    """Every row of modelscope_wheels.csv (checked like node_wheels.csv); every file must be a pure-Python wheel
    (``py3-none-any``), since trainstack-weights runs on whatever Python 3.9+ the node or the DLC image has."""
    path = _DEFAULT_DIR / "modelscope_wheels.csv"
    rows = wheels(path)
    for w in rows:
        if not w.file.endswith("-py3-none-any.whl"):
            raise CatalogError(f"{path}: {w.file} is not a py3-none-any wheel")
    return rows


def modelscope_requirements() -> str:
    """The hash-pinned requirements file of ModelScope's CLI (trainstack-weights, ModelScope weights)."""
    return hashed_requirements(modelscope_wheels())


__all__ = [
    "DOWNLOAD_COLUMNS",
    "WHEEL_COLUMNS",
    "Download",
    "Wheel",
    "downloads",
    "hashed_requirements",
    "modelscope_requirements",
    "modelscope_wheels",
    "wheels",
]
