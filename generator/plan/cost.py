"""The Cost part: the price per hour of nodes, shared storage and checkpoint objects, and of the whole run.

Prices come from the catalog, each with its source and whether it is a list price or an estimate; the notes say
which. The run's hours and expected rework come from the chosen fit (:mod:`generator.plan.compute`).
"""

from __future__ import annotations

from generator.catalog import Catalog
from generator.plan.fit import Scored
from generator.plan.model import Checkpoints, Cost, Storage
from generator.plan.spot import spot_split
from generator.spec.model import Spec

HOURS_PER_MONTH = 730


def plan_cost(spec: Spec, catalog: Catalog, best: Scored, storage: Storage, ckpt: Checkpoints) -> Cost:
    t = best.fit.itype
    on_demand_nodes, spot_nodes = spot_split(spec, best.fit.nodes)
    notes = [f"{t.name}: {t.price.cny_per_hour:,.2f} CNY/h "
             + ("ESTIMATE" if t.price.estimated else "list price")
             + f" ({t.price.region}, {t.price.date}) [{t.price.source}]"]
    shared = 0.0
    if storage.kind != "none":
        item = {"cpfs": f"cpfs-{storage.storage_type}", "extreme-nas": f"nas-extreme-{storage.storage_type}"}[storage.kind]
        sp = catalog.storage_price(item)
        if sp is not None:
            shared = sp.price_cny * storage.capacity_gib / HOURS_PER_MONTH
            notes.append(f"{item}: {sp.price_cny:g} {sp.unit} " + ("ESTIMATE" if sp.estimated else "list price")
                         + f" ({sp.region}, {sp.date}) [{sp.source}]")
        else:
            notes.append(f"{item}: no price in the catalog; not counted")
    obj = 0.0
    if ckpt.enabled:
        sp = catalog.storage_price("oss-standard")
        if sp is not None:
            # a few checkpoints kept: the current one plus noncurrent versions within retention (assume 3)
            per_unit = 10**9 if "/GB" in sp.unit else 2**30  # OSS is billed per GB (10^9 bytes)
            obj = sp.price_cny * ckpt.size_bytes * 3 / per_unit / HOURS_PER_MONTH
            notes.append(f"oss-standard: {sp.price_cny:g} {sp.unit} for ~3 checkpoints "
                         + ("ESTIMATE" if sp.estimated else "list price") + f" [{sp.source}]")
    if spot_nodes:
        notes.append(f"spot at {spec.spot.price_ratio:.0%} of list is an assumption (GPU spot prices unverified)")
    od = on_demand_nodes * t.price.cny_per_hour
    sp_h = spot_nodes * best.spot_per_hour
    total = od + sp_h + shared + obj
    run_total = None
    if best.run_hours is not None:
        run_total = total * (best.run_hours + (best.rework_hours or 0.0))
    return Cost("CNY", round(od, 2), round(sp_h, 2), round(shared, 2), round(obj, 2), round(total, 2),
                round(total * 24, 2), None if best.run_hours is None else round(best.run_hours, 2),
                None if best.rework_hours is None else round(best.rework_hours, 2),
                None if run_total is None else round(run_total, 2), tuple(notes))
