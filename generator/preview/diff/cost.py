"""The cost delta of a diff: what each side costs per hour, per month (730 h) and for the whole run, and the change.

:func:`cost_delta` takes the two sides' Plans (``None`` for an empty side, ``/dev/null``) and compares the
planner's own figures (``Plan.cost``, via :func:`generator.present.cost_report.cost_report`, which ``trainstack
cost`` prints, so the two never disagree). Every amount is broken down into compute on demand, compute spot, shared
storage and object storage, and each line says whether it rests on an estimated price. A paused side
(``compute.paused``) runs no node: its lines are what it still pays for (:class:`~generator.plan.model.PausedCost`),
it has no run cost, and :attr:`SideCost.per_day` is what it costs per day while paused. An empty side costs 0.
When HEAD deploys to another Pulumi stack (a new ``name:``), BASE's stack keeps running and billing:
:attr:`CostDelta.base_stack_kept` names it, and HEAD's figures are then what both stacks bill while both exist
(BASE's plus the new stack's; :attr:`CostDelta.head_alone` is the new stack by itself), so a rename never reads
as free.
Showing the delta is :mod:`generator.preview.diff.report`'s job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from generator.catalog import Catalog
    from generator.plan.model import Plan

HOURS_PER_MONTH = 730  # as the planner prices monthly storage (generator/plan/cost.py)

State = Literal["running", "paused", "none"]
Period = Literal["hour", "month", "run"]
PERIODS: tuple[Period, ...] = ("hour", "month", "run")
PERIOD_TITLES: Mapping[Period, str] = {
    "hour": "per hour",
    "month": f"per month ({HOURS_PER_MONTH} h)",
    "run": "whole run",
}
# The breakdown, in report order: compute (on demand, spot), then storage (shared file system, checkpoint objects).
LINES: tuple[tuple[str, str], ...] = (
    ("compute_on_demand", "compute on demand"),
    ("compute_spot", "compute spot"),
    ("shared_storage", "shared storage"),
    ("object_storage", "object storage"),
)
ESTIMATE_NOTE = (
    "ESTIMATE = not a published list price (spot prices are the spec's assumed ratio of list); "
    "see generator/catalog/data/v1/README.md for the method"
)


@dataclass(frozen=True, slots=True)
class SideCost:
    """What one side costs: per-hour lines (``LINES`` keys), the run's lines, and where each figure comes from."""

    state: State
    per_hour: Mapping[str, float]  # one amount per LINES key
    run: Mapping[str, float] | None  # the whole run per line; None when the spec gives no model.tokens
    total_per_hour: float
    run_total: float | None
    run_hours: (
        float | None
    )  # wall-clock hours: compute + bubble + checkpoint writes, plus rework and restores
    estimated: frozenset[str]  # the LINES keys that rest on an estimated price
    per_day: float = 0.0  # the planner's figure: Cost.total_per_day, or PausedCost.per_day while paused
    resume_per_hour: float | None = None  # paused: what the running cluster costs per hour once resumed
    notes: tuple[str, ...] = ()

    def amount(self, period: Period, key: str | None = None) -> float | None:
        """One line (``key``) or the total (``None``) for a period; None when the run cost is unknown."""
        if period == "run":
            if self.run is None:
                return None
            return self.run_total if key is None else self.run[key]
        hourly = self.total_per_hour if key is None else self.per_hour[key]
        return hourly if period == "hour" else round(hourly * HOURS_PER_MONTH, 2)


NO_CLUSTER = SideCost(
    "none", {k: 0.0 for k, _ in LINES}, {k: 0.0 for k, _ in LINES}, 0.0, 0.0, 0.0, frozenset()
)


@dataclass(frozen=True, slots=True)
class Row:
    """One line of one period: old -> new, the change, and whether either side's figure is an estimate."""

    key: str  # a LINES key, or "total"
    label: str
    old: float | None
    new: float | None
    estimated: bool

    @property
    def change(self) -> float | None:
        return None if self.old is None or self.new is None else round(self.new - self.old, 2)

    @property
    def percent(self) -> float | None:
        """The change in percent of the old figure; None when the old figure is 0 or unknown."""
        if self.change is None or not self.old:
            return None
        return round(100.0 * self.change / self.old, 1)


@dataclass(frozen=True)
class CostDelta:
    """Both sides' costs and the notes behind them (price sources, ESTIMATE flags, paused notes), each once."""

    currency: str
    base: SideCost
    head: SideCost
    notes: tuple[str, ...]
    base_stack_kept: str = (
        ""  # "project/stack" when HEAD deploys to another stack: BASE's keeps running (and billing)
    )
    head_stack_alone: SideCost | None = None  # with base_stack_kept: the new stack alone (head is base + new)

    @property
    def head_alone(self) -> SideCost:
        """HEAD's own stack, without the BASE stack it leaves running."""
        return self.head_stack_alone or self.head

    @property
    def estimated(self) -> bool:
        return bool(self.base.estimated or self.head.estimated)

    @property
    def changed(self) -> bool:
        return any(r.change for p in PERIODS for r in self.rows(p)) or self.base.state != self.head.state

    def rows(self, period: Period) -> list[Row]:
        """The breakdown lines and the total for one period."""
        est = self.base.estimated | self.head.estimated
        out = [
            Row(k, label, self.base.amount(period, k), self.head.amount(period, k), k in est)
            for k, label in LINES
        ]
        out.append(Row("total", "total", self.base.amount(period), self.head.amount(period), bool(est)))
        return out

    def total(self, period: Period) -> Row:
        return self.rows(period)[-1]


def side_cost(plan: Plan | None, catalog: Catalog) -> SideCost:
    """One side's cost from its plan (``None``: no cluster, 0)."""
    # from its home, not generator.estimate's re-export: that package (the estimate command's inputs and events,
    # 24 dataclasses) is never needed by a diff
    from generator.present.cost_report import cost_report

    if plan is None:
        return NO_CLUSTER
    c = plan.cost
    if c.paused is not None:  # no node runs: what the kept resources cost, nothing trains
        kept = {i.item: i for i in c.paused.items}
        per_hour = {k: (kept[k].per_hour or 0.0) if k in kept else 0.0 for k, _ in LINES}
        estimated = frozenset(k for k in per_hour if k in kept and kept[k].basis == "ESTIMATE")
        return SideCost(
            "paused",
            per_hour,
            None,
            c.paused.per_hour,
            None,
            None,
            estimated,
            c.paused.per_day,
            resume_per_hour=c.total_per_hour,
            notes=tuple(c.paused.notes),
        )
    report = cost_report(plan, catalog)
    lines = {ln["item"]: ln for ln in report["lines"]}
    hours = None if c.run_hours is None else round(c.run_hours + (c.expected_rework_hours or 0.0), 2)
    return SideCost(
        "running",
        {k: lines[k]["per_hour"] for k, _ in LINES},
        None if c.run_total is None else {k: lines[k]["run"] for k, _ in LINES},
        c.total_per_hour,
        c.run_total,
        hours,
        frozenset(k for k, _ in LINES if lines[k]["price"] and lines[k]["price"]["estimated"]),
        c.total_per_day,
    )


def cost_delta(base: Plan | None, head: Plan | None, catalog: Catalog | None = None) -> CostDelta:
    """The cost of ``base`` and ``head`` side by side, with every price note of either side listed once."""
    from generator.catalog import load_catalog

    catalog = catalog or load_catalog()
    old, new = side_cost(base, catalog), side_cost(head, catalog)
    notes: list[str] = []
    for plan, side in ((base, old), (head, new)):
        if plan is not None:
            notes.extend(n for n in (*plan.cost.price_notes, *side.notes) if n not in notes)
    if old.estimated or new.estimated:
        notes.append(ESTIMATE_NOTE)
    currency = next((p.cost.currency for p in (head, base) if p is not None), "CNY")
    if base is not None and head is not None and (base.name, base.stack) != (head.name, head.stack):
        # the diff shows HEAD's stack as new; nothing removes BASE's, so after the merge both bill
        return CostDelta(currency, old, _both(old, new), tuple(notes), f"{base.name}/{base.stack}", new)
    return CostDelta(currency, old, new, tuple(notes))


def _both(a: SideCost, b: SideCost) -> SideCost:
    """What two stacks bill together: each line summed (a run figure only when both have one)."""

    def add(x: float | None, y: float | None) -> float | None:
        return None if x is None or y is None else round(x + y, 2)

    run = None if a.run is None or b.run is None else {k: round(a.run[k] + b.run[k], 2) for k, _ in LINES}
    state: State = "running" if "running" in (a.state, b.state) else b.state
    return SideCost(
        state,
        {k: round(a.per_hour[k] + b.per_hour[k], 2) for k, _ in LINES},
        run,
        round(a.total_per_hour + b.total_per_hour, 2),
        add(a.run_total, b.run_total),
        b.run_hours,
        a.estimated | b.estimated,
        round(a.per_day + b.per_day, 2),
        notes=b.notes,
    )


def to_dict(delta: CostDelta) -> dict[str, Any]:
    """The ``cost`` object of the diff's JSON report."""

    def side(s: SideCost) -> dict[str, Any]:
        return {
            "state": s.state,
            "per_hour": s.total_per_hour,
            "per_day": s.per_day,
            "per_month": s.amount("month"),
            "run": s.run_total,
            "run_hours": s.run_hours,
            "resume_per_hour": s.resume_per_hour,
        }

    def row(r: Row) -> dict[str, Any]:
        return {
            "item": r.key,
            "label": r.label,
            "old": r.old,
            "new": r.new,
            "change": r.change,
            "percent": r.percent,
            "estimated": r.estimated,
        }

    return {
        "currency": delta.currency,
        "hours_per_month": HOURS_PER_MONTH,
        "changed": delta.changed,
        "estimated": delta.estimated,
        "base": side(delta.base),
        "head": side(delta.head),
        "base_stack_kept": delta.base_stack_kept or None,
        "head_stack_alone": None if delta.head_stack_alone is None else side(delta.head_stack_alone),
        "periods": {p: [row(r) for r in delta.rows(p)] for p in PERIODS},
        "notes": list(delta.notes),
    }
