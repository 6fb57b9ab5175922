"""The cost sections of a diff's reports: what both sides cost and the change, as text and as Markdown.

:mod:`generator.preview.diff.cost` prices the two sides (a :class:`CostDelta`); this module only shows it: the
one-line headline of the text report, the bold line of a pull-request comment, the per hour, per month and
whole-run tables with the change, what a paused or empty side costs per day, and the price notes once. The
rest of each report is :mod:`generator.preview.diff.report`'s.
"""

from __future__ import annotations

from generator.preview.diff.cost import PERIOD_TITLES, PERIODS, CostDelta, Row, SideCost
from generator.preview.diff.model import DiffResult


def _money(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.2f}"


def _change(r: Row) -> tuple[str, str]:
    """The absolute and relative change: ``+9,225.10``, ``+100.0%`` (``new`` from 0, blank without one)."""
    if r.change is None:
        return "n/a", ""
    if not r.change:
        return "0.00", ""
    pct = "" if not r.change else ("new" if not r.old else f"{r.percent:+.1f}%")
    return f"{r.change:+,.2f}", pct


def cost_headline(delta: CostDelta) -> str:
    """``9,225.10 -> 18,450.20 CNY/h (+9,225.10, +100.0%)``, with whether any price is an estimate."""
    r = delta.total("hour")
    change, pct = _change(r)
    moved = f" ({change}{', ' + pct if pct else ''})" if r.change else " (unchanged)"
    text = f"{_money(r.old)} -> {_money(r.new)} {delta.currency}/h{moved}"
    month = delta.total("month")
    text += f", {_money(month.old)} -> {_money(month.new)} {delta.currency}/month"
    run = delta.total("run")
    if run.old is not None or run.new is not None:
        text += f", whole run {_money(run.old)} -> {_money(run.new)} {delta.currency}"
    return text + ("; includes estimated prices" if delta.estimated else "")


def _label(r: Row) -> str:
    return f"{r.label} *" if r.estimated else r.label


def _state_lines(delta: CostDelta) -> list[str]:
    """What a paused or absent side still costs per day, and why a whole-run figure is missing."""
    out = []
    for name, s in (("base", delta.base), ("head", delta.head)):
        cur = delta.currency
        if s.state == "none":
            out.append(f"{name}: no cluster (an empty side): 0.00 {cur}/day")
        elif s.state == "paused":
            out.append(
                f"{name} is paused (compute.paused): no GPU node runs and nothing trains; it still costs "
                f"{_money(s.per_day)} {cur}/day ({_money(s.total_per_hour)} {cur}/h) for what it keeps; "
                f"resumed it would cost {_money(s.resume_per_hour)} {cur}/h"
            )
        elif s.run is None:
            out.append(f"{name}: whole run n/a (give model.tokens in the spec to estimate the run's length)")
    if delta.base_stack_kept:
        out.append(
            f"base deploys to stack {delta.base_stack_kept}, which this change does not remove: it keeps "
            f"costing {_money(delta.base.per_day)} {delta.currency}/day until someone destroys it "
            f"(trainstack destroy); head is the bill while both run: base + the new stack's "
            f"{_money(delta.head_alone.total_per_hour)} {delta.currency}/h"
        )
    if delta.base.run_hours is not None or delta.head.run_hours is not None:
        hours = " -> ".join(_hours(s) for s in (delta.base, delta.head))
        out.append(
            f"whole run: {hours} (wall-clock: compute, pipeline bubble, checkpoint writes, rework and "
            "restores); each line is the planner's whole-run figure (its hourly cost x these hours, a prepaid Lingjun "
            "subscription at its prepaid amount), the total their sum"
        )
    return out


def _hours(s: SideCost) -> str:
    if s.state != "running":
        return {"none": "no cluster", "paused": "paused"}[s.state]
    return "n/a" if s.run_hours is None else f"{s.run_hours:,.1f} h"


def _cost_tables(delta: CostDelta) -> list[tuple[str, list[list[str]]]]:
    """One table per period: line, base, head, change, %."""
    return [
        (PERIOD_TITLES[p], [[_label(r), _money(r.old), _money(r.new), *_change(r)] for r in delta.rows(p)])
        for p in PERIODS
    ]


def cost_text(delta: CostDelta) -> list[str]:
    from generator.present.text import table  # text helpers only

    cur = delta.currency
    out = [f"cost ({cur}): base -> head" + ("; includes estimated prices (*)" if delta.estimated else "")]
    for title, rows in _cost_tables(delta):
        out += [
            *(
                "  " + line
                for line in table(
                    [title, "base", "head", "change", "%"], rows, right=(1, 2, 3, 4)
                ).splitlines()
            ),
            "",
        ]
    out += [
        *_state_lines(delta),
        *(["price notes:"] if delta.notes else []),
        *(f"  - {n}" for n in delta.notes),
    ]
    return out


def cost_markdown(delta: CostDelta) -> list[str]:
    cur = delta.currency
    flag = " · _includes estimated prices (*)_" if delta.estimated else ""
    out = [f"#### 💰 Cost ({cur}){flag}", "", "| | base | head | change | % |", "|---|---:|---:|---:|---:|"]
    for p in PERIODS:
        r = delta.total(p)
        out.append(
            f"| **{PERIOD_TITLES[p]}** | {_money(r.old)} | {_money(r.new)} | " + " | ".join(_change(r)) + " |"
        )
    state = _state_lines(delta)
    if state:
        out += ["", *(f"> {line}  " for line in state)]
    out += ["", "<details><summary>on demand and spot, compute and storage</summary>", ""]
    for title, rows in _cost_tables(delta):
        out += [
            f"| {title} | base | head | change | % |",
            "|---|---:|---:|---:|---:|",
            *("| " + " | ".join(row) + " |" for row in rows),
            "",
        ]
    out += [
        "</details>",
        "",
        f"<details><summary>price notes ({len(delta.notes)})</summary>",
        "",
        *(f"- {n}" for n in delta.notes),
        "",
        "</details>",
    ]
    return out


def cost_bold(delta: CostDelta) -> str:
    """``**+3.24 M CNY/month (+47.8%)**, whole run +1.23 M (+18.1%)``, with the estimate flag and both stacks."""
    from generator.preview.diff.summary import money_change

    month, run = delta.total("month"), delta.total("run")
    if not month.change and not run.change and not delta.base_stack_kept:
        return "**cost unchanged**" + (" · includes ESTIMATE prices" if delta.estimated else "")
    text = f"**{money_change(month.old, month.new, delta.currency + '/month')}**"
    if run.old is not None or run.new is not None:
        text += f", whole run {money_change(run.old, run.new)}"
    if delta.base_stack_kept:
        text += f" (base + head: `{delta.base_stack_kept}` keeps billing while the new stack runs)"
    return text + (" · includes ESTIMATE prices" if delta.estimated else "")


def cost_month(result: DiffResult) -> str | None:
    """``+3.24 M CNY/month (+47.8%)``: the monthly change as a reviewer reads it (None without plans)."""
    from generator.preview.diff.summary import money_change

    if result.cost is None:
        return None
    month = result.cost.total("month")
    return money_change(month.old, month.new, result.cost.currency + "/month")
