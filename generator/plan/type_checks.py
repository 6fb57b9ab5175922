"""The catalog checks of a platform whose nodes are the catalog's ECS instance types (ECS, and PAI-DLC, whose
workers are ECS types): ``compute.gpu`` offered in the region, each of ``compute.instance_types`` known and of that
kind. :mod:`generator.plan.check` asks the platform (``parts_for(spec).gpu_refusals`` and ``.type_refusal``);
Lingjun, whose nodes are eflo machine types, answers from :mod:`generator.platforms.lingjun.rules`.
"""

from __future__ import annotations

from generator.catalog import Catalog, GpuModel, Region
from generator.errors import closest
from generator.plan import catalog_refusals as x
from generator.plan.refusal import Refusal
from generator.spec.model import Spec


def gpu_refusals(catalog: Catalog, gpu: GpuModel, region: Region) -> list[Refusal]:
    """compute.gpu: an instance type of the region has it; else where one does."""
    if not any(t.gpu == gpu.name for t in catalog.types_in_region(region.id)):
        offered = tuple(sorted({t.gpu for t in catalog.types_in_region(region.id)}))
        where = tuple(
            sorted(
                r.id for r in catalog.regions if any(t.gpu == gpu.name for t in catalog.types_in_region(r.id))
            )
        )
        return [x.GpuNotInRegion(gpu.name, region.id, offered, where)]
    return []


def type_refusal(spec: Spec, catalog: Catalog, index: int, name: str) -> Refusal | None:
    """compute.instance_types[index]: not a Lingjun machine type, a known instance type, with RDMA when the spec
    asks for it."""
    if catalog.lingjun_type(name) is not None:
        return x.LingjunTypeOffPlatform(index, name)
    if (it := catalog.instance(name)) is None:
        return x.UnknownInstanceType(index, name, closest(name, [t.name for t in catalog.instance_types]))
    if spec.network.rdma is True and not it.rdma:
        return x.TypeWithoutRdma(index, name)
    return None
