"""Loading the catalog: parsing and checking the versioned CSV files in ``data/<version>/`` into a
:class:`~generator.catalog.model.Catalog`, with ``file:line`` in every error.

Every column, unit, source tag and estimation method is described in ``data/v1/README.md``. Standard library
only.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import re
from collections.abc import Callable
from pathlib import Path

from generator.catalog.checks import (
    check_instance,
    check_jumbo,
    check_lingjun,
    check_tags,
    unique,
)
from generator.catalog.model import (
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
    _item_key,
)
from generator.catalog.unavailable import UNAVAILABLE_COLS, UnavailableAccelerator, accelerator_key

CATALOG_VERSION = "v1"
CATALOG_DATE = "2026-11-29"
_DATES = {"v1": CATALOG_DATE}
_DEFAULT_DIR = Path(__file__).resolve().parent / "data" / CATALOG_VERSION


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
            rows.append((line, {k: v.strip() for k, v in zip(columns, cells, strict=True)}))
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
        items.append(
            (
                line,
                build(lambda column, parse=_text, line=line, row=row: _field(path, line, row, column, parse)),
            )
        )
    return items


_SOURCE_COLS = ("tag", "description", "url")
_GPU_COLS = (
    "name",
    "aliases",
    "vendor",
    "memory_gib",
    "bf16_tflops",
    "bf16",
    "fp8_tflops",
    "mfu",
    "interconnect",
    "source",
    "notes",
)
_REGION_COLS = (
    "region",
    "name",
    "zones",
    "gpu_families",
    "cpfs",
    "lingjun",
    "oss_upload_gbps",
    "oss_download_gbps",
    "verified",
    "source",
)
_STORAGE_COLS = ("item", "unit", "price_cny", "price_estimated", "price_date", "price_region", "source")
_THROUGHPUT_COLS = ("item", "capacity_below_gib", "mbps_per_gib", "mbps", "max_mbps", "source", "notes")
_INSTANCE_COLS = (
    "name",
    "family",
    "gpu",
    "gpus",
    "gpu_memory_gib",
    "vcpu",
    "memory_gib",
    "network_gbps",
    "bare_metal",
    "eri_count",
    "erdma_gbps",
    "two_network_cards",
    "scc",
    "roce_gbps",
    "low_latency_set",
    "uefi_required",
    "availability",
    "price_cny_hour",
    "price_estimated",
    "price_date",
    "price_region",
    "price_source",
    "source",
)
_JUMBO_COLS = ("family", "jumbo_frames", "basis", "source", "notes")
_LINGJUN_COLS = (
    "name",
    "family",
    "gpu",
    "gpu_verified",
    "gpus",
    "gpu_memory_gib",
    "vcpu",
    "memory_gib",
    "vpc_gbps",
    "rdma_gbps",
    "bonds",
    "regions",
    "hpn_zones",
    "payment_types",
    "availability",
    "price_cny_hour",
    "price_estimated",
    "price_date",
    "price_region",
    "price_source",
    "source",
    "notes",
)


def _source(f) -> Source:
    return Source(tag=f("tag"), description=f("description"), url=f("url", str))


def _gpu(f) -> GpuModel:
    return GpuModel(
        name=f("name"),
        aliases=tuple(a.lower() for a in f("aliases", _list)),
        vendor=f("vendor"),
        memory_gib=f("memory_gib", _float),
        bf16_tflops=f("bf16_tflops", _float),
        bf16=f("bf16", _bool),
        fp8_tflops=f("fp8_tflops", _opt_float),
        mfu=f("mfu", _float),
        interconnect=f("interconnect"),
        source=f("source"),
        notes=f("notes", str),
    )


def _unavailable(f) -> UnavailableAccelerator:
    return UnavailableAccelerator(
        name=f("name"),
        aliases=tuple(a.lower() for a in f("aliases", _list)),
        vendor=f("vendor"),
        memory_gib=f("memory_gib", _float),
        bf16_tflops=f("bf16_tflops", _float),
        offered_by=f("offered_by"),
        alibaba=f("alibaba"),
        checked=f("checked", _date),
        source=f("source"),
        notes=f("notes", str),
    )


def _date(v: str) -> str:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
        raise ValueError(f"expected a date YYYY-MM-DD, got {v!r}")
    return v


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


def _throughput(f) -> StorageThroughput:
    return StorageThroughput(
        item=f("item"),
        capacity_below_gib=f("capacity_below_gib", _opt_float),
        mbps_per_gib=f("mbps_per_gib", _opt_float),
        mbps=f("mbps", _opt_float),
        max_mbps=f("max_mbps", _opt_float),
        source=f("source"),
        notes=f("notes", str),
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


def _jumbo(f) -> JumboFrames:
    return JumboFrames(
        family=f("family"),
        support=f("jumbo_frames"),
        basis=f("basis"),
        source=f("source"),
        notes=f("notes", str),
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


_DLC_COLS = ("name", "verified", "source", "date", "notes")


def _dlc(f) -> DlcSpec:
    return DlcSpec(
        name=f("name"),
        verified=f("verified", _bool),
        source=f("source"),
        date=f("date"),
        notes=f("notes", str),
    )


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
    """Parse every CSV of the catalog folder ``root`` and check the references between them.

    Length: each file is parsed with its own row parser, then the cross-file checks (unique keys, dangling GPU,
    region and source references) run in the order their errors read; each is one or two lines.
    """
    files = {
        n: root / f"{n}.csv"
        for n in (
            "sources",
            "gpus",
            "regions",
            "storage_prices",
            "instance_types",
            "lingjun_machine_types",
            "jumbo_frames",
            "dlc_specs",
            "storage_throughput",
            "unavailable_accelerators",
        )
    }
    sources = _parse(files["sources"], _SOURCE_COLS, _source)
    gpus = _parse(files["gpus"], _GPU_COLS, _gpu)
    regions = _parse(files["regions"], _REGION_COLS, _region)
    storage = _parse(files["storage_prices"], _STORAGE_COLS, _storage)
    instances = _parse(files["instance_types"], _INSTANCE_COLS, _instance)
    lingjun = _parse(files["lingjun_machine_types"], _LINGJUN_COLS, _lingjun)
    jumbo = _parse(files["jumbo_frames"], _JUMBO_COLS, _jumbo)
    unavailable = _parse(files["unavailable_accelerators"], UNAVAILABLE_COLS, _unavailable)
    dlc = _parse(files["dlc_specs"], _DLC_COLS, _dlc)
    throughput = _parse(files["storage_throughput"], _THROUGHPUT_COLS, _throughput)

    unique(files["sources"], sources, lambda s: s.tag)
    unique(files["gpus"], gpus, lambda g: g.name)
    unique(files["gpus"], [(ln, a) for ln, g in gpus for a in {g.name.lower(), *g.aliases}], lambda a: a)
    unique(files["regions"], regions, lambda r: r.id)
    unique(files["storage_prices"], storage, lambda s: _item_key(s.item))
    unique(files["instance_types"], instances, lambda t: t.name)
    unique(files["lingjun_machine_types"], lingjun, lambda t: t.name)
    unique(files["jumbo_frames"], jumbo, lambda j: j.family)
    unique(files["dlc_specs"], dlc, lambda d: d.name)

    tags = {s.tag for _, s in sources}
    gpu_names = {g.name for _, g in gpus}
    families = {t.family for _, t in instances}
    for line, g in gpus:
        check_tags(files["gpus"], line, tags, g.source)
    for line, s in storage:
        check_tags(files["storage_prices"], line, tags, s.source)
    for line, r in regions:
        check_tags(files["regions"], line, tags, r.source)
        unknown = [f for f in r.gpu_families if f not in families]
        if unknown:
            raise CatalogError(f"{files['regions']}:{line}: families not in instance_types.csv: {unknown}")
    for line, t in instances:
        check_tags(files["instance_types"], line, tags, t.source, t.price.source)
        check_instance(files["instance_types"], line, t, gpu_names)
    for line, j in jumbo:
        check_tags(files["jumbo_frames"], line, tags, j.source)
    for line, x in throughput:
        check_tags(files["storage_throughput"], line, tags, x.source)
        if (x.mbps_per_gib is None) == (x.mbps is None):
            raise CatalogError(
                f"{files['storage_throughput']}:{line}: give mbps_per_gib or mbps, not both or neither"
            )
    check_jumbo(files["jumbo_frames"], jumbo, families)
    by_family = {j.family: j for _, j in jumbo}
    instances = [
        (
            line,
            dataclasses.replace(
                t, jumbo_frames=by_family[t.family].support, jumbo_source=by_family[t.family].source
            ),
        )
        for line, t in instances
    ]
    region_map = {r.id: r for _, r in regions}
    ecs_names = {t.name for _, t in instances}
    for line, t in lingjun:
        check_tags(files["lingjun_machine_types"], line, tags, t.source, t.price.source)
        check_lingjun(files["lingjun_machine_types"], line, t, gpu_names, region_map, ecs_names)
    for line, d in dlc:
        check_tags(files["dlc_specs"], line, tags, d.source)
        if d.name not in ecs_names:
            raise CatalogError(f"{files['dlc_specs']}:{line}: {d.name!r} is not in instance_types.csv")

    offered = {accelerator_key(a) for _, g in gpus for a in (g.name, *g.aliases)}
    for line, a in unavailable:
        check_tags(files["unavailable_accelerators"], line, tags, a.source)
        if a.keys() & offered:
            raise CatalogError(
                f"{files['unavailable_accelerators']}:{line}: {a.name} is also a GPU of gpus.csv: "
                f"{sorted(a.keys() & offered)}"
            )
    unavailable_keys = [(ln, k) for ln, a in unavailable for k in a.keys()]  # noqa: SIM118 (a method)
    unique(files["unavailable_accelerators"], unavailable_keys, lambda k: k)

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
        jumbo_frames=rows(jumbo, lambda j: j.family),
        unavailable=rows(unavailable, lambda a: a.name),
        dlc_specs=rows(dlc, lambda d: d.name),
        storage_throughput=rows(throughput, lambda x: (x.item, x.capacity_below_gib or float("inf"))),
    )
