"""Why no layout fits: the one constraint that binds for an instance type the fit search found nothing on (memory,
the deadline, the global batch, a layout that cannot split the GPUs), as a typed rejection, and the problem that
lists the rejections and the fixes that would help when no type fits at all.

It exists apart from :mod:`generator.plan.layout` because it runs only on failure and reads the search's
constraints back, one by one, to name the one that bound.
"""

from __future__ import annotations

import math

from generator import sizing
from generator.catalog import Catalog, InstanceType
from generator.errors import Problem
from generator.plan import rejections as r
from generator.plan.fit import context_degree, data_parallel, replica_gpus
from generator.plan.fit import training_setup as _setup
from generator.plan.node_counts import batch_sequences, node_options, usable_bytes
from generator.plan.run_hours import deadline_nodes, fit_schedule
from generator.platforms.registry import platform_for
from generator.spec.model import Spec
from generator.spec.units import human_count

MULTI_NODE_GPUS = r.MULTI_NODE_GPUS


def why_not_fit(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    tps: list[int],
    pps: list[int],
    max_nodes: int,
    multi_ok: bool = True,
) -> r.Rejection:
    """The constraint that binds for a type no layout fits, checked in order over every (tp, pp) it could use: the
    layout cannot split the GPUs of any allowed node count; memory, even at the largest count a layout can use; the
    deadline (the nodes it needs, against compute.max_nodes, or no count at all once interruptions are counted);
    the global batch. A type without RDMA (or 8 GPUs) that ``nodes: auto`` keeps to one node says so."""
    if not tps:
        return r.NoTensorDegree(arch.heads, t.gpus)
    c = spec.compute
    one_node = max_nodes == 1 and not isinstance(c.nodes, int) and c.max_nodes > 1 and not multi_ok
    only_one = ("gpus" if t.gpus != MULTI_NODE_GPUS else "fabric") if one_node else None
    layouts = [
        (tp, pp, opts)
        for tp in tps
        if t.gpus % tp == 0
        for pp in pps
        if (opts := node_options(spec, t, tp, pp, max_nodes, batch=False))
    ]
    if not layouts:
        tp, pp = max(tps), min(pps)
        per_replica = replica_gpus(tp, pp, context_degree(spec))
        if isinstance(c.nodes, int):
            return r.ReplicaSplitsNoNodes(tp, pp, c.nodes, t.gpus, context_degree(spec))
        step = per_replica // math.gcd(per_replica, t.gpus)
        if isinstance(spec.parallelism.data, int):
            return r.DataDegreeNoNodes(spec.parallelism.data, tp, pp, max_nodes, context_degree(spec))
        return r.ReplicaNeedsNodes(tp, pp, step, max_nodes, t.gpus, only_one, context_degree(spec))
    usable = usable_bytes(spec, int(t.gpu_memory_gib * 2**30))
    needs: list[tuple[float, int, int, list[int]]] = []
    host_short: r.HostMemoryShort | None = None
    for tp, pp, opts in layouts:
        n = opts[-1]  # memory never grows with the data-parallel degree: the most nodes need the least
        try:
            dp = data_parallel(n * t.gpus, tp, pp, context_degree(spec))
            m = sizing.per_gpu_memory(_setup(spec, arch, tp, pp, dp, lora_rank))
            if m.host and not sizing.host_fits(m.host, t.gpus, t.memory_gib):
                host_short = r.HostMemoryShort(
                    spec.parallelism.offload,
                    m.host * t.gpus,
                    n,
                    tp,
                    pp,
                    t.name,
                    t.memory_gib,
                    int(sizing.HOST_USABLE_SHARE * t.memory_gib * 2**30),
                )
            needs.append((m.total, tp, pp, opts))
        except sizing.SizingError as e:
            needs.append((math.inf, tp, pp, opts))
            error = str(e)
    need, tp, pp, opts = min(needs, key=lambda x: (x[0], x[2], x[1]))
    if need == math.inf:
        return r.SizingFailed(error)
    if host_short is not None and need <= usable:
        return host_short
    if need > usable:
        return r.OutOfMemory(
            need,
            opts[-1],
            tp,
            pp,
            t.gpu,
            t.gpu_memory_gib,
            usable,
            spec.parallelism.memory_headroom,
            t.gpus,
            only_one,
        )
    fitting = [
        (tp, pp, opts) for m, tp, pp, opts in sorted(needs, key=lambda x: (x[2], x[1])) if m <= usable
    ][:8]
    deadlines = [
        (deadline_nodes(spec, catalog, arch, lora_rank, t, tp, pp), tp, pp, opts) for tp, pp, opts in fitting
    ]
    if all(d is None or d > opts[-1] for d, _, _, opts in deadlines):
        tokens, days = spec.model.tokens or 0, spec.budget.max_days or 0.0
        known = [(d, tp, pp, o) for d, tp, pp, o in deadlines if d is not None]
        if known:
            d, tp, pp, _ = min(known, key=lambda x: x[0])
            # the first count from there that also splits the global batch evenly
            d = next(iter(n for n in node_options(spec, t, tp, pp, 4 * d + 64) if n >= d), d)
            return r.DeadlineNodes(tokens, days, d, tp, pp, max_nodes, t.gpus, only_one)
        _, tp, pp, opts = deadlines[0]
        s = fit_schedule(spec, catalog, arch, lora_rank, t, opts[-1], tp, pp)
        taken = None if s is None or not s.finishes else s.wall_hours / 24
        return r.DeadlineNever(tokens, days, opts[-1], tp, pp, taken, t.gpus, only_one)
    batch = batch_sequences(spec)
    if batch is not None:
        return r.BatchIndivisible(max_nodes, batch, spec.model.micro_batch_size)
    return r.NoLayout(tuple(tps), tuple(pps), max_nodes)


def nothing_fits(
    spec: Spec, rejected: dict[str, r.Rejection], arch: sizing.Architecture, catalog: Catalog | None = None
) -> Problem:
    """No type fits: the problem lists the first rejections (the most telling kinds first) and hints at what
    would fix the constraints that bound, not at others (more memory does not meet a deadline)."""
    c, p = spec.compute, spec.parallelism
    kinds = {why.kind for why in rejected.values()}
    fixes = []
    if isinstance(c.nodes, int):
        fixes.append("set compute.nodes: auto (or more nodes)")
    if "deadline" in kinds:
        needs = [
            why.nodes
            for why in rejected.values()
            if isinstance(why, r.DeadlineNodes) and why.one_node is None
        ]
        if needs and not isinstance(c.nodes, int):
            fixes.append(f"raise compute.max_nodes (now {c.max_nodes}) to at least {min(needs)}")
        if any(
            isinstance(why, (r.DeadlineNodes, r.DeadlineNever)) and why.one_node == "fabric"
            for why in rejected.values()
        ):
            fixes.append(
                "let the run use several nodes: a region with 8-GPU eRDMA types (see 'trainstack catalog "
                "--regions'), or network.rdma: false to accept TCP"
            )
        fixes.append(f"allow more days (budget.max_days, now {spec.budget.max_days:g})")
        fixes.append("train on fewer tokens (model.tokens)")
        fixes.append(
            "choose a GPU with a higher BF16 peak (compute.gpu: auto, or see 'trainstack catalog')"
            if c.gpu != "auto"
            else "choose a region with faster GPUs (see 'trainstack catalog --regions')"
        )
        if spec.spot.enabled and any(isinstance(why, r.DeadlineNever) for why in rejected.values()):
            fixes.append(
                "cut interruptions: keep more nodes on demand (spot.on_demand_base) or set "
                "spot.enabled: false"
            )
    # more memory does not meet a deadline: the types that fit memory already miss it, and the others are smaller
    if "memory" in kinds and "deadline" not in kinds:
        if (
            not isinstance(c.nodes, int)
            and c.max_nodes < 512
            and not any("raise compute.max_nodes" in f for f in fixes)
        ):
            fixes.append("raise compute.max_nodes")
        # Only suggest memory savings that can help: with every GPU allowed, ZeRO-3 model states alone
        # (2 + 2 + K bytes per parameter, sharded over all GPUs) must fit the largest GPU in the catalog.
        gpus = (c.nodes if isinstance(c.nodes, int) else c.max_nodes) * MULTI_NODE_GPUS
        biggest = max((g.memory_gib for g in catalog.gpus), default=80.0) * 2**30 if catalog else 80.0 * 2**30
        states = (
            arch.parameters
            * (4 + sizing.optimizer_bytes_per_param(spec.model.optimizer, spec.model.precision))
            / gpus
        )
        if states < biggest:
            if p.zero_stage < 3:
                fixes.append(
                    "use parallelism.zero_stage: 3 to shard weights, gradients and optimizer states"
                    + (
                        " (with framework: deepspeed or fsdp; Megatron's distributed optimizer is ZeRO-1)"
                        if p.framework == "megatron"
                        else ""
                    )
                )
            if p.recompute != "full":
                fixes.append("use parallelism.recompute: full to trade compute for activation memory")
            if spec.model.micro_batch_size > 1:
                fixes.append("lower model.micro_batch_size")
        if c.gpu != "auto":
            fixes.append("set compute.gpu: auto or choose a GPU with more memory")
    if any(isinstance(why, r.HostMemoryShort) for why in rejected.values()):
        fixes.insert(
            0,
            "spread the offloaded states over more nodes (compute.nodes: auto, or more), or choose an "
            "instance type with more host memory, or parallelism.offload: optimizer (keeps the weights "
            "on the GPUs)",
        )
    if "batch" in kinds:
        fixes.append(
            "choose a model.global_batch_tokens whose sequences divide by more data-parallel degrees "
            "(a power of two)"
        )
    if c.instance_types:
        fixes.append("widen compute.instance_types")
    if (isinstance(p.tensor, int) or isinstance(p.pipeline, int)) and kinds & {"memory", "layout"}:
        fixes.append("let parallelism.tensor / pipeline be auto")
    if kinds and kinds <= {"fabric", "filter", "bf16"} and "fabric" in kinds:
        # memory is not the problem: only a fabric (another region or GPU) or TCP helps
        fixes = [
            "choose a region with 8-GPU eRDMA types (see 'trainstack catalog --regions')",
            "set network.rdma: false to accept TCP",
        ]
        if c.gpu != "auto":
            fixes.append("set compute.gpu: auto (another GPU may have eRDMA types here)")
    if "bf16" in kinds:
        fixes.append("set model.precision: fp16 to allow the GPUs without bf16")
    if not fixes:
        fixes.append(
            "set compute.gpu: auto and widen the spec's filters (compute.instance_types, bare_metal, "
            "gpus_per_node)"
        )
    shown = sorted(rejected.items(), key=lambda kv: (kv[1].one_node_only, r.KINDS.index(kv[1].kind), kv[0]))
    details = "; ".join(f"{k}: {v.text()}" for k, v in shown[:2])
    if len(rejected) > 2:
        details += f"; and {len(rejected) - 2} more like these"
    path: tuple[str | int, ...] = ("compute", "nodes") if isinstance(c.nodes, int) else ("compute",)
    if "deadline" in kinds and not kinds & {"layout", "batch"} and not isinstance(c.nodes, int):
        path = ("budget", "max_days")
    what = platform_for(spec).machine_noun
    return Problem(
        path,
        f"no {what} in the region can train this {human_count(arch.parameters)}-parameter model"
        + (f" ({details})" if details else ""),
        "to fix: " + "; or ".join(dict.fromkeys(fixes)),
    )
