"""The catalog's data model: frozen dataclasses for sources, GPUs, prices, ECS instance types, their families'
documented jumbo-frame support, Lingjun machine types, regions and storage prices, and the :class:`Catalog` that
holds them and answers read-only queries.

Standard library only; :mod:`generator.catalog.load` builds these from the CSV files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from generator.catalog.unavailable import UnavailableAccelerator, find_unavailable

AVAILABILITIES = ("ga", "contact-sales", "invite")
LINGJUN_PAYMENT_TYPES = ("PayAsYouGo", "Subscription")  # eflo.Node payment_type values [PU-EFLO]
JUMBO_SUPPORT = ("yes", "no", "unknown")  # a family's documented jumbo-frame support (jumbo_frames.csv)
JUMBO_BASES = {
    "named": ("yes", "no"),
    "generation": ("yes",),
    "not-listed": ("unknown",),
}  # basis -> allowed support


class CatalogError(ValueError):
    """A catalog file is missing, malformed, or refers to something that does not exist."""


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
    bf16: bool  # has bf16 tensor cores (Ampere and newer); False for V100, which trains in fp16 only
    mfu: float  # model-FLOPs utilisation the planner assumes for this GPU
    interconnect: str  # "nvlink" | "pcie"
    source: str
    notes: str
    fp8_tflops: float | None = None  # dense FP8 peak; None: no FP8 tensor cores (A100, A10, V100)

    def peak_tflops(self, precision: str) -> float:
        """The dense tensor peak the run's precision computes at: FP8 for ``fp8``, else the 16-bit peak."""
        if precision == "fp8" and self.fp8_tflops:
            return self.fp8_tflops
        return self.bf16_tflops


@dataclass(frozen=True, slots=True)
class Price:
    cny_per_hour: float
    estimated: bool
    date: str
    region: str
    source: str


_BORROWED_RATE = re.compile(r"at [0-9.]+ x the (\S+) rate")


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
    jumbo_frames: str = "unknown"  # the family's documented jumbo-frame support: "yes", "no" or "unknown"
    jumbo_source: str = ""  # the source tags behind jumbo_frames (jumbo_frames.csv)

    @property
    def rdma(self) -> bool:
        """True if the type has an RDMA fabric: eRDMA through ERIs, or RoCE on SCC."""
        return self.eri_count > 0 or self.scc

    @property
    def price_borrowed_from(self) -> str | None:
        """The GPU model whose per-GPU rate this type's estimated price was scaled from, when it is another GPU's
        (the catalog prices H20, L20 and Blackwell types "at N x the A100-80G rate", data/v1/README.md), else None:
        such a price says nothing about how the two GPU families compare."""
        if not self.price.estimated:
            return None
        m = _BORROWED_RATE.search(self.price.source)
        return m.group(1) if m and m.group(1) != self.gpu else None

    @property
    def total_gpu_memory_gib(self) -> float:
        return self.gpus * self.gpu_memory_gib

    @property
    def host_to_gpu_memory_ratio(self) -> float:
        return self.memory_gib / self.total_gpu_memory_gib


@dataclass(frozen=True, slots=True)
class JumboFrames:
    """What the sources say about jumbo frames (MTU 8500) on one ECS instance family (``jumbo_frames.csv``).

    ``basis`` is ``named`` (a page names the family), ``generation`` (covered only by the jumbo-frame page's
    "9th-generation and later" rule) or ``not-listed`` (no page read names it, so support is unknown)."""

    family: str
    support: str  # "yes", "no" or "unknown"
    basis: str
    source: str
    notes: str


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
            name=self.name,
            family=self.family,
            gpu=self.gpu,
            gpus=self.gpus,
            gpu_memory_gib=self.gpu_memory_gib,
            vcpu=self.vcpu or 0,
            memory_gib=self.memory_gib or 0.0,
            network_gbps=self.vpc_gbps or 0.0,
            bare_metal=True,
            eri_count=0,
            erdma_gbps=None,
            two_network_cards=False,
            scc=False,
            roce_gbps=None,
            low_latency_set=False,
            uefi_required=False,
            availability=self.availability,
            price=self.price,
            source=self.source,
        )


@dataclass(frozen=True, slots=True)
class DlcSpec:
    """An ECS GPU instance type that PAI-DLC's public resources offer as a worker spec (``JobSpecs[].EcsSpec``).

    The type's shape and price are its ``instance_types.csv`` row; this row only says DLC offers it, how sure that
    is (``verified``) and where it comes from. See ``dlc_specs.csv`` in the data README."""

    name: str  # an instance_types.csv name
    verified: bool  # False: the type is believed, not documented, to be on DLC's public resource list
    source: str
    date: str
    notes: str


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
class StorageThroughput:
    """One row of a shared file system's throughput: per GiB of capacity (with a ceiling), or a fixed step for
    capacities below ``capacity_below_gib`` (None: no upper bound)."""

    item: str
    capacity_below_gib: float | None
    mbps_per_gib: float | None
    mbps: float | None
    max_mbps: float | None
    source: str
    notes: str


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
    jumbo_frames: tuple[JumboFrames, ...] = ()
    unavailable: tuple[UnavailableAccelerator, ...] = ()  # accelerators no Alibaba Cloud product offers
    dlc_specs: tuple[DlcSpec, ...] = ()
    storage_throughput: tuple[StorageThroughput, ...] = ()

    def shared_throughput(self, item: str, capacity_gib: float) -> tuple[int, str] | None:
        """The throughput (MB/s) of a shared file system item (``cpfs-advance_200``, ``nas-extreme``...) of a
        capacity, and its source tags; None when the catalog has no row for it."""
        key = _item_key(item)
        for row in sorted(
            (r for r in self.storage_throughput if _item_key(r.item) == key),
            key=lambda r: r.capacity_below_gib if r.capacity_below_gib is not None else float("inf"),
        ):
            if row.capacity_below_gib is not None and capacity_gib >= row.capacity_below_gib:
                continue
            if row.mbps_per_gib is not None:
                mbps = row.mbps_per_gib * capacity_gib
                return int(min(mbps, row.max_mbps) if row.max_mbps is not None else mbps), row.source
            return int(row.mbps or 0), row.source
        return None

    def jumbo(self, family: str) -> JumboFrames | None:
        """The documented jumbo-frame support of an ECS instance family (None: the family is not in the catalog)."""
        return next((j for j in self.jumbo_frames if j.family == family), None)

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

    def unavailable_accelerator(self, name: str) -> UnavailableAccelerator | None:
        """An accelerator no Alibaba Cloud product offers, by name or alias (case, blanks, '-' and '_' ignored)."""
        return find_unavailable(self.unavailable, name)

    def region(self, id: str) -> Region | None:
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

    def dlc_spec(self, name: str) -> DlcSpec | None:
        """The DLC public-resource row of an ECS instance type (None: DLC is not known to offer it)."""
        return next((d for d in self.dlc_specs if d.name == name), None)

    def dlc_types_in_region(self, region_id: str) -> tuple[InstanceType, ...]:
        """ECS GPU types the region offers (catalog belief) that DLC's public resources are listed with."""
        names = {d.name for d in self.dlc_specs}
        return tuple(t for t in self.types_in_region(region_id) if t.name in names)

    def gpu_names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.gpus)

    def region_ids(self) -> tuple[str, ...]:
        return tuple(r.id for r in self.regions)


def _item_key(item: str) -> str:
    return item.strip().lower().replace("-", "_")
