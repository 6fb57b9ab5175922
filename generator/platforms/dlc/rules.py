"""PAI-DLC's rules: what a PAI-DLC job cannot do, as spec errors with hints (the validate stage;
:mod:`generator.plan.check` asks the platform for them, through :mod:`generator.platforms.dlc.parts`). Each problem
is an event of :mod:`generator.platforms.dlc.refusals` (code ``TSA...``, typed fields); this module holds the
conditions only.
"""

from __future__ import annotations

from generator.catalog import Catalog, Region
from generator.errors import Problem
from generator.plan.refusal import Refusal
from generator.platforms.dlc import refusals as r
from generator.platforms.dlc.plan import SPOT_STRATEGY
from generator.spec.model import Spec


def _catalog_refusals(spec: Spec, catalog: Catalog, region: Region | None) -> list[Refusal]:
    """The region, the GPU and the instance types the catalog has no DLC worker type for."""
    found: list[Refusal] = []
    c = spec.compute
    if region is not None and not catalog.dlc_types_in_region(region.id):
        where = sorted({x.id for x in catalog.regions if catalog.dlc_types_in_region(x.id)})
        found.append(r.NoWorkerType(region.id, tuple(where)))
    gpu = catalog.gpu(c.gpu) if c.gpu != "auto" else None
    in_region = catalog.types_in_region(region.id) if region is not None else ()
    if (
        gpu is not None
        and region is not None
        and any(t.gpu == gpu.name for t in in_region)
        and not any(t.gpu == gpu.name for t in catalog.dlc_types_in_region(region.id))
    ):  # else check.py reports the GPU
        offered = sorted({t.gpu for t in catalog.dlc_types_in_region(region.id)})
        found.append(r.GpuNotOnDlc(gpu.name, region.id, tuple(offered)))
    for i, name in enumerate(c.instance_types):
        if (
            catalog.instance(name) is not None
            and catalog.lingjun_type(name) is None
            and catalog.dlc_spec(name) is None
        ):
            found.append(r.TypeNotOnDlc(i, name, tuple(d.name for d in catalog.dlc_specs)))
    return found


def _spot_refusals(spec: Spec) -> list[Refusal]:
    """The spot settings a DLC job's SpotSpec cannot carry."""
    found: list[Refusal] = []
    sp = spec.spot
    if sp.enabled and sp.on_demand_base != 0:
        found.append(r.SpotMixed(sp.on_demand_base))
    if sp.min_nodes is not None:
        found.append(r.NoElastic(sp.min_nodes))
    if sp.enabled and "strategy" in sp.model_fields_set and sp.strategy != SPOT_STRATEGY:
        found.append(r.SpotStrategy(sp.strategy))
    if sp.enabled and "interruption" in sp.model_fields_set and sp.interruption == "stop":
        found.append(r.SpotKeptStopped())
    return found


def dlc_rules(spec: Spec, catalog: Catalog, region: Region | None) -> list[Problem]:
    """What a DLC job cannot do (or trainstack does not do for it), as spec errors with hints."""
    c, n = spec.compute, spec.network
    found = _catalog_refusals(spec, catalog, region)
    if c.image_id is not None:
        found.append(r.ImageIdGiven())
    if c.data_disk_gib:
        found.append(r.DataDiskGiven(c.data_disk_gib))
    if c.paused:
        found.append(r.NothingToPause())
    if c.bare_metal == "require":
        found.append(r.BareMetalRequired())
    if n.admin_cidrs:
        found.append(r.NoSsh(tuple(n.admin_cidrs)))
    if n.rdma is True:
        found.append(r.NoRdma())
    found += _spot_refusals(spec)
    return [x.problem() for x in found]
