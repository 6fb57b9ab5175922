"""The Storage part: the shared file system (CPFS, Extreme NAS or none), its size, class and throughput, and the
dataset import, with their decisions.

``storage.shared: auto`` resolves here, and the file system actually chosen must obey the same capacity and class
rules (:mod:`generator.spec.limits`) as one the spec names.
"""

from __future__ import annotations

import math

from generator.catalog import Catalog, Region
from generator.errors import Problem
from generator.plan.fit import Fit, PlanningError
from generator.plan.model import Dataset, Decision, Network, Storage
from generator.spec import limits
from generator.spec.limits import CPFS_MIN_GIB, CPFS_STEP_GIB
from generator.spec.model import Spec
from generator.spec.units import human_bytes

CPFS_MBPS_PER_NODE = 64  # assumed shared-storage rate per node (data loading, staging, restores); docs/sizing.md


def shared_storage_needed(spec: Spec, nodes: int) -> bool:
    """Whether an ECS plan gets a shared file system, so the network plans a storage vSwitch for its NFS protocol
    service or mount target. ``storage.shared: auto`` resolves as :func:`plan_storage` does: a dataset or several
    nodes need one (CPFS, or Extreme NAS where CPFS is not offered)."""
    s = spec.storage
    if s.shared != "auto":
        return s.shared != "none"
    return s.dataset is not None or nodes > 1


def plan_storage(spec: Spec, catalog: Catalog, region: Region, zone: str, fit: Fit, network: Network,
                 decisions: list[Decision], warnings: list[str]) -> Storage:
    s = spec.storage
    ds = s.dataset
    kind = s.shared
    if spec.compute.platform == "lingjun":
        if kind not in ("auto", "none") or ds is not None:  # validate.check refuses these with hints
            raise PlanningError([Problem(("storage", "shared"), "Lingjun plans have no shared file system",
                                         "set storage.shared: none and remove storage.dataset")])
        why = ("Lingjun nodes cannot mount CPFS general-purpose file systems, pulumi-alicloud cannot create CPFS for "
               "Lingjun (bmcpfs: nas.FileSystem has no such type) and trainstack does not mount NAS on Lingjun; "
               "checkpoints still go to OSS. Attach CPFS for Lingjun through PAI if you need a shared file system "
               "[DOC-BMCPFS]" if kind == "auto" else "as the spec asks")
        _check_resolved_storage(spec, "none")
        decisions.append(Decision("shared storage", "none", why))
        return Storage("none", 0, "", 0, s.mount_path, zone, "compute", None)
    dlc = spec.compute.platform == "pai-dlc"
    if kind == "auto":
        if dlc and ds is not None and ds.size < 2**40:
            kind, why = "extreme-nas", ("PAI-DLC mounts the OSS dataset directly (a workspace dataset), so no CPFS "
                                        "import is needed; Extreme NAS holds code, logs and weights shared by the "
                                        "workers")
        elif ds is not None and ds.size >= 2**40:
            kind, why = "cpfs", f"the {human_bytes(ds.size)} dataset is TB-scale: CPFS serves it to all nodes in parallel"
        elif ds is not None:
            kind, why = "cpfs", "importing a dataset from OSS needs CPFS filesets and data flows"
        elif fit.nodes > 1:
            kind, why = "extreme-nas", "several nodes share code, logs and small data; no dataset to stream, so the " \
                                       "cheaper Extreme NAS serves"
        else:
            kind, why = "none", "one node and no dataset: the node's own disks suffice"
        if kind == "cpfs" and not region.cpfs:
            kind, why = "extreme-nas", f"CPFS is not offered in {region.id}; Extreme NAS instead (slower)"
            warnings.append(f"CPFS is not offered in {region.id}; large datasets will read slowly from Extreme NAS")
    else:
        why = "as the spec asks"
    _check_resolved_storage(spec, kind)
    if kind == "none":
        decisions.append(Decision("shared storage", "none", why))
        return Storage("none", 0, "", 0, s.mount_path, zone, "compute", None)
    if not any(v.key == "storage" for v in network.vswitches):  # shared_storage_needed and the above disagree
        raise PlanningError([Problem(("storage", "shared"), f"internal: the network plan has no storage vSwitch for "
                                     f"the {kind} file system")])
    need_mbps = CPFS_MBPS_PER_NODE * fit.nodes
    dataset = None
    if kind == "cpfs":
        if isinstance(s.capacity, int):
            cap = int(s.capacity / 2**30)
            how = "as the spec asks"
        else:
            cap = limits.cpfs_capacity_for_dataset(ds.size if ds else None)  # within the maximum: checked above
            how = f"dataset x1.3 for checkpoints staging and growth, at least {CPFS_MIN_GIB} GiB, in {CPFS_STEP_GIB} GiB steps"
        # The storage class is immutable and CPFS cannot shrink, so neither may depend on the node count beyond
        # "one node or several": changing `nodes` in a spec must never replace the file system with the dataset.
        storage_type = s.storage_class if s.storage_class != "auto" else (
            "advance_200" if fit.nodes > 1 else "advance_100")
        per_gib = 0.2 if storage_type == "advance_200" else 0.1
        ceiling = 45_000 if storage_type == "advance_200" else 30_000
        throughput = int(min(per_gib * cap, ceiling))
        if throughput < need_mbps:
            enough = min(limits.CPFS_LARGEST_GIB, math.ceil(need_mbps / per_gib / CPFS_STEP_GIB) * CPFS_STEP_GIB)
            warnings.append(f"CPFS gives {throughput:,} MB/s; {fit.nodes} nodes may want {need_mbps:,} MB/s "
                            f"(assumed {CPFS_MBPS_PER_NODE} MB/s per node): set storage.capacity: {enough}GiB "
                            "if data loading stalls (capacity can grow later, never shrink)")
        decisions.append(Decision("shared storage", f"CPFS {storage_type}, {cap} GiB, {throughput:,} MB/s",
                                  f"{why}; capacity: {how}; throughput {int(per_gib * 1000)} MB/s per TiB "
                                  f"[DOC-CPFS-SPEC]; mounted over NFS through a protocol service in the storage "
                                  "vSwitch (up to 32 addresses [DOC-CPFS-PS]), apart from the node addresses"))
        if ds is not None:
            flow = max((x for x in (600, 1200, 1500) if x < throughput), default=600)
            dataset = Dataset(ds.source, ds.size, ds.path, flow)
            decisions.append(Decision("dataset import", f"{ds.source} -> {ds.path}",
                                      f"a CPFS fileset plus an OSS data flow at {flow} MB/s (below the file system's "
                                      f"{throughput:,} MB/s) [TF-nas-df]"))
            warnings.append(f"before `trainstack up`, tag the dataset bucket {ds.source.split('/')[2]} with "
                            "cpfs-dataflow=true: a CPFS data flow cannot read a bucket without that tag (Alibaba "
                            "Cloud, 'Manage dataflows', 2025-11); trainstack does not own that bucket")
        return Storage("cpfs", cap, storage_type, throughput, s.mount_path, zone, "compute", dataset, "storage")
    # Extreme NAS
    cap = int(s.capacity / 2**30) if isinstance(s.capacity, int) else max(100, 1024)
    storage_type = s.storage_class if s.storage_class in ("standard", "advance") else "standard"
    throughput = _extreme_throughput(cap)
    decisions.append(Decision("shared storage", f"Extreme NAS {storage_type}, {cap} GiB", f"{why} [DOC-NAS-EXT]"))
    return Storage("extreme-nas", cap, storage_type, throughput, s.mount_path, zone, "compute", None, "storage")


def _check_resolved_storage(spec: Spec, kind: str) -> None:
    """The capacity and class rules of the file system actually chosen (``shared: auto`` resolves here).

    A capacity the plan derives (``capacity: auto``) obeys the same rule as one the spec gives; when it breaks it,
    the problem is the field it was derived from, ``storage.dataset.size``."""
    s = spec.storage
    problems = []
    if isinstance(s.capacity, int):
        gib = s.capacity / 2**30
        if kind == "none":
            problems.append(Problem(("storage", "capacity"), "a capacity is set but the plan needs no shared file "
                                    "system", "remove capacity, or set storage.shared: cpfs or extreme-nas"))
        elif kind in ("cpfs", "extreme-nas"):
            wrong = limits.capacity_problem(kind, gib)
            if wrong:
                what = "CPFS" if kind == "cpfs" else "Extreme NAS"
                problems.append(Problem(("storage", "capacity"), f"storage.shared: auto chose {what}; {wrong[0]}",
                                        wrong[1]))
            elif kind == "cpfs" and s.dataset is not None and s.dataset.size > s.capacity:
                fix = limits.accepted_capacity("cpfs", s.dataset.size / 2**30)
                problems.append(Problem(("storage", "capacity"), f"the {human_bytes(s.dataset.size)} dataset does not "
                                        f"fit in a CPFS capacity of {gib:.10g} GiB",
                                        f"use {fix}GiB" if fix * 2**30 >= s.dataset.size else
                                        f"import at most {limits.largest_cpfs_dataset_tib()}TiB"))
    elif kind == "cpfs" and s.dataset is not None:
        wrong = limits.dataset_capacity_problem(s.dataset.size)
        if wrong:
            problems.append(Problem(("storage", "dataset", "size"), *wrong))
    if kind == "cpfs" and s.storage_class in ("standard", "advance"):
        problems.append(Problem(("storage", "storage_class"), f"the plan uses CPFS, which takes advance_100 or "
                                f"advance_200, not {s.storage_class}"))
    if kind == "extreme-nas" and s.storage_class in ("advance_100", "advance_200"):
        problems.append(Problem(("storage", "storage_class"), f"the plan uses Extreme NAS, which takes standard or "
                                f"advance, not {s.storage_class}"))
    if problems:
        raise PlanningError(problems)


def _extreme_throughput(cap_gib: int) -> int:
    # bandwidth steps of Extreme NAS by capacity [DOC-NAS-EXT] (which edition the table describes is unverified)
    for limit, mbps in ((500, 150), (2048, 300), (8192, 600)):
        if cap_gib < limit:
            return mbps
    return 1200
