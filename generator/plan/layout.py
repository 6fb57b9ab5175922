"""The fits: for each instance type the spec allows (ECS or Lingjun), the fewest nodes and the tensor, pipeline
and data-parallel layout whose GPUs hold the training state, and why a type has none.

The model's shape is resolved in :mod:`generator.plan.shape`, the eligible types by the platform
(``parts_for(spec).eligible``: :mod:`generator.plan.eligible` for ECS types),
the node counts a layout can use in :mod:`generator.plan.node_counts`, and why a type has no fit in
:mod:`generator.plan.unfit`. Tensor parallelism stays inside one node; the node count must also
meet the deadline (``budget.max_days``, in the wall-clock hours of :mod:`generator.plan.run_hours`) and give a
data-parallel degree that divides the global batch. Memory never grows with the data-parallel degree, so the
smallest node count is found by binary search. Which fit wins is decided in :mod:`generator.plan.compute`.
"""

from __future__ import annotations

from generator import sizing
from generator.catalog import Catalog, InstanceType, Region
from generator.plan import rejections as r
from generator.plan.fit import (
    Fit,
    context_degree,
    data_parallel,
    expert_degree,
    with_context,
)
from generator.plan.fit import training_setup as _setup
from generator.plan.node_counts import holds, node_options, usable_bytes
from generator.plan.run_hours import first_meeting_deadline
from generator.plan.search import first_true
from generator.plan.shape import AUTO_CONTEXT, AUTO_PIPELINE, LONG_CONTEXT
from generator.plan.unfit import why_not_fit
from generator.platforms.base import Capability
from generator.platforms.registry import parts_for, platform_for
from generator.spec.model import Spec

MULTI_NODE_GPUS = r.MULTI_NODE_GPUS

# Layouts whose per-GPU memory stays under this share of the GPU's usable memory are "comfortable"; the fit search
# prefers them over tighter ones at the same node count (docs/sizing.md, "Headroom and the layout tie-break").
COMFORT_SHARE = 0.90


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _rdma_capable(spec: Spec, t: InstanceType) -> bool:
    """eRDMA or RoCE on ECS; every Lingjun machine type is on the HPN RDMA fabric. PAI-DLC manages the network
    between its workers (trainstack attaches nothing), so multi-node DLC jobs are allowed on 8-GPU workers; the
    plan says what that network is (:mod:`generator.platforms.dlc.plan`)."""
    return t.rdma or not platform_for(spec).has(Capability.RDMA_BY_TYPE)


def search(
    spec: Spec, catalog: Catalog, region: Region, arch: sizing.Architecture, lora_rank: int | None
) -> tuple[list[Fit], dict[str, r.Rejection]]:
    """For each eligible instance type, the smallest node count (and its parallel layout) that fits in memory."""
    types, rejected = parts_for(spec).eligible(spec, catalog, region)  # the types the platform draws from
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
        tps = (
            [p.tensor]
            if isinstance(p.tensor, int)
            else [d for d in _divisors(t.gpus) if sizing.tp_splits_heads(arch, d)]
        )
        pps = (
            [p.pipeline]
            if isinstance(p.pipeline, int)
            else [
                d
                for d in AUTO_PIPELINE
                if sizing.pipeline_splits(arch.layers, d)
                and (p.virtual_stages == 1 or d == 1 or arch.layers % (d * p.virtual_stages) == 0)
            ]
        )
        if isinstance(p.tensor, int) and p.tensor > t.gpus:
            rejected[t.name] = r.TensorTooWide(p.tensor, t.gpus)
            continue
        best: Fit | None = None
        for cp in _context_options(spec, lora_rank, t, tps):
            best = _best_layout(
                with_context(spec, cp), catalog, arch, lora_rank, t, tps, pps, max_nodes, gpu_bytes
            )
            if best is not None:
                break
        if best is None:
            rejected[t.name] = why_not_fit(spec, catalog, arch, lora_rank, t, tps, pps, max_nodes, multi_ok)
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


def _best_layout(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    tps: list[int],
    pps: list[int],
    max_nodes: int,
    gpu_bytes: int,
) -> Fit | None:
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
                if fit and (
                    best is None or layout_key(fit, arch, gpu_bytes) < layout_key(best, arch, gpu_bytes)
                ):
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


def _smallest(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    tp: int,
    pp: int,
    max_nodes: int,
    gpu_bytes: int,
) -> Fit | None:
    """Smallest node count for this (tp, pp), using that memory never grows with the data-parallel degree."""
    counts = node_options(spec, t, tp, pp, max_nodes)
    if not counts:
        return None
    cp = context_degree(spec)
    try:

        def mem(n: int) -> sizing.MemoryBreakdown:
            return sizing.per_gpu_memory(
                _setup(spec, arch, tp, pp, data_parallel(n * t.gpus, tp, pp, cp), lora_rank)
            )

        last = mem(counts[-1])
    except sizing.SizingError:
        return None
    if not holds(last, t, gpu_bytes):
        return None
    # the first node count whose memory fits (monotone), then the first from there that meets the deadline with
    # every overhead of the layout counted (unimodal wall time): generator/plan/search.py
    lo = first_true(len(counts), lambda i: holds(mem(counts[i]), t, gpu_bytes))
    assert lo is not None  # the last option fits
    at = first_meeting_deadline(spec, catalog, arch, lora_rank, t, counts, lo, tp, pp)
    if at is None:
        return None
    n = counts[at]
    dp = data_parallel(n * t.gpus, tp, pp, cp)
    return Fit(t, n, tp, pp, dp, mem(n), expert_degree(arch, spec.parallelism.expert, tp, dp), cp)


def memory_minimum(spec: Spec, arch: sizing.Architecture, lora_rank: int | None, fit: Fit) -> int:
    """The fewest nodes, at most ``fit.nodes``, that still hold the training state with the fit's tensor and
    pipeline degrees: the floor of an elastic launch. Memory never grows with the data-parallel degree, so a
    binary search finds it; a node count whose GPUs the layout cannot split evenly is skipped."""
    t = fit.itype
    spec = with_context(spec, fit.cp)
    ep = (
        spec.parallelism.expert if isinstance(spec.parallelism.expert, int) else 1
    )  # a fixed ep must divide dp
    options = [
        n
        for n in range(1, fit.nodes + 1)
        if (dp := data_parallel(n * t.gpus, fit.tp, fit.pp, fit.cp)) and dp % ep == 0
    ]
    gpu_bytes = usable_bytes(spec, int(t.gpu_memory_gib * 2**30))

    def fits(i: int) -> bool:
        try:
            dp = data_parallel(options[i] * t.gpus, fit.tp, fit.pp, fit.cp)
            return holds(
                sizing.per_gpu_memory(_setup(spec, arch, fit.tp, fit.pp, dp, lora_rank)), t, gpu_bytes
            )
        except sizing.SizingError:
            return False

    at = first_true(len(options), fits)
    return fit.nodes if at is None else options[at]
