"""Instance-type catalog: versioned CSV data plus pure, read-only queries.

The facts live in ``data/<version>/*.csv`` (see ``data/v1/README.md`` for every column, unit, source tag
and estimation method). This module only parses and indexes them. It uses the standard library only and
must never import pulumi, so the planner can use it without a cloud SDK.

    >>> cat = load_catalog()
    >>> cat.instance("ecs.ebmgn7ex.32xlarge").eri_count
    2
    >>> cat.gpu("a100").name
    'A100-80G'
"""

from __future__ import annotations

import csv
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

__all__ = [
    "CATALOG_VERSION",
    "CATALOG_DATE",
    "Catalog",
    "CatalogError",
    "GpuModel",
    "InstanceType",
    "LingjunMachineType",
    "Price",
    "Region",
    "Source",
    "StoragePrice",
    "load_catalog",
    "source_tags",
]

CATALOG_VERSION = "v1"
CATALOG_DATE = "2026-11-29"
_DATES = {"v1": CATALOG_DATE}
_DEFAULT_DIR = Path(__file__).resolve().parent / "data" / CATALOG_VERSION
AVAILABILITIES = ("ga", "contact-sales", "invite")
LINGJUN_PAYMENT_TYPES = ("PayAsYouGo", "Subscription")  # eflo.Node payment_type values [PU-EFLO]


class CatalogError(ValueError):
    """A catalog file is missing, malformed, or refers to something that does not exist."""


# ---------------------------------------------------------------------------------------------------------
# data model


@dataclass(frozen=True, slots=True)
class Source:
    tag: str
    description: str
    url: str


@dataclass(frozen=True, slots=True)
class GpuModel:
    name: str
    aliases: tuple[str, ...]
    vendor: str
    memory_gib: float
    bf16_tflops: float  # dense peak; V100 rows carry the fp16 tensor peak (see notes)
    mfu: float  # model-FLOPs utilisation the planner assumes for this GPU
    interconnect: str  # "nvlink" | "pcie"
    source: str
    notes: str


@dataclass(frozen=True, slots=True)
class Price:
    cny_per_hour: float
    estimated: bool
    date: str
    region: str
    source: str


@dataclass(frozen=True, slots=True)
class InstanceType:
    name: str
    family: str
    gpu: str
    gpus: int
    gpu_memory_gib: float
    vcpu: int
    memory_gib: float
    network_gbps: float
    bare_metal: bool
    eri_count: int
    erdma_gbps: float | None
    two_network_cards: bool
    scc: bool
    roce_gbps: float | None
    low_latency_set: bool
    uefi_required: bool
    availability: str
    price: Price
    source: str

    @property
    def rdma(self) -> bool:
        """True if the type has an RDMA fabric: eRDMA through ERIs, or RoCE on SCC."""
        return self.eri_count > 0 or self.scc

    @property
    def total_gpu_memory_gib(self) -> float:
        return self.gpus * self.gpu_memory_gib

    @property
    def host_to_gpu_memory_ratio(self) -> float:
        return self.memory_gib / self.total_gpu_memory_gib


@dataclass(frozen=True, slots=True)
class LingjunMachineType:
    """A PAI Lingjun (eflo) machine type such as ``efg1.nvga8n``: bare-metal GPU servers on Lingjun's HPN RDMA
    fabric, ordered through eflo (not ECS). See ``lingjun_machine_types.csv`` in the data README."""

    name: str
    family: str
    gpu: str
    gpu_verified: bool  # False: the GPU model/count/memory is a trainstack assumption (see notes)
    gpus: int
    gpu_memory_gib: float
    vcpu: int | None
    memory_gib: float | None
    vpc_gbps: float | None
    rdma_gbps: float | None
    bonds: int | None
    regions: tuple[str, ...]
    hpn_zones: tuple[tuple[str, str], ...]  # (zone, HPN zone) pairs seen in the sources
    payment_types: tuple[str, ...]  # eflo.Node payment_type values the sources show for the type
    availability: str
    price: Price
    source: str
    notes: str

    def hpn_zone(self, zone: str) -> str | None:
        """The HPN zone the sources pair with ``zone`` for this type (None when none is known)."""
        return next((h for z, h in self.hpn_zones if z == zone), None)

    def as_instance_type(self) -> InstanceType:
        """The type as the planner's :class:`InstanceType` (bare metal; no ERI, no SCC: its fabric is the HPN).

        Unknown host figures become 0 (vcpu, memory_gib, network_gbps); callers treat 0 as "not stated".
        """
        return InstanceType(
            name=self.name, family=self.family, gpu=self.gpu, gpus=self.gpus, gpu_memory_gib=self.gpu_memory_gib,
            vcpu=self.vcpu or 0, memory_gib=self.memory_gib or 0.0, network_gbps=self.vpc_gbps or 0.0,
            bare_metal=True, eri_count=0, erdma_gbps=None, two_network_cards=False, scc=False, roce_gbps=None,
            low_latency_set=False, uefi_required=False, availability=self.availability, price=self.price,
            source=self.source)


@dataclass(frozen=True, slots=True)
class Region:
    id: str
    name: str
    zones: tuple[str, ...]
    gpu_families: tuple[str, ...]
    cpfs: bool
    lingjun: bool
    oss_upload_gbps: float
    oss_download_gbps: float
    verified: bool
    source: str


@dataclass(frozen=True, slots=True)
class StoragePrice:
    item: str
    unit: str
    price_cny: float
    estimated: bool
    date: str
    region: str
    source: str


@dataclass(frozen=True, slots=True)
class Catalog:
    version: str
    date: str
    instance_types: tuple[InstanceType, ...]
    gpus: tuple[GpuModel, ...]
    regions: tuple[Region, ...]
    storage_prices: tuple[StoragePrice, ...]
    sources: tuple[Source, ...]
    lingjun_types: tuple[LingjunMachineType, ...] = ()

    def instance(self, name: str) -> InstanceType | None:
        """An ECS instance type by name or, failing that, a Lingjun machine type seen as an InstanceType."""
        found = next((t for t in self.instance_types if t.name == name), None)
        if found is None:
            lingjun = self.lingjun_type(name)
            return lingjun.as_instance_type() if lingjun is not None else None
        return found

    def lingjun_type(self, name: str) -> LingjunMachineType | None:
        return next((t for t in self.lingjun_types if t.name == name), None)

    def lingjun_types_in_region(self, region_id: str) -> tuple[LingjunMachineType, ...]:
        """Lingjun machine types the sources show in the region (catalog belief, not stock: confirm with sales)."""
        return tuple(t for t in self.lingjun_types if region_id in t.regions)

    def gpu(self, name_or_alias: str) -> GpuModel | None:
        """Look a GPU up by its name or any alias, ignoring case and surrounding blanks."""
        key = name_or_alias.strip().lower()
        return next((g for g in self.gpus if key == g.name.lower() or key in g.aliases), None)

    def region(self, id: str) -> Region | None:  # noqa: A002 - the API names it "id"
        return next((r for r in self.regions if r.id == id), None)

    def storage_price(self, item: str) -> StoragePrice | None:
        """Look a storage item up by key; '-' and '_' count as the same ("oss-standard" == "oss_standard")."""
        key = _item_key(item)
        return next((s for s in self.storage_prices if _item_key(s.item) == key), None)

    def source(self, tag: str) -> Source | None:
        return next((s for s in self.sources if s.tag == tag), None)

    def types_in_region(self, region_id: str) -> tuple[InstanceType, ...]:
        """Instance types whose family the region is believed to offer (empty for an unknown region).

        This is catalog belief, not stock: check DescribeAvailableResource before deploying.
        """
        region = self.region(region_id)
        if region is None:
            return ()
        return tuple(t for t in self.instance_types if t.family in region.gpu_families)

    def gpu_names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.gpus)

    def region_ids(self) -> tuple[str, ...]:
        return tuple(r.id for r in self.regions)


def _item_key(item: str) -> str:
    return item.strip().lower().replace("-", "_")


# ---------------------------------------------------------------------------------------------------------
# source fields

_TAG_IN_TEXT = re.compile(r"\[([^\[\]]+)\]")


def source_tags(field: str) -> tuple[str, ...]:
    """Source tags cited by a source field.

    A field is either ``TAG|TAG`` or a free-text ``estimate: <method> [TAG]`` whose tags sit in brackets.
    """
    text = field.strip()
    if text.startswith("estimate:"):
        return tuple(t.strip() for m in _TAG_IN_TEXT.findall(text) for t in m.split("|") if t.strip())
    return tuple(t.strip() for t in text.split("|") if t.strip())


# ---------------------------------------------------------------------------------------------------------
# parsing

_Row = dict[str, str]


def _read(path: Path, columns: tuple[str, ...]) -> list[tuple[int, _Row]]:
    """Rows of a CSV file with exactly ``columns`` as header, each with its 1-based line number."""
    if not path.is_file():
        raise CatalogError(f"{path}: file not found")
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header) != columns:
            raise CatalogError(f"{path}:1: header must be {','.join(columns)}; got {header}")
        rows = []
        for cells in reader:
            line = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(columns):
                raise CatalogError(f"{path}:{line}: expected {len(columns)} fields, got {len(cells)}")
            rows.append((line, {k: v.strip() for k, v in zip(columns, cells)}))
    return rows


def _text(v: str) -> str:
    if not v:
        raise ValueError("must not be empty")
    return v


def _bool(v: str) -> bool:
    if v not in ("true", "false"):
        raise ValueError(f"expected true or false, got {v!r}")
    return v == "true"


def _int(v: str) -> int:
    n = int(v)
    if n < 0:
        raise ValueError(f"must be >= 0, got {n}")
    return n


def _float(v: str) -> float:
    x = float(v)
    if x < 0:
        raise ValueError(f"must be >= 0, got {x}")
    return x


def _opt_float(v: str) -> float | None:
    return _float(v) if v else None


def _opt_int(v: str) -> int | None:
    return _int(v) if v else None


def _zone_pairs(v: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in _list(v):
        zone, sep, hpn = item.partition(":")
        if not sep or not zone.strip() or not hpn.strip():
            raise ValueError(f"expected zone:HPN-zone pairs such as cn-wulanchabu-a:A1, got {item!r}")
        pairs.append((zone.strip(), hpn.strip()))
    return tuple(pairs)


def _list(v: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in v.split("|") if x.strip())


def _field(path: Path, line: int, row: _Row, column: str, parse: Callable[[str], object]):
    try:
        return parse(row[column])
    except ValueError as e:
        raise CatalogError(f"{path}:{line}: column {column!r}: {e}") from None


def _parse(path: Path, columns: tuple[str, ...], build: Callable[[Callable[..., object]], object]):
    items = []
    for line, row in _read(path, columns):
        items.append((line, build(lambda column, parse=_text: _field(path, line, row, column, parse))))
    return items


_SOURCE_COLS = ("tag", "description", "url")
_GPU_COLS = ("name", "aliases", "vendor", "memory_gib", "bf16_tflops", "mfu", "interconnect", "source",
             "notes")
_REGION_COLS = ("region", "name", "zones", "gpu_families", "cpfs", "lingjun", "oss_upload_gbps",
                "oss_download_gbps", "verified", "source")
_STORAGE_COLS = ("item", "unit", "price_cny", "price_estimated", "price_date", "price_region", "source")
_INSTANCE_COLS = ("name", "family", "gpu", "gpus", "gpu_memory_gib", "vcpu", "memory_gib", "network_gbps",
                  "bare_metal", "eri_count", "erdma_gbps", "two_network_cards", "scc", "roce_gbps",
                  "low_latency_set", "uefi_required", "availability", "price_cny_hour", "price_estimated",
                  "price_date", "price_region", "price_source", "source")
_LINGJUN_COLS = ("name", "family", "gpu", "gpu_verified", "gpus", "gpu_memory_gib", "vcpu", "memory_gib", "vpc_gbps",
                 "rdma_gbps", "bonds", "regions", "hpn_zones", "payment_types", "availability", "price_cny_hour",
                 "price_estimated", "price_date", "price_region", "price_source", "source", "notes")


def _source(f) -> Source:
    return Source(tag=f("tag"), description=f("description"), url=f("url", str))


def _gpu(f) -> GpuModel:
    return GpuModel(
        name=f("name"),
        aliases=tuple(a.lower() for a in f("aliases", _list)),
        vendor=f("vendor"),
        memory_gib=f("memory_gib", _float),
        bf16_tflops=f("bf16_tflops", _float),
        mfu=f("mfu", _float),
        interconnect=f("interconnect"),
        source=f("source"),
        notes=f("notes", str),
    )


def _region(f) -> Region:
    return Region(
        id=f("region"),
        name=f("name"),
        zones=f("zones", _list),
        gpu_families=f("gpu_families", _list),
        cpfs=f("cpfs", _bool),
        lingjun=f("lingjun", _bool),
        oss_upload_gbps=f("oss_upload_gbps", _float),
        oss_download_gbps=f("oss_download_gbps", _float),
        verified=f("verified", _bool),
        source=f("source"),
    )


def _storage(f) -> StoragePrice:
    return StoragePrice(
        item=f("item"),
        unit=f("unit"),
        price_cny=f("price_cny", _float),
        estimated=f("price_estimated", _bool),
        date=f("price_date"),
        region=f("price_region"),
        source=f("source"),
    )


def _instance(f) -> InstanceType:
    return InstanceType(
        name=f("name"),
        family=f("family"),
        gpu=f("gpu"),
        gpus=f("gpus", _int),
        gpu_memory_gib=f("gpu_memory_gib", _float),
        vcpu=f("vcpu", _int),
        memory_gib=f("memory_gib", _float),
        network_gbps=f("network_gbps", _float),
        bare_metal=f("bare_metal", _bool),
        eri_count=f("eri_count", _int),
        erdma_gbps=f("erdma_gbps", _opt_float),
        two_network_cards=f("two_network_cards", _bool),
        scc=f("scc", _bool),
        roce_gbps=f("roce_gbps", _opt_float),
        low_latency_set=f("low_latency_set", _bool),
        uefi_required=f("uefi_required", _bool),
        availability=f("availability"),
        price=_price(f),
        source=f("source"),
    )


def _price(f) -> Price:
    """The price columns every priced row shares."""
    return Price(
        cny_per_hour=f("price_cny_hour", _float),
        estimated=f("price_estimated", _bool),
        date=f("price_date"),
        region=f("price_region"),
        source=f("price_source"),
    )


def _lingjun(f) -> LingjunMachineType:
    return LingjunMachineType(
        name=f("name"),
        family=f("family"),
        gpu=f("gpu"),
        gpu_verified=f("gpu_verified", _bool),
        gpus=f("gpus", _int),
        gpu_memory_gib=f("gpu_memory_gib", _float),
        vcpu=f("vcpu", _opt_int),
        memory_gib=f("memory_gib", _opt_float),
        vpc_gbps=f("vpc_gbps", _opt_float),
        rdma_gbps=f("rdma_gbps", _opt_float),
        bonds=f("bonds", _opt_int),
        regions=f("regions", _list),
        hpn_zones=f("hpn_zones", _zone_pairs),
        payment_types=f("payment_types", _list),
        availability=f("availability"),
        price=_price(f),
        source=f("source"),
        notes=f("notes", str),
    )


# ---------------------------------------------------------------------------------------------------------
# cross-file checks


def _unique(path: Path, items: list[tuple[int, object]], key: Callable[[object], str]) -> None:
    seen: set[str] = set()
    for line, item in items:
        k = key(item)
        if k in seen:
            raise CatalogError(f"{path}:{line}: duplicate {k!r}")
        seen.add(k)


def _check_tags(path: Path, line: int, tags: set[str], *fields: str) -> None:
    for field in fields:
        cited = source_tags(field)
        if not cited:
            raise CatalogError(f"{path}:{line}: source {field!r} cites no source tag")
        for tag in cited:
            if tag not in tags:
                raise CatalogError(f"{path}:{line}: unknown source tag {tag!r} (not in sources.csv)")


def _check_instance(path: Path, line: int, t: InstanceType, gpus: set[str]) -> None:
    problems = []
    if t.gpu not in gpus:
        problems.append(f"gpu {t.gpu!r} is not in gpus.csv")
    if t.gpus < 1:
        problems.append("gpus must be >= 1")
    if t.availability not in AVAILABILITIES:
        problems.append(f"availability must be one of {', '.join(AVAILABILITIES)}")
    if t.scc != (t.roce_gbps is not None):
        problems.append("roce_gbps is set exactly when scc is true")
    if t.two_network_cards and t.eri_count < 2:
        problems.append("two_network_cards needs eri_count >= 2")
    if t.erdma_gbps is not None and t.eri_count == 0:
        problems.append("erdma_gbps is set but eri_count is 0")
    if problems:
        raise CatalogError(f"{path}:{line}: {t.name}: " + "; ".join(problems))


def _check_lingjun(path: Path, line: int, t: LingjunMachineType, gpus: set[str], regions: dict[str, Region],
                   ecs_names: set[str]) -> None:
    problems = []
    if t.gpu not in gpus:
        problems.append(f"gpu {t.gpu!r} is not in gpus.csv")
    if t.gpus < 1:
        problems.append("gpus must be >= 1")
    if t.availability not in AVAILABILITIES:
        problems.append(f"availability must be one of {', '.join(AVAILABILITIES)}")
    if t.name in ecs_names:
        problems.append("the name is also an ECS instance type")
    if not t.payment_types or any(p not in LINGJUN_PAYMENT_TYPES for p in t.payment_types):
        problems.append(f"payment_types must be one or more of {', '.join(LINGJUN_PAYMENT_TYPES)}")
    for rid in t.regions:
        r = regions.get(rid)
        if r is None:
            problems.append(f"region {rid!r} is not in regions.csv")
        elif not r.lingjun:
            problems.append(f"region {rid} is not marked lingjun=true in regions.csv")
    for zone, _ in t.hpn_zones:
        if not any(zone in regions[rid].zones for rid in t.regions if rid in regions):
            problems.append(f"zone {zone!r} is not a zone of the type's regions")
    if t.regions and not t.hpn_zones:
        problems.append("a type offered in a region needs at least one zone:HPN-zone pair")
    if problems:
        raise CatalogError(f"{path}:{line}: {t.name}: " + "; ".join(problems))


# ---------------------------------------------------------------------------------------------------------
# loading


def load_catalog(data_dir: Path | str | None = None) -> Catalog:
    """Load and check a catalog directory (default: the packaged ``data/v1``, cached).

    Rows are sorted by their key so the result does not depend on row order in the files.
    Raises CatalogError naming ``file:line`` for a malformed row or a dangling reference.
    """
    if data_dir is None:
        return _load_default()
    return _load(Path(data_dir))


@functools.lru_cache(maxsize=1)
def _load_default() -> Catalog:
    return _load(_DEFAULT_DIR)


def _load(root: Path) -> Catalog:
    files = {n: root / f"{n}.csv" for n in ("sources", "gpus", "regions", "storage_prices", "instance_types",
                                            "lingjun_machine_types")}
    sources = _parse(files["sources"], _SOURCE_COLS, _source)
    gpus = _parse(files["gpus"], _GPU_COLS, _gpu)
    regions = _parse(files["regions"], _REGION_COLS, _region)
    storage = _parse(files["storage_prices"], _STORAGE_COLS, _storage)
    instances = _parse(files["instance_types"], _INSTANCE_COLS, _instance)
    lingjun = _parse(files["lingjun_machine_types"], _LINGJUN_COLS, _lingjun)

    _unique(files["sources"], sources, lambda s: s.tag)
    _unique(files["gpus"], gpus, lambda g: g.name)
    _unique(files["gpus"], [(ln, a) for ln, g in gpus for a in {g.name.lower(), *g.aliases}], lambda a: a)
    _unique(files["regions"], regions, lambda r: r.id)
    _unique(files["storage_prices"], storage, lambda s: _item_key(s.item))
    _unique(files["instance_types"], instances, lambda t: t.name)
    _unique(files["lingjun_machine_types"], lingjun, lambda t: t.name)

    tags = {s.tag for _, s in sources}
    gpu_names = {g.name for _, g in gpus}
    families = {t.family for _, t in instances}
    for line, g in gpus:
        _check_tags(files["gpus"], line, tags, g.source)
    for line, s in storage:
        _check_tags(files["storage_prices"], line, tags, s.source)
    for line, r in regions:
        _check_tags(files["regions"], line, tags, r.source)
        unknown = [f for f in r.gpu_families if f not in families]
        if unknown:
            raise CatalogError(f"{files['regions']}:{line}: families not in instance_types.csv: {unknown}")
    for line, t in instances:
        _check_tags(files["instance_types"], line, tags, t.source, t.price.source)
        _check_instance(files["instance_types"], line, t, gpu_names)
    region_map = {r.id: r for _, r in regions}
    ecs_names = {t.name for _, t in instances}
    for line, t in lingjun:
        _check_tags(files["lingjun_machine_types"], line, tags, t.source, t.price.source)
        _check_lingjun(files["lingjun_machine_types"], line, t, gpu_names, region_map, ecs_names)

    def rows(items, key):
        return tuple(sorted((item for _, item in items), key=key))

    return Catalog(
        version=root.name,
        date=_DATES.get(root.name, ""),
        instance_types=rows(instances, lambda t: t.name),
        gpus=rows(gpus, lambda g: g.name),
        regions=rows(regions, lambda r: r.id),
        storage_prices=rows(storage, lambda s: s.item),
        sources=rows(sources, lambda s: s.tag),
        lingjun_types=rows(lingjun, lambda t: t.name),
    )
