"""Instance-type catalog: versioned CSV data plus pure, read-only queries.

The facts live in ``data/<version>/*.csv`` (see ``data/v1/README.md`` for every column, unit, source tag
and estimation method). This package only parses and indexes them: :mod:`~generator.catalog.model` holds the
dataclasses and the :class:`Catalog` queries, :mod:`~generator.catalog.load` parses and checks the files, and this
``__init__`` re-exports both. It uses the standard library only and must never import pulumi, so the planner can
use it without a cloud SDK.

    >>> cat = load_catalog()
    >>> cat.instance("ecs.ebmgn7ex.32xlarge").eri_count
    2
    >>> cat.instance("ecs.ebmgn7ex.32xlarge").jumbo_frames  # not documented: MTU 1400
    'unknown'
    >>> cat.gpu("a100").name
    'A100-80G'
"""

from __future__ import annotations

from generator.catalog.checks import source_tags
from generator.catalog.load import CATALOG_DATE, CATALOG_VERSION, load_catalog
from generator.catalog.model import (
    AVAILABILITIES,
    JUMBO_SUPPORT,
    LINGJUN_PAYMENT_TYPES,
    Catalog,
    CatalogError,
    DlcSpec,
    GpuModel,
    InstanceType,
    JumboFrames,
    LingjunMachineType,
    Price,
    Region,
    Source,
    StoragePrice,
    StorageThroughput,
)

__all__ = [
    "AVAILABILITIES",
    "CATALOG_DATE",
    "CATALOG_VERSION",
    "JUMBO_SUPPORT",
    "LINGJUN_PAYMENT_TYPES",
    "Catalog",
    "CatalogError",
    "DlcSpec",
    "GpuModel",
    "InstanceType",
    "JumboFrames",
    "LingjunMachineType",
    "Price",
    "Region",
    "Source",
    "StoragePrice",
    "StorageThroughput",
    "load_catalog",
    "source_tags",
]
