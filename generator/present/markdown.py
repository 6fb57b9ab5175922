"""The plan as Markdown for a pull-request description or comment (``trainstack plan --format markdown``).

Sections: a summary table (instance type, nodes, GPUs, layout, memory per GPU, cost per hour with each price's
basis: list price or ESTIMATE), the cost table, the decisions with their reasons, the instance types considered
(the runners-up and why they lost), warnings, waived lint rules and tags. The long parts (price sources,
decisions, runners-up) are folded in ``<details>``. Every piece of user or plan text goes through
:mod:`generator.present.md`, so a tag or a waiver reason cannot add markup, HTML, links or table cells.
"""

from __future__ import annotations

from generator.plan.model import Plan
from generator.platforms.registry import parts_for
from generator.present import md
from generator.present.text import layout_text, schedule_rows
from generator.spec.units import human_bytes, human_count, human_seconds

MARKER = "<!-- trainstack-plan -->"  # lets CI find this part of a comment


def _money(x: float) -> str:
    return f"{x:,.2f}"


def _cost_rows(plan: Plan) -> list[list[str]]:
    cost = plan.cost
    node_basis = cost.basis(
        "compute"
    )  # each price's provenance is data (Cost.prices), never read from the notes
    rows = [
        ["compute on demand", _money(cost.compute_on_demand_per_hour), node_basis],
        [
            "compute spot",
            _money(cost.compute_spot_per_hour),
            f"{node_basis}; spot discount assumed" if plan.spot.spot_ranks else "none",
        ],
        [
            "shared storage",
            _money(cost.shared_storage_per_hour),
            cost.basis("shared_storage") if plan.storage.kind != "none" else "none",
        ],
        [
            "object storage",
            _money(cost.object_storage_per_hour),
            cost.basis("object_storage") if plan.checkpoints.enabled else "none",
        ],
    ]
    flagged = any(r[2].startswith("ESTIMATE") or "assumed" in r[2] for r in rows)
    rows.append(
        [
            "**total**",
            f"**{_money(cost.total_per_hour)}**",
            "includes ESTIMATEs" if flagged else "list prices",
        ]
    )
    return [[md.text(a) if not a.startswith("**") else a, b, md.text(basis)] for a, b, basis in rows]


def _summary(plan: Plan) -> list[str]:
    """The summary table: what trains on what, where its data lives, the cost per hour (and while paused, and for
    the whole run), with the platform's own rows after the third."""
    cost = plan.cost
    per_hour = f"{_money(cost.total_per_hour)} {md.text(cost.currency)}" + (
        " (ESTIMATE)" if cost.estimated else ""
    )
    rows = [
        *_training_rows(plan),
        *_data_rows(plan),
        ["cost per hour" + (" once resumed" if plan.compute.paused else ""), per_hour],
    ]
    for label, pieces in reversed(parts_for(plan).summary_rows(plan)):
        rows.insert(3, [label, "".join(md.text(p) for p in pieces)])
    return [md.table(["", "plan"], rows + _run_cost_rows(plan))]


def _training_rows(plan: Plan) -> list[list[str]]:
    """The model, the instance type, the nodes, the GPUs, the layout and memory per GPU."""
    c, z, m = plan.compute, plan.sizing, plan.model
    model = (
        f"{human_count(m.parameters)} parameters, {m.layers} layers, {m.precision}, "
        f"{m.optimizer}, seq {m.sequence_length}"
        + (
            f", mixture of experts ({m.moe.experts} experts top-{m.moe.top_k}, "
            f"{human_count(m.active_parameters)} active)"
            if m.moe
            else ""
        )
    )
    return [
        ["model", md.text(model)],
        ["instance type", md.code(c.instance_type, cell=True) + (" bare metal" if c.bare_metal else "")],
        ["nodes", (f"**PAUSED**: none declared; resumes as {c.nodes}" if c.paused else str(c.nodes))],
        ["GPUs", md.text(f"{c.total_gpus} x {c.gpu} ({c.gpu_memory_gib:g} GiB each)")],
        ["layout", md.text(layout_text(plan))],
        [
            "memory per GPU",
            md.text(
                f"{human_bytes(z.total)} of {human_bytes(z.gpu_memory)} (headroom {human_bytes(z.headroom)})"
            ),
        ],
    ]


def _data_rows(plan: Plan) -> list[list[str]]:
    """The network, the shared storage, the base weights, the checkpoints and spot."""
    s, w, k = plan.storage, plan.weights, plan.checkpoints
    weights = []
    if w:
        fetched = (
            "mounted read-only, not copied"
            if w.fetches == 0
            else "fetched once"
            if w.fetches == 1
            else f"fetched once per node ({w.fetches} times)"
        )
        weights.append(
            [
                "base weights",
                md.code(w.uri, cell=True)
                + md.text(" at ")
                + md.code(w.landing_path, cell=True)
                + md.text(f", about {human_bytes(w.size_bytes)} (ESTIMATE), " + fetched),
            ]
        )
    checkpoints = (
        f"every {human_seconds(k.interval_seconds)}, {human_bytes(k.size_bytes)} each"
        + (f", to {k.directory} ({k.tier}), copied to OSS" if k.directory else ", to OSS")
        if k.enabled
        else "off"
    )
    spot = plan.spot
    return [
        [
            "network",
            md.text(f"RDMA {plan.compute.rdma}, VPC {plan.network.vpc_cidr}, egress {plan.network.egress}"),
        ],
        [
            "storage",
            md.text(s.kind + (f" {s.capacity_gib} GiB {s.storage_type}" if s.kind != "none" else "")),
        ],
        *weights,
        ["checkpoints", md.text(checkpoints)],
        [
            "spot",
            md.text(
                f"{len(spot.spot_ranks)} spot / {len(spot.on_demand_ranks)} on demand"
                if spot.enabled
                else "off"
            ),
        ],
    ]


def _run_cost_rows(plan: Plan) -> list[list[str]]:
    """A paused plan's cost per hour while paused, and the whole run's cost when the spec gives tokens."""
    cost = plan.cost
    rows = []
    if cost.paused is not None:
        bases = {i.basis for i in cost.paused.items}
        unpriced = [i.label for i in cost.paused.items if i.per_hour is None]
        rows.append(
            [
                "cost per hour while paused",
                f"{_money(cost.paused.per_hour)} {md.text(cost.currency)}"
                + (" (ESTIMATE)" if "ESTIMATE" in bases else "")
                + (md.text(f"; not priced: {', '.join(unpriced)}") if unpriced else ""),
            ]
        )
    if cost.run_total is not None:
        rows.append(
            [
                "whole run",
                md.text(
                    f"{(cost.run_hours or 0) + (cost.expected_rework_hours or 0):,.1f} h "
                    f"wall-clock = {cost.run_total:,.0f} {cost.currency}"
                    + (
                        f" (compute prepaid for {cost.subscription_months} month(s))"
                        if cost.subscription_months
                        else ""
                    )
                )
                + (" (ESTIMATE)" if cost.estimated else ""),
            ]
        )
    return rows


def plan_markdown(plan: Plan) -> str:
    """The plan as GitHub-flavoured Markdown; every value from the spec or the plan is escaped."""
    c = plan.compute
    out = [
        MARKER,
        (
            f"### trainstack plan: {md.code(plan.name)} (stack {md.code(plan.stack)}) in "
            f"{md.code(plan.region)}, zone {md.code(c.ranks[0].zone if c.ranks else '')}"
        ),
        "",
        *_summary(plan),
        *_cost_section(plan),
        *_schedule_section(plan),
        *_decisions_section(plan),
        *_candidates_section(plan),
        *_lists_section(plan),
        "",
        (
            "<sub>Planned offline by trainstack from the spec and its catalog; prices marked ESTIMATE are not "
            "published list prices, and spot discounts and reclaim rates are assumptions.</sub>"
        ),
    ]
    return "\n".join(out) + "\n"


def _cost_section(plan: Plan) -> list[str]:
    """The cost per hour of each kind of spending with its price basis, and the price sources folded."""
    return [
        "",
        f"#### Cost per hour{' once resumed' if plan.compute.paused else ''} ({md.text(plan.cost.currency)})",
        "",
        md.table(["item", "per hour", "price basis"], _cost_rows(plan), right=(1,)),
        "",
        "<details><summary>price sources</summary>",
        "",
        *(f"- {md.text(n)}" for n in plan.cost.price_notes),
        "",
        "</details>",
    ]


def _schedule_section(plan: Plan) -> list[str]:
    """The schedule's terms in hours and days; nothing when the spec gives no tokens."""
    if plan.schedule is None:
        return []
    return [
        "",
        "#### Schedule",
        "",
        md.table(
            ["term", "hours", "days", "basis"],
            [[md.text(x) for x in r] for r in schedule_rows(plan)],
            right=(1, 2),
        ),
    ]


def _decisions_section(plan: Plan) -> list[str]:
    """Each decision with its reason, folded."""
    out = [
        "",
        "#### Decisions",
        "",
        f"<details><summary>{len(plan.decisions)} decisions, each with its reason</summary>",
        "",
    ]
    for d in plan.decisions:
        out.append(f"- **{md.text(d.topic)}**: {md.text(d.choice)}  ")
        out.append(f"  {md.text(d.reason)}")
    return [*out, "", "</details>"]


def _candidates_section(plan: Plan) -> list[str]:
    """The instance types considered: the chosen one and why each other lost, folded."""
    if not plan.candidates:
        return []
    rows = [
        [
            md.code(x.instance_type, cell=True),
            x.nodes or "",
            x.gpus or "",
            f"{x.tp}/{x.pp}/{x.dp}" if x.nodes else "",
            f"{x.per_gpu_gib:.1f}" if x.nodes else "",
            _money(x.cost_per_hour) if x.nodes else "",
            "**chosen**" if x.verdict == "chosen" else md.text(x.verdict),
        ]
        for x in plan.candidates
    ]
    return [
        "",
        "#### Instance types considered",
        "",
        f"<details><summary>{len(plan.candidates)} instance types: the chosen one and why each other lost</summary>",
        "",
        md.table(
            ["instance type", "nodes", "GPUs", "tp/pp/dp", "GiB/GPU", "CNY/h", "verdict"],
            rows,
            right=(1, 2, 4, 5),
        ),
        "",
        "</details>",
    ]


def _lists_section(plan: Plan) -> list[str]:
    """The warnings, the waived lint rules and the tags, each under its heading when there is any."""
    out: list[str] = []
    if plan.warnings:
        out += ["", "#### Warnings", "", *(f"- :warning: {md.text(w.text())}" for w in plan.warnings)]
    if plan.waivers:
        waivers = [[md.code(w.rule, cell=True), md.text(w.reason)] for w in plan.waivers]
        out += ["", "#### Waived lint rules", "", md.table(["rule", "reason"], waivers)]
    if plan.tags:
        tags = [[md.code(k, cell=True), md.code(v, cell=True)] for k, v in plan.tags]
        out += ["", "#### Tags", "", md.table(["key", "value"], tags)]
    return out


__all__ = ["MARKER", "plan_markdown"]
