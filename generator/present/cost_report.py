"""``trainstack cost``: what a planned run costs, line by line with the price data behind each line.

The money figures are the planner's (``plan.cost``); this module only says which price each rests on. Split from
:mod:`generator.estimate` (which re-exports :func:`cost_report` and :func:`cost_text`) to keep modules small.
Nothing here imports pulumi or pydantic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from generator.catalog import Catalog
from generator.plan.model import Plan
from generator.spec.units import human_bytes

__all__ = ["cost_report", "cost_text"]


# Storage items the planner prices (generator/plan/cost.py, plan_cost): shared file systems by kind and class,
# checkpoints in OSS Standard (every one the run writes stays). Kept in step with the planner by tests/test_estimate.py.
_SHARED_ITEM = {"cpfs": "cpfs-{cls}", "extreme-nas": "nas-extreme-{cls}"}
_OBJECT_ITEM = "oss-standard"


def cost_report(plan: Plan, catalog: Catalog) -> dict[str, Any]:
    """Hourly, daily and whole-run cost of a plan, one line per kind of spending, each with its price data.

    The money figures are the planner's (``plan.cost``), so ``trainstack cost`` and ``trainstack plan``
    never disagree; the catalog is read only to say, for each line, which price it rests on, its date and
    source, and whether the catalog marks it as an estimate. Each line's whole-run figure is the planner's (hourly
    cost x wall-clock hours, a Lingjun subscription's compute at its prepaid amount); ``None`` when the spec gives
    no ``model.tokens``.
    """
    c, compute = plan.cost, plan.compute
    hours = None if c.run_hours is None else c.run_hours + (c.expected_rework_hours or 0.0)
    itype = catalog.instance(compute.instance_type)
    on_demand_nodes, spot_nodes = len(plan.spot.on_demand_ranks), len(plan.spot.spot_ranks)

    def line(
        key: str, label: str, per_hour: float, quantity: str, price: dict[str, Any] | None
    ) -> dict[str, Any]:
        run = getattr(c, f"{key}_run")  # the planner's figure, from unrounded hours (as the runners-up's)
        return {
            "item": key,
            "label": label,
            "per_hour": per_hour,
            "per_day": round(per_hour * 24, 2),
            "run": None if hours is None else run,
            "quantity": quantity,
            "price": price,
        }

    node_price: dict[str, Any] | None = None
    if itype is not None:
        p = itype.price
        node_price = {
            "what": itype.name,
            "value": p.cny_per_hour,
            "unit": "CNY/node-hour",
            "estimated": p.estimated,
            "date": p.date,
            "region": p.region,
            "source": p.source,
        }
    spot_price = None
    if plan.spot.enabled and node_price is not None:
        # The spot price is the list price times the spec's assumed price ratio: an assumption, never a quote.
        spot_price = dict(
            node_price,
            value=round(node_price["value"] * plan.spot.assumed_price_ratio, 2),
            estimated=True,
            source=f"{plan.spot.assumed_price_ratio:.0%} of the list price (spot.price_ratio, an assumption; "
            f"GPU spot prices vary by zone and hour) x {node_price['source']}",
        )
    lines = [
        line(
            "compute_on_demand",
            "compute on demand",
            c.compute_on_demand_per_hour,
            f"{on_demand_nodes} x {compute.instance_type}"
            + (f", Subscription prepaid {c.subscription_months} month(s)" if c.subscription_months else ""),
            node_price if on_demand_nodes else None,
        ),
        line(
            "compute_spot",
            "compute spot",
            c.compute_spot_per_hour,
            f"{spot_nodes} x {compute.instance_type}" if plan.spot.enabled else "spot off",
            spot_price if spot_nodes else None,
        ),
    ]
    storage = plan.storage
    shared_price = None
    if storage.kind in _SHARED_ITEM:
        item = _SHARED_ITEM[storage.kind].format(cls=storage.storage_type)
        shared_price = _storage_price(catalog, item)
    lines.append(
        line(
            "shared_storage",
            "shared storage",
            c.shared_storage_per_hour,
            f"{storage.capacity_gib:,} GiB {storage.kind} {storage.storage_type}".strip()
            if storage.kind != "none"
            else "none",
            shared_price,
        )
    )
    ckpt = plan.checkpoints
    lines.append(
        line(
            "object_storage",
            "object storage",
            c.object_storage_per_hour,
            _object_quantity(plan) if ckpt.enabled else "checkpoints off",
            _storage_price(catalog, _OBJECT_ITEM) if ckpt.enabled else None,
        )
    )
    # Candidates carry compute cost only (the planner ranks instance types on compute); storage does not
    # depend on the instance type, so the chosen type's compute figures are what the runners-up compare to.
    fitting = [
        {
            "instance_type": x.instance_type,
            "nodes": x.nodes,
            "gpus": x.gpus,
            "tp": x.tp,
            "pp": x.pp,
            "dp": x.dp,
            "per_gpu_gib": x.per_gpu_gib,
            "compute_per_hour": x.cost_per_hour,
            "compute_per_day": round(x.cost_per_hour * 24, 2),
            "compute_run": x.run_cost,
            "run_hours": x.run_hours,
            "verdict": x.verdict,
        }
        for x in plan.candidates
        if x.nodes
    ]
    return {
        "name": plan.name,
        "stack": plan.stack,
        "region": plan.region,
        "currency": c.currency,
        "catalog_version": plan.catalog_version,
        "compute": {
            "instance_type": compute.instance_type,
            "nodes": compute.nodes,
            "gpu": compute.gpu,
            "total_gpus": compute.total_gpus,
        },
        "lines": lines,
        "total": {"per_hour": c.total_per_hour, "per_day": c.total_per_day, "run": c.run_total},
        "paused": None
        if c.paused is None
        else {
            "per_hour": c.paused.per_hour,
            "per_day": c.paused.per_day,
            "notes": list(c.paused.notes),
            "lines": [
                {
                    "item": i.item,
                    "label": i.label,
                    "per_hour": i.per_hour,
                    "per_day": i.per_day,
                    "quantity": i.quantity,
                    "basis": i.basis,
                }
                for i in c.paused.items
            ],
        },
        "run_hours": c.run_hours,
        "expected_rework_hours": c.expected_rework_hours,
        "subscription_months": c.subscription_months,
        "checkpoints_kept": c.checkpoints_kept,
        "object_storage_after_run_per_month": c.object_storage_after_run_per_month,
        "checkpoints_ia_days": plan.checkpoints.transition_ia_days if plan.checkpoints.enabled else None,
        "price_notes": list(c.price_notes),
        "chosen": next((x for x in fitting if x["verdict"] == "chosen"), None),
        "runners_up": [x for x in fitting if x["verdict"] != "chosen"],
        "not_usable": [
            {"instance_type": x.instance_type, "reason": x.verdict} for x in plan.candidates if not x.nodes
        ],
    }


def _object_quantity(plan: Plan) -> str:
    k, n = plan.checkpoints, plan.cost.checkpoints_kept
    if not n:
        return f"1 checkpoint of {human_bytes(k.size_bytes)} in OSS (grows by one per interval; none expire)"
    return (
        f"about {n / 2:,.0f} checkpoints of {human_bytes(k.size_bytes)} on average; {n:,} "
        f"({human_bytes(n * k.size_bytes)}) kept at the end"
    )


def _storage_price(catalog: Catalog, item: str) -> dict[str, Any] | None:
    sp = catalog.storage_price(item)
    if sp is None:
        return None
    return {
        "what": sp.item,
        "value": sp.price_cny,
        "unit": sp.unit,
        "estimated": sp.estimated,
        "date": sp.date,
        "region": sp.region,
        "source": sp.source,
    }


def _money(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.2f}"


def _price_line(p: dict[str, Any]) -> str:
    return (
        f"{p['value']:g} {p['unit']} ({p['what']}), "
        + ("ESTIMATE" if p["estimated"] else "list price")
        + f", {p['region']}, dated {p['date']}, source: {p['source']}"
    )


def cost_text(report: dict[str, Any]) -> str:
    """The cost report as a page: the cost table, the price data behind each line, and the runners-up."""
    from generator.present.text import table

    cur, comp = report["currency"], report["compute"]
    lines = [
        (
            f"Cost of {report['name']} (stack {report['stack']}) in {report['region']}: {comp['nodes']} x "
            f"{comp['instance_type']} = {comp['total_gpus']} x {comp['gpu']}; {cur}, catalog "
            f"{report['catalog_version']}"
        ),
        "",
    ]
    paused = report.get("paused")
    if paused is not None:
        lines.append(
            f"PAUSED (compute.paused): no GPU node runs and nothing trains. While paused: "
            f"{_money(paused['per_hour'])} {cur}/hour, {_money(paused['per_day'])} {cur}/day"
        )
        lines.append(
            table(
                ["item", "per hour", "per day", "price", "what"],
                [
                    [ln["label"], _money(ln["per_hour"]), _money(ln["per_day"]), ln["basis"], ln["quantity"]]
                    for ln in paused["lines"]
                ]
                + [["total while paused", _money(paused["per_hour"]), _money(paused["per_day"]), "", ""]],
                right=(1, 2),
            )
        )
        lines += [f"  {n}" for n in paused["notes"]]
        lines += ["", "Once resumed (the same nodes, the same figures as a running plan):"]
    rows: list[Sequence[Any]] = []
    for ln in report["lines"]:
        p = ln["price"]
        basis = "" if p is None else ("ESTIMATE" if p["estimated"] else "list")
        rows.append(
            [
                ln["label"],
                _money(ln["per_hour"]),
                _money(ln["per_day"]),
                _money(ln["run"]),
                basis,
                ln["quantity"],
            ]
        )
    t = report["total"]
    rows.append(["total", _money(t["per_hour"]), _money(t["per_day"]), _money(t["run"]), "", ""])
    lines.append(table(["item", "per hour", "per day", "whole run", "price", "what"], rows, right=(1, 2, 3)))
    if report["run_hours"] is None:
        lines.append("whole run: n/a (give model.tokens in the spec to estimate the run's length)")
    else:
        hours = report["run_hours"] + (report["expected_rework_hours"] or 0.0)
        lines.append(
            ("whole run once resumed (time paused not counted) = " if paused is not None else "whole run = ")
            + f"{report['run_hours']:,.1f} h training + {report['expected_rework_hours'] or 0:,.1f} h "
            f"expected rework and restores after interruptions = {hours:,.1f} h ({hours / 24:,.1f} days)"
        )
        if report.get("subscription_months"):
            lines.append(
                f"compute: Subscription prepaid for {report['subscription_months']} month(s) "
                f"({report['subscription_months'] * 730:,} h) whatever the run's length; its whole-run "
                "figure is the prepaid amount, not per hour x hours"
            )
    if report.get("object_storage_after_run_per_month") is not None:
        lines.append(
            f"after the run the bucket still holds {report['checkpoints_kept']:,} checkpoints, about "
            f"{report['object_storage_after_run_per_month']:,.2f} {cur}/month"
            + (
                f" once in Infrequent Access (after {report['checkpoints_ia_days']} days)"
                if report.get("checkpoints_ia_days")
                else ""
            )
            + " until you delete them (only noncurrent versions expire)"
        )
    lines += ["", "Price data"]
    for ln in report["lines"]:
        p = ln["price"]
        lines.append(f"  {ln['label']}: " + ("not used" if p is None else _price_line(p)))
    if any(ln["price"] and ln["price"]["estimated"] for ln in report["lines"]):
        lines.append(
            "  ESTIMATE = not a published list price; see generator/catalog/data/v1/README.md for the method."
        )
    if report["runners_up"]:
        lines += [
            "",
            "Runners-up (other instance types that fit; compute cost only, storage is the same for all)",
        ]
        shown = ([report["chosen"]] if report["chosen"] else []) + report["runners_up"]
        lines.append(
            table(
                [
                    "instance type",
                    "nodes",
                    "GPUs",
                    "tp/pp/dp",
                    f"{cur}/h",
                    f"{cur}/day",
                    "whole run",
                    "verdict",
                ],
                [
                    [
                        x["instance_type"],
                        x["nodes"],
                        x["gpus"],
                        f"{x['tp']}/{x['pp']}/{x['dp']}",
                        _money(x["compute_per_hour"]),
                        _money(x["compute_per_day"]),
                        _money(x["compute_run"]),
                        x["verdict"],
                    ]
                    for x in shown
                ],
                right=(1, 2, 4, 5, 6),
            )
        )
    else:
        lines += ["", "Runners-up: none (no other instance type fits this spec)"]
    if report["not_usable"]:
        lines.append(
            f"{len(report['not_usable'])} other instance type(s) could not be used; "
            "'trainstack plan' says why."
        )
    return "\n".join(lines) + "\n"
