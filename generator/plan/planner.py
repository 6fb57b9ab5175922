"""Stage 2, plan: a pure function from a Spec and the Catalog to an immutable :class:`~generator.plan.model.Plan`.

No I/O, no clock, no environment: the same spec and catalog always give the same plan. Every decision is
recorded with a reason (``Plan.decisions``) and the instance types that lost are kept with why they lost
(``Plan.candidates``). When nothing fits, :class:`PlanningError` says what would.

:func:`make_plan` only composes the parts, each of which builds its part of the Plan with its decisions:
``compute`` (with ``layout``, the fits it chooses from), ``network`` (or ``lingjun``), ``storage``, ``weights``
(the base weights, beside storage), ``checkpoints``, ``spot``, ``lingjun`` (or ``dlc``) and ``cost``. The order of the
calls is the order of the decisions and
warnings in the plan.
"""

from __future__ import annotations

import hashlib

from generator.catalog import Catalog, LingjunMachineType
from generator.errors import Problem
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
from generator.plan.dlc import dlc_fabric, dlc_network, dlc_spot, dlc_workers, plan_dlc
from generator.plan.fit import PlanningError
from generator.plan.lingjun import lingjun_fabric, lingjun_network, lingjun_nodes, lingjun_place, plan_lingjun
from generator.plan.model import (
    PLAN_SCHEMA_VERSION,
    Decision,
    DeploymentSet,
    Dlc,
    DlcSpot,
    Lingjun,
    LingjunSubnet,
    Plan,
    Waived,
)
from generator.plan.network import fabric, plan_network, plan_nodes, zone_decision
from generator.plan.schedule import plan_schedule
from generator.plan.spot import plan_spot
from generator.plan.storage import plan_storage
from generator.plan.weights import plan_weights, stored_size
from generator.spec.model import Spec

__all__ = ["PlanningError", "bucket_name", "make_plan", "spec_digest"]


def spec_digest(spec: Spec) -> str:
    """A short content hash of the spec's meaning (not its formatting).

    ``compute.paused`` counts only when true, ``model.weights``, ``compute.admin_key_pair`` and
    ``compute.container_image`` only when set, so a spec that uses none keeps
    the digest it had before the fields existed (and its committed plan.json stays byte-identical).
    """
    exclude: dict = {"compute": {*(() if spec.compute.paused else ("paused",)),
                                 *(() if spec.compute.admin_key_pair else ("admin_key_pair",)),
                                 *(() if spec.compute.container_image else ("container_image",))}}
    if not exclude["compute"]:
        del exclude["compute"]
    if spec.model.weights is None:  # likewise model.weights: specs without base weights keep their digest
        exclude["model"] = {"weights"}
    return hashlib.sha256(spec.model_dump_json(exclude=exclude or None).encode()).hexdigest()[:16]


def make_plan(spec: Spec, catalog: Catalog) -> Plan:
    decisions: list[Decision] = []
    warnings: list[str] = []
    region = catalog.region(spec.region)
    if region is None:  # validate.check reports this with a hint; keep the planner total anyway
        raise PlanningError([Problem(("region",), f"unknown region '{spec.region}'")])
    lingjun = spec.compute.platform == "lingjun"
    dlc = spec.compute.platform == "pai-dlc"
    zones = spec.zones or region.zones
    zone = zones[0]
    if not lingjun:  # a Lingjun zone follows from the machine type chosen (its known HPN zones), below
        decisions.append(zone_decision(spec, region, zone))

    choice = choose(spec, catalog, region, decisions, warnings)
    best = choice.best
    fit = best.fit

    lj: LingjunMachineType | None = catalog.lingjun_type(fit.itype.name) if lingjun else None
    hpn_zone = vpd_cidr = ""
    subnets: tuple[LingjunSubnet, ...] = ()
    dsets: tuple[DeploymentSet, ...]
    if lj is not None:
        zone, hpn_zone = lingjun_place(spec, lj, decisions)
        rdma, eri = lingjun_fabric(spec, lj, decisions, warnings)
        network, vpd_cidr, subnets = lingjun_network(spec, zone, fit, lj, decisions)
        ranks, dsets = lingjun_nodes(spec, zone, fit, decisions), ()
    elif dlc:  # DLC manages the nodes: no RDMA, ERIs, deployment sets or fixed addresses (generator.plan.dlc)
        rdma, eri = dlc_fabric(spec, fit, decisions)
        network = dlc_network(spec, zone, fit, decisions)
        ranks, dsets = dlc_workers(spec, zone, fit), ()
    else:
        rdma, eri = fabric(spec, fit, decisions, warnings)
        network = plan_network(spec, zone, fit, rdma, eri, decisions)
        ranks, dsets = plan_nodes(spec, zone, fit, network, decisions)
    weights_bytes = stored_size(spec, choice.arch.parameters)  # 0 when DLC mounts them from OSS (not copied)
    storage = plan_storage(spec, catalog, region, zone, fit, network, decisions, warnings, weights_bytes)
    weights = plan_weights(spec, region, storage, network, fit.nodes, choice.arch.parameters, decisions, warnings)
    checkpoints = plan_checkpoints(spec, catalog, region, fit, choice.arch, choice.lora_rank, storage, decisions)
    dlc_spot_plan: DlcSpot | None = None
    if dlc:
        spot, dlc_spot_plan = dlc_spot(spec, fit, ranks, decisions, warnings)
    else:
        spot = plan_spot(spec, fit, ranks, decisions, warnings)
    # a DLC job runs a fixed worker count (CreateJob PodCount) and DLC restarts it whole: no elastic launch
    min_nodes = fit.nodes if dlc else elastic_minimum(spec, choice, decisions)
    cost = plan_cost(spec, catalog, best, storage, checkpoints, network)
    over = budget_problems(spec, cost)
    if over:
        raise PlanningError(over)
    warnings.extend(bucket_warning(checkpoints, cost))
    lingjun_plan: Lingjun | None = None
    if lj is not None:
        lingjun_plan = plan_lingjun(spec, lj, zone, hpn_zone, vpd_cidr, subnets, best, checkpoints, decisions, warnings)
    dlc_plan: Dlc | None = None
    if dlc:
        dlc_plan = plan_dlc(spec, catalog, region, best, storage, checkpoints, dlc_spot_plan, decisions, warnings,
                            weights)
    sizing_out = plan_sizing(spec, choice)
    compute = plan_compute(spec, choice, rdma, eri, ranks, dsets, min_nodes)
    for extra in (image_decision(spec, compute), container_decision(spec, compute)):
        if extra is not None:
            decisions.append(extra)
    if spec.compute.paused:
        decisions.append(pause_decision(spec, compute, cost))
    model = model_summary(spec, choice)
    warnings.extend(run_warnings(spec, choice, checkpoints, lj))
    return Plan(
        schema_version=PLAN_SCHEMA_VERSION, catalog_version=catalog.version, spec_digest=spec_digest(spec),
        name=spec.name, stack=spec.stack, region=region.id, zones=tuple(zones), tags=tuple(sorted(spec.tags.items())),
        model=model, sizing=sizing_out, compute=compute, network=network, storage=storage, checkpoints=checkpoints,
        spot=spot, cost=cost, decisions=tuple(decisions), candidates=choice.candidates, warnings=tuple(warnings),
        waivers=tuple(Waived(w.rule, w.reason) for w in spec.waivers), lingjun=lingjun_plan,
        dlc=dlc_plan, schedule=plan_schedule(best.schedule), weights=weights)
