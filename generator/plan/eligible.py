"""The instance types a spec allows in its region (ECS and DLC worker types, or Lingjun machine types), and why
each type it names but cannot use is refused (:mod:`generator.plan.rejections`).

It exists apart from :mod:`generator.plan.layout` because eligibility is a filter over the catalog that needs no
sizing: the fit search starts from its answer.
"""

from __future__ import annotations

from generator.catalog import Catalog, GpuModel, InstanceType, LingjunMachineType, Region
from generator.plan import rejections as r
from generator.platforms.base import Capability
from generator.platforms.registry import platform_for
from generator.spec.model import ComputeSpec, Spec


def eligible(
    spec: Spec, catalog: Catalog, region: Region
) -> tuple[list[InstanceType], dict[str, r.Rejection]]:
    c = spec.compute
    platform = platform_for(spec)
    if platform.has(Capability.HPN):
        return eligible_lingjun(spec, catalog, region)
    rejected: dict[str, r.Rejection] = {}
    wanted_gpu = catalog.gpu(c.gpu) if c.gpu != "auto" else None
    allow = set(c.instance_types)
    dlc = platform.has(
        Capability.DLC_WORKERS
    )  # DLC workers: the ECS types on DLC's public resource list (dlc_specs.csv)
    in_region = {t.name for t in catalog.types_in_region(region.id)}
    offered = {t.name for t in catalog.dlc_types_in_region(region.id)} if dlc else in_region
    out = []
    for t in catalog.instance_types:
        if allow and t.name not in allow:
            continue
        if t.name not in offered:
            if allow:
                rejected[t.name] = r.NotOnDlc() if dlc and t.name in in_region else r.NotOffered(region.id)
            continue
        if not wanted(c, t, wanted_gpu):
            continue
        if not precision_ok(spec, catalog, t):
            rejected[t.name] = r.NoPrecision(spec.model.precision, t.gpu)
            continue
        if t.availability == "invite" and t.name not in allow:
            rejected[t.name] = r.InviteOnly()
            continue
        if c.bare_metal == "require" and not t.bare_metal:
            continue
        if c.bare_metal == "avoid" and t.bare_metal:
            continue
        if spec.network.rdma is True and not t.rdma:
            rejected[t.name] = r.RdmaRequired()
            continue
        out.append(t)
    return out, rejected


def wanted(c: ComputeSpec, t: InstanceType | LingjunMachineType, wanted_gpu: GpuModel | None) -> bool:
    """The spec's GPU model and GPUs-per-node filters, shared by ECS and Lingjun types."""
    if wanted_gpu is not None and t.gpu != wanted_gpu.name:
        return False
    return not (isinstance(c.gpus_per_node, int) and t.gpus != c.gpus_per_node)


def precision_ok(spec: Spec, catalog: Catalog, t: InstanceType | LingjunMachineType) -> bool:
    """bf16 training needs bf16 tensor cores (gpus.csv column ``bf16``: V100 has none)."""
    gpu = catalog.gpu(t.gpu)
    if gpu is None:
        return True
    if spec.model.precision == "fp8":  # FP8 tensor cores (gpus.csv fp8_tflops): Ada, Hopper, Blackwell
        return bool(gpu.fp8_tflops)
    return spec.model.precision != "bf16" or gpu.bf16


def eligible_lingjun(
    spec: Spec, catalog: Catalog, region: Region
) -> tuple[list[InstanceType], dict[str, r.Rejection]]:
    """Lingjun machine types of the region that pass the spec's filters and have a known HPN zone it allows."""
    c = spec.compute
    rejected: dict[str, r.Rejection] = {}
    wanted_gpu = catalog.gpu(c.gpu) if c.gpu != "auto" else None
    allow = set(c.instance_types)
    out = []
    for t in catalog.lingjun_types:
        if allow and t.name not in allow:
            continue
        if region.id not in t.regions:
            if allow:
                rejected[t.name] = r.NotOffered(region.id)
            continue
        if not wanted(c, t, wanted_gpu):
            continue
        if not precision_ok(spec, catalog, t):
            rejected[t.name] = r.NoPrecision(spec.model.precision, t.gpu)
            continue
        if c.bare_metal == "avoid":
            rejected[t.name] = r.LingjunBareMetal()
            continue
        if spec.zones and not any(t.hpn_zone(z) for z in spec.zones):
            rejected[t.name] = r.NoHpnZone(tuple(t.hpn_zones))
            continue
        out.append(t.as_instance_type())
    return out, rejected
