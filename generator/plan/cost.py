"""The Cost part: the price per hour of nodes, shared storage and checkpoint objects, and of the whole run.

Prices come from the catalog, each with its source and whether it is a list price or an estimate; the notes say
which. The run's hours and expected rework come from the chosen fit (:mod:`generator.plan.compute`).

A paused cluster (``compute.paused``) runs no node; :func:`paused_cost` prices what it keeps (the file system, the
checkpoint objects) and names what it keeps without a catalog price (NAT gateway, EIP, the Lingjun cluster).
"""

from __future__ import annotations

import math

from generator.catalog import Catalog, InstanceType, StoragePrice
from generator.errors import Problem
from generator.plan import milestones, refusals, warns
from generator.plan.fit import Scored
from generator.plan.model import (
    ASSUMPTION,
    ESTIMATE,
    LIST_PRICE,
    NOT_PRICED,
    Checkpoints,
    Cost,
    CostItem,
    Network,
    PausedCost,
    PriceSource,
    Storage,
)
from generator.plan.spot import spot_split
from generator.plan.warns import PlanWarning
from generator.platforms.base import Capability
from generator.platforms.registry import platform_for
from generator.spec.model import Spec

HOURS_PER_MONTH = 730


def subscription_months(wall_hours: float | None) -> int:
    """The prepaid months a Lingjun Subscription needs to cover ``wall_hours`` (one month without a run length)."""
    return 1 if wall_hours is None else max(1, math.ceil(wall_hours / HOURS_PER_MONTH))


def prepaid(nodes: int, cny_per_hour: float, months: int) -> float:
    """What ``nodes`` Subscription nodes cost for ``months``, paid up front whatever the run's length."""
    return nodes * cny_per_hour * months * HOURS_PER_MONTH


def is_subscription(spec: Spec, catalog: Catalog, name: str) -> bool:
    """Whether a Lingjun machine type is sold by subscription only (then the plan buys a prepaid period)."""
    lj = catalog.lingjun_type(name) if platform_for(spec).has(Capability.HPN) else None
    return lj is not None and "PayAsYouGo" not in lj.payment_types


def checkpoints_written(best: Scored, ckpt: Checkpoints) -> int:
    """Checkpoints the run writes: one per interval of progress (compute and bubble), at least one.

    Each goes to its own step folder, and neither the program nor the OSS copy deletes one, so this is what the
    bucket holds at the end (0 without a run length). Rework after an interruption rewrites step folders that
    already exist; the versions it overwrites are noncurrent and expire after checkpoints.retention_days.
    """
    s = best.schedule
    if not ckpt.enabled or s is None or ckpt.interval_seconds <= 0:
        return 0
    progress_s = (s.compute_hours + s.pipeline_bubble_hours) * 3600.0
    return max(1, int(progress_s // ckpt.interval_seconds))


def life_hours(ckpt: Checkpoints) -> float | None:
    """How long one checkpoint stays billed under checkpoints.keep_last: ``expire_days`` as the current object, then
    ``retention_days`` as a noncurrent version (the bucket is versioned); None: kept forever."""
    return None if not ckpt.expire_days else (ckpt.expire_days + ckpt.retention_days) * 24.0


def is_milestone(i: int, every: int | None) -> bool:
    """Whether checkpoint ``i`` (1-based, in the order written) is a milestone under checkpoints.milestones.every:
    the first of each window of ``every`` intervals."""
    return every is not None and (i - 1) % every == 0


def checkpoints_held(kept: int, wall_hours: float, ckpt: Checkpoints, steps: int | None = None) -> int:
    """Checkpoints in the bucket at the end of the run: all ``kept``, or under keep_last those written within one
    :func:`life_hours` of the end (current or still noncurrent), plus the milestones written before them (a window's
    first, :func:`generator.plan.milestones.every_window`, or one per at_steps step the run reaches of its ``steps``)."""
    life = life_hours(ckpt)
    if life is None or not kept or wall_hours <= 0:
        return kept
    recent = min(kept, max(1, math.ceil(life / (wall_hours / kept))))
    older = kept - recent
    first = milestones.every_window(kept, wall_hours, ckpt)
    held = recent + (0 if first is None else sum(1 for i in range(1, older + 1) if first(i)))
    return held + len(milestones.step_shares(ckpt, steps))


def checkpoint_hours(
    kept: int,
    wall_hours: float,
    ia_days: int | None,
    life_limit: float | None = None,
    milestone_every: int | None = None,
    ckpt: Checkpoints | None = None,
    steps: int | None = None,
) -> tuple[float, float]:
    """Checkpoint-hours the bucket holds over the run in Standard and in IA: checkpoint i of ``kept`` is written
    at i/kept of the wall-clock time and kept to the end (or for ``life_limit`` hours, see :func:`life_hours`,
    unless it is a milestone: :func:`is_milestone`, or with ``ckpt`` its window's first); it moves to IA ``ia_days``
    after it is written. With ``ckpt``, each at_steps milestone the run reaches is one more checkpoint, written at its
    step's share of the run (:func:`generator.plan.milestones.step_shares`) and kept to the end."""
    std = ia = 0.0
    limit = None if ia_days is None else ia_days * 24.0
    first = milestones.every_window(kept, wall_hours, ckpt) if ckpt is not None else None
    shares = [i / kept for i in range(1, kept + 1)]
    kept_to_end = [
        is_milestone(i, milestone_every) or (first is not None and first(i)) for i in range(1, kept + 1)
    ]
    if ckpt is not None:
        extra = milestones.step_shares(ckpt, steps)
        shares += extra
        kept_to_end += [True] * len(extra)
    for share, forever in zip(shares, kept_to_end, strict=True):
        life = wall_hours * (1.0 - share)
        life = life if life_limit is None or forever else min(life, life_limit)
        in_std = life if limit is None else min(life, limit)
        std += in_std
        ia += life - in_std
    return std, ia


def plan_cost(
    spec: Spec,
    catalog: Catalog,
    best: Scored,
    storage: Storage,
    ckpt: Checkpoints,
    network: Network | None = None,
) -> Cost:
    """The plan's cost: each line per hour and over the run's wall-clock hours (rework counted), the notes and
    each price's provenance, and while paused what the kept resources cost (:func:`paused_cost`)."""
    t = best.fit.itype
    on_demand_nodes, spot_nodes = spot_split(spec, best.fit.nodes)
    wall = None if best.run_hours is None else best.run_hours + (best.rework_hours or 0.0)
    notes: list[str] = []
    prices: list[PriceSource] = []
    _price_compute(spec, t, notes, prices)
    shared = _price_shared_storage(catalog, storage, notes, prices)
    kept = checkpoints_written(best, ckpt)
    steps = milestones.total_steps(spec)
    obj, after_month = _price_checkpoints(catalog, ckpt, kept, wall, steps, notes, prices)
    if spot_nodes:
        notes.append(
            f"spot at {spec.spot.price_ratio:.0%} of list is an assumption (GPU spot prices unverified)"
        )
        prices.append(PriceSource("spot", t.name, ASSUMPTION))
    od = on_demand_nodes * t.price.cny_per_hour
    sp_h = spot_nodes * best.spot_per_hour
    total = od + sp_h + shared + obj
    months, od_run = _compute_over_run(spec, catalog, best, od, wall, notes)
    lines = None if wall is None or od_run is None else (od_run, sp_h * wall, shared * wall, obj * wall)
    run_lines = (None, None, None, None) if lines is None else tuple(round(line, 2) for line in lines)
    paused = None
    if spec.compute.paused:
        paused = paused_cost(spec, catalog, storage, ckpt, network, round(shared, 2), round(obj, 2))
    return Cost(
        currency="CNY",
        compute_on_demand_per_hour=round(od, 2),
        compute_spot_per_hour=round(sp_h, 2),
        shared_storage_per_hour=round(shared, 2),
        object_storage_per_hour=round(obj, 2),
        total_per_hour=round(total, 2),
        total_per_day=round(total * 24, 2),
        run_hours=None if best.run_hours is None else round(best.run_hours, 2),
        expected_rework_hours=None if best.rework_hours is None else round(best.rework_hours, 2),
        run_total=None if lines is None else round(sum(lines), 2),
        price_notes=tuple(notes),
        paused=paused,
        compute_on_demand_run=run_lines[0],
        compute_spot_run=run_lines[1],
        shared_storage_run=run_lines[2],
        object_storage_run=run_lines[3],
        checkpoints_kept=checkpoints_held(kept, wall or 0.0, ckpt, steps),
        object_storage_after_run_per_month=None if after_month is None else round(after_month, 2),
        subscription_months=months,
        prices=tuple(prices),
    )


def _price_compute(spec: Spec, t: InstanceType, notes: list[str], prices: list[PriceSource]) -> None:
    """The node's price note and provenance, and the platform's per-worker price where it declares one
    (PAI-DLC)."""
    notes.append(
        f"{t.name}: {t.price.cny_per_hour:,.2f} CNY/h "
        + _basis(t.price.estimated)
        + f" ({t.price.region}, {t.price.date}) [{t.price.source}]"
    )
    prices.append(PriceSource("compute", t.name, _basis(t.price.estimated), t.price.source))
    worker = platform_for(spec).worker_price  # PAI-DLC's per-worker price (its declaration)
    if worker is not None:
        prices.append(PriceSource(worker.item, t.name, ESTIMATE, worker.source))
        notes.append(worker.note.format(type=t.name))


def _shared_storage_item(storage: Storage) -> str:
    """The catalog's storage item of the shared file system (``storage.kind`` is not ``none``)."""
    return {"cpfs": f"cpfs-{storage.storage_type}", "extreme-nas": f"nas-extreme-{storage.storage_type}"}[
        storage.kind
    ]


def _price_shared_storage(
    catalog: Catalog, storage: Storage, notes: list[str], prices: list[PriceSource]
) -> float:
    """The shared file system per hour, billed by provisioned capacity (0 without one, or without a catalog
    price)."""
    if storage.kind == "none":
        return 0.0
    item = _shared_storage_item(storage)
    sp = catalog.storage_price(item)
    if sp is None:
        notes.append(f"{item}: no price in the catalog; not counted")
        prices.append(PriceSource("shared_storage", item, NOT_PRICED))
        return 0.0
    notes.append(
        f"{item}: {sp.price_cny:g} {sp.unit} "
        + _basis(sp.estimated)
        + f" ({sp.region}, {sp.date}) [{sp.source}]"
    )
    prices.append(PriceSource("shared_storage", item, _basis(sp.estimated), sp.source))
    return sp.price_cny * storage.capacity_gib / HOURS_PER_MONTH


def _price_checkpoints(
    catalog: Catalog,
    ckpt: Checkpoints,
    kept: int,
    wall: float | None,
    steps: int | None,
    notes: list[str],
    prices: list[PriceSource],
) -> tuple[float, float | None]:
    """The checkpoint bucket per hour over the run and per month after it (None: no run length, or no bucket),
    with the OSS Standard and IA price notes; 0 without checkpoints or without a catalog price."""
    if not ckpt.enabled:
        return 0.0, None
    sp = catalog.storage_price("oss-standard")
    ia = catalog.storage_price("oss-ia") if ckpt.transition_ia_days else None
    if sp is None:
        return 0.0, None
    obj, after_month = _bucket_per_hour(sp, ia, ckpt, kept, wall, steps)
    prices.append(PriceSource("object_storage", "oss-standard", _basis(sp.estimated), sp.source))
    notes.append(
        f"oss-standard: {sp.price_cny:g} {sp.unit} "
        + _basis(sp.estimated)
        + f" [{sp.source}]; "
        + _retention_note(ckpt, kept)
    )
    if ia is not None and kept:
        prices.append(PriceSource("object_storage_ia", "oss-ia", _basis(ia.estimated), ia.source))
        notes.append(
            f"oss-ia: {ia.price_cny:g} {ia.unit} "
            + _basis(ia.estimated)
            + f" [{ia.source}]; checkpoints older than {ckpt.transition_ia_days} days "
            "(checkpoints.transition_ia_days), retrieval fees not counted"
        )
    return obj, after_month


def _bucket_per_hour(
    sp: StoragePrice,
    ia: StoragePrice | None,
    ckpt: Checkpoints,
    kept: int,
    wall: float | None,
    steps: int | None,
) -> tuple[float, float | None]:
    """The bucket's average cost per hour over the run and per month after it, from the checkpoint-hours it
    holds in Standard and in IA (:func:`checkpoint_hours`); without a run length, one checkpoint per hour."""
    per_unit = 10**9 if "/GB" in sp.unit else 2**30  # OSS is billed per GB (10^9 bytes)
    one = sp.price_cny * ckpt.size_bytes / per_unit  # one checkpoint in Standard, per month
    one_ia = one if ia is None else ia.price_cny * ckpt.size_bytes / per_unit
    if not (kept and wall):  # no run length: one checkpoint (the cost grows from there)
        return one / HOURS_PER_MONTH, None
    # The bucket grows by one checkpoint per interval and nothing deletes them; each stays in Standard until
    # the IA rule moves it (checkpoints.transition_ia_days), then in IA to the end of the run.
    std_h, ia_h = checkpoint_hours(
        kept, wall, ckpt.transition_ia_days if ia is not None else None, life_hours(ckpt), None, ckpt, steps
    )
    held = checkpoints_held(kept, wall, ckpt, steps)
    # after the run: once every checkpoint is past the IA transition (or all Standard)
    return (one * std_h + one_ia * ia_h) / HOURS_PER_MONTH / wall, one_ia * held


def _retention_note(ckpt: Checkpoints, kept: int) -> str:
    """How the checkpoint bucket's price counts what it keeps: keep_last's window and milestones, or
    everything."""
    if kept and ckpt.expire_days:
        return (
            f"checkpoints.keep_last {ckpt.keep_last}: each checkpoint is billed {ckpt.expire_days} "
            f"days as the current object and {ckpt.retention_days} days as a noncurrent version, "
            "priced over the run" + _milestone_note(ckpt)
        )
    if kept:
        return (
            "every checkpoint the run writes is kept (nothing expires current objects), priced over "
            "the run as the bucket grows"
        )
    return (
        "one checkpoint priced; the bucket grows by one per checkpoint interval (nothing expires "
        "current objects)"
    )


def _milestone_note(ckpt: Checkpoints) -> str:
    """Which checkpoints checkpoints.milestones keeps to the end and after it ("" without milestones)."""
    if ckpt.milestone_every:
        return (
            f"; one in every {ckpt.milestone_every} (checkpoints.milestones) is kept to the end and after it"
        )
    if ckpt.milestone_hours:
        return (
            f"; one per {ckpt.milestone_hours:g} h (checkpoints.milestones) is kept to the end and after it"
        )
    if ckpt.milestone_steps:
        return (
            f"; the checkpoints of {len(ckpt.milestone_steps)} listed step(s) "
            "(checkpoints.milestones.at_steps) are kept to the end and after it"
        )
    return ""


def _compute_over_run(
    spec: Spec, catalog: Catalog, best: Scored, od: float, wall: float | None, notes: list[str]
) -> tuple[int | None, float | None]:
    """The prepaid months of a Lingjun type sold by subscription only (else None) and the on-demand compute's
    whole-run amount: the prepaid amount whatever the run's length, else per hour x wall-clock hours."""
    t = best.fit.itype
    if not is_subscription(spec, catalog, t.name):
        return None, None if wall is None else od * wall
    months = subscription_months(wall)
    notes.append(
        f"{t.name} is sold by subscription only: the compute is prepaid for {months} month(s) "
        f"({months * HOURS_PER_MONTH:,} h) whatever the run's length; the whole run counts the prepaid "
        "amount"
    )
    return months, prepaid(best.fit.nodes, t.price.cny_per_hour, months) if wall is not None else None


def bucket_warning(ckpt: Checkpoints, cost: Cost) -> list[PlanWarning]:
    """The bucket's projected size at the end of the run: every checkpoint stays until someone deletes it, or
    (checkpoints.keep_last) those within the expiry window, and what happens to the newest after the run."""
    if not ckpt.enabled or not cost.checkpoints_kept:
        return []
    if ckpt.expire_days:
        return [
            warns.CheckpointsExpire(
                ckpt.keep_last,
                cost.checkpoints_kept,
                ckpt.size_bytes,
                ckpt.expire_days,
                ckpt.retention_days,
                ckpt.bucket,
                ckpt.prefix,
                ckpt.tier,
                ckpt.directory,
                ckpt.milestone_every,
                ckpt.milestone_hours,
                len(ckpt.milestone_steps),
            )
        ]
    return [
        warns.CheckpointsKeptForever(
            cost.checkpoints_kept,
            ckpt.size_bytes,
            cost.object_storage_after_run_per_month,
            ckpt.transition_ia_days,
            ckpt.retention_days,
            ckpt.bucket,
            ckpt.prefix,
        )
    ]


def budget_problems(spec: Spec, cost: Cost) -> list[Problem]:
    """The budget against the plan's own figures (compute, storage and checkpoint objects, a prepaid
    subscription at its prepaid amount), so an accepted plan never costs more than the budget it names."""
    b, out = spec.budget, []
    if b.total is not None and cost.run_total is not None and cost.run_total > b.total:
        out.append(
            refusals.PlanOverTotal(
                cost.run_total,
                (cost.compute_on_demand_run or 0) + (cost.compute_spot_run or 0),
                cost.shared_storage_run or 0,
                cost.object_storage_run or 0,
                b.total,
            ).problem()
        )
    if b.per_hour is not None and cost.total_per_hour > b.per_hour:
        out.append(refusals.PlanOverHourly(cost.total_per_hour, b.per_hour).problem())
    return out


def _basis(estimated: bool) -> str:
    return ESTIMATE if estimated else LIST_PRICE


def paused_cost(
    spec: Spec,
    catalog: Catalog,
    storage: Storage,
    ckpt: Checkpoints,
    network: Network | None,
    shared_per_hour: float,
    object_per_hour: float,
) -> PausedCost:
    """What a paused cluster still costs: no node, but the file system, the checkpoint objects and the network stay.

    The figures are the same storage lines :func:`plan_cost` prices for the running cluster (nodes excluded); kept
    resources the catalog has no price for are listed with ``per_hour`` None and are not in the total.
    """
    items = _paused_storage_items(catalog, storage, ckpt, shared_per_hour, object_per_hour)
    items += _paused_network_items(network)
    for stays in platform_for(spec).paused_items:
        items.append(
            CostItem(
                item=stays.key,
                label=stays.label,
                quantity=stays.what,
                per_hour=None,
                per_day=None,
                basis=NOT_PRICED,
            )
        )
    per_hour = round(sum(i.per_hour or 0.0 for i in items), 2)
    notes = [
        "paused: no GPU node runs and nothing trains; the nodes' cost is what a resume costs per hour",
        "the VPC, vSwitches, security group and RAM role are free",
    ]
    unpriced = [i.label for i in items if i.per_hour is None]
    if unpriced:
        notes.append(f"not in the total (no price in the catalog): {', '.join(unpriced)}")
    return PausedCost(
        per_hour=per_hour, per_day=round(per_hour * 24, 2), items=tuple(items), notes=tuple(notes)
    )


def _paused_storage_items(
    catalog: Catalog, storage: Storage, ckpt: Checkpoints, shared_per_hour: float, object_per_hour: float
) -> list[CostItem]:
    """The storage a paused cluster keeps: the shared file system (billed by provisioned capacity) and the
    checkpoint bucket, each at the running plan's figure (None where the catalog has no price)."""
    items: list[CostItem] = []
    if storage.kind != "none":
        sp = catalog.storage_price(_shared_storage_item(storage))
        items.append(
            CostItem(
                item="shared_storage",
                label="shared storage",
                quantity=f"{storage.capacity_gib:,} GiB {storage.kind} "
                f"{storage.storage_type} (billed by provisioned capacity)",
                per_hour=shared_per_hour if sp else None,
                per_day=round(shared_per_hour * 24, 2) if sp else None,
                basis=_basis(sp.estimated) if sp else NOT_PRICED,
            )
        )
    if ckpt.enabled:
        sp = catalog.storage_price("oss-standard")
        items.append(
            CostItem(
                item="object_storage",
                label="checkpoint bucket",
                quantity="the checkpoints written so far, in OSS "
                "(priced as the run's average; nothing expires current checkpoints)",
                per_hour=object_per_hour if sp else None,
                per_day=round(object_per_hour * 24, 2) if sp else None,
                basis=ESTIMATE,
            )
        )
    return items


def _paused_network_items(network: Network | None) -> list[CostItem]:
    """The NAT gateway and its EIP a paused cluster keeps (network.egress: nat), neither priced by the
    catalog."""
    if network is None or network.egress != "nat":
        return []
    return [
        CostItem(
            item="nat_gateway",
            label="NAT gateway",
            quantity="1 enhanced Internet NAT gateway (hourly instance fee; "
            "capacity units follow traffic, about none while paused)",
            per_hour=None,
            per_day=None,
            basis=NOT_PRICED,
        ),
        CostItem(
            item="egress_ip",
            label="EIP",
            quantity="1 pay-by-traffic EIP on the NAT gateway (configuration fee; "
            "traffic about none while paused)",
            per_hour=None,
            per_day=None,
            basis=NOT_PRICED,
        ),
    ]
