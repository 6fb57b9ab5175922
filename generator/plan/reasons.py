"""Why the plan has the node count it has: the constraint that bound it (the spec, memory, the deadline, the
data-parallel degree the spec fixes, or the global batch's divisibility), with the numbers behind it.

:func:`nodes_reason` recomputes each floor for the chosen layout (the fewest nodes whose GPUs hold the training
state, the fewest that meet ``budget.max_days`` with every overhead counted) so the reason and the numbers cannot
disagree; tests/test_reasons.py checks this over generated specs.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator import sizing
from generator.catalog import Catalog
from generator.plan.fit import Fit, data_parallel, with_context
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
    days = spec.budget.max_days
    deadline: int | None = None
    if days is not None and spec.model.tokens:
        at = first_meeting_deadline(spec, catalog, arch, lora_rank, t, counts, 0, fit.tp, fit.pp)
        deadline = n if at is None else counts[at]
    batch = batch_sequences(spec)
    low = max(floor, deadline or 0)
    binding: list[str] = []
    parts: list[str] = []
    if isinstance(spec.parallelism.data, int):
        binding.append("data")
        parts.append(
            f"parallelism.data is {spec.parallelism.data}, so {n} nodes x {t.gpus} GPUs = "
            f"{spec.parallelism.data} x tp {fit.tp} x pp {fit.pp}"
        )
    else:
        if deadline is not None and deadline > floor:
            binding.append("deadline")
        elif floor == low:
            binding.append("memory")
        if n > low and batch is not None:
            binding.append("batch")
        elif n > low:  # the deadline is not monotone in the node count (the bubble grows with dp)
            binding = ["deadline"]
    if deadline is not None:
        wall = _wall(spec, catalog, arch, lora_rank, fit, deadline)
        if "deadline" in binding:
            prev = [k for k in counts if k < deadline]
            text = (
                f"set by the deadline: at least {deadline} nodes finish {human_count(spec.model.tokens or 0)} "
                f"tokens within budget.max_days ({days:g}) with checkpoint writes, rework and restores counted "
                f"({deadline} take {_days(wall)}"
                + (
                    f", {prev[-1]} would take {_days(_wall(spec, catalog, arch, lora_rank, fit, prev[-1]))}"
                    if prev
                    else ""
                )
                + ")"
            )
        else:
            text = (
                f"{n} nodes finish {human_count(spec.model.tokens or 0)} tokens in "
                f"{_days(_wall(spec, catalog, arch, lora_rank, fit, n))} with checkpoint writes, rework and "
                f"restores counted, within budget.max_days ({days:g})"
            )
        parts.append(text)
    if "memory" in binding:
        parts.append(
            f"set by memory: the fewest nodes whose GPUs hold the training state, {need} with {layout} "
            f"dp={fit.dp}" + (f" ({floor - 1} would not fit)" if floor > 1 else "")
        )
    else:
        parts.append(f"memory alone needs only {floor} node(s) with {layout} (now {need})")
    if "batch" in binding:
        parts.append(
            f"rounded up for the global batch: {batch} sequences must split evenly over dp x micro-batch "
            f"{spec.model.micro_batch_size}; {low} node(s) would give dp={data_parallel(low * t.gpus, fit.tp, fit.pp, fit.cp)}, "
            f"and the next count that divides it is {n} (dp={fit.dp})"
            + (
                f", finishing in {_days(_wall(spec, catalog, arch, lora_rank, fit, n))}"
                if deadline is not None
                else ""
            )
        )
    return NodesReason(tuple(binding), floor, deadline, "; ".join(parts))


def _wall(
    spec: Spec, catalog: Catalog, arch: sizing.Architecture, lora_rank: int | None, fit: Fit, nodes: int
) -> float:
    s = fit_schedule(with_context(spec, fit.cp), catalog, arch, lora_rank, fit.itype, nodes, fit.tp, fit.pp)
    assert s is not None
    return s.wall_hours
