"""The fits: for each instance type the spec allows (ECS or Lingjun), the fewest nodes and the tensor, pipeline
and data-parallel layout whose GPUs hold the training state, and why a type has none.

The model's shape is resolved here too. Tensor parallelism stays inside one node; the node count must also
meet the deadline (``budget.max_days``, in the wall-clock hours of :mod:`generator.plan.run_hours`) and give a
data-parallel degree that divides the global batch. Memory never grows with the data-parallel degree, so the
smallest node count is found by binary search. Which fit wins is decided in :mod:`generator.plan.compute`.
"""

from __future__ import annotations

import math

from generator import sizing
from generator.catalog import Catalog, GpuModel, InstanceType, LingjunMachineType, Region
from generator.errors import Problem
from generator.plan import rejections as r
from generator.plan.fit import (
    Fit,
    PlanningError,
    context_degree,
    data_parallel,
    expert_degree,
    replica_gpus,
    with_context,
)
from generator.plan.fit import training_setup as _setup
from generator.plan.run_hours import deadline_nodes, first_meeting_deadline, fit_schedule
from generator.plan.search import first_true
from generator.platforms.base import Capability
from generator.platforms.registry import platform_for
from generator.spec.model import ComputeSpec, Spec
from generator.spec.units import human_count

MULTI_NODE_GPUS = r.MULTI_NODE_GPUS

# Pipeline degrees ``pipeline: auto`` tries: every degree up to 8, then the ones practitioners run (BLOOM pp=12,
# Megatron-LM's 175B/530B/1T runs pp=8..64, Llama 3 405B pp=16). Those that divide the layers come first; a degree
# that does not gets uneven stages (the largest holds ceil(L/pp) layers, see sizing.stage_layers) and is tried only
# when no even split fits.
AUTO_PIPELINE = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 48, 64)

# Layouts whose per-GPU memory stays under this share of the GPU's usable memory are "comfortable"; the fit search
# prefers them over tighter ones at the same node count (docs/sizing.md, "Headroom and the layout tie-break").
COMFORT_SHARE = 0.90

# ``parallelism.context: auto`` considers context parallelism only for sequences at least this long, and only when
# no layout without it fits (docs/sizing.md, "Context parallelism"): Megatron-Core recommends it for long context,
# and at 32K tokens a 70B layer's activations alone reach ~10 GB per GPU at tp=8.
LONG_CONTEXT = 32768
AUTO_CONTEXT = (2, 4, 8, 16, 32)


def architecture(spec: Spec) -> sizing.Architecture:
    m = spec.model
    shape = m.architecture.model_dump() if m.architecture else {}
    try:
        moe = sizing.MoE(**m.moe.model_dump()) if m.moe is not None else None
        return sizing.architecture_for(m.parameters, m.preset, moe, **shape)
    except sizing.SizingError as e:
        path = ("model", "moe") if m.moe is not None else ("model", "preset") if m.preset and not shape else ("model",)
        raise PlanningError([Problem(path, str(e))]) from None


def shape_problems(spec: Spec, arch: sizing.Architecture) -> list[Problem]:
    """A fixed tensor or pipeline degree that cannot split the model, whatever the instance type."""
    p, out = spec.parallelism, []
    if isinstance(p.tensor, int) and not sizing.tp_splits_heads(arch, p.tensor):
        ok = [t for t in (1, 2, 4, 8, 16) if sizing.tp_splits_heads(arch, t)]
        kv = f"{arch.kv_heads} KV head{'s' if arch.kv_heads != 1 else ''}"
        out.append(Problem(("parallelism", "tensor"), f"tensor parallelism {p.tensor} does not split the model's "
                           f"{arch.heads} attention heads and {kv} (it must divide the heads, and divide the KV "
                           "heads or be a multiple of them)", f"use tensor: auto, or one of {', '.join(map(str, ok))}"))
    if isinstance(p.expert, int) and p.expert > 1 and (arch.moe is None or arch.moe.experts % p.expert):
        out.append(Problem(("parallelism", "expert"), f"expert parallelism {p.expert} needs a mixture-of-experts "
                           "model" if arch.moe is None else f"expert parallelism {p.expert} does not divide the "
                           f"model's {arch.moe.experts} experts", "use expert: auto" + (
                               "" if arch.moe is None else ", or a degree that divides the experts")))
    if p.offload != "none":
        try:
            sizing.check_offload(p.offload, sizing.resolve_framework(p.framework, p.zero_stage), p.zero_stage,
                                 spec.model.finetune.method in ("lora", "qlora"), arch.moe is not None)
        except sizing.SizingError as e:
            out.append(Problem(("parallelism", "offload"), str(e).rstrip("."),
                               "use offload: none, or the framework and zero_stage the message names"))
    c, s = p.context, spec.model.sequence_length
    if isinstance(c, int) and c > 1 and s % (2 * c):
        ok = [d for d in (1, *AUTO_CONTEXT) if s % (2 * d) == 0]
        out.append(Problem(("parallelism", "context"), f"context parallelism {c} splits each sequence into 2 x {c} "
                           f"chunks (Megatron-Core balances the causal mask that way), which {s} tokens do not give",
                           f"use context: auto, or one of {', '.join(map(str, ok))}"))
    if isinstance(c, int) and c > 1 and spec.model.finetune.method in ("lora", "qlora"):
        out.append(Problem(("parallelism", "context"), f"context parallelism {c} is modelled for full training "
                           "(Megatron-Core); LoRA/QLoRA trainers do not run it", "use context: auto or 1"))
    v = p.virtual_stages
    if v > 1 and isinstance(p.pipeline, int) and (p.pipeline == 1 or arch.layers % (p.pipeline * v)):
        ok = [d for d in AUTO_PIPELINE if d > 1 and arch.layers % (d * v) == 0]
        out.append(Problem(("parallelism", "virtual_stages"), f"{v} interleaved stages per GPU need a pipeline whose "
                           f"degree times {v} divides the model's {arch.layers} layers; pipeline is {p.pipeline}",
                           f"use pipeline: auto, or one of {', '.join(map(str, ok)) or 'none'}, or virtual_stages: 1"))
    if isinstance(p.pipeline, int) and p.pipeline > arch.layers:
        out.append(Problem(("parallelism", "pipeline"), f"pipeline parallelism {p.pipeline} is more stages than the "
                           f"model's {arch.layers} layers", f"use pipeline: auto, or at most {arch.layers}"))
    elif isinstance(p.pipeline, int) and not sizing.pipeline_splits(arch.layers, p.pipeline):
        m = sizing.stage_layers(arch.layers, p.pipeline)
        ok = [d for d in AUTO_PIPELINE if d > 1 and sizing.pipeline_splits(arch.layers, d)]
        out.append(Problem(("parallelism", "pipeline"), f"pipeline parallelism {p.pipeline} cannot split the model's "
                           f"{arch.layers} layers: {p.pipeline - 2} middle stages of {m} layers leave "
                           f"{arch.layers - (p.pipeline - 2) * m} for the first and last stages, which must hold 2 to "
                           f"{2 * m}", f"use pipeline: auto, or one of {', '.join(map(str, ok))}"))
    return out


def usable_bytes(spec: Spec, gpu_bytes: int) -> int:
    """The GPU memory a layout may use: all of it less ``parallelism.memory_headroom`` (5% by default)."""
    return int(gpu_bytes * (1 - spec.parallelism.memory_headroom))


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _eligible(spec: Spec, catalog: Catalog, region: Region) -> tuple[list[InstanceType], dict[str, r.Rejection]]:
    c = spec.compute
    platform = platform_for(spec)
    if platform.has(Capability.HPN):
        return _eligible_lingjun(spec, catalog, region)
    rejected: dict[str, r.Rejection] = {}
    wanted_gpu = catalog.gpu(c.gpu) if c.gpu != "auto" else None
    allow = set(c.instance_types)
    dlc = platform.has(Capability.DLC_WORKERS)  # DLC workers: the ECS types on DLC's public resource list (dlc_specs.csv)
    in_region = {t.name for t in catalog.types_in_region(region.id)}
    offered = {t.name for t in catalog.dlc_types_in_region(region.id)} if dlc else in_region
    out = []
    for t in catalog.instance_types:
        if allow and t.name not in allow:
            continue
        if t.name not in offered:
            if allow:
                rejected[t.name] = r.NotOnDlc() if dlc and t.name in in_region else r.NotOffered(region.id)
            continue
        if not _wanted(c, t, wanted_gpu):
            continue
        if not _precision_ok(spec, catalog, t):
            rejected[t.name] = r.NoPrecision(spec.model.precision, t.gpu)
            continue
        if t.availability == "invite" and t.name not in allow:
            rejected[t.name] = r.InviteOnly()
            continue
        if c.bare_metal == "require" and not t.bare_metal:
            continue
        if c.bare_metal == "avoid" and t.bare_metal:
            continue
        if spec.network.rdma is True and not t.rdma:
            rejected[t.name] = r.RdmaRequired()
            continue
        out.append(t)
    return out, rejected


def _wanted(c: ComputeSpec, t: InstanceType | LingjunMachineType, wanted_gpu: GpuModel | None) -> bool:
    """The spec's GPU model and GPUs-per-node filters, shared by ECS and Lingjun types."""
    if wanted_gpu is not None and t.gpu != wanted_gpu.name:
        return False
    return not (isinstance(c.gpus_per_node, int) and t.gpus != c.gpus_per_node)


def _precision_ok(spec: Spec, catalog: Catalog, t: InstanceType | LingjunMachineType) -> bool:
    """bf16 training needs bf16 tensor cores (gpus.csv column ``bf16``: V100 has none)."""
    gpu = catalog.gpu(t.gpu)
    if gpu is None:
        return True
    if spec.model.precision == "fp8":  # FP8 tensor cores (gpus.csv fp8_tflops): Ada, Hopper, Blackwell
        return bool(gpu.fp8_tflops)
    return spec.model.precision != "bf16" or gpu.bf16




def _eligible_lingjun(spec: Spec, catalog: Catalog,
                      region: Region) -> tuple[list[InstanceType], dict[str, r.Rejection]]:
    """Lingjun machine types of the region that pass the spec's filters and have a known HPN zone it allows."""
    c = spec.compute
    rejected: dict[str, r.Rejection] = {}
    wanted_gpu = catalog.gpu(c.gpu) if c.gpu != "auto" else None
    allow = set(c.instance_types)
    out = []
    for t in catalog.lingjun_types:
        if allow and t.name not in allow:
            continue
        if region.id not in t.regions:
            if allow:
                rejected[t.name] = r.NotOffered(region.id)
            continue
        if not _wanted(c, t, wanted_gpu):
            continue
        if not _precision_ok(spec, catalog, t):
            rejected[t.name] = r.NoPrecision(spec.model.precision, t.gpu)
            continue
        if c.bare_metal == "avoid":
            rejected[t.name] = r.LingjunBareMetal()
            continue
        if spec.zones and not any(t.hpn_zone(z) for z in spec.zones):
            rejected[t.name] = r.NoHpnZone(tuple(t.hpn_zones))
            continue
        out.append(t.as_instance_type())
    return out, rejected


def _rdma_capable(spec: Spec, t: InstanceType) -> bool:
    """eRDMA or RoCE on ECS; every Lingjun machine type is on the HPN RDMA fabric. PAI-DLC manages the network
    between its workers (trainstack attaches nothing), so multi-node DLC jobs are allowed on 8-GPU workers; the
    plan says what that network is (:mod:`generator.platforms.dlc.plan`)."""
    return t.rdma or not platform_for(spec).has(Capability.RDMA_BY_TYPE)


def search(spec: Spec, catalog: Catalog, region: Region, arch: sizing.Architecture,
           lora_rank: int | None) -> tuple[list[Fit], dict[str, r.Rejection]]:
    """For each eligible instance type, the smallest node count (and its parallel layout) that fits in memory."""
    types, rejected = _eligible(spec, catalog, region)
    p, c = spec.parallelism, spec.compute
    fits: list[Fit] = []
    for t in types:
        gpu = catalog.gpu(t.gpu)
        assert gpu is not None, t.gpu  # the catalog loader rejects dangling GPU references
        gpu_bytes = usable_bytes(spec, int(t.gpu_memory_gib * 2**30))
        multi_ok = t.gpus == MULTI_NODE_GPUS and (_rdma_capable(spec, t) or spec.network.rdma is False)
        max_nodes = c.nodes if isinstance(c.nodes, int) else (c.max_nodes if multi_ok else 1)
        if isinstance(c.nodes, int) and c.nodes > 1 and not multi_ok:
            rejected[t.name] = r.NotMultiNode(t.gpus)
            continue
        tps = [p.tensor] if isinstance(p.tensor, int) else [d for d in _divisors(t.gpus)
                                                              if sizing.tp_splits_heads(arch, d)]
        pps = [p.pipeline] if isinstance(p.pipeline, int) else [
            d for d in AUTO_PIPELINE if sizing.pipeline_splits(arch.layers, d)
            and (p.virtual_stages == 1 or d == 1 or arch.layers % (d * p.virtual_stages) == 0)]
        if isinstance(p.tensor, int) and p.tensor > t.gpus:
            rejected[t.name] = r.TensorTooWide(p.tensor, t.gpus)
            continue
        best: Fit | None = None
        for cp in _context_options(spec, lora_rank, t, tps):
            best = _best_layout(with_context(spec, cp), catalog, arch, lora_rank, t, tps, pps, max_nodes, gpu_bytes)
            if best is not None:
                break
        if best is None:
            rejected[t.name] = _why_not_fit(spec, catalog, arch, lora_rank, t, tps, pps, max_nodes, multi_ok)
            continue
        if best.nodes > 1 and not multi_ok:
            rejected[t.name] = r.MultiNodeNeeded()
            continue
        fits.append(best)
    return fits, rejected


def _context_options(spec: Spec, lora_rank: int | None, t: InstanceType, tps: list[int]) -> list[int]:
    """The context-parallel degrees to try, in order: the spec's when fixed; for ``auto`` 1, then (a sequence of
    at least LONG_CONTEXT tokens, full training) each degree of AUTO_CONTEXT that splits the sequence into 2 x cp
    chunks, those with cp x tp inside one node first (ring attention over NVLink; the smallest tp the spec
    allows counts)."""
    c, m = spec.parallelism.context, spec.model
    if isinstance(c, int):
        return [c]
    if m.sequence_length < LONG_CONTEXT or lora_rank is not None:
        return [1]
    ok = [d for d in AUTO_CONTEXT if m.sequence_length % (2 * d) == 0]
    inside = [d for d in ok if d * min(tps or [1]) <= t.gpus]
    return [1, *inside, *[d for d in ok if d not in inside]]


def _best_layout(spec: Spec, catalog: Catalog, arch: sizing.Architecture, lora_rank: int | None, t: InstanceType,
                 tps: list[int], pps: list[int], max_nodes: int, gpu_bytes: int) -> Fit | None:
    """The best (tp, pp) layout of ``t`` at the spec's context-parallel degree (:func:`layout_key`), or None."""
    best: Fit | None = None
    # Pipeline degrees that divide the layers first; uneven stages only when none of those fits (practitioners
    # split evenly when they can: the largest stage sets the pipeline's pace).
    for group in ([d for d in pps if arch.layers % d == 0], [d for d in pps if arch.layers % d]):
        for tp in tps:
            if t.gpus % tp:
                continue
            for pp in group:
                fit = _smallest(spec, catalog, arch, lora_rank, t, tp, pp, max_nodes, gpu_bytes)
                if fit and (best is None or layout_key(fit, arch, gpu_bytes) < layout_key(best, arch, gpu_bytes)):
                    best = fit
        if best is not None:
            break
    return best


def layout_key(fit: Fit, arch: sizing.Architecture, usable: int) -> tuple[int, int, int, int, int, int]:
    """How the fit search ranks layouts of one instance type (lower wins; docs/sizing.md, "Headroom and the layout
    tie-break"): the fewest nodes; then a layout that leaves at least 10% of the usable memory free over a tighter
    one (a plan at 79.5 of 80 GiB is one allocator spike from running out); then pipeline stages that divide the
    layers evenly; then the smallest pipeline degree and then the smallest tensor degree: tensor parallelism up
    to the node's GPUs before pipeline parallelism, and model parallelism only as much as memory needs
    (Narayanan et al. 2021, Megatron-LM PTD-P, Sec. 3, takeaways 1 and 2); then the least memory."""
    tight = 0 if fit.memory.total <= COMFORT_SHARE * usable else 1
    return (fit.nodes, tight, 1 if arch.layers % fit.pp else 0, fit.pp, fit.tp, fit.memory.total)


def _smallest(spec: Spec, catalog: Catalog, arch: sizing.Architecture, lora_rank: int | None, t: InstanceType,
              tp: int, pp: int, max_nodes: int, gpu_bytes: int) -> Fit | None:
    """Smallest node count for this (tp, pp), using that memory never grows with the data-parallel degree."""
    node_options = _node_options(spec, t, tp, pp, max_nodes)
    if not node_options:
        return None
    cp = context_degree(spec)
    try:
        def mem(n: int) -> sizing.MemoryBreakdown:
            return sizing.per_gpu_memory(_setup(spec, arch, tp, pp, data_parallel(n * t.gpus, tp, pp, cp), lora_rank))

        last = mem(node_options[-1])
    except sizing.SizingError:
        return None
    if not _holds(last, t, gpu_bytes):
        return None
    # the first node count whose memory fits (monotone), then the first from there that meets the deadline with
    # every overhead of the layout counted (unimodal wall time): generator/plan/search.py
    lo = first_true(len(node_options), lambda i: _holds(mem(node_options[i]), t, gpu_bytes))
    assert lo is not None  # the last option fits
    at = first_meeting_deadline(spec, catalog, arch, lora_rank, t, node_options, lo, tp, pp)
    if at is None:
        return None
    n = node_options[at]
    dp = data_parallel(n * t.gpus, tp, pp, cp)
    return Fit(t, n, tp, pp, dp, mem(n), expert_degree(arch, spec.parallelism.expert, tp, dp), cp)


def _holds(m: sizing.MemoryBreakdown, t: InstanceType, gpu_bytes: int) -> bool:
    """Whether a layout's memory fits the GPU and, with CPU offload, its offloaded states the node's host memory
    (both shrink as the data-parallel degree grows)."""
    return m.total <= gpu_bytes and (not m.host or sizing.host_fits(m.host, t.gpus, t.memory_gib))


def _node_options(spec: Spec, t: InstanceType, tp: int, pp: int, max_nodes: int, batch: bool = True) -> list[int]:
    """The node counts up to ``max_nodes`` (or the spec's fixed count) whose GPUs ``tp`` x ``pp`` splits evenly into
    whole replicas, at the spec's fixed data-parallel degree, and (``batch``) giving a data-parallel degree that
    divides the global batch."""
    p = spec.parallelism
    per = replica_gpus(tp, pp, context_degree(spec))
    node_options = [n for n in range(1, max_nodes + 1) if (n * t.gpus) % per == 0]
    if isinstance(spec.compute.nodes, int):
        node_options = [spec.compute.nodes] if (spec.compute.nodes * t.gpus) % per == 0 else []
    if isinstance(p.data, int):
        node_options = [n for n in node_options if n * t.gpus == p.data * per]
    if isinstance(p.expert, int) and p.expert > 1:  # the expert-parallel group is carved from the dp ranks
        node_options = [n for n in node_options if (n * t.gpus // per) % p.expert == 0]
    batch_seqs = _batch_sequences(spec)
    if batch and batch_seqs is not None:
        node_options = [n for n in node_options
                        if batch_seqs % (n * t.gpus // per * spec.model.micro_batch_size) == 0]
    return node_options


def _batch_sequences(spec: Spec) -> int | None:
    g = spec.model.global_batch_tokens
    if g is None:
        return None
    return max(1, g // spec.model.sequence_length)


def _why_not_fit(spec: Spec, catalog: Catalog, arch: sizing.Architecture, lora_rank: int | None, t: InstanceType,
                 tps: list[int], pps: list[int], max_nodes: int, multi_ok: bool = True) -> r.Rejection:
    """The constraint that binds for a type no layout fits, checked in order over every (tp, pp) it could use: the
    layout cannot split the GPUs of any allowed node count; memory, even at the largest count a layout can use; the
    deadline (the nodes it needs, against compute.max_nodes, or no count at all once interruptions are counted);
    the global batch. A type without RDMA (or 8 GPUs) that ``nodes: auto`` keeps to one node says so."""
    if not tps:
        return r.NoTensorDegree(arch.heads, t.gpus)
    c = spec.compute
    one_node = (max_nodes == 1 and not isinstance(c.nodes, int) and c.max_nodes > 1 and not multi_ok)
    only_one = ("gpus" if t.gpus != MULTI_NODE_GPUS else "fabric") if one_node else None
    layouts = [(tp, pp, opts) for tp in tps if t.gpus % tp == 0 for pp in pps
               if (opts := _node_options(spec, t, tp, pp, max_nodes, batch=False))]
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
                host_short = r.HostMemoryShort(spec.parallelism.offload, m.host * t.gpus, n, tp, pp, t.name,
                                               t.memory_gib, int(sizing.HOST_USABLE_SHARE * t.memory_gib * 2**30))
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
        return r.OutOfMemory(need, opts[-1], tp, pp, t.gpu, t.gpu_memory_gib, usable,
                             spec.parallelism.memory_headroom, t.gpus, only_one)
    fitting = [(tp, pp, opts) for m, tp, pp, opts in sorted(needs, key=lambda x: (x[2], x[1])) if m <= usable][:8]
    deadlines = [(deadline_nodes(spec, catalog, arch, lora_rank, t, tp, pp), tp, pp, opts) for tp, pp, opts in fitting]
    if all(d is None or d > opts[-1] for d, _, _, opts in deadlines):
        tokens, days = spec.model.tokens or 0, spec.budget.max_days or 0.0
        known = [(d, tp, pp, o) for d, tp, pp, o in deadlines if d is not None]
        if known:
            d, tp, pp, _ = min(known, key=lambda x: x[0])
            # the first count from there that also splits the global batch evenly
            d = next(iter(n for n in _node_options(spec, t, tp, pp, 4 * d + 64) if n >= d), d)
            return r.DeadlineNodes(tokens, days, d, tp, pp, max_nodes, t.gpus, only_one)
        _, tp, pp, opts = deadlines[0]
        s = fit_schedule(spec, catalog, arch, lora_rank, t, opts[-1], tp, pp)
        taken = None if s is None or not s.finishes else s.wall_hours / 24
        return r.DeadlineNever(tokens, days, opts[-1], tp, pp, taken, t.gpus, only_one)
    batch = _batch_sequences(spec)
    if batch is not None:
        return r.BatchIndivisible(max_nodes, batch, spec.model.micro_batch_size)
    return r.NoLayout(tuple(tps), tuple(pps), max_nodes)


def nothing_fits(spec: Spec, rejected: dict[str, r.Rejection], arch: sizing.Architecture,
                 catalog: Catalog | None = None) -> Problem:
    """No type fits: the problem lists the first rejections (the most telling kinds first) and hints at what
    would fix the constraints that bound, not at others (more memory does not meet a deadline)."""
    c, p = spec.compute, spec.parallelism
    kinds = {why.kind for why in rejected.values()}
    fixes = []
    if isinstance(c.nodes, int):
        fixes.append("set compute.nodes: auto (or more nodes)")
    if "deadline" in kinds:
        needs = [why.nodes for why in rejected.values() if isinstance(why, r.DeadlineNodes) and why.one_node is None]
        if needs and not isinstance(c.nodes, int):
            fixes.append(f"raise compute.max_nodes (now {c.max_nodes}) to at least {min(needs)}")
        if any(isinstance(why, (r.DeadlineNodes, r.DeadlineNever)) and why.one_node == "fabric"
               for why in rejected.values()):
            fixes.append("let the run use several nodes: a region with 8-GPU eRDMA types (see 'trainstack catalog "
                         "--regions'), or network.rdma: false to accept TCP")
        fixes.append(f"allow more days (budget.max_days, now {spec.budget.max_days:g})")
        fixes.append("train on fewer tokens (model.tokens)")
        fixes.append("choose a GPU with a higher BF16 peak (compute.gpu: auto, or see 'trainstack catalog')"
                     if c.gpu != "auto" else
                     "choose a region with faster GPUs (see 'trainstack catalog --regions')")
        if spec.spot.enabled and any(isinstance(why, r.DeadlineNever) for why in rejected.values()):
            fixes.append("cut interruptions: keep more nodes on demand (spot.on_demand_base) or set "
                         "spot.enabled: false")
    # more memory does not meet a deadline: the types that fit memory already miss it, and the others are smaller
    if "memory" in kinds and "deadline" not in kinds:
        if not isinstance(c.nodes, int) and c.max_nodes < 512 and not any("raise compute.max_nodes" in f
                                                                           for f in fixes):
            fixes.append("raise compute.max_nodes")
        # Only suggest memory savings that can help: with every GPU allowed, ZeRO-3 model states alone
        # (2 + 2 + K bytes per parameter, sharded over all GPUs) must fit the largest GPU in the catalog.
        gpus = (c.nodes if isinstance(c.nodes, int) else c.max_nodes) * MULTI_NODE_GPUS
        biggest = max((g.memory_gib for g in catalog.gpus), default=80.0) * 2**30 if catalog else 80.0 * 2**30
        states = arch.parameters * (4 + sizing.optimizer_bytes_per_param(spec.model.optimizer,
                                                                         spec.model.precision)) / gpus
        if states < biggest:
            if p.zero_stage < 3:
                fixes.append("use parallelism.zero_stage: 3 to shard weights, gradients and optimizer states"
                             + (" (with framework: deepspeed or fsdp; Megatron's distributed optimizer is ZeRO-1)"
                                if p.framework == "megatron" else ""))
            if p.recompute != "full":
                fixes.append("use parallelism.recompute: full to trade compute for activation memory")
            if spec.model.micro_batch_size > 1:
                fixes.append("lower model.micro_batch_size")
        if c.gpu != "auto":
            fixes.append("set compute.gpu: auto or choose a GPU with more memory")
    if any(isinstance(why, r.HostMemoryShort) for why in rejected.values()):
        fixes.insert(0, "spread the offloaded states over more nodes (compute.nodes: auto, or more), or choose an "
                        "instance type with more host memory, or parallelism.offload: optimizer (keeps the weights "
                        "on the GPUs)")
    if "batch" in kinds:
        fixes.append("choose a model.global_batch_tokens whose sequences divide by more data-parallel degrees "
                     "(a power of two)")
    if c.instance_types:
        fixes.append("widen compute.instance_types")
    if (isinstance(p.tensor, int) or isinstance(p.pipeline, int)) and kinds & {"memory", "layout"}:
        fixes.append("let parallelism.tensor / pipeline be auto")
    if kinds and kinds <= {"fabric", "filter", "bf16"} and "fabric" in kinds:
        # memory is not the problem: only a fabric (another region or GPU) or TCP helps
        fixes = ["choose a region with 8-GPU eRDMA types (see 'trainstack catalog --regions')",
                 "set network.rdma: false to accept TCP"]
        if c.gpu != "auto":
            fixes.append("set compute.gpu: auto (another GPU may have eRDMA types here)")
    if "bf16" in kinds:
        fixes.append("set model.precision: fp16 to allow the GPUs without bf16")
    if not fixes:
        fixes.append("set compute.gpu: auto and widen the spec's filters (compute.instance_types, bare_metal, "
                     "gpus_per_node)")
    shown = sorted(rejected.items(), key=lambda kv: (kv[1].one_node_only, r.KINDS.index(kv[1].kind), kv[0]))
    details = "; ".join(f"{k}: {v.text()}" for k, v in shown[:2])
    if len(rejected) > 2:
        details += f"; and {len(rejected) - 2} more like these"
    path: tuple[str | int, ...] = ("compute", "nodes") if isinstance(c.nodes, int) else ("compute",)
    if "deadline" in kinds and not kinds & {"layout", "batch"} and not isinstance(c.nodes, int):
        path = ("budget", "max_days")
    what = platform_for(spec).machine_noun
    return Problem(path, f"no {what} in the region can train this {human_count(arch.parameters)}-parameter model"
                   + (f" ({details})" if details else ""), "to fix: " + "; or ".join(dict.fromkeys(fixes)))


def memory_minimum(spec: Spec, arch: sizing.Architecture, lora_rank: int | None, fit: Fit) -> int:
    """The fewest nodes, at most ``fit.nodes``, that still hold the training state with the fit's tensor and
    pipeline degrees: the floor of an elastic launch. Memory never grows with the data-parallel degree, so a
    binary search finds it; a node count whose GPUs the layout cannot split evenly is skipped."""
    t = fit.itype
    spec = with_context(spec, fit.cp)
    ep = spec.parallelism.expert if isinstance(spec.parallelism.expert, int) else 1  # a fixed ep must divide dp
    options = [n for n in range(1, fit.nodes + 1) if (dp := data_parallel(n * t.gpus, fit.tp, fit.pp, fit.cp))
               and dp % ep == 0]
    gpu_bytes = usable_bytes(spec, int(t.gpu_memory_gib * 2**30))

    def fits(i: int) -> bool:
        try:
            dp = data_parallel(options[i] * t.gpus, fit.tp, fit.pp, fit.cp)
            return _holds(sizing.per_gpu_memory(_setup(spec, arch, fit.tp, fit.pp, dp, lora_rank)), t, gpu_bytes)
        except sizing.SizingError:
            return False

    at = first_true(len(options), fits)
    return fit.nodes if at is None else options[at]
