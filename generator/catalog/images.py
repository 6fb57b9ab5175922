"""The default node images: ``data/v1/images.csv``, one pinned public image per key, with its source and the date
it was checked. The planner records the image a plan's nodes boot in ``compute.image`` (the spec's
``compute.image_id`` when it names one), so a new default is a reviewed change of this file and of every stack's
program, never a lookup at deploy time. Standard library only.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

from generator.catalog.checks import source_tags
from generator.catalog.load import _DEFAULT_DIR, load_catalog
from generator.catalog.model import CatalogError

COLUMNS = ("key", "image", "os", "checked", "source", "notes")
ECS_DEFAULT = "alinux3-x64"  # the ECS nodes' image when the spec names none


@dataclass(frozen=True, slots=True)
class Image:
    key: str
    image: str  # an ImageId as RunInstances takes it (public images: the image name)
    os: str
    checked: str  # YYYY-MM-DD: when the source was read
    source: str
    notes: str


@functools.lru_cache(maxsize=1)
def images(path: Path | None = None) -> dict[str, Image]:
    """Every row of images.csv by key; a row with unknown columns, a duplicate key or an unknown source tag is a
    :class:`CatalogError` naming the file and line."""
    path = path or _DEFAULT_DIR / "images.csv"
    tags = {s.tag for s in load_catalog().sources} if path.parent == _DEFAULT_DIR else None
    out: dict[str, Image] = {}
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise CatalogError(f"{path}:1: columns must be {', '.join(COLUMNS)}")
        for line, row in enumerate(reader, start=2):
            image = Image(**{c: (row.get(c) or "").strip() for c in COLUMNS})
            if not image.key or not image.image or image.key in out:
                raise CatalogError(f"{path}:{line}: a key and an image are required, each key once")
            if tags is not None and not set(source_tags(image.source)) <= tags:
                raise CatalogError(f"{path}:{line}: source {image.source} is not in sources.csv")
            out[image.key] = image
    return out


def ecs_default() -> Image:
    return images()[ECS_DEFAULT]


__all__ = ["COLUMNS", "ECS_DEFAULT", "Image", "ecs_default", "images"]
