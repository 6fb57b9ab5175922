"""Stage 2, plan: a pure function from a Spec and the Catalog to an immutable :class:`~generator.plan.model.Plan`.

No I/O, no clock, no environment: the same spec and catalog always give the same plan. Every decision is
recorded with a reason (``Plan.decisions``) and the instance types that lost are kept with why they lost
(``Plan.candidates``). When nothing fits, :class:`PlanningError` says what would.

:func:`make_plan` only composes the parts, each of which builds its part of the Plan with its decisions:
``compute`` (with ``layout``, the fits it chooses from), the platform's placement (zone, fabric, network, ranks:
``parts.place``), ``storage``, ``weights`` (the base weights, beside storage), ``checkpoints``, the platform's spot
plan, ``cost`` and the platform's own part (``parts.part``: ``Plan.lingjun`` or ``Plan.dlc``). What differs by
platform is asked of it (:mod:`generator.platforms`), never decided here by its name. The order of the
calls is the order of the decisions and
warnings in the plan.
"""

from __future__ import annotations

import hashlib
from typing import Any

from generator.catalog import Catalog
from generator.plan import refusals, warns
from generator.plan.checkpoints import bucket_name, plan_checkpoints
from generator.plan.compute import (
    choose,
    container_decision,
    elastic_minimum,
    image_decision,
    model_summary,
    pause_decision,
    plan_compute,
    plan_sizing,
    run_warnings,
)
from generator.plan.cost import bucket_warning, budget_problems, plan_cost
from generator.plan.fit import PlanningError
from generator.plan.model import (
    PLAN_SCHEMA_VERSION,
    Decision,
    Plan,
    Waived,
)
from generator.plan.run_hours import plan_schedule
from generator.plan.storage import plan_storage
from generator.plan.warns import PlanWarning
from generator.plan.weights import plan_weights, stored_size
from generator.platforms.base import Capability
from generator.platforms.registry import parts_for, platform_for, unhonoured_warnings
from generator.spec.model import Spec
from generator.spec.storage import MILESTONE_FORMS

__all__ = ["PlanningError", "bucket_name", "make_plan", "spec_digest"]


def spec_digest(spec: Spec) -> str:
    """A short content hash of the spec's meaning (not its formatting).

    ``compute.paused`` counts only when true, ``model.weights``, ``compute.admin_key_pair``,
    ``compute.container_image``, ``compute.container_registry_instance`` and ``checkpoints.milestones`` only when
    set, so a spec that uses none keeps the digest it had before the fields existed (and its committed plan.json
    stays byte-identical).
    """
    exclude: dict = {
        "compute": {
            *(() if spec.compute.paused else ("paused",)),
            *(() if spec.compute.admin_key_pair else ("admin_key_pair",)),
            *(() if spec.compute.container_image else ("container_image",)),
            *(() if spec.compute.container_registry_instance else ("container_registry_instance",)),
        }
    }
    if not exclude["compute"]:
        del exclude["compute"]
    if spec.model.weights is None:  # likewise model.weights: specs without base weights keep their digest
        exclude["model"] = {"weights"}
    milestones = spec.checkpoints.milestones
    if milestones is None:  # and checkpoints.milestones
        exclude["checkpoints"] = {"milestones"}
    else:  # and the forms it does not use, so {every: M} keeps the digest it had before every_hours and at_steps
        exclude["checkpoints"] = {
            "milestones": {f for f in MILESTONE_FORMS if getattr(milestones, f) is None}
        }
    return hashlib.sha256(spec.model_dump_json(exclude=exclude or None).encode()).hexdigest()[:16]


def make_plan(spec: Spec, catalog: Catalog) -> Plan:
    """The plan of ``spec``: each part planned in turn (zone, compute, placement, storage, weights, checkpoints,
    spot, cost, the platform's own part), every choice with a decision saying why."""
    decisions: list[Decision] = []
    warnings: list[PlanWarning] = []
    region = catalog.region(spec.region)
    if region is None:  # validate.check reports this with a hint; keep the planner total anyway
        raise PlanningError([refusals.UnknownRegion(spec.region).problem()])
    platform, parts = platform_for(spec), parts_for(spec)
    zones, zone = _first_zone(spec, region, decisions)
    choice = choose(spec, catalog, region, decisions, warnings)
    best, fit, arch = choice.best, choice.best.fit, choice.arch
    placed = parts.place(spec, catalog, region, zone, fit, decisions, warnings)
    zone, network, ranks = placed.zone, placed.network, placed.ranks
    weights_bytes = stored_size(spec, arch.parameters)  # 0 when DLC mounts them from OSS (not copied)
    storage = plan_storage(spec, catalog, region, zone, fit, network, decisions, warnings, weights_bytes)
    weights = plan_weights(spec, region, storage, network, fit.nodes, arch.parameters, decisions, warnings)
    checkpoints = plan_checkpoints(spec, catalog, region, fit, arch, choice.lora_rank, storage, decisions)
    spot, dlc_spot_plan = parts.spot(spec, fit, ranks, decisions, warnings)
    # without an elastic launch (PAI-DLC runs a fixed worker count, CreateJob PodCount, and restarts the job whole)
    min_nodes = elastic_minimum(spec, choice, decisions) if platform.has(Capability.ELASTIC) else fit.nodes
    cost = plan_cost(spec, catalog, best, storage, checkpoints, network)
    over = budget_problems(spec, cost)
    if over:
        raise PlanningError(over)
    warnings.extend(bucket_warning(checkpoints, cost))
    own = parts.part(
        spec, catalog, region, placed, best, storage, checkpoints, dlc_spot_plan, weights, decisions, warnings
    )
    sizing_out = plan_sizing(spec, choice)
    compute = plan_compute(spec, choice, placed.rdma, placed.eri, ranks, placed.deployment_sets, min_nodes)
    model = model_summary(spec, choice)
    _closing_notes(spec, choice, compute, cost, checkpoints, placed, decisions, warnings)
    return Plan(
        schema_version=PLAN_SCHEMA_VERSION,
        catalog_version=catalog.version,
        spec_digest=spec_digest(spec),
        name=spec.name,
        stack=spec.stack,
        region=region.id,
        zones=tuple(zones),
        tags=tuple(sorted(spec.tags.items())),
        model=model,
        sizing=sizing_out,
        compute=compute,
        network=network,
        storage=storage,
        checkpoints=checkpoints,
        spot=spot,
        cost=cost,
        decisions=tuple(decisions),
        candidates=choice.candidates,
        warnings=tuple(warnings),
        waivers=tuple(Waived(w.rule, w.reason) for w in spec.waivers),
        schedule=plan_schedule(best.schedule),
        weights=weights,
        **own,
    )


def _first_zone(spec: Spec, region: Any, decisions: list[Decision]) -> tuple[Any, str]:
    """The spec's zones (the region's when it names none) and the first one to place the nodes in, with the zone
    decision on a platform that chooses its zone (else the zone follows from the machine type: Lingjun's HPN zone)."""
    zones = spec.zones or region.zones
    zone = zones[0]
    if platform_for(spec).has(Capability.ZONE_CHOICE):
        zone_why = parts_for(spec).zone_decision(spec, region, zone)
        if zone_why is not None:
            decisions.append(zone_why)
    return zones, zone


def _closing_notes(
    spec: Spec,
    choice: Any,
    compute: Any,
    cost: Any,
    checkpoints: Any,
    placed: Any,
    decisions: list[Decision],
    warnings: list[PlanWarning],
) -> None:
    """The decisions and warnings about the finished plan: the image and container, the pause, the run's risks and
    the spec fields this platform does not honour."""
    platform = platform_for(spec)
    for extra in (image_decision(spec, compute), container_decision(spec, compute)):
        if extra is not None:
            decisions.append(extra)
    if spec.compute.paused:
        decisions.append(pause_decision(spec, compute, cost))
    warnings.extend(run_warnings(spec, choice, checkpoints, placed.machine))
    warnings.extend(
        warns.FieldIgnored(path, platform.title, u.why, u.hint) for path, u in unhonoured_warnings(spec)
    )
