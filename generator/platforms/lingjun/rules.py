"""Lingjun's rules: what a Lingjun (eflo) cluster cannot do, or cannot do with pulumi-alicloud 4.0.0, as spec
errors with hints (the validate stage; :mod:`generator.plan.check` asks the platform for them). Each problem is an
event of :mod:`generator.platforms.lingjun.refusals` (code ``TSJ...``, typed fields); this module holds the
conditions only.
"""

from __future__ import annotations

from generator.catalog import Catalog, GpuModel, Region
from generator.errors import Problem, closest
from generator.plan import catalog_refusals as x
from generator.plan.refusal import Refusal
from generator.platforms.lingjun import refusals as r
from generator.spec.model import Spec


def gpu_refusals(catalog: Catalog, gpu: GpuModel, region: Region) -> list[Refusal]:
    """compute.gpu: a Lingjun machine type of the region has it (a region without Lingjun is refused by
    :func:`lingjun_rules`)."""
    here = catalog.lingjun_types_in_region(region.id)
    if region.lingjun and not any(t.gpu == gpu.name for t in here):
        return [x.NoLingjunGpu(gpu.name, region.id, tuple(sorted({t.gpu for t in here})))]
    return []


def type_refusal(catalog: Catalog, index: int, name: str) -> Refusal | None:
    """compute.instance_types[index]: a Lingjun machine type (an ECS type is named as one, with no suggestion)."""
    if catalog.lingjun_type(name) is not None:
        return None
    names = tuple(t.name for t in catalog.lingjun_types)
    known = catalog.instance(name) is not None
    return x.NotLingjunType(index, name, known, "" if known else closest(name, names), names)


def _region_refusal(spec: Spec, catalog: Catalog, region: Region | None) -> Refusal | None:
    """The region (or the zones listed) without Lingjun, or without a known Lingjun machine type or HPN zone."""
    if region is None:
        return None
    if not region.lingjun:
        return r.NotOffered(region.id, tuple(x.id for x in catalog.regions if x.lingjun))
    if not catalog.lingjun_types_in_region(region.id):
        return r.NoMachineType(
            region.id, tuple(sorted({x for t in catalog.lingjun_types for x in t.regions}))
        )
    if spec.zones:
        known = {z: h for t in catalog.lingjun_types_in_region(region.id) for z, h in t.hpn_zones}
        if not any(z in known for z in spec.zones):
            return r.NoHpnZone(tuple(sorted(known.items())))
    return None


def lingjun_rules(spec: Spec, catalog: Catalog, region: Region | None) -> list[Problem]:
    """What a Lingjun (eflo) cluster cannot do, or cannot do with pulumi-alicloud 4.0.0, as spec errors."""
    c, s = spec.compute, spec.storage
    found: list[Refusal | None] = [_region_refusal(spec, catalog, region)]
    if c.image_id is None:
        found.append(r.NeedsImage())
    if c.data_disk_gib:
        found.append(r.DataDiskUnencrypted(c.data_disk_gib))
    if c.bare_metal == "avoid":
        found.append(r.BareMetalAvoided())
    if s.shared == "cpfs":
        found.append(r.CpfsUnmountable())
    elif s.shared == "extreme-nas":
        found.append(r.ExtremeNasUnverified())
    if s.dataset is not None and s.shared in (
        "auto",
        "cpfs",
    ):  # none/extreme-nas: the general rule reports it
        found.append(r.DatasetNeedsCpfs())
    if spec.spot.enabled:
        found.append(r.NoSpot())
    return [x.problem() for x in found if x is not None]
