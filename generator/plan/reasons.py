"""Why the plan has the node count it has, why its instance type won and the others lost, and why its parallel
layout (:func:`why_chosen`, :func:`why_lost`, :func:`why_parallel`). The node count: the constraint that bound it (the spec, memory, the deadline, the
data-parallel degree the spec fixes, or the global batch's divisibility), with the numbers behind it.

:func:`nodes_reason` recomputes each floor for the chosen layout (the fewest nodes whose GPUs hold the training
state, the fewest that meet ``budget.max_days`` with every overhead counted) so the reason and the numbers cannot
disagree; tests/test_reasons.py checks this over generated specs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from generator import sizing
from generator.catalog import Catalog
from generator.plan.fit import Fit, Scored, data_parallel, with_context
from generator.plan.layout import memory_minimum
from generator.plan.run_hours import batch_sequences, first_meeting_deadline, fit_schedule
from generator.spec.model import Spec
from generator.spec.units import human_bytes, human_count


@dataclass(frozen=True, slots=True)
class NodesReason:
    binding: tuple[str, ...]  # "spec", "memory", "deadline", "data", "batch" (the ones that set the count)
    memory_floor: int  # fewest nodes whose GPUs hold the training state with the chosen tp and pp
    deadline_floor: int | None  # fewest that meet budget.max_days (None: no deadline, or nodes fixed)
    text: str


def _days(hours: float) -> str:
    return f"{hours / 24:,.1f} days"


def nodes_reason(
    spec: Spec, catalog: Catalog, arch: sizing.Architecture, lora_rank: int | None, fit: Fit
) -> NodesReason:
    """Why the plan has ``fit.nodes`` nodes: the constraints that set the count (:func:`_binding`) and the
    floors behind them, each recomputed for the chosen layout."""
    t, n = fit.itype, fit.nodes
    spec = with_context(spec, fit.cp)
    layout = f"tp={fit.tp} pp={fit.pp}" + (f" cp={fit.cp}" if fit.cp > 1 else "")
    need = f"{human_bytes(fit.memory.total)} per GPU of {t.gpu_memory_gib:g} GiB"
    floor = memory_minimum(spec, arch, lora_rank, fit)
    if isinstance(spec.compute.nodes, int):
        return NodesReason(
            ("spec",),
            floor,
            None,
            (
                f"as the spec asks (compute.nodes); each GPU then needs {human_bytes(fit.memory.total)} of its "
                f"{t.gpu_memory_gib:g} GiB; memory alone would need {floor} node(s) with {layout}"
            ),
        )
    counts = [k for k in range(1, n + 1) if data_parallel(k * t.gpus, fit.tp, fit.pp, fit.cp)]
    deadline: int | None = None
    if spec.budget.max_days is not None and spec.model.tokens:
        at = first_meeting_deadline(spec, catalog, arch, lora_rank, t, counts, 0, fit.tp, fit.pp)
        deadline = n if at is None else counts[at]
    batch = batch_sequences(spec)
    binding = _binding(spec, n, floor, deadline, batch)
    wall = partial(_wall, spec, catalog, arch, lora_rank, fit)
    parts: list[str] = []
    if isinstance(spec.parallelism.data, int):
        parts.append(
            f"parallelism.data is {spec.parallelism.data}, so {n} nodes x {t.gpus} GPUs = "
            f"{spec.parallelism.data} x tp {fit.tp} x pp {fit.pp}"
        )
    if deadline is not None:
        parts.append(_deadline_text(spec, n, deadline, counts, "deadline" in binding, wall))
    if "memory" in binding:
        parts.append(
            f"set by memory: the fewest nodes whose GPUs hold the training state, {need} with {layout} "
            f"dp={fit.dp}" + (f" ({floor - 1} would not fit)" if floor > 1 else "")
        )
    else:
        parts.append(f"memory alone needs only {floor} node(s) with {layout} (now {need})")
    if "batch" in binding:
        low = max(floor, deadline or 0)
        parts.append(_batch_text(spec, fit, batch, low, None if deadline is None else wall(n)))
    return NodesReason(tuple(binding), floor, deadline, "; ".join(parts))


def _binding(spec: Spec, n: int, floor: int, deadline: int | None, batch: int | None) -> list[str]:
    """The constraints that set ``n`` nodes (NodesReason.binding): the data-parallel degree the spec fixes,
    else the higher of the memory and deadline floors, and the global batch when it rounds the count up past
    both."""
    if isinstance(spec.parallelism.data, int):
        return ["data"]
    low = max(floor, deadline or 0)
    binding: list[str] = []
    if deadline is not None and deadline > floor:
        binding.append("deadline")
    elif floor == low:
        binding.append("memory")
    if n > low and batch is not None:
        binding.append("batch")
    elif n > low:  # the deadline is not monotone in the node count (the bubble grows with dp)
        binding = ["deadline"]
    return binding


def _deadline_text(
    spec: Spec, n: int, deadline: int, counts: list[int], binds: bool, wall: Callable[[int], float]
) -> str:
    """The deadline's part of the reason: the fewest nodes that meet budget.max_days (and how long one count
    fewer would take) when it sets the count, else how long ``n`` nodes take within it."""
    tokens = human_count(spec.model.tokens or 0)
    days = spec.budget.max_days
    if not binds:
        return (
            f"{n} nodes finish {tokens} tokens in {_days(wall(n))} with checkpoint writes, rework and "
            f"restores counted, within budget.max_days ({days:g})"
        )
    prev = [k for k in counts if k < deadline]
    return (
        f"set by the deadline: at least {deadline} nodes finish {tokens} "
        f"tokens within budget.max_days ({days:g}) with checkpoint writes, rework and restores counted "
        f"({deadline} take {_days(wall(deadline))}"
        + (f", {prev[-1]} would take {_days(wall(prev[-1]))}" if prev else "")
        + ")"
    )


def _batch_text(spec: Spec, fit: Fit, batch: int | None, low: int, wall_hours: float | None) -> str:
    """The global batch's part of the reason: ``low`` nodes would give a data-parallel degree the batch does
    not split evenly over, so the count rounds up to ``fit.nodes`` (finishing in ``wall_hours`` under a
    deadline)."""
    low_dp = data_parallel(low * fit.itype.gpus, fit.tp, fit.pp, fit.cp)
    return (
        f"rounded up for the global batch: {batch} sequences must split evenly over dp x micro-batch "
        f"{spec.model.micro_batch_size}; {low} node(s) would give dp={low_dp}, "
        f"and the next count that divides it is {fit.nodes} (dp={fit.dp})"
        + (f", finishing in {_days(wall_hours)}" if wall_hours is not None else "")
    )


def _wall(
    spec: Spec, catalog: Catalog, arch: sizing.Architecture, lora_rank: int | None, fit: Fit, nodes: int
) -> float:
    s = fit_schedule(with_context(spec, fit.cp), catalog, arch, lora_rank, fit.itype, nodes, fit.tp, fit.pp)
    assert s is not None
    return s.wall_hours


# -- why a type won or lost, and why this parallel layout (generator/plan/compute.py asks)


def _scored_wall(s: Scored) -> float:
    return s.schedule.wall_hours if s.schedule is not None else 0.0


def why_lost(s: Scored, best: Scored) -> str:
    t, b = s.fit.itype, best.fit.itype
    if t.price_borrowed_from is not None and b.price_borrowed_from is None and t.gpu != b.gpu:
        cost = (
            f"; at the estimate its whole run would cost {s.run_cost:,.0f} CNY against {best.run_cost:,.0f}"
            if s.run_cost is not None and best.run_cost is not None
            else ""
        )
        return (
            f"its price is an ESTIMATE scaled from the {t.price_borrowed_from} rate, which does not decide between "
            f"GPU families: {b.gpu}, priced on its own, ranks first{cost}; set compute.gpu: {t.gpu} to compare "
            f"{t.gpu} types alone once you have a quote"
        )
    if s.key[:2] == best.key[:2]:
        why = []
        if s.key[2] != best.key[2]:
            why.append("its price is an estimate, the chosen one's a list price")
        elif s.key[3] != best.key[3]:
            why.append(
                "the spec's bare-metal preference"
                if best.fit.itype.bare_metal
                else "ECS preferred when the spec states no bare-metal preference"
            )
        elif s.key[4:] != best.key[4:]:
            why.append("payment: it is sold by subscription only, the chosen type also pay-as-you-go")
        return "ties on cost and time; lost on " + (why[0] if why else "name order (a stable tie-break)")
    if s.run_cost is not None and best.run_cost is not None and s.key[0] == best.key[0]:
        return f"same run cost within 0.5% but slower: {_scored_wall(s):,.0f} h vs {_scored_wall(best):,.0f} h wall-clock"
    if s.run_cost is not None and best.run_cost is not None:
        return (
            f"whole run costs {s.run_cost - best.run_cost:,.0f} CNY more "
            f"({s.run_cost:,.0f} vs {best.run_cost:,.0f})"
        )
    return f"costs {s.per_hour - best.per_hour:,.2f} CNY/h more ({s.per_hour:,.2f} vs {best.per_hour:,.2f})"


def why_chosen(spec: Spec, best: Scored, ranked: list[Scored]) -> str:
    t = best.fit.itype
    sched = best.schedule
    basis = (
        f"the lowest expected cost for the whole run: {sched.wall_hours:,.0f} h wall-clock (model FLOPs with "
        f"attention and logits at an expected MFU of {sched.mfu:.2f}, the pipeline bubble, checkpoint writes, "
        f"rework and restores after interruptions)"
        if sched is not None and best.run_cost is not None
        else "the lowest cost per hour for the GPUs needed (give model.tokens to rank by whole-run cost)"
    )
    price = (
        f"{t.price.cny_per_hour:,.2f} CNY/h per node, "
        + ("an ESTIMATE" if t.price.estimated else f"list price {t.price.region} {t.price.date}")
        + f" [{t.price.source}]"
    )
    others = sorted(
        {
            s.fit.itype.gpu
            for s in ranked
            if s.fit.itype.price_borrowed_from is not None and s.fit.itype.gpu != t.gpu
        }
    )
    est = ""
    if others and t.price_borrowed_from is None:
        est = (
            f"; {', '.join(others)} type(s) also fit but their prices are ESTIMATES scaled from another GPU's rate, "
            "which do not decide between GPU families: they rank after the types priced on their own"
        )
    elif t.price_borrowed_from is not None and len({s.fit.itype.gpu for s in ranked}) > 1:
        est = (
            f"; its price and its rivals' are ESTIMATES scaled from the {t.price_borrowed_from} rate, so the "
            "choice between GPU families rests on estimates: confirm the prices with Alibaba Cloud first"
        )
    return f"{len(ranked)} instance type(s) fit; {t.name} ({t.gpus}x {t.gpu}) has {basis}; {price}{est}"


def why_parallel(
    spec: Spec, fit: Fit, arch: sizing.Architecture, sched: sizing.Schedule | None, interconnect: str
) -> str:
    """Why the plan's parallel layout: each degree (tensor, pipeline, data, and context and expert where they
    are used), how the layout was chosen, how memory was sized, and the pipeline bubble it costs."""
    link = (
        "NVLink"
        if interconnect == "nvlink"
        else "PCIe, no NVLink" + (": MFU x0.7 assumed" if fit.tp > 1 else "")
    )
    parts = [
        (
            f"tensor parallel {fit.tp} stays inside one {fit.itype.gpus}-GPU node ({link}) and divides "
            f"{arch.heads} heads"
        ),
        pipeline_text(fit.pp, arch.layers),
        f"data parallel {fit.dp} = {fit.nodes * fit.itype.gpus} GPUs / (tp*pp"
        + ("*cp)" if fit.cp > 1 else ")"),
    ]
    if fit.cp > 1:
        parts.append(_context_text(spec, fit))
    if arch.moe is not None:
        parts.append(_expert_text(spec, fit, arch.moe.experts))
    if spec.parallelism.zero_stage:
        parts.append(
            f"ZeRO stage {spec.parallelism.zero_stage} shards state over the {fit.dp} data-parallel ranks"
        )
    parts.append(_layout_choice_text(spec, fit, arch.layers))
    parts.append(_memory_model_text(spec))
    if sched is not None and fit.pp > 1:
        parts.append(_bubble_text(spec, sched))
    return "; ".join(parts)


def _context_text(spec: Spec, fit: Fit) -> str:
    """Context parallelism: how it splits each sequence, why it is used, and whether cp x tp stays in one
    node."""
    seq = spec.model.sequence_length
    return (
        f"context parallel {fit.cp} splits each {seq}-token sequence into {seq // fit.cp}-token shares ("
        + (
            "as the spec asks"
            if isinstance(spec.parallelism.context, int)
            else f"no layout without it fits at {seq} tokens"
        )
        + (
            "; cp x tp stays inside one node's NVLink)"
            if fit.cp * fit.tp <= fit.itype.gpus
            else "; cp x tp spans nodes: the KV ring crosses the network, counted in the MFU)"
        )
    )


def _expert_text(spec: Spec, fit: Fit, experts: int) -> str:
    """Expert parallelism: the experts each rank holds, why this degree, and whether the all-to-all stays in
    a node."""
    return (
        f"expert parallel {fit.ep} of the data-parallel ranks holds {experts // fit.ep} of the "
        f"{experts} experts each ("
        + (
            "as the spec asks"
            if isinstance(spec.parallelism.expert, int)
            else "the largest degree dividing the experts and dp"
        )
        + (
            "; ep x tp stays inside one node's NVLink, so the all-to-all never crosses the network)"
            if fit.ep * fit.tp <= fit.itype.gpus
            else "; ep x tp spans nodes: the all-to-all crosses the network, counted in the MFU)"
        )
    )


def _layout_choice_text(spec: Spec, fit: Fit, layers: int) -> str:
    """How tp and pp were chosen: as the spec asks, or the search's rule (docs/sizing.md)."""
    p = spec.parallelism
    if isinstance(p.tensor, int) and isinstance(p.pipeline, int):
        return "tp and pp as the spec asks"
    return (
        "at the fewest nodes, the layout that leaves 10% of usable memory free, "
        + (
            "splits the layers evenly"
            if layers % fit.pp == 0
            else "splits the layers as evenly as it can (no pipeline degree dividing them fit)"
        )
        + " and uses the least pipeline, then tensor, parallelism (docs/sizing.md)"
    )


def _memory_model_text(spec: Spec) -> str:
    """Whose allocation the memory is sized as (the framework's, or PEFT adapters') and the headroom kept
    free."""
    keep = f", with {spec.parallelism.memory_headroom:.0%} of each GPU kept free"
    if spec.model.finetune.method != "full":
        return f"{spec.model.finetune.method} adapters sized as PEFT-based trainers hold them{keep}"
    framework = sizing.resolve_framework(spec.parallelism.framework, spec.parallelism.zero_stage)
    return (
        f"memory sized as {framework} allocates it"
        + (" (parallelism.framework: auto)" if spec.parallelism.framework == "auto" else "")
        + keep
    )


def _bubble_text(spec: Spec, sched: sizing.Schedule) -> str:
    """The pipeline bubble's formula (interleaved with virtual stages or not) and its share of the pipelined
    time."""
    v = spec.parallelism.virtual_stages
    return (
        (
            f"the interleaved pipeline bubble (pp-1)/(v*m+pp-1) with v={v} chunks per stage"
            if v > 1
            else "the pipeline bubble (pp-1)/(m+pp-1)"
        )
        + f" with m={sched.microbatches} micro-batches per step is "
        f"{sched.bubble_fraction:.1%} of the pipelined time ({sched.pipeline_bubble_hours:,.0f} h)"
    )


def pipeline_text(pp: int, layers: int) -> str:
    """How ``pp`` stages hold the layers: evenly, or equal middle stages with shorter first and last ones."""
    if layers % pp == 0:
        return f"pipeline {pp} divides {layers} layers" + (f" ({layers // pp} per stage)" if pp > 1 else "")
    m = sizing.stage_layers(layers, pp)
    ends = layers - (pp - 2) * m
    first = ends // 2
    return (
        f"pipeline {pp} splits {layers} layers as {first} + {pp - 2}x{m} + {ends - first} (shorter first and "
        "last stages, as Megatron-LM's --decoder-first/last-pipeline-num-layers do; memory sized for a "
        f"{m}-layer stage)"
    )
