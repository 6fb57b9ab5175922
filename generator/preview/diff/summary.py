"""What a change does in spec terms: the "what changed" table from the two plans and the headline by what happens.

A reviewer reads the cause first: nodes 64 -> 96, GPU A100 -> H20, layout tp=8 pp=1 -> tp=4 pp=3, the memory
per GPU, the wall clock, the spot split, the cost per month and for the whole run, each base -> head, and which
warnings are new or resolved. :func:`what_changed` builds that from the two :class:`~generator.plan.model.Plan`
objects (either may be ``None``: a new spec, a deleted one) and the diff's :class:`~generator.preview.diff.cost.CostDelta`;
the headline names what happens to the cluster (:data:`KINDS`): ``new stack`` (a new spec, or a new ``name:``
or ``stack:`` that deploys a second cluster beside the first), ``deleted stack``, ``pause``, ``resume``,
``replace`` (nodes replaced), ``grow``, ``shrink``, ``update``. A new stack and a deleted stack are gated like
data at risk (:attr:`WhatChanged.gates`): the new one starts without checkpoints and, while the old one is not
destroyed, both bill; a deleted spec leaves its stack running and billing until someone destroys it.

Layout fields are read defensively (``ep`` and ``cp``, expert and context parallelism, show when a plan has them).
The result types (:class:`~generator.preview.diff.model.WhatChanged`, ``Fact``, ``KINDS``) are the model's;
showing the result is :mod:`generator.preview.diff.report`'s job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from generator.events import Event
from generator.preview.diff.model import KINDS, NODE_TYPES, DiffResult, Fact, Kind, WhatChanged
from generator.preview.diff.notes import DiffNote, NewStackEmpty, OldStackKept, Reshard, StackNotDestroyed

if TYPE_CHECKING:
    from generator.plan.model import Plan
    from generator.preview.diff.cost import CostDelta

__all__ = ["KINDS", "Fact", "Kind", "WhatChanged", "money_change", "plan_facts", "to_dict", "what_changed"]
GIB = 1024**3


def _money(x: float | None) -> str:
    if x is None:
        return "n/a"
    for size, unit in ((1e6, " M"), (1e3, " k")):
        if abs(x) >= size:
            return f"{x / size:,.2f}{unit}"
    return f"{x:,.2f}"


def money_change(old: float | None, new: float | None, unit: str = "") -> str:
    """``+3.24 M CNY/month (+47.8%)``, ``-120.00 (-1.3%)``, ``+6.79 M (new)`` or ``unchanged``."""
    if old is None or new is None:
        return "n/a"
    change = round(new - old, 2)
    if not change:
        return "unchanged"
    pct = "new" if not old else f"{100.0 * change / old:+.1f}%"
    return f"{'+' if change > 0 else '-'}{_money(abs(change))}{' ' + unit if unit else ''} ({pct})"


def _layout(plan: Plan) -> str:
    c = plan.compute
    parts = [f"tp={c.tp}", f"pp={c.pp}", f"dp={c.dp}"]
    for name in ("ep", "cp"):  # expert and context parallelism: only in plans that have them
        value = getattr(c, name, None)
        if isinstance(value, int) and value > 1:
            parts.append(f"{name}={value}")
    return " ".join(parts)


def _hours(h: float | None) -> str:
    if h is None:
        return "n/a (no model.tokens)"
    return f"{h:,.0f} h ({h / 24:,.1f} d)" if h >= 48 else f"{h:,.1f} h"


def _spot(plan: Plan) -> str:
    s = plan.spot
    if not s.enabled:
        return "off (all on demand)"
    return f"{len(s.spot_ranks)} spot + {len(s.on_demand_ranks)} on demand"


def _storage(plan: Plan) -> str:
    s = plan.storage
    if s.kind == "none":
        return "none"
    kind = "CPFS" if s.kind == "cpfs" else s.kind
    return f"{kind} {s.capacity_gib:,} GiB"


def _nodes(plan: Plan) -> str:
    c = plan.compute
    return f"0 (paused; {c.nodes} when resumed)" if c.paused else str(c.nodes)


def plan_facts(plan: Plan | None, cost: Any = None) -> dict[str, str]:
    """The table's values for one side (``—`` for a side without a cluster); ``cost`` is that side's SideCost."""
    labels = (
        "stack",
        "nodes",
        "GPUs",
        "instance type",
        "layout",
        "memory per GPU",
        "wall clock",
        "spot",
        "network",
        "shared storage",
        "cost per month",
        "whole run",
    )
    if plan is None:
        return dict.fromkeys(labels, "—")
    c = plan.compute
    wall = plan.schedule.wall_hours if plan.schedule is not None else plan.cost.run_hours
    out = {
        "stack": f"{plan.name}/{plan.stack}",
        "nodes": _nodes(plan),
        "GPUs": f"{c.total_gpus} x {c.gpu}",
        "instance type": c.instance_type,
        "layout": _layout(plan),
        "memory per GPU": f"{plan.sizing.total / GIB:,.1f} of {plan.sizing.gpu_memory / GIB:,.0f} GiB",
        "wall clock": "paused" if c.paused else _hours(wall),
        "spot": _spot(plan),
        "network": f"VPC {plan.network.vpc_cidr}",
        "shared storage": _storage(plan),
    }
    if cost is not None:
        month, run = cost.amount("month"), cost.amount("run")
        out["cost per month"] = _money(month)
        out["whole run"] = "n/a" if run is None else _money(run)
    return {k: out.get(k, "n/a") for k in labels}


def _warnings(base: Plan | None, head: Plan | None) -> tuple[tuple[Event, ...], tuple[Event, ...]]:
    """The warnings of one side whose words the other side's lack (new, resolved)."""
    old = tuple(base.warnings) if base is not None else ()
    new = tuple(head.warnings) if head is not None else ()
    old_texts, new_texts = {w.text() for w in old}, {w.text() for w in new}
    added = tuple(w for w in new if w.text() not in old_texts)
    return added, tuple(w for w in old if w.text() not in new_texts)


def _node_actions(result: DiffResult) -> set[str]:
    return {c.action for c in result.changes if c.type in NODE_TYPES}


def what_changed(
    base: Plan | None, head: Plan | None, result: DiffResult, cost: CostDelta | None, *, deleted: bool = False
) -> WhatChanged:
    """The spec-level summary of ``result``; ``base``/``head`` None for a new or a deleted spec.

    Length: one headline case after another (deleted, new or renamed stack, pause, resume, replace, grow, shrink,
    update, none, then data at risk), in the order they take precedence; a table would hide that order.
    """
    facts = []
    base_values = plan_facts(base, cost.base if cost is not None else None)
    head_values = plan_facts(head, cost.head_alone if cost is not None else None)
    for label in base_values:
        facts.append(Fact(label, base_values[label], head_values[label]))
    new_w, resolved_w = _warnings(base, head)
    cur = cost.currency if cost is not None else "CNY"
    notes: list[DiffNote] = []
    gates: list[str] = []
    other_stack = base is not None and head is not None and (base.name, base.stack) != (head.name, head.stack)
    if head is None or deleted:
        assert base is not None
        kind: Kind = "deleted stack"
        per_day = cost.base.per_day if cost is not None else 0.0
        headline = (
            f"deleted stack: the spec is gone, but nothing destroys stack `{base.name}/{base.stack}`; "
            f"it keeps billing {_money(per_day)} {cur}/day until `trainstack destroy` runs"
        )
        notes.append(StackNotDestroyed(f"{base.name}/{base.stack}"))
        gates.append("deleted-stack")
    elif base is None or other_stack:
        kind = "new stack"
        what = f"`{head.name}/{head.stack}`"
        if base is None:
            headline = f"new stack {what}: {head.compute.nodes} nodes, {_money(cost.total('month').new if cost else None)} {cur}/month"
        else:
            both = cost.total("month").new if cost is not None else None
            headline = (
                f"new stack {what} beside `{base.name}/{base.stack}`: while both run the bill is base + head, "
                f"{_money(both)} {cur}/month"
            )
            notes.append(OldStackKept(f"{base.name}/{base.stack}"))
        notes.append(NewStackEmpty(f"{head.name}/{head.stack}"))
        gates.append("new-stack")
    elif not base.compute.paused and head.compute.paused:
        kind = "pause"
        per_day = cost.head.per_day if cost is not None else 0.0
        headline = (
            f"pause: {base.compute.nodes} nodes released; network, storage, bucket and role kept; resume brings "
            f"back the same names and addresses; still {_money(per_day)} {cur}/day"
        )
    elif base.compute.paused and not head.compute.paused:
        kind = "resume"
        headline = f"resume: {head.compute.nodes} nodes created with the planned names and addresses; training restarts"
    else:
        actions = _node_actions(result)
        b, h = base.compute.nodes, head.compute.nodes
        if "replace" in actions:
            n = sum(1 for c in result.changes if c.type in NODE_TYPES and c.action == "replace")
            size = f"{b} -> {h} nodes, " if b != h else ""
            kind, headline = (
                "replace",
                f"replace: {size}{n} of {h} GPU nodes replaced (local disks lost, job restarts)",
            )
        elif h > b:
            kind, headline = (
                "grow",
                f"grow: {b} -> {h} nodes (+{h - b}); the job restarts with the new world size",
            )
        elif h < b:
            kind, headline = (
                "shrink",
                f"shrink: {b} -> {h} nodes (-{b - h}); released nodes lose their local disks",
            )
        elif result.has_changes:
            kind, headline = "update", "update: no GPU node is created, deleted or replaced"
        else:
            kind, headline = "none", "no infrastructure changes"
        changed = [f.label for f in facts if f.changed and f.label in ("instance type", "layout")]
        if changed and kind != "none":
            headline += "; " + ", ".join(changed) + " change"
        if base.compute.tp != head.compute.tp or base.compute.pp != head.compute.pp:
            notes.append(
                Reshard(
                    base.compute.tp,
                    base.compute.pp,
                    head.compute.tp,
                    head.compute.pp,
                    _layout(base),
                    _layout(head),
                )
            )
    lost = [c for c in result.changes if c.impact == "data-at-risk" and c.action in ("replace", "delete")]
    if lost and kind != "deleted stack":
        counts: dict[str, int] = {}
        for c in lost:
            counts[_DATA_NAMES.get(c.type, c.short_type)] = (
                counts.get(_DATA_NAMES.get(c.type, c.short_type), 0) + 1
            )
        what = " and ".join(f"{n} {k}{'s' if n > 1 else ''}" for k, n in sorted(counts.items()))
        headline = f"data at risk: {what} deleted or replaced, with their data; {headline}"
    return WhatChanged(kind, headline, tuple(facts), new_w, resolved_w, tuple(notes), tuple(gates))


_DATA_NAMES = {
    "alicloud:nas/fileSystem:FileSystem": "file system",
    "alicloud:nas/fileset:Fileset": "fileset",
    "alicloud:oss/bucket:Bucket": "bucket",
}


def to_dict(w: WhatChanged) -> dict[str, Any]:
    """The ``what_changed`` object of the diff's JSON report."""
    return {
        "kind": w.kind,
        "headline": w.headline,
        "gates": list(w.gates),
        "notes": [n.to_dict() for n in w.notes],
        "facts": [{"label": f.label, "base": f.base, "head": f.head, "changed": f.changed} for f in w.facts],
        "new_warnings": [n.to_dict() for n in w.new_warnings],
        "resolved_warnings": [n.to_dict() for n in w.resolved_warnings],
    }
