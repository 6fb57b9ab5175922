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
