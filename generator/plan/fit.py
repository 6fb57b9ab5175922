"""What the plan's parts share: a layout that fits an instance type (:class:`Fit`), its price and run time
(:class:`Scored`), and :class:`PlanningError`.

The parts (``compute``, ``network``, ``storage``, ``checkpoints``, ``spot``, ``lingjun``, ``cost``) each take
the chosen :class:`Scored` fit, or its :class:`Fit`, and build their part of the :class:`~generator.plan.model.Plan`.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator import sizing
from generator.catalog import InstanceType
from generator.errors import SpecErrors


class PlanningError(SpecErrors):
    """No plan satisfies the spec; each problem says what to change."""


@dataclass(frozen=True, slots=True)
class Fit:
    """An instance type with the fewest nodes, and the parallel layout, whose GPUs hold the training state."""

    itype: InstanceType
    nodes: int
    tp: int
    pp: int
    dp: int
    memory: sizing.MemoryBreakdown
    ep: int = 1


# GPUs of one NVLink domain: the 8 GPUs of a multi-node type (generator.plan.layout.MULTI_NODE_GPUS)
NVLINK_GPUS = 8


def expert_degree(arch: sizing.Architecture, fixed: int | str, tp: int, dp: int) -> int:
    """The expert-parallel degree of a layout: ``parallelism.expert`` when the spec fixes it, else the largest
    degree that divides the experts and the data-parallel degree and keeps ep x tp inside one node's NVLink
    domain (its all-to-all then never crosses the network); 1 for a dense model. A larger ep never needs more
    memory: the experts' weights shrink by ep and their ZeRO shards stay E x K/(tp pp dp)."""
    if arch.moe is None:
        return 1 if fixed == "auto" else int(fixed)
    if isinstance(fixed, int):
        return fixed
    return max(e for e in range(1, max(1, NVLINK_GPUS // tp) + 1)
               if arch.moe.experts % e == 0 and dp % e == 0)


@dataclass(frozen=True, slots=True)
class Scored:
    """A fit with its price per hour, run time, expected rework and run cost; ``key`` ranks it (lower wins)."""

    fit: Fit
    per_hour: float
    spot_per_hour: float
    run_hours: float | None
    rework_hours: float | None
    run_cost: float | None
    key: tuple[float, ...]
    schedule: sizing.Schedule | None = None  # run_hours = compute + bubble + writes; rework_hours = rework + restores
