"""The Cost part: the price per hour of nodes, shared storage and checkpoint objects, and of the whole run.

Prices come from the catalog, each with its source and whether it is a list price or an estimate; the notes say
which. The run's hours and expected rework come from the chosen fit (:mod:`generator.plan.compute`).

A paused cluster (``compute.paused``) runs no node; :func:`paused_cost` prices what it keeps (the file system, the
checkpoint objects) and names what it keeps without a catalog price (NAT gateway, EIP, the Lingjun cluster).
"""

from __future__ import annotations

from generator.catalog import Catalog
from generator.plan.fit import Scored
from generator.plan.model import Checkpoints, Cost, CostItem, Network, PausedCost, Storage
from generator.plan.spot import spot_split
from generator.spec.model import Spec

HOURS_PER_MONTH = 730


def plan_cost(spec: Spec, catalog: Catalog, best: Scored, storage: Storage, ckpt: Checkpoints,
              network: Network | None = None) -> Cost:
    t = best.fit.itype
    on_demand_nodes, spot_nodes = spot_split(spec, best.fit.nodes)
    notes = [f"{t.name}: {t.price.cny_per_hour:,.2f} CNY/h "
             + ("ESTIMATE" if t.price.estimated else "list price")
             + f" ({t.price.region}, {t.price.date}) [{t.price.source}]"]
    if spec.compute.platform == "pai-dlc":
        # DLC bills public-resource workers per minute at the price its Create Job page shows [DOC-DLC-BILL]
        notes.append(f"PAI-DLC worker price: ESTIMATE equal to the ECS price of {t.name} above (DLC bills workers "
                     "per minute at the console's unit price, which may differ; catalog date 2026-11-30) "
                     "[DOC-DLC-BILL]; the workspace and datasets are free, and nothing is billed between jobs "
                     "except storage and the NAT gateway")
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
    paused = None
    if spec.compute.paused:
        paused = paused_cost(spec, catalog, storage, ckpt, network, round(shared, 2), round(obj, 2))
    return Cost("CNY", round(od, 2), round(sp_h, 2), round(shared, 2), round(obj, 2), round(total, 2),
                round(total * 24, 2), None if best.run_hours is None else round(best.run_hours, 2),
                None if best.rework_hours is None else round(best.rework_hours, 2),
                None if run_total is None else round(run_total, 2), tuple(notes), paused)


def _basis(estimated: bool) -> str:
    return "ESTIMATE" if estimated else "list price"


def paused_cost(spec: Spec, catalog: Catalog, storage: Storage, ckpt: Checkpoints, network: Network | None,
                shared_per_hour: float, object_per_hour: float) -> PausedCost:
    """What a paused cluster still costs: no node, but the file system, the checkpoint objects and the network stay.

    The figures are the same storage lines :func:`plan_cost` prices for the running cluster (nodes excluded); kept
    resources the catalog has no price for are listed with ``per_hour`` None and are not in the total.
    """
    items: list[CostItem] = []
    if storage.kind != "none":
        item = {"cpfs": f"cpfs-{storage.storage_type}", "extreme-nas": f"nas-extreme-{storage.storage_type}"}[storage.kind]
        sp = catalog.storage_price(item)
        items.append(CostItem("shared_storage", "shared storage", f"{storage.capacity_gib:,} GiB {storage.kind} "
                              f"{storage.storage_type} (billed by provisioned capacity)",
                              shared_per_hour if sp else None, round(shared_per_hour * 24, 2) if sp else None,
                              _basis(sp.estimated) if sp else "not priced"))
    if ckpt.enabled:
        sp = catalog.storage_price("oss-standard")
        items.append(CostItem("object_storage", "checkpoint bucket", "~3 checkpoints kept in OSS Standard (an "
                              "assumption: retention and versions decide the real amount)",
                              object_per_hour if sp else None, round(object_per_hour * 24, 2) if sp else None,
                              "ESTIMATE"))
    if network is not None and network.egress == "nat":
        items.append(CostItem("nat_gateway", "NAT gateway", "1 enhanced Internet NAT gateway (hourly instance fee; "
                              "capacity units follow traffic, about none while paused)", None, None, "not priced"))
        items.append(CostItem("egress_ip", "EIP", "1 pay-by-traffic EIP on the NAT gateway (configuration fee; "
                              "traffic about none while paused)", None, None, "not priced"))
    if spec.compute.platform == "lingjun":
        items.append(CostItem("lingjun_cluster", "Lingjun cluster and VPD", "the eflo cluster (no node), VPD and "
                              "subnets", None, None, "not priced"))
    per_hour = round(sum(i.per_hour or 0.0 for i in items), 2)
    notes = ["paused: no GPU node runs and nothing trains; the nodes' cost is what a resume costs per hour",
             "the VPC, vSwitches, security group and RAM role are free"]
    unpriced = [i.label for i in items if i.per_hour is None]
    if unpriced:
        notes.append(f"not in the total (no price in the catalog): {', '.join(unpriced)}")
    return PausedCost(per_hour, round(per_hour * 24, 2), tuple(items), tuple(notes))
