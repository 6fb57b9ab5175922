"""The plan's cost says what the program keeps and what the user pays: every checkpoint the bucket keeps over the
run, a Lingjun subscription at its prepaid amount (and budget.total checked against it), whole-run lines from the
same unrounded hours as the runners-up, and the budget checked against the plan's own full figure."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest

from generator.catalog import load_catalog
from generator.estimate import cost_report, cost_text
from generator.plan import warns
from generator.plan.cost import HOURS_PER_MONTH, checkpoint_hours
from generator.plan.pipeline import load, plan_located
from generator.plan.planner import PlanningError, make_plan
from generator.present.diagram import flowchart
from generator.spec.loader import load_text

ROOT = Path(__file__).resolve().parent.parent
CATALOG = load_catalog()

LINGJUN = textwrap.dedent("""\
    name: lj-70b
    region: cn-wulanchabu
    zones: [cn-wulanchabu-b]
    model: {preset: llama-2-70b, tokens: 100B, global_batch_tokens: 4Mi}
    compute: {platform: lingjun, image_id: i123456, nodes: auto}
    storage: {shared: none}
    budget: {max_days: 30}
""")

BUDGET = textwrap.dedent("""\
    name: budget-test
    region: cn-wulanchabu
    zones: [cn-wulanchabu-c]
    model: {preset: llama-2-13b, tokens: 200B, global_batch_tokens: 4Mi}
    compute: {gpu: A100-80G, nodes: auto}
    storage: {shared: none}
    spot: {enabled: true, on_demand_base: 1}
    budget: {max_days: 10}
""")


def _plan(text: str):
    return make_plan(load_text(text).spec, CATALOG)


def _example(name: str):
    return plan_located(load(ROOT / "examples" / f"{name}.yaml"))


def test_the_bucket_keeps_every_checkpoint_the_run_writes_and_the_cost_counts_them() -> None:
    plan = _example("pretrain-70b")
    c, k, s = plan.cost, plan.checkpoints, plan.schedule
    assert s is not None and k.enabled
    # one per interval of progress, none expired (P1-1: not ~3); the plan's hours are rounded to 0.01 h, so the
    # count from them can be one over the planner's
    written = c.checkpoints_kept
    assert 0 <= (s.compute_hours + s.pipeline_bubble_hours) * 3600 / k.interval_seconds - written < 1 + 1e-6
    assert written > 700
    std = CATALOG.storage_price("oss-standard").price_cny * k.size_bytes / 1e9  # per GB (10^9 bytes) and month
    ia = CATALOG.storage_price("oss-ia").price_cny * k.size_bytes / 1e9
    assert k.transition_ia_days == 14 < s.wall_hours / 24  # the example moves old checkpoints to IA mid-run
    # the bucket grows from 0 to `written` over the run: between all-IA and all-Standard at the average count
    average = written / 2 / HOURS_PER_MONTH
    assert ia * average * 0.99 < c.object_storage_per_hour < std * average
    std_h, ia_h = checkpoint_hours(written, s.wall_hours, 14)
    assert std_h + ia_h == pytest.approx(s.wall_hours * (written - 1) / 2)
    assert c.object_storage_run == pytest.approx((std * std_h + ia * ia_h) / HOURS_PER_MONTH, rel=1e-4)
    assert c.object_storage_after_run_per_month == pytest.approx(ia * written, abs=0.01)  # all in IA by then
    warning = next(w for w in plan.warnings if isinstance(w, warns.CheckpointsKeptForever))
    assert (warning.kept, warning.size_bytes) == (written, k.size_bytes)
    assert (warning.retention_days, warning.transition_ia_days) == (30, 14)
    assert warning.after_run_cny_per_month == c.object_storage_after_run_per_month
    report = cost_report(plan, CATALOG)
    obj = next(ln for ln in report["lines"] if ln["item"] == "object_storage")
    assert f"{written:,} (" in obj["quantity"] and "kept at the end" in obj["quantity"]
    assert "~3" not in cost_text(report)


def test_the_diagram_says_what_expires_and_what_does_not() -> None:
    plan = _example("pretrain-70b")
    text = flowchart(plan)
    assert "kept 30 days" not in text
    assert f"every checkpoint kept (about {plan.cost.checkpoints_kept:,} by the end)" in text
    assert "old versions expire after 30 days" in text


def test_the_program_expires_only_noncurrent_versions_as_the_docs_say() -> None:
    program = (ROOT / "stacks" / "pretrain-70b" / "__main__.py").read_text()
    assert "noncurrent_version_expirations" in program
    assert "BucketLifecycleRuleExpirationArgs" not in program  # no rule expires current checkpoints
    ops = (ROOT / "docs" / "operations.md").read_text()
    assert "### What the checkpoint bucket keeps" in ops and "**never expires**" in ops


def test_without_tokens_one_checkpoint_is_priced_and_the_growth_is_said() -> None:
    plan = _plan(BUDGET.replace("tokens: 200B, ", "").replace("budget: {max_days: 10}\n", ""))
    c = plan.cost
    assert c.checkpoints_kept == 0 and c.object_storage_after_run_per_month is None and c.run_total is None
    assert c.object_storage_per_hour > 0
    assert not [w for w in plan.warnings if isinstance(w, warns.CheckpointsKeptForever)]
    obj = next(ln for ln in cost_report(plan, CATALOG)["lines"] if ln["item"] == "object_storage")
    assert obj["quantity"].startswith("1 checkpoint of") and "grows by one per interval" in obj["quantity"]


def test_a_lingjun_subscription_is_priced_at_its_prepaid_amount() -> None:
    plan = _plan(LINGJUN)
    c, lj = plan.cost, plan.lingjun
    assert lj is not None and lj.payment_type == "Subscription"
    months = lj.period_months
    rate = CATALOG.lingjun_type(lj.machine_type).price.cny_per_hour
    prepaid = plan.compute.nodes * rate * months * HOURS_PER_MONTH
    assert c.subscription_months == months
    assert c.compute_on_demand_run == pytest.approx(prepaid, abs=0.01)
    assert c.run_total == pytest.approx(prepaid + c.shared_storage_run + c.object_storage_run, abs=0.03)
    assert c.run_total > prepaid  # the prepaid months cost more than the run's hours at the same rate
    warning = next(w for w in plan.warnings if isinstance(w, warns.SubscriptionPrepaid))
    assert warning.amount_cny == pytest.approx(prepaid, abs=0.01) and warning.months == months
    text = cost_text(cost_report(plan, CATALOG))
    assert f"{prepaid:,.2f}" in text and "Subscription prepaid for 1 month(s)" in text


def test_budget_total_is_checked_against_the_prepaid_amount(tmp_path: Path) -> None:
    plan = _plan(LINGJUN)
    rate_total = plan.cost.compute_on_demand_per_hour * (plan.cost.run_hours + plan.cost.expected_rework_hours)
    budget = math.ceil(rate_total + 10_000)  # enough at the hourly rate, not for the prepaid month
    assert budget < plan.cost.compute_on_demand_run
    spec = tmp_path / "lj.yaml"
    spec.write_text(LINGJUN.replace("budget: {max_days: 30}", f"budget: {{max_days: 30, total: {budget}}}"))
    with pytest.raises(PlanningError) as e:
        plan_located(load(spec))
    (problem,) = e.value.problems
    assert problem.path == ("budget", "total") and problem.line == 7
    assert f"{plan.cost.compute_on_demand_run:,.0f} CNY" in problem.message


def test_budget_total_counts_storage_and_quotes_the_plans_own_figure(tmp_path: Path) -> None:
    plan = _plan(BUDGET)
    c = plan.cost
    compute = c.compute_on_demand_run + c.compute_spot_run
    assert c.run_total > compute  # the checkpoint objects come on top
    budget = math.floor(compute + (c.run_total - compute) / 2)  # compute fits, the whole plan does not
    spec = tmp_path / "b.yaml"
    spec.write_text(BUDGET.replace("budget: {max_days: 10}", f"budget: {{max_days: 10, total: {budget}}}"))
    with pytest.raises(PlanningError) as e:
        plan_located(load(spec))
    (problem,) = e.value.problems
    assert problem.path == ("budget", "total")
    assert f"expected to cost {c.run_total:,.0f} CNY for the whole run" in problem.message
    # within the budget: the same figure is the plan's
    spec.write_text(BUDGET.replace("budget: {max_days: 10}", f"budget: {{max_days: 10, total: {c.run_total + 1}}}"))
    assert plan_located(load(spec)).cost.run_total == c.run_total


@pytest.mark.parametrize("name", ["finetune-7b", "foundation-1t"])
def test_the_two_tables_give_the_chosen_type_one_whole_run_price(name: str) -> None:
    plan = _example(name)
    report = cost_report(plan, CATALOG)
    lines = {ln["item"]: ln for ln in report["lines"]}
    compute = lines["compute_on_demand"]["run"] + lines["compute_spot"]["run"]
    assert report["chosen"]["compute_run"] == pytest.approx(compute, abs=0.02)
    text = cost_text(report)
    assert text.count(f"{report['chosen']['compute_run']:,.2f}") >= 2 or compute == 0


def test_the_rework_label_names_restores_too() -> None:
    plan = _example("foundation-1t")
    s = plan.schedule
    text = cost_text(cost_report(plan, CATALOG))
    rework = s.expected_rework_hours + s.restore_hours
    assert f"{rework:,.1f} h expected rework and restores after interruptions" in text
    assert json.loads(plan.to_json())["cost"]["expected_rework_hours"] == pytest.approx(rework, abs=0.02)
