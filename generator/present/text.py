"""Text tables for people: plans, previews, the catalog. Pure functions returning strings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from generator.plan.model import Plan
from generator.platforms.registry import parts_for
from generator.spec.units import human_bytes, human_count, human_seconds


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] = ()) -> str:
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    out = []
    for n, r in enumerate(cells):
        line = "  ".join(
            r[i].rjust(widths[i]) if i in right else r[i].ljust(widths[i]) for i in range(len(r))
        )
        out.append(line.rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def schedule_rows(plan: Plan) -> list[list[str]]:
    """The schedule's terms, in hours and days: compute, bubble, checkpoint writes, rework, restores, wall."""
    s = plan.schedule
    assert s is not None
    rows: list[tuple[str, float, str]] = [
        ("compute", s.compute_hours, f"MFU {s.mfu:.2f} with attention and logit FLOPs"),
        ("pipeline bubble", s.pipeline_bubble_hours, f"(pp-1)/m with m={s.microbatches} micro-batches"),
        (
            "checkpoint writes",
            s.checkpoint_write_hours,
            f"to {plan.checkpoints.tier}" if plan.checkpoints.enabled else "checkpoints off",
        ),
        (
            "expected rework",
            s.expected_rework_hours,
            f"{s.interruptions:,.1f} interruptions x half an interval",
        ),
        ("restores", s.restore_hours, "reading the last checkpoint back and relaunching"),
        ("wall-clock", s.wall_hours, "deadlines and the whole-run cost use this"),
    ]
    return [[name, f"{h:,.1f}", f"{h / 24:,.1f}", why] for name, h, why in rows]


def schedule_table(plan: Plan) -> str:
    return table(["term", "hours", "days", "basis"], schedule_rows(plan), right=(1, 2))


def warning_lines(plan: Plan) -> list[str]:
    """The plan's warnings as ``plan`` and ``validate`` print them: a heading, then one ``  ! ...`` line each."""
    return ["Warnings", *(f"  ! {w.text()}" for w in plan.warnings)] if plan.warnings else []


def paused_cost_lines(plan: Plan) -> list[str]:
    """What a paused plan still costs (``Plan.cost.paused``), as a table with its notes; nothing for a running plan."""
    paused, cur = plan.cost.paused, plan.cost.currency
    if paused is None:
        return []

    def money(x: float | None) -> str:
        return "n/a" if x is None else f"{x:,.2f}"

    rows = [[i.label, money(i.per_hour), money(i.per_day), i.basis, i.quantity] for i in paused.items]
    rows.append(["total while paused", money(paused.per_hour), money(paused.per_day), "", ""])
    return [
        f"Cost while paused ({cur}): no GPU node runs and nothing trains",
        table(["item", "per hour", "per day", "price", "what"], rows, right=(1, 2)),
        *(f"  {n}" for n in paused.notes),
        "",
    ]


def plan_text(plan: Plan) -> str:
    """The plan for a terminal: the summary, memory per GPU, the cost, the schedule, the decisions with their
    reasons, the instance types considered, warnings and waived lint rules."""
    lines = [
        f"Plan for {plan.name} (stack {plan.stack}) in {plan.region}, zone {plan.compute.ranks[0].zone}",
        "",
        *_summary_lines(plan),
        *_data_lines(plan),
        *parts_for(plan).summary_lines(plan),  # the platform's own lines (PAI-DLC's workspace and workers)
        "",
        "Memory per GPU",
        _memory_table(plan),
        "",
        *paused_cost_lines(plan),
        *_cost_lines(plan),
    ]
    if plan.schedule is not None:
        lines += ["", "Schedule (hours)", schedule_table(plan)]
    lines += ["price sources: " + "; ".join(plan.cost.price_notes), "", "Decisions"]
    for d in plan.decisions:
        lines += [f"  - {d.topic}: {d.choice}", f"      {d.reason}"]
    lines += _candidate_lines(plan)
    if plan.warnings:
        lines += ["", *warning_lines(plan)]
    if plan.waivers:
        lines += ["", "Waived lint rules"] + [f"  {w.rule}: {w.reason}" for w in plan.waivers]
    return "\n".join(lines) + "\n"


def layout_text(plan: Plan) -> str:
    """The parallel layout: ``tp=8 pp=4 dp=16``, the optional degrees in use, ZeRO stage and recompute."""
    c = plan.compute
    return (
        f"tp={c.tp} pp={c.pp} dp={c.dp}"
        + (f" ep={c.ep}" if plan.model.moe else "")
        + (f" vpp={c.vpp}" if c.vpp > 1 else "")
        + (f" cp={c.cp}" if c.cp > 1 else "")
        + f" ZeRO-{c.zero_stage} recompute={c.recompute}"
        + (" sp" if c.sequence_parallel else "")
    )


def _summary_lines(plan: Plan) -> list[str]:
    """What trains on what: the model, the nodes, the layout, the network."""
    c, m = plan.compute, plan.model
    return [
        f"  model        {human_count(m.parameters)} parameters ({m.layers} layers, hidden {m.hidden}, {m.heads} heads), "
        f"{m.precision}, {m.optimizer}, seq {m.sequence_length}, micro-batch {m.micro_batch_size}"
        + (f", {m.finetune}" + (f" r={m.lora_rank}" if m.lora_rank else "") if m.finetune != "full" else "")
        + (
            f"; mixture of experts: {m.moe.experts} experts top-{m.moe.top_k}, {human_count(m.active_parameters)} "
            "active per token"
            if m.moe
            else ""
        ),
        (
            "  compute      PAUSED: no node is declared; resuming brings back "
            if c.paused
            else "  compute      "
        )
        + f"{c.nodes} x {c.instance_type} = {c.total_gpus} x {c.gpu} ({c.gpu_memory_gib:g} GiB each)"
        + (" bare metal" if c.bare_metal else ""),
        f"  parallelism  {layout_text(plan)}",
        f"  network      RDMA {c.rdma}"
        + (f", {c.eri_per_node} ERI/node, MTU {plan.network.mtu}" if c.eri_per_node else "")
        + f", VPC {plan.network.vpc_cidr}, egress {plan.network.egress}",
    ]


def _data_lines(plan: Plan) -> list[str]:
    """Where the data lives and how the run survives: shared storage, base weights, checkpoints, spot."""
    s, w, k = plan.storage, plan.weights, plan.checkpoints
    weights = []
    if w:
        fetched = (
            "mounted read-only, not copied"
            if w.fetches == 0
            else "fetched once"
            if w.fetches == 1
            else f"fetched {w.fetches} times (once per node)"
        )
        weights.append(
            f"  weights      {w.uri} -> {w.landing_path}, about {human_bytes(w.size_bytes)} (ESTIMATE), {fetched}"
        )
    checkpoints = (
        (f"{k.directory} on {s.kind}, copied to " if k.directory else "")
        + f"oss://{k.bucket}/{k.prefix} every {human_seconds(k.interval_seconds)} "
        f"({human_bytes(k.size_bytes)} each)"
        if k.enabled
        else "off"
    )
    return [
        f"  storage      {s.kind}"
        + (
            f" {s.capacity_gib} GiB {s.storage_type} ~{s.throughput_mbps:,} MB/s at {s.mount_path}"
            if s.kind != "none"
            else ""
        ),
        *weights,
        f"  checkpoints  {checkpoints}",
        "  spot         "
        + (
            f"{len(plan.spot.spot_ranks)} spot / {len(plan.spot.on_demand_ranks)} on demand, {plan.spot.strategy}"
            if plan.spot.enabled
            else "off"
        ),
    ]


def _memory_table(plan: Plan) -> str:
    """Memory per GPU term by term, in bytes and human sizes, against the GPU's memory (and the host's share)."""
    z = plan.sizing
    terms = [
        ("weights", z.weights),
        ("gradients", z.gradients),
        ("optimizer states", z.optimizer_states),
        ("activations", z.activations),
        ("runtime reserve", z.reserve),
        ("total", z.total),
        ("GPU memory", z.gpu_memory),
        ("headroom", z.headroom),
    ]
    if z.host_per_gpu:
        terms.append((_host_label(z.offload), z.host_per_gpu))
    return table(["term", "bytes", "size"], [[name, b, human_bytes(b)] for name, b in terms], right=(1, 2))


def _cost_lines(plan: Plan) -> list[str]:
    """The cost per hour and per day of each kind of spending, and the whole run's when the spec gives tokens."""
    c, cost = plan.compute, plan.cost
    items = [
        ("compute on demand", cost.compute_on_demand_per_hour),
        ("compute spot", cost.compute_spot_per_hour),
        ("shared storage", cost.shared_storage_per_hour),
        ("object storage", cost.object_storage_per_hour),
    ]
    rows = [[name, f"{x:,.2f}", f"{x * 24:,.2f}"] for name, x in items]
    rows.append(["total", f"{cost.total_per_hour:,.2f}", f"{cost.total_per_day:,.2f}"])
    lines = [
        "Cost once resumed (CNY)" if c.paused else "Cost (CNY)",
        table(["item", "per hour", "per day"], rows, right=(1, 2)),
    ]
    if cost.run_total is not None:
        lines.append(
            ("whole run once resumed (time paused not counted): " if c.paused else "whole run: ")
            + f"{(cost.run_hours or 0) + (cost.expected_rework_hours or 0):,.1f} h wall-clock "
            f"= {cost.run_total:,.0f} CNY"
            + (
                f" (compute prepaid for {cost.subscription_months} month(s))"
                if cost.subscription_months
                else ""
            )
        )
    return lines


def _candidate_lines(plan: Plan) -> list[str]:
    """The instance types considered: the chosen one, the runners-up, and why each lost or could not be used."""
    if not plan.candidates:
        return []
    rows = [
        [
            x.instance_type,
            x.nodes or "",
            x.gpus or "",
            f"{x.tp}/{x.pp}/{x.dp}" if x.nodes else "",
            f"{x.per_gpu_gib:.1f}" if x.nodes else "",
            f"{x.cost_per_hour:,.2f}" if x.nodes else "",
            x.verdict,
        ]
        for x in plan.candidates
    ]
    headers = ["instance type", "nodes", "GPUs", "tp/pp/dp", "GiB/GPU", "CNY/h", "verdict"]
    return ["", "Instance types considered", table(headers, rows, right=(1, 2, 4, 5))]


KEY_INPUTS = {
    "alicloud:ecs/instance:Instance": (
        "instanceType",
        "privateIp",
        "spotStrategy",
        "networkInterfaceTrafficMode",
    ),
    "alicloud:vpc/network:Network": ("cidrBlock",),
    "alicloud:vpc/switch:Switch": ("zoneId", "cidrBlock"),
    "alicloud:oss/bucket:Bucket": ("bucket", "storageClass"),
    "alicloud:nas/fileSystem:FileSystem": ("fileSystemType", "storageType", "capacity"),
    "alicloud:ecs/securityGroupRule:SecurityGroupRule": ("type", "ipProtocol", "portRange", "cidrIp"),
    "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet": ("strategy",),
    "alicloud:nas/dataFlow:DataFlow": ("sourceStorage", "throughput"),
    "alicloud:vpc/natGateway:NatGateway": ("natType",),
}


def preview_text(graph: Any, title: str) -> str:
    by_type: dict[str, list[Any]] = {}
    for r in graph.resources:
        by_type.setdefault(r.type, []).append(r)
    total = len(graph.resources)
    lines = [
        (
            f"Offline preview of {title}: {total} resources would be created "
            "(Pulumi mock runtime with the real pulumi_alicloud SDK; nothing was sent to Alibaba Cloud)"
        ),
        "",
    ]
    for typ in sorted(by_type):
        items = by_type[typ]
        short = typ.split(":")[1].split("/")[0] + ":" + typ.split(":")[-1]
        lines.append(f"+ {short} x{len(items)}")
        keys = KEY_INPUTS.get(typ, ())
        shown = items if len(items) <= 4 else items[:2] + [None] + items[-1:]
        for r in shown:
            if r is None:
                lines.append(f"    ... {len(items) - 3} more like these")
                continue
            props = ", ".join(
                f"{k}={_short(r.inputs.get(k))}" for k in keys if r.inputs.get(k) not in (None, "")
            )
            flags = " [protected]" if r.protect else ""
            lines.append(f"    {r.name}{flags}" + (f"  ({props})" if props else ""))
    if graph.outputs:
        lines += ["", "Outputs: " + ", ".join(sorted(graph.outputs))]
    if graph.warnings:
        lines += ["", "Warnings from the program:"] + [f"  ! {w}" for w in graph.warnings]
    return "\n".join(lines) + "\n"


def _short(v: Any) -> str:
    s = str(v)
    return s if len(s) <= 40 else s[:37] + "..."


def catalog_text(types: Sequence[Any]) -> str:
    rows = []
    for t in types:
        rows.append(
            [
                t.name,
                t.gpu,
                t.gpus,
                f"{t.gpu_memory_gib:g}",
                t.vcpu,
                f"{t.memory_gib:g}",
                f"{t.network_gbps:g}",
                "yes" if t.bare_metal else "",
                (f"ERI x{t.eri_count}" if t.eri_count else ("RoCE" if t.scc else "")),
                f"{t.price.cny_per_hour:,.2f}" + ("*" if t.price.estimated else ""),
                t.availability,
            ]
        )
    return (
        table(
            [
                "instance type",
                "GPU",
                "#",
                "GiB/GPU",
                "vCPU",
                "mem GiB",
                "Gbit/s",
                "EBM",
                "RDMA",
                "CNY/h",
                "availability",
            ],
            rows,
            right=(2, 3, 4, 5, 6, 9),
        )
        + "\n* estimated price (see generator/catalog/data/v1/README.md)\n"
    )


def _host_label(offload: str) -> str:
    """The memory table's host row: CPU offload's states, or without offload a paged optimizer's moments."""
    return f"host (offload {offload})" if offload != "none" else "host (paged optimizer moments)"
