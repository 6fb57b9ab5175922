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
    fitting = _fitting(plan)
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
        "lines": [*_compute_lines(plan, catalog), *_storage_lines(plan, catalog)],
        "total": {"per_hour": c.total_per_hour, "per_day": c.total_per_day, "run": c.run_total},
        "paused": _paused(plan),
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


def _line(
    plan: Plan, key: str, label: str, per_hour: float, quantity: str, price: dict[str, Any] | None
) -> dict[str, Any]:
    """One kind of spending; its whole-run figure is the planner's, from unrounded hours (as the runners-up's)."""
    c = plan.cost
    return {
        "item": key,
        "label": label,
        "per_hour": per_hour,
        "per_day": round(per_hour * 24, 2),
        "run": None if c.run_hours is None else getattr(c, f"{key}_run"),
        "quantity": quantity,
        "price": price,
    }


def _compute_lines(plan: Plan, catalog: Catalog) -> list[dict[str, Any]]:
    """The nodes on demand and on spot, each at the instance type's price (spot: the assumed share of it)."""
    c, compute = plan.cost, plan.compute
    on_demand_nodes, spot_nodes = len(plan.spot.on_demand_ranks), len(plan.spot.spot_ranks)
    node_price = _node_price(catalog, compute.instance_type)
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
    return [
        _line(
            plan,
            "compute_on_demand",
            "compute on demand",
            c.compute_on_demand_per_hour,
            f"{on_demand_nodes} x {compute.instance_type}"
            + (f", Subscription prepaid {c.subscription_months} month(s)" if c.subscription_months else ""),
            node_price if on_demand_nodes else None,
        ),
        _line(
            plan,
            "compute_spot",
            "compute spot",
            c.compute_spot_per_hour,
            f"{spot_nodes} x {compute.instance_type}" if plan.spot.enabled else "spot off",
            spot_price if spot_nodes else None,
        ),
    ]


def _node_price(catalog: Catalog, instance_type: str) -> dict[str, Any] | None:
    itype = catalog.instance(instance_type)
    if itype is None:
        return None
    p = itype.price
    return {
        "what": itype.name,
        "value": p.cny_per_hour,
        "unit": "CNY/node-hour",
        "estimated": p.estimated,
        "date": p.date,
        "region": p.region,
        "source": p.source,
    }


def _storage_lines(plan: Plan, catalog: Catalog) -> list[dict[str, Any]]:
    """The shared file system and the checkpoints' bucket, each at its storage price."""
    c, storage, ckpt = plan.cost, plan.storage, plan.checkpoints
    shared_price = None
    if storage.kind in _SHARED_ITEM:
        item = _SHARED_ITEM[storage.kind].format(cls=storage.storage_type)
        shared_price = _storage_price(catalog, item)
    return [
        _line(
            plan,
            "shared_storage",
            "shared storage",
            c.shared_storage_per_hour,
            f"{storage.capacity_gib:,} GiB {storage.kind} {storage.storage_type}".strip()
            if storage.kind != "none"
            else "none",
            shared_price,
        ),
        _line(
            plan,
            "object_storage",
            "object storage",
            c.object_storage_per_hour,
            _object_quantity(plan) if ckpt.enabled else "checkpoints off",
            _storage_price(catalog, _OBJECT_ITEM) if ckpt.enabled else None,
        ),
    ]


def _paused(plan: Plan) -> dict[str, Any] | None:
    """What a paused plan still costs, line by line; ``None`` for a running plan."""
    paused = plan.cost.paused
    if paused is None:
        return None
    return {
        "per_hour": paused.per_hour,
        "per_day": paused.per_day,
        "notes": list(paused.notes),
        "lines": [
            {
                "item": i.item,
                "label": i.label,
                "per_hour": i.per_hour,
                "per_day": i.per_day,
                "quantity": i.quantity,
                "basis": i.basis,
            }
            for i in paused.items
        ],
    }


def _fitting(plan: Plan) -> list[dict[str, Any]]:
    """The instance types that fit (the chosen one and the runners-up), with their compute cost."""
    # Candidates carry compute cost only (the planner ranks instance types on compute); storage does not
    # depend on the instance type, so the chosen type's compute figures are what the runners-up compare to.
    return [
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
    cur, comp = report["currency"], report["compute"]
    lines = [
        (
            f"Cost of {report['name']} (stack {report['stack']}) in {report['region']}: {comp['nodes']} x "
            f"{comp['instance_type']} = {comp['total_gpus']} x {comp['gpu']}; {cur}, catalog "
            f"{report['catalog_version']}"
        ),
        "",
        *_paused_text(report),
        _cost_table(report),
        *_run_text(report),
        "",
        *_price_data_text(report),
        "",
        *_runners_up_text(report),
    ]
    return "\n".join(lines) + "\n"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] = ()) -> str:
    from generator.present.text import table  # imported late: estimate imports this module, not the platforms

    return table(headers, rows, right=right)


def _paused_text(report: dict[str, Any]) -> list[str]:
    """A paused plan's cost while paused, before the figures it has once resumed; nothing for a running plan."""
    paused, cur = report.get("paused"), report["currency"]
    if paused is None:
        return []
    rows = [
        [ln["label"], _money(ln["per_hour"]), _money(ln["per_day"]), ln["basis"], ln["quantity"]]
        for ln in paused["lines"]
    ]
    rows.append(["total while paused", _money(paused["per_hour"]), _money(paused["per_day"]), "", ""])
    return [
        (
            f"PAUSED (compute.paused): no GPU node runs and nothing trains. While paused: "
            f"{_money(paused['per_hour'])} {cur}/hour, {_money(paused['per_day'])} {cur}/day"
        ),
        _table(["item", "per hour", "per day", "price", "what"], rows, right=(1, 2)),
        *(f"  {n}" for n in paused["notes"]),
        "",
        "Once resumed (the same nodes, the same figures as a running plan):",
    ]


def _cost_table(report: dict[str, Any]) -> str:
    """One row per line of spending (per hour, per day, whole run, its price's basis), then the total."""
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
    return _table(["item", "per hour", "per day", "whole run", "price", "what"], rows, right=(1, 2, 3))


def _run_text(report: dict[str, Any]) -> list[str]:
    """The whole run's length and what it rests on, a subscription's prepaid term, the bucket after the run."""
    lines = []
    if report["run_hours"] is None:
        lines.append("whole run: n/a (give model.tokens in the spec to estimate the run's length)")
    else:
        hours = report["run_hours"] + (report["expected_rework_hours"] or 0.0)
        lines.append(
            (
                "whole run once resumed (time paused not counted) = "
                if report.get("paused") is not None
                else "whole run = "
            )
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
            f"{report['object_storage_after_run_per_month']:,.2f} {report['currency']}/month"
            + (
                f" once in Infrequent Access (after {report['checkpoints_ia_days']} days)"
                if report.get("checkpoints_ia_days")
                else ""
            )
            + " until you delete them (only noncurrent versions expire)"
        )
    return lines


def _price_data_text(report: dict[str, Any]) -> list[str]:
    """The price behind each line: value, unit, list price or ESTIMATE, region, date and source."""
    lines = ["Price data"]
    for ln in report["lines"]:
        p = ln["price"]
        lines.append(f"  {ln['label']}: " + ("not used" if p is None else _price_line(p)))
    if any(ln["price"] and ln["price"]["estimated"] for ln in report["lines"]):
        lines.append(
            "  ESTIMATE = not a published list price; see generator/catalog/data/v1/README.md for the method."
        )
    return lines


def _runners_up_text(report: dict[str, Any]) -> list[str]:
    """The chosen instance type beside the others that fit, at compute cost; how many could not be used."""
    cur = report["currency"]
    if report["runners_up"]:
        shown = ([report["chosen"]] if report["chosen"] else []) + report["runners_up"]
        lines = [
            "Runners-up (other instance types that fit; compute cost only, storage is the same for all)",
            _table(
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
            ),
        ]
    else:
        lines = ["Runners-up: none (no other instance type fits this spec)"]
    if report["not_usable"]:
        lines.append(
            f"{len(report['not_usable'])} other instance type(s) could not be used; "
            "'trainstack plan' says why."
        )
    return lines
