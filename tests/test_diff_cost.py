"""The cost delta of ``trainstack diff`` (issue #14 item 1): per hour, per month and whole run, old -> new.

Every expected figure comes from the two sides' own plans (``Plan.cost``), so these tests check the diff's
arithmetic and its formats, not the planner's prices. The end-to-end tests run both sides under the mock
runtime (about a second per side).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.catalog import load_catalog
from generator.cli import main
from generator.plan.pipeline import plan_file
from generator.preview import diff as d
from generator.preview.diff.cost import HOURS_PER_MONTH, NO_CLUSTER, CostDelta, SideCost, cost_delta
from generator.preview.mockrun import Graph, Resource

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_alicloud")

ROOT = Path(__file__).resolve().parents[1]
PRETRAIN = ROOT / "examples" / "pretrain-70b.yaml"
CATALOG = load_catalog()


def money(x: float) -> str:
    return f"{x:,.2f}"


def spec(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def doubled(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The 70B example at its planned 64 nodes and at 128 nodes: the two plans and the diff between them."""
    tmp = tmp_path_factory.mktemp("doubled")
    text = PRETRAIN.read_text()
    line = "  nodes: auto               # sized from memory and the deadline below\n"
    assert line in text
    head = spec(tmp, "pretrain-128.yaml", text.replace(line, "  nodes: 128\n"))
    base_plan, head_plan = plan_file(PRETRAIN, CATALOG), plan_file(head, CATALOG)
    assert (base_plan.compute.nodes, head_plan.compute.nodes) == (64, 128)
    return {"head": head, "base_plan": base_plan, "head_plan": head_plan,
            "result": d.diff_sides(str(PRETRAIN), str(head), catalog=CATALOG)}


def test_doubling_the_nodes_shows_the_delta_from_the_plans_own_costs(doubled: dict) -> None:
    old, new = doubled["base_plan"].cost, doubled["head_plan"].cost
    cost = doubled["result"].cost
    assert cost is not None and cost.changed and cost.currency == "CNY"
    hour = cost.total("hour")
    assert (hour.old, hour.new) == (old.total_per_hour, new.total_per_hour)
    assert hour.change == round(new.total_per_hour - old.total_per_hour, 2)
    assert hour.percent == round(100 * (new.total_per_hour - old.total_per_hour) / old.total_per_hour, 1)
    assert 90 < hour.percent < 110  # roughly doubles
    assert (cost.base.per_day, cost.head.per_day) == (old.total_per_day, new.total_per_day)
    month = cost.total("month")
    assert (month.old, month.new) == (round(old.total_per_hour * HOURS_PER_MONTH, 2),
                                      round(new.total_per_hour * HOURS_PER_MONTH, 2))
    run = cost.total("run")
    assert (run.old, run.new) == (old.run_total, new.run_total)
    rows = {r.key: r for r in cost.rows("hour")}
    assert (rows["compute_on_demand"].old, rows["compute_on_demand"].new) == (old.compute_on_demand_per_hour,
                                                                              new.compute_on_demand_per_hour)
    assert (rows["compute_spot"].old, rows["compute_spot"].new) == (old.compute_spot_per_hour,
                                                                    new.compute_spot_per_hour)
    assert (rows["shared_storage"].old, rows["shared_storage"].new) == (old.shared_storage_per_hour,
                                                                        new.shared_storage_per_hour)
    assert (rows["object_storage"].old, rows["object_storage"].new) == (old.object_storage_per_hour,
                                                                        new.object_storage_per_hour)
    hours = old.run_hours + old.expected_rework_hours
    assert {r.key: r.old for r in cost.rows("run")}["compute_spot"] == old.compute_spot_run  # from unrounded hours
    assert old.compute_spot_run == pytest.approx(old.compute_spot_per_hour * hours, rel=1e-3)


def test_doubling_the_nodes_in_all_three_formats(doubled: dict) -> None:
    old, new = doubled["base_plan"].cost, doubled["head_plan"].cost
    result = doubled["result"]
    change = f"{new.total_per_hour - old.total_per_hour:+,.2f}"
    pct = f"{100 * (new.total_per_hour - old.total_per_hour) / old.total_per_hour:+.1f}%"

    text = d.format_text(result)
    headline = f"Cost: {money(old.total_per_hour)} -> {money(new.total_per_hour)} CNY/h ({change}, {pct})"
    assert headline in text
    for title in ("per hour", f"per month ({HOURS_PER_MONTH} h)", "whole run"):
        assert title in text
    assert money(old.run_total) in text and money(new.run_total) in text
    assert money(new.compute_spot_per_hour) in text and money(old.compute_on_demand_per_hour) in text

    md = d.format_markdown(result)
    assert f"| **per hour** | {money(old.total_per_hour)} | {money(new.total_per_hour)} | {change} | {pct} |" in md
    assert f"| **whole run** | {money(old.run_total)} | {money(new.run_total)} |" in md
    assert "#### 💰 Cost (CNY)" in md and "compute spot *" in md

    payload = json.loads(d.format_json(result))
    c = payload["cost"]
    assert payload["schema_version"] == 5  # 4: what_changed, and a new stack's cost counts both stacks; 5: coded notes
    assert (c["base"]["per_hour"], c["head"]["per_hour"]) == (old.total_per_hour, new.total_per_hour)
    assert (c["base"]["run"], c["head"]["run"]) == (old.run_total, new.run_total)
    total = {p: c["periods"][p][-1] for p in ("hour", "month", "run")}
    assert total["hour"]["change"] == round(new.total_per_hour - old.total_per_hour, 2)
    assert total["month"]["new"] == round(new.total_per_hour * HOURS_PER_MONTH, 2)
    assert [r["item"] for r in c["periods"]["hour"]] == ["compute_on_demand", "compute_spot", "shared_storage",
                                                         "object_storage", "total"]


def test_the_cli_writes_the_cost_object(doubled: dict, tmp_path: Path) -> None:
    out = CliRunner().invoke(main, ["diff", str(PRETRAIN), str(doubled["head"]), "--format", "json",
                                    "-o", str(tmp_path / "diff.json")])
    assert out.exit_code == 2, out.output
    cost = json.loads((tmp_path / "diff.json").read_text())["cost"]
    assert cost["head"]["per_hour"] == doubled["head_plan"].cost.total_per_hour


def test_estimates_are_flagged_and_the_notes_listed_once(doubled: dict) -> None:
    cost, base_plan = doubled["result"].cost, doubled["base_plan"]
    assert cost.estimated
    flagged = {r.key: r.estimated for r in cost.rows("hour")}
    # the catalog: the bare-metal type's price is an ESTIMATE (so is any spot price), CPFS a list price
    assert flagged == {"compute_on_demand": True, "compute_spot": True, "shared_storage": False,
                       "object_storage": True, "total": True}
    for note in base_plan.cost.price_notes:
        assert cost.notes.count(note) == 1  # both sides carry it; listed once
    text, md = d.format_text(doubled["result"]), d.format_markdown(doubled["result"])
    assert "includes estimated prices" in text and "includes estimated prices" in md
    assert text.count(base_plan.cost.price_notes[0]) == 1 and md.count(base_plan.cost.price_notes[0]) == 1
    assert "ESTIMATE = not a published list price" in text


def test_no_estimate_no_flag() -> None:
    listed = SideCost("running", {"compute_on_demand": 10.0, "compute_spot": 0.0, "shared_storage": 1.0,
                                  "object_storage": 0.0}, None, 11.0, None, None, frozenset())
    result = d.DiffResult((), 0, cost=CostDelta("CNY", listed, listed, ("x: list price",)))
    for report in (d.format_text(result), d.format_markdown(result)):
        assert "estimated" not in report and "ESTIMATE" not in report and " * " not in report
    assert not result.cost.changed and not result.cost.estimated
    assert "whole run n/a (give model.tokens" in d.format_text(result)


def test_a_paused_head_shows_what_it_still_costs_per_day(tmp_path: Path) -> None:
    text = PRETRAIN.read_text()
    head = spec(tmp_path, "paused.yaml", text.replace("  bare_metal: prefer\n", "  bare_metal: prefer\n  paused: true\n", 1))
    running, paused = plan_file(PRETRAIN, CATALOG), plan_file(head, CATALOG)
    assert paused.cost.paused is not None
    result = d.diff_sides(str(PRETRAIN), str(head), catalog=CATALOG)
    cost = result.cost
    assert cost.head.state == "paused" and cost.head.per_day == paused.cost.paused.per_day
    assert cost.total("hour").new == paused.cost.paused.per_hour
    assert cost.total("run").new is None  # nothing trains
    assert {r.key: r.new for r in cost.rows("hour")}["compute_spot"] == 0.0
    per_day = f"still costs {money(paused.cost.paused.per_day)} CNY/day"
    assert per_day in d.format_text(result) and per_day in d.format_markdown(result)
    assert f"resumed it would cost {money(running.cost.total_per_hour)} CNY/h" in d.format_text(result)
    head_json = json.loads(d.format_json(result))["cost"]["head"]
    assert (head_json["state"], head_json["per_day"]) == ("paused", paused.cost.paused.per_day)
    assert head_json["resume_per_hour"] == paused.cost.total_per_hour


def test_a_new_spec_costs_from_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = d.diff_sides("/dev/null", "examples/pretrain-70b.yaml", catalog=CATALOG)
    plan = plan_file(PRETRAIN, CATALOG)
    cost = result.cost
    assert cost.base is NO_CLUSTER and cost.base.per_day == 0.0
    hour = cost.total("hour")
    assert (hour.old, hour.new, hour.change, hour.percent) == (0.0, plan.cost.total_per_hour,
                                                               plan.cost.total_per_hour, None)
    assert cost.total("run").new == plan.cost.run_total
    text = d.format_text(result)
    assert "base: no cluster (an empty side): 0.00 CNY/day" in text
    assert f"0.00 -> {money(plan.cost.total_per_hour)} CNY/h (+{money(plan.cost.total_per_hour)}, new)" in text
    assert json.loads(d.format_json(result))["cost"]["base"]["state"] == "none"


def test_identical_sides_cost_the_same_and_graphs_alone_have_no_cost() -> None:
    plan = plan_file(PRETRAIN, CATALOG)
    same = cost_delta(plan, plan, CATALOG)
    assert not same.changed and all(r.change == 0 for p in ("hour", "month", "run") for r in same.rows(p))
    graph = Graph([Resource("alicloud:vpc/network:Network", "vpc", {"cidrBlock": "10.0.0.0/16"})])
    result = d.diff_graphs(graph, graph)
    assert result.cost is None and "cost" not in d.format_text(result).lower()


def test_a_renamed_project_says_the_base_stack_keeps_billing() -> None:
    plan = plan_file(PRETRAIN, CATALOG)
    renamed = dataclasses.replace(plan, name="pretrain-70b-v2")
    delta = cost_delta(plan, renamed, CATALOG)
    assert delta.base_stack_kept == f"pretrain-70b/{plan.stack}"
    text = d.format_text(d.DiffResult((), 0, cost=delta))
    assert f"it keeps costing {money(plan.cost.total_per_day)} CNY/day until someone destroys it" in text
    assert cost_delta(plan, plan, CATALOG).base_stack_kept == ""
