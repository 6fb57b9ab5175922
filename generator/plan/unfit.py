"""Why no layout fits: the one constraint that binds for an instance type the fit search found nothing on (memory,
the deadline, the global batch, a layout that cannot split the GPUs), as a typed rejection, and, when no type fits
at all, the refusal (:mod:`generator.plan.unfit_refusals`) that carries the rejections and the settings its fixes
depend on.

It exists apart from :mod:`generator.plan.layout` because it runs only on failure and reads the search's
constraints back, one by one, to name the one that bound.
"""

from __future__ import annotations

import math

from generator import sizing
from generator.catalog import Catalog, InstanceType
from generator.errors import Problem
from generator.plan import rejections as r
from generator.plan import unfit_refusals as u
from generator.plan.fit import context_degree, data_parallel, replica_gpus
from generator.plan.fit import training_setup as _setup
from generator.plan.node_counts import batch_sequences, node_options, usable_bytes
from generator.plan.run_hours import deadline_nodes, fit_schedule
from generator.platforms.registry import platform_for
from generator.spec.model import Spec

MULTI_NODE_GPUS = r.MULTI_NODE_GPUS


Layout = tuple[int, int, list[int]]  # (tp, pp, the node counts it can use, ascending)


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
        return no_split(spec, t, max(tps), min(pps), max_nodes, only_one)
    usable = usable_bytes(spec, int(t.gpu_memory_gib * 2**30))
    needs, host_short, error = memory_needs(spec, arch, lora_rank, t, layouts)
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
    late = missed_deadline(spec, catalog, arch, lora_rank, t, fitting, max_nodes, only_one)
    if late is not None:
        return late
    batch = batch_sequences(spec)
    if batch is not None:
        return r.BatchIndivisible(max_nodes, batch, spec.model.micro_batch_size)
    return r.NoLayout(tuple(tps), tuple(pps), max_nodes)


def no_split(
    spec: Spec, t: InstanceType, tp: int, pp: int, max_nodes: int, only_one: str | None
) -> r.Rejection:
    """Why no allowed node count splits into whole replicas of the widest tensor, shallowest pipeline layout: the
    fixed compute.nodes, the fixed data-parallel degree, or the nodes one replica needs."""
    cp = context_degree(spec)
    if isinstance(spec.compute.nodes, int):
        return r.ReplicaSplitsNoNodes(tp, pp, spec.compute.nodes, t.gpus, cp)
    if isinstance(spec.parallelism.data, int):
        return r.DataDegreeNoNodes(spec.parallelism.data, tp, pp, max_nodes, cp)
    per_replica = replica_gpus(tp, pp, cp)
    step = per_replica // math.gcd(per_replica, t.gpus)
    return r.ReplicaNeedsNodes(tp, pp, step, max_nodes, t.gpus, only_one, cp)


def memory_needs(
    spec: Spec, arch: sizing.Architecture, lora_rank: int | None, t: InstanceType, layouts: list[Layout]
) -> tuple[list[tuple[float, int, int, list[int]]], r.HostMemoryShort | None, str]:
    """Each layout's bytes per GPU at the most nodes it can use (memory never grows with the data-parallel degree:
    the most nodes need the least; inf when the sizing model fails), the host memory an offload lacks (None: it
    fits, or nothing is offloaded) and the last sizing error."""
    needs: list[tuple[float, int, int, list[int]]] = []
    host_short: r.HostMemoryShort | None = None
    error = ""
    for tp, pp, opts in layouts:
        n = opts[-1]
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
    return needs, host_short, error


def missed_deadline(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    fitting: list[Layout],
    max_nodes: int,
    only_one: str | None,
) -> r.Rejection | None:
    """The deadline rejection when no layout that fits memory meets budget.max_days within its node counts: the
    fewest nodes one needs (against compute.max_nodes), or, when no count does once interruptions are counted, the
    first layout's time at its most nodes; None when one meets it."""
    deadlines = [
        (deadline_nodes(spec, catalog, arch, lora_rank, t, tp, pp), tp, pp, opts) for tp, pp, opts in fitting
    ]
    if not all(d is None or d > opts[-1] for d, _, _, opts in deadlines):
        return None
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


def nothing_fits(
    spec: Spec, rejected: dict[str, r.Rejection], arch: sizing.Architecture, catalog: Catalog | None = None
) -> Problem:
    """No type fits: the refusal lists every rejection (the most telling kinds first) with the settings its
    fixes depend on (:class:`~generator.plan.unfit_refusals.NothingFits` renders them), under the field to change:
    compute.nodes when it is fixed, budget.max_days when only the deadline binds, else compute."""
    c, p = spec.compute, spec.parallelism
    shown = sorted(rejected.items(), key=lambda kv: (kv[1].one_node_only, r.KINDS.index(kv[1].kind), kv[0]))
    kinds = {why.kind for why in rejected.values()}
    cls: type[u.NothingFits] = u.NoTypeFits
    if isinstance(c.nodes, int):
        cls = u.NoTypeFitsNodes
    elif "deadline" in kinds and not kinds & {"layout", "batch"}:
        cls = u.NoTypeMeetsDeadline
    return cls(
        machine=platform_for(spec).machine_noun,
        parameters=arch.parameters,
        rejected=tuple(shown),
        fixed_nodes=isinstance(c.nodes, int),
        max_nodes=c.max_nodes,
        max_days=spec.budget.max_days,
        gpu=c.gpu,
        spot=spec.spot.enabled,
        memory_savings=memory_savings(spec, arch, catalog),
        megatron=p.framework == "megatron",
        type_filter=bool(c.instance_types),
        fixed_degrees=isinstance(p.tensor, int) or isinstance(p.pipeline, int),
    ).problem()


def memory_savings(spec: Spec, arch: sizing.Architecture, catalog: Catalog | None) -> tuple[str, ...]:
    """The fields whose memory saving can help, not yet used: none unless, with every GPU allowed, ZeRO-3 model
    states alone (2 + 2 + K bytes per parameter, sharded over all GPUs) fit the largest GPU in the catalog."""
    c, p = spec.compute, spec.parallelism
    gpus = (c.nodes if isinstance(c.nodes, int) else c.max_nodes) * MULTI_NODE_GPUS
    biggest = max((g.memory_gib for g in catalog.gpus), default=80.0) * 2**30 if catalog else 80.0 * 2**30
    bytes_per_param = 4 + sizing.optimizer_bytes_per_param(spec.model.optimizer, spec.model.precision)
    if arch.parameters * bytes_per_param / gpus >= biggest:
        return ()
    savings = (
        ("parallelism.zero_stage", p.zero_stage < 3),
        ("parallelism.recompute", p.recompute != "full"),
        ("model.micro_batch_size", spec.model.micro_batch_size > 1),
    )
    return tuple(name for name, helps in savings if helps)
