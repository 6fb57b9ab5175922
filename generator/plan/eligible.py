"""The instance types a spec allows in its region, and why each type it names but cannot use is refused
(:mod:`generator.plan.rejections`): :func:`eligible_types`, for the platforms whose nodes are the catalog's ECS
instance types (ECS; PAI-DLC, whose workers are the ECS types on its public resource list), and the filters every
platform shares (:func:`wanted`, :func:`precision_ok`). The fit search asks the platform
(``parts_for(spec).eligible``); Lingjun answers with its machine types (:mod:`generator.platforms.lingjun.eligible`).

It exists apart from :mod:`generator.plan.layout` because eligibility is a filter over the catalog that needs no
sizing: the fit search starts from its answer.
"""

from __future__ import annotations

from generator.catalog import Catalog, GpuModel, InstanceType, LingjunMachineType, Region
from generator.plan import rejections as r
from generator.spec.model import ComputeSpec, Spec


def eligible_types(
    spec: Spec,
    catalog: Catalog,
    region: Region,
    offered: set[str] | None = None,
    not_offered: r.Rejection | None = None,
) -> tuple[list[InstanceType], dict[str, r.Rejection]]:
    """The catalog's ECS instance types the spec allows in the region. ``offered``: the names the platform offers
    there, where it offers fewer than the region has (PAI-DLC's public resource list); ``not_offered``: why a type
    the region has but the platform does not offer is refused (else, like a type not in the region, NotOffered)."""
    c = spec.compute
    rejected: dict[str, r.Rejection] = {}
    wanted_gpu = catalog.gpu(c.gpu) if c.gpu != "auto" else None
    allow = set(c.instance_types)
    in_region = {t.name for t in catalog.types_in_region(region.id)}
    offered = in_region if offered is None else offered
    out = []
    for t in catalog.instance_types:
        if allow and t.name not in allow:
            continue
        if t.name not in offered:
            if allow:
                why = not_offered if t.name in in_region else None
                rejected[t.name] = why if why is not None else r.NotOffered(region.id)
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
