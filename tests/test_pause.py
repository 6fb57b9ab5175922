"""Pause and resume (``compute.paused``, issue #12 part C): the plan is the running cluster's, the program declares
no GPU node and keeps everything else, the cost says what a paused cluster still pays, and the diff between the two
is node deletions (or creations) with the same names and addresses, never data at risk. Programs run under Pulumi's
mock runtime with the real pulumi_alicloud SDK."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator import api
from generator.catalog import load_catalog
from generator.cli import main
from generator.plan.planner import PlanningError, make_plan, spec_digest
from generator.preview import diff as d
from generator.preview.mockrun import Graph, run_program
from generator.spec.loader import load_text

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "pretrain-70b.yaml"
CATALOG = load_catalog()
INSTANCE = "alicloud:ecs/instance:Instance"
ATTACH = "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"
DSET = "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet"
HPC = "alicloud:ecs/hpcCluster:HpcCluster"
DATA = {"alicloud:nas/fileSystem:FileSystem", "alicloud:nas/fileset:Fileset", "alicloud:oss/bucket:Bucket"}


def paused_text(text: str) -> str:
    """The spec text with ``paused: true`` in its compute block (the example writes compute as a block)."""
    assert "  bare_metal: prefer\n" in text
    return text.replace("  bare_metal: prefer\n", "  bare_metal: prefer\n  paused: true\n", 1)


def load(text: str, name: str = "spec.yaml"):
    return load_text(text, name).spec


def run(tmp_path: Path, text: str, sub: str) -> tuple[dict, Graph]:
    folder = tmp_path / sub
    folder.mkdir()
    spec = folder / "spec.yaml"
    spec.write_text(text)
    result = api.render_stack(spec, folder / "stack")  # lints too: a failing rule raises LintFailed
    assert result.lint is not None and not result.lint.failed
    plan = json.loads((result.dest / "plan.json").read_text())
    graph = run_program(result.dest, project=plan["name"], stack=plan["stack"],
                        config={"alicloud:region": plan["region"]})
    return plan, graph


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The 70B example running and paused: plans (plan.json) and mock graphs."""
    tmp = tmp_path_factory.mktemp("pause")
    text = EXAMPLE.read_text()
    running_plan, running = run(tmp, text, "running")
    paused_plan, paused = run(tmp, paused_text(text), "paused")
    return {"running_plan": running_plan, "running": running, "paused_plan": paused_plan, "paused": paused}


# ------------------------------------------------------------------------------------------------ plan


def test_paused_plan_is_the_running_plan_with_paused_recorded() -> None:
    text = EXAMPLE.read_text()
    running, paused = make_plan(load(text), CATALOG), make_plan(load(paused_text(text)), CATALOG)
    assert paused.compute.paused and not running.compute.paused
    # the same instance type, layout, ranks, names and addresses: resuming restores them
    for field in ("instance_type", "nodes", "tp", "pp", "dp", "ranks", "deployment_sets", "rdma", "eri_per_node"):
        assert getattr(paused.compute, field) == getattr(running.compute, field), field
    assert paused.network == running.network and paused.storage == running.storage
    assert paused.checkpoints == running.checkpoints and paused.spot == running.spot
    (decision,) = [x for x in paused.decisions if x.topic == "paused"]
    assert decision.choice == "0 of 64 nodes declared"
    assert "pretrain-70b-node-000..pretrain-70b-node-063 at 10.20.0.10..10.20.0.73" in decision.reason
    assert "save a checkpoint first" in decision.reason
    assert not [x for x in running.decisions if x.topic == "paused"]


def test_the_field_counts_in_plan_json_and_the_digest_only_when_true() -> None:
    text = EXAMPLE.read_text()
    running, paused = make_plan(load(text), CATALOG), make_plan(load(paused_text(text)), CATALOG)
    assert "paused" not in running.to_dict()["compute"] and "paused" not in running.to_dict()["cost"]
    assert paused.to_dict()["compute"]["paused"] is True
    # an explicit `paused: false` is the spec without the field: same digest, same plan.json
    explicit = load(text.replace("  bare_metal: prefer\n", "  bare_metal: prefer\n  paused: false\n", 1))
    assert spec_digest(explicit) == spec_digest(load(text)) != spec_digest(load(paused_text(text)))
    assert make_plan(explicit, CATALOG).to_json() == running.to_json()


def test_paused_cost_is_the_kept_storage_and_names_what_is_not_priced() -> None:
    plan = make_plan(load(paused_text(EXAMPLE.read_text())), CATALOG)
    c = plan.cost
    assert c.paused is not None
    items = {i.item: i for i in c.paused.items}
    assert set(items) == {"shared_storage", "object_storage", "nat_gateway", "egress_ip"}
    assert items["shared_storage"].per_hour == c.shared_storage_per_hour > 0
    assert items["object_storage"].per_hour == c.object_storage_per_hour > 0
    assert items["object_storage"].basis == "ESTIMATE"
    assert items["nat_gateway"].per_hour is None and items["nat_gateway"].basis == "not priced"
    assert c.paused.per_hour == round(c.shared_storage_per_hour + c.object_storage_per_hour, 2)
    assert c.paused.per_day == round(c.paused.per_hour * 24, 2)
    # no node in it: the running total less the nodes
    assert c.paused.per_day == pytest.approx(c.total_per_day - 24 * (c.compute_on_demand_per_hour
                                                                      + c.compute_spot_per_hour), abs=0.5)
    # the running figures stay: they are what a resume costs
    assert c.total_per_hour == make_plan(load(EXAMPLE.read_text()), CATALOG).cost.total_per_hour


def test_paused_plan_text_and_cost_command_show_the_paused_cost(tmp_path: Path) -> None:
    spec = tmp_path / "pretrain-70b.yaml"
    spec.write_text(paused_text(EXAMPLE.read_text()))
    plan = make_plan(load(spec.read_text()), CATALOG)
    runner = CliRunner()
    text = runner.invoke(main, ["plan", str(spec)])
    assert text.exit_code == 0, text.output
    assert "PAUSED: no node is declared; resuming brings back 64 x ecs.ebmgn7ex.32xlarge" in text.output
    row = next(ln for ln in text.output.splitlines() if ln.startswith("total while paused"))
    assert row.split()[3:5] == [f"{plan.cost.paused.per_hour:,.2f}", f"{plan.cost.paused.per_day:,.2f}"]
    assert "Cost once resumed (CNY)" in text.output and "whole run once resumed" in text.output
    as_json = runner.invoke(main, ["plan", "--json", str(spec)])
    assert json.loads(as_json.output)["cost"]["paused"]["per_day"] == plan.cost.paused.per_day
    cost = runner.invoke(main, ["cost", str(spec)])
    assert cost.exit_code == 0, cost.output
    assert f"{plan.cost.paused.per_day:,.2f}" in cost.output and "while paused" in cost.output
    report = json.loads(runner.invoke(main, ["cost", "--json", str(spec)]).output)
    assert report["paused"]["per_day"] == plan.cost.paused.per_day
    assert {ln["item"] for ln in report["paused"]["lines"]} >= {"shared_storage", "object_storage"}


# ------------------------------------------------------------------------------------------------ program


def test_paused_program_declares_no_node_and_keeps_the_rest(pair: dict) -> None:
    running, paused = pair["running"], pair["paused"]
    for typ in (INSTANCE, ATTACH, DSET):
        assert running.of_type(typ) and not paused.of_type(typ), typ
    gone = {(r.type, r.name) for r in running.resources} - {(r.type, r.name) for r in paused.resources}
    assert {t for t, _ in gone} == {INSTANCE, ATTACH, DSET}
    assert {(r.type, r.name) for r in paused.resources} <= {(r.type, r.name) for r in running.resources}
    for r in paused.resources:
        if r.type in DATA:
            assert r.protect and r.retain_on_delete, r.name
    assert paused.outputs["node_ids"] == [] and paused.outputs["node_private_ips"] == []
    assert paused.outputs["hostfile"] == "" and paused.outputs["master_addr"] is None
    assert paused.outputs["paused"] is True and paused.outputs["nodes_pending"] is False
    assert "paused" not in running.outputs


def test_paused_scc_program_has_no_hpc_cluster(tmp_path: Path) -> None:
    body = textwrap.dedent("""
        name: scc-run
        region: cn-wulanchabu
        model: {preset: llama-2-13b, sequence_length: 4096}
        compute: {instance_types: [ecs.sccgn7ex.32xlarge], nodes: 2, paused: true}
    """)
    plan, g = run(tmp_path, body, "scc")
    assert plan["compute"]["hpc_cluster"] and plan["compute"]["paused"]
    assert not g.of_type(HPC) and not g.of_type(INSTANCE)


def test_paused_lingjun_program_keeps_the_cluster_and_vpd(tmp_path: Path) -> None:
    body = textwrap.dedent("""
        name: lj-run
        region: cn-wulanchabu
        model: {preset: llama-2-70b, tokens: 20B}
        compute: {platform: lingjun, image_id: i190982651690986913088, nodes: 4, paused: true}
        network: {vpc_cidr: 10.8.0.0/16, admin_cidrs: [192.168.10.0/24]}
    """)
    plan, g = run(tmp_path, body, "lj")
    assert plan["compute"]["paused"] and len(plan["compute"]["ranks"]) == 4
    assert not g.of_type("alicloud:eflo/node:Node") and not g.of_type("alicloud:eflo/nodeGroup:NodeGroup")
    assert g.of_type("alicloud:eflo/cluster:Cluster") and g.of_type("alicloud:eflo/vpd:Vpd")
    assert g.outputs["node_hostnames"] == [] and g.outputs["node_group_id"] is None
    assert {i["item"] for i in plan["cost"]["paused"]["items"]} >= {"lingjun_cluster"}


def test_pausing_subscription_lingjun_nodes_is_refused_with_a_location(tmp_path: Path) -> None:
    spec = tmp_path / "lj-sub.yaml"
    spec.write_text(textwrap.dedent("""\
        name: lj-sub
        region: cn-wulanchabu
        zones: [cn-wulanchabu-b]
        model: {parameters: 13B, tokens: 300B}
        compute:
          platform: lingjun
          image_id: i190982651690986913088
          instance_types: [efg1.nvga1n]
          nodes: 2
          paused: true
        checkpoints: {enabled: false}
    """))
    with pytest.raises(PlanningError):
        make_plan(load(spec.read_text()), CATALOG)
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert result.exit_code == 2
    assert f"{spec}:10:3: compute.paused:" in result.output and "Subscription" in result.output
    assert "Traceback" not in result.output


def test_validate_render_and_preview_work_on_a_paused_spec(tmp_path: Path) -> None:
    spec = tmp_path / "pretrain-70b.yaml"
    spec.write_text(paused_text(EXAMPLE.read_text()))
    runner = CliRunner()
    validate = runner.invoke(main, ["validate", str(spec)])
    assert validate.exit_code == 0, validate.output
    assert "ok (paused: no node; resumes as 64 x ecs.ebmgn7ex.32xlarge" in validate.output
    render = runner.invoke(main, ["render", str(spec), "-o", str(tmp_path / "stack")])
    assert render.exit_code == 0, render.output
    preview = runner.invoke(main, ["preview", str(tmp_path / "stack")])
    assert preview.exit_code == 0, preview.output
    assert "ecs:Instance" not in preview.output and "shared-fs [protected]" in preview.output
    lint = runner.invoke(main, ["lint", str(tmp_path / "stack")])
    assert lint.exit_code == 0, lint.output


# ------------------------------------------------------------------------------------------------ diff


def _node_rows(graph: Graph) -> set[tuple[str, str]]:
    return {(r.name, r.inputs["privateIp"]) for r in graph.of_type(INSTANCE)}


def test_pausing_is_node_deletions_and_nothing_at_risk(pair: dict) -> None:
    result = d.diff_graphs(pair["running"], pair["paused"])
    assert result.worst_impact == "replaces-nodes"
    assert not result.of_impact("data-at-risk") and not result.of_impact("unknown")
    assert {c.action for c in result.changes} == {"delete"}
    deleted = {c.name for c in result.changes if c.type == INSTANCE}
    ranks = pair["running_plan"]["compute"]["ranks"]
    assert deleted == {r["name"] for r in ranks}
    assert {c.impact for c in result.changes if c.type == INSTANCE} == {"replaces-nodes"}
    assert {c.impact for c in result.changes if c.type != INSTANCE} == {"safe"}
    # what is deleted is exactly the running ranks, at their planned addresses
    assert _node_rows(pair["running"]) == {(r["name"], r["private_ip"]) for r in ranks}


def test_resuming_creates_the_same_names_at_the_same_addresses(pair: dict) -> None:
    result = d.diff_graphs(pair["paused"], pair["running"])
    assert result.worst_impact == "replaces-nodes" and not result.of_impact("data-at-risk")
    assert {c.action for c in result.changes} == {"create"}
    created = {c.name for c in result.changes if c.type == INSTANCE}
    paused_ranks = pair["paused_plan"]["compute"]["ranks"]  # the paused plan still holds the rank table
    assert created == {r["name"] for r in paused_ranks}
    assert _node_rows(pair["running"]) == {(r["name"], r["private_ip"]) for r in paused_ranks}
    assert paused_ranks == pair["running_plan"]["compute"]["ranks"]


def test_diff_command_on_two_spec_files(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "pretrain-70b.yaml").write_text(EXAMPLE.read_text())
    (tmp_path / "b" / "pretrain-70b.yaml").write_text(paused_text(EXAMPLE.read_text()))
    result = CliRunner().invoke(main, ["diff", str(tmp_path / "a" / "pretrain-70b.yaml"),
                                       str(tmp_path / "b" / "pretrain-70b.yaml"), "--format", "json"])
    assert result.exit_code == 2, result.output
    doc = json.loads(result.output)
    assert doc["summary"]["worst_impact"] == "replaces-nodes"
    assert doc["summary"]["by_impact"]["data-at-risk"] == 0 and doc["summary"]["create"] == 0


def test_operations_page_quotes_the_current_paused_cost() -> None:
    """docs/operations.md ("Pause and resume") quotes pretrain-70b's paused cost; it must stay what the plan says."""
    page = (ROOT / "docs" / "operations.md").read_text()
    paused = make_plan(load(paused_text(EXAMPLE.read_text())), CATALOG).cost.paused
    assert paused is not None
    assert f"While paused: {paused.per_hour:,.2f} CNY/hour, {paused.per_day:,.2f} CNY/day" in page
    assert f"total while paused    {paused.per_hour:,.2f}  {paused.per_day:,.2f}" in page
