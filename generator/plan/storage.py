"""The Storage part: the shared file system (CPFS, Extreme NAS or none), its size, class and throughput, and the
dataset import, with their decisions.

``storage.shared: auto`` resolves here, and the file system actually chosen must obey the same capacity and class
rules (:mod:`generator.spec.limits`) as one the spec names.
"""

from __future__ import annotations

import math

from generator.catalog import Catalog, Region
from generator.plan import refusals, spec_refusals, warns
from generator.plan.fit import Fit, PlanningError
from generator.plan.model import Dataset, Decision, Network, Storage
from generator.plan.warns import PlanWarning
from generator.platforms.base import Capability
from generator.platforms.registry import platform_for
from generator.spec import limits
from generator.spec.limits import CPFS_MIN_GIB, CPFS_STEP_GIB
from generator.spec.model import Spec
from generator.spec.units import human_bytes

CPFS_MBPS_PER_NODE = (
    64  # assumed shared-storage rate per node (data loading, staging, restores); docs/sizing.md
)
CPFS_CLASSES = ("advance_100", "advance_200")
EXTREME_NAS_DEFAULT_GIB = (
    1024  # capacity: auto for Extreme NAS: 1 TiB, within its 100 GiB minimum [DOC-NAS-EXT]
)


def shared_storage_needed(spec: Spec, nodes: int) -> bool:
    """Whether an ECS plan gets a shared file system, so the network plans a storage vSwitch for its NFS protocol
    service or mount target. ``storage.shared: auto`` resolves as :func:`plan_storage` does: a dataset or several
    nodes need one (CPFS, or Extreme NAS where CPFS is not offered)."""
    s = spec.storage
    if s.shared != "auto":
        return s.shared != "none"
    return s.dataset is not None or nodes > 1


def plan_storage(
    spec: Spec,
    catalog: Catalog,
    region: Region,
    zone: str,
    fit: Fit,
    network: Network,
    decisions: list[Decision],
    warnings: list[PlanWarning],
    weights_bytes: int = 0,
) -> Storage:
    """``weights_bytes``: the estimated size of the base weights (:mod:`generator.plan.weights`), which land on the
    shared file system when there is one, so its capacity makes room for them."""
    s = spec.storage
    ds = s.dataset
    kind: str = s.shared  # the spec's choice, then what auto resolves to
    if not platform_for(spec).has(Capability.SHARED_FILE_SYSTEM):  # Lingjun
        return _without_shared_file_system(spec, kind, zone, decisions, weights_bytes)
    if kind == "auto":
        kind, why, cpfs_missing = auto_choice(spec, region, fit.nodes)
        if kind == "none" and weights_bytes:
            why += " (the base weights too)"
        if cpfs_missing and ds is not None:
            warnings.append(warns.CpfsNotOffered(region.id))
    else:
        why = "as the spec asks"
    _check_resolved_storage(spec, kind, weights_bytes)
    if kind == "none":
        decisions.append(Decision("shared storage", "none", why))
        return Storage("none", 0, "", 0, s.mount_path, zone, "compute", None)
    if not any(v.key == "storage" for v in network.vswitches):  # shared_storage_needed and the above disagree
        raise PlanningError([refusals.NoStorageVSwitch(kind).problem()])
    if kind == "cpfs":
        return _cpfs(spec, catalog, fit, why, zone, decisions, warnings, weights_bytes)
    return _extreme_nas(spec, catalog, fit, why, zone, decisions, weights_bytes)


def _without_shared_file_system(
    spec: Spec, kind: str, zone: str, decisions: list[Decision], weights_bytes: int
) -> Storage:
    """The storage of a platform without a shared file system (Lingjun): none, and refused when the spec asks for one
    or for a dataset import."""
    s = spec.storage
    ds = s.dataset
    if kind not in ("auto", "none") or ds is not None:  # validate.check refuses these with hints
        raise PlanningError([refusals.NoSharedFileSystem().problem()])
    why = (
        "Lingjun nodes cannot mount CPFS general-purpose file systems, pulumi-alicloud cannot create CPFS for "
        "Lingjun (bmcpfs: nas.FileSystem has no such type) and trainstack does not mount NAS on Lingjun; "
        "checkpoints still go to OSS. Attach CPFS for Lingjun through PAI if you need a shared file system "
        "[DOC-BMCPFS]"
        if kind == "auto"
        else "as the spec asks"
    )
    _check_resolved_storage(spec, "none", weights_bytes)
    decisions.append(Decision("shared storage", "none", why))
    return Storage("none", 0, "", 0, s.mount_path, zone, "compute", None)


def _cpfs(
    spec: Spec,
    catalog: Catalog,
    fit: Fit,
    why: str,
    zone: str,
    decisions: list[Decision],
    warnings: list[PlanWarning],
    weights_bytes: int,
) -> Storage:
    """A CPFS file system: its capacity (the dataset and the base weights, or the spec's) and throughput (a warning
    when the nodes need more), and the dataset's import through an OSS data flow."""
    s = spec.storage
    ds = s.dataset
    need_mbps = CPFS_MBPS_PER_NODE * fit.nodes
    dataset = None
    cap, storage_type, throughput, source = shared_size(spec, catalog, "cpfs", fit.nodes, weights_bytes)
    per_gib = throughput / cap
    how = (
        "as the spec asks"
        if isinstance(s.capacity, int)
        else f"{'(dataset + base weights)' if weights_bytes else 'dataset'} x1.3 for checkpoints staging and "
        f"growth, at least {CPFS_MIN_GIB} GiB, in {CPFS_STEP_GIB} GiB steps"
    )
    if throughput < need_mbps:
        enough = min(limits.CPFS_LARGEST_GIB, math.ceil(need_mbps / per_gib / CPFS_STEP_GIB) * CPFS_STEP_GIB)
        warnings.append(
            warns.CpfsThroughputShort(throughput, fit.nodes, need_mbps, CPFS_MBPS_PER_NODE, enough)
        )
    decisions.append(
        Decision(
            "shared storage",
            f"CPFS {storage_type}, {cap} GiB, {throughput:,} MB/s",
            f"{why}; capacity: {how}; throughput {per_gib:g} MB/s per GiB of capacity "
            f"[{source}]; mounted over NFS through a protocol service in the storage "
            "vSwitch (up to 32 addresses [DOC-CPFS-PS]), apart from the node addresses",
        )
    )
    if ds is not None:
        flow = max((x for x in (600, 1200, 1500) if x < throughput), default=600)
        dataset = Dataset(ds.source, ds.size, ds.path, flow)
        decisions.append(
            Decision(
                "dataset import",
                f"{ds.source} -> {ds.path}",
                f"a CPFS fileset plus an OSS data flow at {flow} MB/s (below the file system's "
                f"{throughput:,} MB/s) [TF-nas-df]",
            )
        )
        warnings.append(warns.DataflowBucketTag(ds.source.split("/")[2]))
    return Storage("cpfs", cap, storage_type, throughput, s.mount_path, zone, "compute", dataset, "storage")


def _extreme_nas(
    spec: Spec, catalog: Catalog, fit: Fit, why: str, zone: str, decisions: list[Decision], weights_bytes: int
) -> Storage:
    """An Extreme NAS file system: its capacity (room for the base weights, or the spec's) and throughput."""
    s = spec.storage
    cap, storage_type, throughput, source = shared_size(
        spec, catalog, "extreme-nas", fit.nodes, weights_bytes
    )
    if weights_bytes and not isinstance(s.capacity, int):
        why += (
            f"; {cap} GiB holds the base weights (about {human_bytes(weights_bytes)}) with 30% to spare"
            if cap > EXTREME_NAS_DEFAULT_GIB
            else f"; the default {cap} GiB already holds the base weights (about {human_bytes(weights_bytes)}) with "
            "30% to spare, so they do not raise it"
        )
    decisions.append(
        Decision(
            "shared storage",
            f"Extreme NAS {storage_type}, {cap} GiB, {throughput:,} MB/s",
            f"{why}; throughput by capacity [{source}]",
        )
    )
    return Storage(
        "extreme-nas", cap, storage_type, throughput, s.mount_path, zone, "compute", None, "storage"
    )


def auto_kind(spec: Spec, region: Region, nodes: int) -> tuple[str, str]:
    """What ``storage.shared: auto`` resolves to for ``nodes`` nodes, and why (ECS and PAI-DLC plans)."""
    kind, why, _ = auto_choice(spec, region, nodes)
    return kind, why


def auto_choice(spec: Spec, region: Region, nodes: int) -> tuple[str, str, bool]:
    """:func:`auto_kind`'s choice and why, and whether it fell back from CPFS because the region has none (the
    plan warns of that when a dataset was to be imported: ``warns.CpfsNotOffered``)."""
    ds = spec.storage.dataset
    if platform_for(spec).has(Capability.OSS_MOUNT) and ds is not None and ds.size < 2**40:
        kind, why = (
            "extreme-nas",
            (
                "PAI-DLC mounts the OSS dataset directly (a workspace dataset), so no CPFS "
                "import is needed; Extreme NAS holds code, logs and weights shared by the "
                "workers"
            ),
        )
    elif ds is not None and ds.size >= 2**40:
        kind, why = (
            "cpfs",
            f"the {human_bytes(ds.size)} dataset is TB-scale: CPFS serves it to all nodes in parallel",
        )
    elif ds is not None:
        kind, why = "cpfs", "importing a dataset from OSS needs CPFS filesets and data flows"
    elif nodes > 1:
        kind, why = (
            "extreme-nas",
            (
                "several nodes share code, logs and small data; no dataset to stream, so the "
                "cheaper Extreme NAS serves"
            ),
        )
    else:
        kind, why = "none", "one node and no dataset: the node's own disks suffice"
    if kind == "cpfs" and not region.cpfs:
        return "extreme-nas", f"CPFS is not offered in {region.id}; Extreme NAS instead (slower)", True
    return kind, why, False


def shared_kind(spec: Spec, region: Region, nodes: int) -> str:
    """The shared file system a plan of ``nodes`` nodes gets: ``cpfs``, ``extreme-nas`` or ``none``."""
    if not platform_for(spec).has(Capability.SHARED_FILE_SYSTEM):
        return "none"
    return auto_kind(spec, region, nodes)[0] if spec.storage.shared == "auto" else spec.storage.shared


def shared_size(
    spec: Spec, catalog: Catalog, kind: str, nodes: int, weights_bytes: int = 0
) -> tuple[int, str, int, str]:
    """Capacity (GiB), storage class, throughput (MB/s) and the throughput's source tags of the shared file system
    of ``kind``: the catalog's ``storage_throughput.csv`` (CPFS per GiB of capacity up to a ceiling
    [DOC-CPFS-SPEC]; Extreme NAS in steps by capacity [DOC-NAS-EXT]). 0 MB/s when the catalog has no row.
    ``weights_bytes``: the base weights (:mod:`generator.plan.weights`) that land there, so the capacity makes
    room for them (x1.3, like the dataset)."""
    s, ds = spec.storage, spec.storage.dataset
    if kind == "cpfs":
        cap = (
            int(s.capacity / 2**30)
            if isinstance(s.capacity, int)
            else limits.cpfs_capacity_for_dataset(((ds.size if ds else 0) + weights_bytes) or None)
        )
        # The storage class is immutable and CPFS cannot shrink, so neither may depend on the node count beyond
        # "one node or several": changing `nodes` in a spec must never replace the file system with the dataset.
        storage_type = (
            s.storage_class
            if s.storage_class in CPFS_CLASSES
            else ("advance_200" if nodes > 1 else "advance_100")
        )
        item = f"cpfs-{storage_type}"
    else:
        cap = (
            int(s.capacity / 2**30)
            if isinstance(s.capacity, int)
            else max(EXTREME_NAS_DEFAULT_GIB, math.ceil(weights_bytes / 2**30 * limits.DATASET_HEADROOM))
        )
        storage_type = s.storage_class if s.storage_class in ("standard", "advance") else "standard"
        item = "nas-extreme"
    found = catalog.shared_throughput(item, cap)
    mbps, source = found if found is not None else (0, "no throughput in the catalog")
    return cap, storage_type, mbps, source


def _check_resolved_storage(spec: Spec, kind: str, weights_bytes: int = 0) -> None:
    """The capacity and class rules of the file system actually chosen (``shared: auto`` resolves here).

    A capacity the plan derives (``capacity: auto``) obeys the same rule as one the spec gives; when it breaks it,
    the problem is the field it was derived from, ``storage.dataset.size``."""
    s = spec.storage
    problems = []
    if isinstance(s.capacity, int):
        gib = s.capacity / 2**30
        if kind == "none":
            problems.append(refusals.CapacityWithoutFileSystem().problem())
        elif kind in ("cpfs", "extreme-nas"):
            if limits.capacity_problem(kind, gib):
                problems.append(spec_refusals.CapacityOutOfRange(kind, gib, True).problem())
            elif kind == "cpfs" and s.dataset is not None and s.dataset.size > s.capacity:
                fix = limits.accepted_capacity("cpfs", s.dataset.size / 2**30)
                problems.append(
                    refusals.DatasetOverCapacity(
                        s.dataset.size, gib, fix, limits.largest_cpfs_dataset_tib()
                    ).problem()
                )
    elif kind == "cpfs" and s.dataset is not None and limits.dataset_capacity_problem(s.dataset.size):
        problems.append(spec_refusals.DatasetOverCpfs(s.dataset.size).problem())
    if weights_bytes and isinstance(s.capacity, int) and kind in ("cpfs", "extreme-nas") and not problems:
        need = weights_bytes + (s.dataset.size if s.dataset is not None and kind == "cpfs" else 0)
        if need > s.capacity:
            fix = limits.accepted_capacity(kind, need * limits.DATASET_HEADROOM / 2**30)
            problems.append(
                refusals.WeightsOverCapacity(
                    weights_bytes, need > weights_bytes, s.capacity / 2**30, fix
                ).problem()
            )
    if kind == "cpfs" and s.storage_class in ("standard", "advance"):
        problems.append(refusals.StorageClassMismatch(kind, s.storage_class).problem())
    if kind == "extreme-nas" and s.storage_class in ("advance_100", "advance_200"):
        problems.append(refusals.StorageClassMismatch(kind, s.storage_class).problem())
    if problems:
        raise PlanningError(problems)
