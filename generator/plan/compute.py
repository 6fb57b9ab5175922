"""The Compute part: which fit wins (instance type, node count, parallel layout) and why the others lost, and the
plan's Compute, Sizing and ModelSummary.

Fits (from :mod:`generator.plan.layout`) are ranked by whole-run cost, including the expected rework after spot
reclaims and node failures, or by cost per hour without ``model.tokens``, and must keep within the budget. The
warnings about the run itself (deadline, length, precision, availability) are made here too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from generator import sizing
from generator.catalog import Catalog, GpuModel, InstanceType, LingjunMachineType, Region, images
from generator.errors import Problem
from generator.plan import refusals, rejections, warns
from generator.plan.cost import is_subscription, prepaid, subscription_months
from generator.plan.fit import Fit, PlanningError, Scored, data_parallel, replica_gpus, with_context
from generator.plan.layout import memory_minimum, search
from generator.plan.model import (
    Candidate,
    Checkpoints,
    Compute,
    Cost,
    Decision,
    DeploymentSet,
    ModelSummary,
    MoESummary,
    Node,
    Sizing,
)
from generator.plan.node_counts import usable_bytes
from generator.plan.reasons import nodes_reason, why_chosen, why_lost, why_parallel
from generator.plan.run_hours import fit_schedule, never_finishes
from generator.plan.shape import architecture, shape_problems
from generator.plan.spot import spot_split
from generator.plan.unfit import nothing_fits
from generator.plan.warns import PlanWarning
from generator.platforms.base import Capability
from generator.platforms.registry import platform_for
from generator.spec import limits
from generator.spec.model import Spec
from generator.spec.units import human_count


@dataclass(frozen=True, slots=True)
class Choice:
    """The winning fit, ranked with its rivals, and the model shape it was sized for."""

    arch: sizing.Architecture
    lora_rank: int | None
    best: Scored
    gpu: GpuModel
    candidates: tuple[Candidate, ...]


def choose(
    spec: Spec, catalog: Catalog, region: Region, decisions: list[Decision], warnings: list[PlanWarning]
) -> Choice:
    """The instance type, node count and parallel layout of the plan, with their decisions."""
    arch = architecture(spec)
    m = spec.model
    lora_rank = m.finetune.lora_rank if m.finetune.method in ("lora", "qlora") else None
    _architecture_decisions(spec, arch, decisions, warnings)

    shape = shape_problems(spec, arch)
    if shape:
        raise PlanningError(shape)

    fits, rejected = search(spec, catalog, region, arch, lora_rank)
    if not fits:
        raise PlanningError([nothing_fits(spec, rejected, arch, catalog)])

    scored = [_score(spec, catalog, f) for f in fits]
    # a price borrowed from another GPU's rate never decides between GPU families: with a type of another GPU priced
    # on its own (a list price, or its own GPU's rate) among the fits, the borrowed ones rank after it (issue 24:
    # H20, L20 and Blackwell prices are the A100-80G's per-GPU rate scaled)
    listed = {s.fit.itype.gpu for s in scored if s.fit.itype.price_borrowed_from is None}
    ranked = sorted(scored, key=lambda s: (_estimate_rank(s, listed), s.key, s.fit.itype.name))
    ranked = _finishing(spec, catalog, arch, lora_rank, ranked, rejected)
    ranked = _budgeted(spec, ranked, decisions)
    best = ranked[0]
    fit = best.fit

    t = fit.itype
    gpu = catalog.gpu(t.gpu)
    assert gpu is not None
    candidates = [_candidate(s, "chosen" if s is best else why_lost(s, best)) for s in ranked[:6]]
    candidates += [
        Candidate(name, 0, 0, 0, 0, 0, 0.0, 0.0, None, None, why.text(), why)
        for name, why in sorted(rejected.items(), key=rejections.order)
    ][:12]
    decisions.append(Decision("instance type", t.name, why_chosen(spec, best, ranked)))
    decisions.append(
        Decision(
            "nodes",
            str(fit.nodes),
            nodes_reason(with_context(spec, fit.cp), catalog, arch, lora_rank, fit).text,
        )
    )
    decisions.append(
        Decision(
            "parallelism",
            f"tp={fit.tp} pp={fit.pp} dp={fit.dp}"
            + (f" cp={fit.cp}" if fit.cp > 1 else "")
            + (f" ep={fit.ep}" if arch.moe is not None else "")
            + f" zero={spec.parallelism.zero_stage}",
            why_parallel(spec, fit, arch, best.schedule, gpu.interconnect),
        )
    )

    ratio = t.host_to_gpu_memory_ratio
    if t.memory_gib and ratio < 1:
        warnings.append(warns.HostMemoryLow(t.name, t.memory_gib, t.gpus * t.gpu_memory_gib, ratio))
    return Choice(arch, lora_rank, best, gpu, tuple(candidates))


def _architecture_decisions(
    spec: Spec, arch: sizing.Architecture, decisions: list[Decision], warnings: list[PlanWarning]
) -> None:
    """The decisions about the model's shape: a derived Llama-style shape (and a warning when the name looks like a
    mixture of experts sized dense), and the experts of a mixture of experts."""
    m = spec.model
    if arch.source.startswith("derived"):
        decisions.append(
            Decision(
                "architecture",
                f"{arch.layers} layers, hidden {arch.hidden}, {arch.heads} heads",
                f"only a parameter count was given, so trainstack derived a Llama-style shape "
                f"({arch.source}); give model.architecture or model.preset for exact memory figures",
            )
        )
        known = sizing.name_looks_moe(spec.name, m.weights)
        if known is not None:
            warnings.append(warns.MoeSizedDense(known))
    if arch.moe is not None:
        e = arch.moe
        decisions.append(
            Decision(
                "mixture of experts",
                f"{e.experts} experts, top-{e.top_k}"
                + (f" + {e.shared_experts} shared" if e.shared_experts else ""),
                f"{human_count(arch.active_parameters)} of {human_count(arch.parameters)} parameters "
                "are active per token: FLOPs and hours follow the active ones, memory holds all of "
                f"them, the {human_count(arch.expert_parameters)} routed-expert parameters split over "
                "the expert-parallel ranks; routed activations keep "
                + (
                    f"the capacity factor {e.capacity_factor:g}"
                    if e.capacity_factor
                    else f"a {float(sizing.DEFAULT_IMBALANCE) - 1:.0%} token-imbalance reserve "
                    "(dropless router; Switch Transformer's capacity factor 1.25)"
                )
                + " (docs/sizing.md, Mixture of experts)",
            )
        )


def _finishing(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    ranked: list,
    rejected: dict,
) -> list:
    """The ranked plans whose run finishes despite interruptions (the others join ``rejected``); refused when none
    does."""
    # a run that interruptions never let finish is no plan: its capped schedule would print sentinel figures
    finishing = [s for s in ranked if s.schedule is None or s.schedule.finishes]
    if not finishing:
        f, schedule = ranked[0].fit, cast(sizing.Schedule, ranked[0].schedule)  # none finishes: all have one
        context = with_context(spec, f.cp)
        raise PlanningError(
            [never_finishes(context, catalog, arch, lora_rank, f.itype, f.nodes, f.tp, f.pp, schedule)]
        )
    for s in ranked:
        if s not in finishing:
            rejected[s.fit.itype.name] = rejections.NeverFinishes(s.fit.nodes)
    return finishing


def _budgeted(spec: Spec, ranked: list, decisions: list[Decision]) -> list:
    """The ranked plans with those within the budget first (a decision says so when that changes the best one);
    refused when none is within it."""
    within = [s for s in ranked if _within_budget(spec, s)]
    if not within:
        raise PlanningError([_over_budget(spec, ranked)])
    if within[0] is not ranked[0]:
        decisions.append(
            Decision(
                "budget",
                f"{within[0].fit.itype.name} instead of {ranked[0].fit.itype.name}",
                "the cheaper-overall plan exceeds the budget; this is the best plan within it",
            )
        )
    return within + [s for s in ranked if s not in within]


def elastic_minimum(spec: Spec, choice: Choice, decisions: list[Decision]) -> int:
    """The fewest nodes the elastic launch keeps training on (``torchrun --nnodes MIN:MAX``), with its decision:
    ``spot.min_nodes`` when the spec gives it, else the smallest data-parallel degree that still fits memory."""
    fit = choice.best.fit
    floor = memory_minimum(spec, choice.arch, choice.lora_rank, fit)
    asked = spec.spot.min_nodes
    step = f"tp={fit.tp} pp={fit.pp}" + (f" cp={fit.cp}" if fit.cp > 1 else "")
    if asked is None:
        decisions.append(
            Decision(
                "elastic minimum",
                f"{floor} of {fit.nodes} node(s)",
                f"the fewest nodes whose GPUs still hold the training state with {step} (ZeRO "
                f"shards over fewer data-parallel ranks as nodes leave); after a reclaim or a node "
                f"failure torchrun restarts on the nodes that remain, down to this many",
            )
        )
        return floor
    problems = []
    if asked > fit.nodes:
        problems.append(refusals.MinNodesOverPlan(asked, fit.nodes, floor).problem())
    elif asked < floor:
        problems.append(refusals.MinNodesShort(asked, floor, fit.nodes, step).problem())
    elif not data_parallel(asked * fit.itype.gpus, fit.tp, fit.pp, fit.cp):
        per = replica_gpus(fit.tp, fit.pp, fit.cp)
        problems.append(
            refusals.MinNodesSplit(
                asked, asked * fit.itype.gpus, step, per // math.gcd(per, fit.itype.gpus)
            ).problem()
        )
    if problems:
        raise PlanningError(problems)
    decisions.append(
        Decision(
            "elastic minimum",
            f"{asked} of {fit.nodes} node(s)",
            f"as the spec asks (spot.min_nodes); the memory minimum with {step} is {floor}",
        )
    )
    return asked


def plan_compute(
    spec: Spec,
    choice: Choice,
    rdma: str,
    eri: int,
    ranks: tuple[Node, ...],
    dsets: tuple[DeploymentSet, ...],
    min_nodes: int = 1,
) -> Compute:
    """The chosen nodes, their layout and fabric, and the rank table (from the network part)."""
    fit = choice.best.fit
    t = fit.itype
    return Compute(
        platform=spec.compute.platform,
        instance_type=t.name,
        family=t.family,
        gpu=t.gpu,
        gpus_per_node=t.gpus,
        nodes=fit.nodes,
        total_gpus=fit.nodes * t.gpus,
        tp=fit.tp,
        pp=fit.pp,
        dp=fit.dp,
        zero_stage=spec.parallelism.zero_stage,
        sequence_parallel=spec.parallelism.sequence_parallel and fit.tp > 1,
        recompute=spec.parallelism.recompute,
        bare_metal=t.bare_metal,
        vcpu=t.vcpu,
        memory_gib=t.memory_gib,
        gpu_memory_gib=t.gpu_memory_gib,
        rdma=rdma,
        eri_per_node=eri,
        scc=t.scc,
        hpc_cluster=t.scc,
        uefi_required=t.uefi_required,
        image_id=spec.compute.image_id,
        system_disk_gib=spec.compute.system_disk_gib,
        data_disk_gib=spec.compute.data_disk_gib,
        ranks=ranks,
        deployment_sets=dsets,
        paused=spec.compute.paused,
        min_nodes=min_nodes,
        ep=fit.ep,
        cp=fit.cp,
        vpp=spec.parallelism.virtual_stages if fit.pp > 1 else 1,
        key_pair=spec.compute.admin_key_pair
        or (platform_for(spec).default_key_pair.format(name=spec.name) or None),
        image=spec.compute.image_id
        or (images.ecs_default().image if platform_for(spec).has(Capability.DEFAULT_IMAGE) else ""),
        container_image=container_pull_ref(spec),
        container_registry_instance=spec.compute.container_registry_instance or "",
    )


def container_pull_ref(spec: Spec) -> str:
    """compute.container_image as the nodes pull it: through the registry's VPC endpoint ("" for none)."""
    parts = (
        limits.container_image_parts(spec.compute.container_image) if spec.compute.container_image else None
    )
    return parts[1] if parts else ""


def container_decision(spec: Spec, compute: Compute) -> Decision | None:
    """Why the job runs in the spec's container image, and how the nodes get it."""
    if not compute.container_image or not platform_for(spec).has(Capability.NODES):
        return None
    login = (
        f"after a login to Enterprise Edition instance {compute.container_registry_instance} with a temporary "
        "token that the node's RAM role gets from GetAuthorizationToken (the role may pull this one repository)"
        if compute.container_registry_instance
        else "without a login: the repository must allow anonymous pulls from the VPC"
    )
    return Decision(
        "container image",
        compute.container_image,
        (
            "compute.container_image, pinned by its digest and pulled through the registry's VPC endpoint at first boot "
            f"(docker pull, {login}); trainstack-launch runs "
            "torchrun in it with the GPUs, the host network and PID namespace, the shared file system and /run/trainstack "
            'mounted, so node-init.sh installs no PyTorch (docs/bootstrap.md, "Container image")'
        ),
    )


def image_decision(spec: Spec, compute: Compute) -> Decision | None:
    """Why the ECS nodes boot the image they do, when the spec names none (the pinned catalog default)."""
    if not platform_for(spec).has(Capability.DEFAULT_IMAGE) or spec.compute.image_id:
        return None
    image = images.ecs_default()
    return Decision(
        "image",
        image.image,
        (
            f"{image.os}, the pinned default of the catalog (images.csv, {image.source}, checked {image.checked}); the "
            "program boots exactly this image, so a new default is a reviewed diff, never a re-image at the next `up`. "
            "It has no NVIDIA driver or PyTorch: node-init.sh installs them at first boot (docs/bootstrap.md, "
            '"The runtime"); set compute.image_id to an image that has them to skip that'
        ),
    )


def pause_decision(spec: Spec, compute: Compute, cost: Cost) -> Decision:
    """Why a paused plan still names an instance type, ranks and addresses, and what the program leaves out."""
    platform = platform_for(compute.platform)
    left_out = platform.pause_leaves_out
    names = f"{compute.ranks[0].name}..{compute.ranks[-1].name}" + (
        f" at {compute.ranks[0].private_ip}..{compute.ranks[-1].private_ip}"
        if platform.has(Capability.FIXED_ADDRESSES)
        else ""
    )
    paused = cost.paused
    per_day = (
        f"; paused it costs about {paused.per_day:,.2f} {cost.currency}/day" if paused is not None else ""
    )
    return Decision(
        "paused",
        f"0 of {compute.nodes} nodes declared",
        (
            f"compute.paused is true: the program declares {left_out}. The network, the shared file system, the dataset, "
            f"the checkpoint bucket and the role stay (data resources keep their protection). The plan is made as if the "
            f"cluster ran, so setting compute.paused back to false brings back the same {compute.instance_type} ranks "
            f"{names}{per_day}. Pausing interrupts training: save a checkpoint first"
        ),
    )


def plan_sizing(spec: Spec, choice: Choice) -> Sizing:
    """Per-GPU memory of the chosen layout against the GPU's, and the run's FLOPs and hours."""
    best, gpu, m = choice.best, choice.gpu, spec.model
    mem = best.fit.memory
    gpu_bytes = int(best.fit.itype.gpu_memory_gib * 2**30)
    # model FLOPs: 6 N_nonembedding D + attention 12 L h s D + logits 6 V h D (generator.sizing.schedule)
    flops = sizing.flops_per_token(choice.arch, m.sequence_length).total * m.tokens if m.tokens else None
    sched = best.schedule
    share = sizing.attention_share(choice.arch, m.sequence_length, spec.parallelism.recompute)
    rated = sizing.precision_peak(gpu.bf16_tflops, gpu.fp8_tflops, gpu.mfu, m.precision, share)
    return Sizing(
        weights=mem.weights,
        gradients=mem.gradients,
        optimizer_states=mem.optimizer_states,
        activations=mem.activations,
        reserve=mem.reserve,
        total=mem.total,
        gpu_memory=gpu_bytes,
        headroom=gpu_bytes - mem.total,
        notes=tuple(mem.notes),
        training_flops=flops,
        training_hours=None if sched is None else round(sched.compute_hours, 2),
        mfu=rated[1] if sched is None else round(sched.mfu, 4),
        peak_tflops=rated[0],
        framework=sizing.resolve_framework(spec.parallelism.framework, spec.parallelism.zero_stage),
        min_headroom=gpu_bytes - usable_bytes(spec, gpu_bytes),
        offload=spec.parallelism.offload,
        host_per_gpu=mem.host,
    )


def model_summary(spec: Spec, choice: Choice) -> ModelSummary:
    """The model as it was sized: its shape (given or derived) and training settings."""
    arch, m = choice.arch, spec.model
    return ModelSummary(
        parameters=arch.parameters,
        layers=arch.layers,
        hidden=arch.hidden,
        heads=arch.heads,
        kv_heads=arch.kv_heads,
        vocab=arch.vocab,
        ffn_hidden=arch.ffn_hidden,
        architecture_source=arch.source,
        precision=m.precision,
        optimizer=m.optimizer,
        sequence_length=m.sequence_length,
        micro_batch_size=m.micro_batch_size,
        global_batch_tokens=m.global_batch_tokens,
        tokens=m.tokens,
        finetune=m.finetune.method,
        lora_rank=choice.lora_rank,
        active_parameters=arch.active_parameters,
        moe=None
        if arch.moe is None
        else MoESummary(
            arch.moe.experts,
            arch.moe.top_k,
            arch.moe.expert_ffn_hidden,
            arch.moe.shared_experts,
            arch.moe.dense_layers,
            arch.moe.capacity_factor,
            arch.expert_parameters,
        ),
    )


def run_warnings(
    spec: Spec, choice: Choice, checkpoints: Checkpoints, lj: LingjunMachineType | None
) -> list[PlanWarning]:
    """The run's length against the deadline, a run of over a year, precision and availability."""
    warnings: list[PlanWarning] = []
    best, m = choice.best, spec.model
    fit = best.fit
    t = fit.itype
    sched = best.schedule
    if (
        spec.budget.max_days is not None
        and sched is not None
        and sched.wall_hours > spec.budget.max_days * 24
    ):
        bare = sched.compute_hours + sched.pipeline_bubble_hours
        warnings.append(
            warns.DeadlineMissed(
                sched.wall_hours,
                fit.nodes,
                sched.checkpoint_write_hours,
                sched.expected_rework_hours,
                sched.restore_hours,
                bare,
                spec.budget.max_days,
                isinstance(spec.compute.nodes, int),
            )
        )
    warnings.extend(_long_run_warnings(spec, best, fit, checkpoints))
    if m.precision == "fp16":
        warnings.append(warns.Fp16LossScaling())
    if m.precision == "fp32":
        warnings.append(warns.Fp32Slow())
    if t.availability != "ga" and lj is None:
        warnings.append(warns.NotGenerallyAvailable(t.family, t.availability))
    return warnings


def _long_run_warnings(spec: Spec, best: Scored, fit: Fit, ckpt: Checkpoints) -> list[PlanWarning]:
    """A run of over a year, and a fixed checkpoint interval longer than the run or than the time between
    interruptions: legal, but almost always a typo in model.tokens, model.parameters or checkpoints.interval."""
    out: list[PlanWarning] = []
    if best.schedule is not None:
        wall = best.schedule.wall_hours
        if wall > limits.LONG_RUN_HOURS:
            out.append(warns.RunOverAYear(wall, fit.nodes))
    if ckpt.enabled and isinstance(spec.checkpoints.interval, int):
        interval = spec.checkpoints.interval
        if best.run_hours is not None and interval >= best.run_hours * 3600:
            out.append(warns.IntervalOverRun(interval, best.run_hours * 3600))
        elif ckpt.cluster_mtbf_hours and interval > ckpt.cluster_mtbf_hours * 3600:
            out.append(warns.IntervalOverMtbf(interval, ckpt.cluster_mtbf_hours))
    return out


def _score(spec: Spec, catalog: Catalog, fit: Fit) -> Scored:
    t = fit.itype
    spec = with_context(spec, fit.cp)
    on_demand_nodes, spot_nodes = spot_split(spec, fit.nodes)
    spot_price = t.price.cny_per_hour * spec.spot.price_ratio
    per_hour = on_demand_nodes * t.price.cny_per_hour + spot_nodes * spot_price
    run_hours = rework = run_cost = None
    m = spec.model
    lora_rank = m.finetune.lora_rank if m.finetune.method in ("lora", "qlora") else None
    sched = fit_schedule(spec, catalog, architecture(spec), lora_rank, t, fit.nodes, fit.tp, fit.pp)
    if sched is not None:
        # progress (compute, bubble, checkpoint writes) and what interruptions cost (lost work, restores)
        run_hours = sched.compute_hours + sched.pipeline_bubble_hours + sched.checkpoint_write_hours
        rework = sched.expected_rework_hours + sched.restore_hours
        run_cost = per_hour * sched.wall_hours
        if is_subscription(
            spec, catalog, t.name
        ):  # Lingjun Subscription: the prepaid months, whatever the length
            run_cost = prepaid(fit.nodes, t.price.cny_per_hour, subscription_months(sched.wall_hours))
        # equal cost (within 0.5%) -> the faster run wins
        key: tuple[float, ...] = (
            round(math.log(run_cost) / math.log(1.005)),
            round(sched.wall_hours, 1),
            *_tie(spec, t),
        )
    else:
        key = (round(per_hour, 2), float(fit.nodes), *_tie(spec, t))
    # Lingjun: a type also sold pay-as-you-go beats a subscription-only one (Subscription nodes are prepaid and
    # cannot be destroyed by Pulumi); always 0 on ECS
    key = (*key, 1.0 if is_subscription(spec, catalog, t.name) else 0.0)
    return Scored(fit, per_hour, spot_price, run_hours, rework, run_cost, key, sched)


def _estimate_rank(s: Scored, listed: set[str]) -> int:
    """1 for a type whose price is borrowed from another GPU's rate while a type of another GPU model priced on its
    own also fits, else 0."""
    t = s.fit.itype
    return 1 if t.price_borrowed_from is not None and listed - {t.gpu} else 0


def _tie(spec: Spec, t: InstanceType) -> tuple[float, float]:
    """Tie-breaks between equally cheap and fast types: a list price beats an estimate; then the spec's
    bare-metal preference (ECS when it has none); the name decides last, for a stable plan."""
    want_metal = spec.compute.bare_metal in ("prefer", "require")
    return (1.0 if t.price.estimated else 0.0, 0.0 if t.bare_metal == want_metal else 1.0)


def _candidate(s: Scored, verdict: str) -> Candidate:
    f = s.fit
    return Candidate(
        f.itype.name,
        f.nodes,
        f.nodes * f.itype.gpus,
        f.tp,
        f.pp,
        f.dp,
        round(f.memory.total / 2**30, 2),
        round(s.per_hour, 2),
        None if s.run_cost is None else round(s.run_cost, 2),
        None if s.schedule is None else round(s.schedule.wall_hours, 2),
        verdict,
    )


def _within_budget(spec: Spec, s: Scored) -> bool:
    b = spec.budget
    if b.per_hour is not None and s.per_hour > b.per_hour:
        return False
    return not (b.total is not None and (s.run_cost is None or s.run_cost > b.total))


def _over_budget(spec: Spec, ranked: list[Scored]) -> Problem:
    """No plan fits the budget: say by how much the cheapest misses it and what would help."""
    b = spec.budget
    if b.total is not None and ranked[0].run_cost is None:
        return refusals.BudgetNeedsTokens().problem()
    if b.per_hour is not None and all(s.per_hour > b.per_hour for s in ranked):
        cheapest = min(ranked, key=lambda s: s.per_hour)
        return refusals.CheapestOverHourly(
            cheapest.per_hour,
            cheapest.fit.nodes,
            cheapest.fit.itype.name,
            b.per_hour,
            _spot_hint(spec),
            b.max_days is not None,
        ).problem()
    assert b.total is not None
    costed = [
        s for s in ranked if s.run_cost is not None and (b.per_hour is None or s.per_hour <= b.per_hour)
    ]
    cheapest = min(costed or ranked, key=lambda s: s.run_cost or 0.0)
    return refusals.CheapestOverTotal(
        cheapest.run_cost or 0.0, cheapest.fit.nodes, cheapest.fit.itype.name, b.total, _spot_hint(spec)
    ).problem()


def _spot_hint(spec: Spec) -> str:
    """The spot lever a budget hint may name: enable spot, or move the on-demand base to spot; nothing when every
    node already is spot, and on Lingjun, which has no spot nodes."""
    if not platform_for(spec).has(Capability.SPOT):
        return ""
    if not spec.spot.enabled:
        return "enable spot (spot.enabled: true), "
    if spec.spot.on_demand_base > 1:
        return f"run more nodes on spot (spot.on_demand_base: 1, now {spec.spot.on_demand_base}), "
    return ""
