"""PAI-DLC (``compute.platform: pai-dlc``): the catalog's DLC worker types, the plan's ``dlc`` block (sized like ECS,
no RDMA/ERIs/deployment sets), the program under the mock runtime (PAI workspace, datasets, job role, no node),
the example's golden stack, lint, and the platform's refusals as located spec errors."""

from __future__ import annotations

import ipaddress
import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from generator import api
from generator.catalog import load_catalog
from generator.errors import SpecErrors
from generator.plan import check as validate
from generator.plan import warns
from generator.plan.planner import PlanningError, make_plan
from generator.platforms.dlc.outputs import DLC_OUTPUTS
from generator.preview.mockrun import Graph, run_program
from generator.spec.model import Spec

ROOT = Path(__file__).resolve().parents[1]
CATALOG = load_catalog()
WORKSPACE = "alicloud:pai/workspaceWorkspace:WorkspaceWorkspace"
DATASET = "alicloud:pai/workspaceDataset:WorkspaceDataset"
ROLE = "alicloud:ram/role:Role"

# A DLC spec with CPFS and a TB-scale dataset, and one with a single worker and no shared storage
DLC_CPFS_SPEC = """
name: dlc-cpfs
region: cn-hangzhou
model: {preset: llama-2-13b, tokens: 20B}
compute: {platform: pai-dlc, gpu: A100-80G, nodes: 2}
storage: {dataset: {source: 'oss://corpus-bucket/tok/', size: 2TiB}}
"""
DLC_SMALL_SPEC = """
name: dlc-small
region: cn-hangzhou
model: {preset: llama-2-7b, finetune: {method: lora}}
compute: {platform: pai-dlc, nodes: 1}
storage: {shared: none}
checkpoints: {enabled: false}
"""


def _graph(dest: Path) -> Graph:
    plan = json.loads((dest / "plan.json").read_text())
    return run_program(dest, project=plan["name"], stack=plan["stack"], config={"alicloud:region": plan["region"]})


def build(tmp_path: Path, body: str) -> tuple[dict, Graph]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent(body))
    result = api.render_stack(spec, tmp_path / "stack")  # lints too: a failing rule raises LintFailed
    assert result.lint is not None and not result.lint.failed
    return json.loads((result.dest / "plan.json").read_text()), _graph(result.dest)


# ------------------------------------------------------------------------------------------------ catalog


def test_dlc_worker_types_are_ecs_gpu_types_with_sources() -> None:
    assert CATALOG.dlc_specs
    for d in CATALOG.dlc_specs:
        t = CATALOG.instance(d.name)
        assert t is not None and t.gpus >= 1, d.name
        assert d.source and d.date == "2026-11-30"
        assert not d.verified or "TS-EST" not in d.source  # an estimate is never marked verified
    assert {t.name for t in CATALOG.dlc_types_in_region("cn-hangzhou")} >= {"ecs.gn7e-c16g1.32xlarge"}


def test_catalog_command_lists_the_dlc_worker_types() -> None:
    from click.testing import CliRunner

    from generator.cli import main

    result = CliRunner().invoke(main, ["catalog", "--dlc", "--region", "cn-hangzhou", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    names = {t["name"] for t in data["instance_types"]}
    assert names == {t.name for t in CATALOG.dlc_types_in_region("cn-hangzhou")}
    assert {d["name"] for d in data["dlc_specs"]} == names
    text = CliRunner().invoke(main, ["catalog", "--dlc"])
    assert text.exit_code == 0 and "PAI-DLC worker types" in text.stdout and "not verified" in text.stdout
    assert CliRunner().invoke(main, ["catalog", "--dlc", "--lingjun"]).exit_code == 2


# ------------------------------------------------------------------------------------------------ the example


def test_example_plans_a_dlc_job_sized_like_ecs() -> None:
    plan = api.plan(ROOT / "examples" / "finetune-dlc.yaml")
    d, c = plan.dlc, plan.compute
    assert d is not None and c.platform == "pai-dlc"
    assert (d.worker_count, d.worker_instance_type, d.gpus_per_worker) == (c.nodes, c.instance_type, c.gpus_per_node)
    assert (d.tp, d.pp, d.dp) == (c.tp, c.pp, c.dp) and d.tp * d.pp * d.dp == c.total_gpus
    assert d.job_type == "PyTorchJob" and d.resource == "public"
    assert d.image.startswith("dsw-registry-vpc.cn-hangzhou.cr.aliyuncs.com/pai/pytorch-training:")
    assert "UNVERIFIED" in d.image_source
    # DLC manages the nodes: no RDMA, ERIs, deployment sets, HPC cluster or fixed addresses
    assert c.rdma == "none" and c.eri_per_node == 0 and not c.deployment_sets and not c.hpc_cluster
    assert all(r.private_ip == "" for r in c.ranks)
    topics = {x.topic: x for x in plan.decisions}
    assert "managed by DLC" in topics["rdma"].choice and "deployment set" in topics["rdma"].reason
    for topic in ("pai workspace", "datasets", "image", "workers", "spot"):
        assert topics[topic].reason
    # data sources: shared NAS, read-only OSS data, checkpoints; each has the stack output that holds its id
    kinds = {s.kind: s for s in d.data_sources}
    assert set(kinds) == {"nas", "oss"} and len(d.data_sources) == 3
    assert [s.read_only for s in d.data_sources if s.mount_path == "/mnt/data"] == [True]
    env = dict(d.environment)
    assert env["CHECKPOINT_URL"] == f"oss://{plan.checkpoints.bucket}/{plan.checkpoints.prefix}"
    assert (env["TP_SIZE"], env["PP_SIZE"], env["DP_SIZE"]) == (str(c.tp), str(c.pp), str(c.dp))
    assert len(env) <= 20 and "WORLD_SIZE" not in env and "MASTER_ADDR" not in env  # DLC injects those
    # spot: every worker, price limit from max_price_ratio, no discount limit (Lingjun only)
    assert d.spot is not None and d.spot.spot_strategy == "SpotWithPriceLimit"
    price = CATALOG.instance(c.instance_type).price.cny_per_hour
    assert d.spot.spot_price_limit == pytest.approx(round(price * 0.6, 3))
    assert d.spot.spot_discount_limit is None and plan.spot.on_demand_ranks == ()
    assert any("DLC-BILL" in n and "ESTIMATE" in n for n in plan.cost.price_notes)
    assert [w for w in plan.warnings if isinstance(w, warns.DlcQuota) and w.max_gpus == 2]  # the quota is stated
    assert dict(d.outputs) == dict(DLC_OUTPUTS)
    # a hung job stops being billed: 1.5x the expected hours (+1), within DLC's 30-day default
    expected = plan.cost.run_hours + plan.cost.expected_rework_hours
    assert expected * 1.5 <= d.max_running_hours <= min(30 * 24, expected * 1.5 + 2)


def test_example_plan_json_carries_dlc_and_other_plans_do_not() -> None:
    data = json.loads((ROOT / "stacks" / "finetune-dlc" / "plan.json").read_text())
    assert data["dlc"]["worker_count"] == data["compute"]["nodes"]
    assert data["dlc"]["worker_instance_type"] == data["compute"]["instance_type"]
    for name in ("finetune-7b", "pretrain-70b", "foundation-1t"):
        assert "dlc" not in json.loads((ROOT / "stacks" / name / "plan.json").read_text())
    spec = Spec.model_validate({"name": "ecs-run", "region": "cn-hangzhou", "model": {"parameters": "7B"}})
    assert make_plan(spec, CATALOG).dlc is None


def test_example_program_creates_the_workspace_datasets_and_role_and_no_node() -> None:
    plan = json.loads((ROOT / "stacks" / "finetune-dlc" / "plan.json").read_text())
    g = _graph(ROOT / "stacks" / "finetune-dlc")
    ws = g.one(WORKSPACE)
    assert ws.get("workspace_name") == plan["dlc"]["workspace_name"] and ws.get("env_types") == ["prod"]
    datasets = g.of_type(DATASET)
    assert {r.get("dataset_name") for r in datasets} == {s["name"] for s in plan["dlc"]["data_sources"]}
    by_type = {r.get("dataset_name"): r for r in datasets}
    assert by_type["finetune-dlc-shared"].get("data_source_type") == "NAS"
    assert by_type["finetune-dlc-data"].get("uri") == \
        "oss://example-corpus.oss-cn-hangzhou.aliyuncs.com/sft/llama2-mix/"
    assert by_type["finetune-dlc-checkpoints"].get("uri").endswith("/checkpoints/")
    for r in datasets:
        assert r.get("accessibility") == "PRIVATE" and json.loads(r.get("options"))["mountPath"]
    # no node of any kind: DLC runs the workers
    assert not g.of_type("alicloud:ecs/instance:Instance") and not g.of_type("alicloud:eflo/node:Node")
    assert not g.of_type("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet")
    assert not g.of_type("alicloud:ecs/hpcCluster:HpcCluster")
    # the job role is trusted by PAI only and reaches only the checkpoint prefix
    role = g.one(ROLE)
    trust = json.loads(role.get("assume_role_policy_document"))
    assert trust["Statement"][0]["Principal"] == {"Service": ["pai.aliyuncs.com"]}
    policy = json.loads(g.one("alicloud:ram/policy:Policy").get("policy_document"))
    resources = {r for s in policy["Statement"] for r in s["Resource"]}
    bucket = plan["checkpoints"]["bucket"]
    assert resources == {f"acs:oss:*:*:{bucket}/{plan['checkpoints']['prefix']}*", f"acs:oss:*:*:{bucket}"}
    assert g.one("alicloud:ram/rolePolicyAttachment:RolePolicyAttachment").get("role_name") == role.get("role_name")
    # no SSH, nothing from outside
    rules = g.of_type("alicloud:ecs/securityGroupRule:SecurityGroupRule")
    assert all(r.get("port_range") != "22/22" and not r.get("cidr_ip") for r in rules)
    # every stack output the jobs helper reads by name exists
    wanted = {name for _, name in DLC_OUTPUTS} | {s["output_key"] for s in plan["dlc"]["data_sources"]}
    assert wanted <= set(g.outputs)


def test_example_stack_has_no_node_bootstrap_and_lints_clean() -> None:
    assert not (ROOT / "stacks" / "finetune-dlc" / "node-init.sh").exists()
    report = api.lint_target(ROOT / "examples" / "finetune-dlc.yaml")
    assert not report.failed


# ------------------------------------------------------------------------------------------------ variants


def test_tb_scale_dataset_gets_cpfs_and_a_cpfs_dataset(tmp_path: Path) -> None:
    plan, g = build(tmp_path, DLC_CPFS_SPEC)
    assert plan["storage"]["kind"] == "cpfs"
    assert {s["kind"] for s in plan["dlc"]["data_sources"]} == {"cpfs", "oss"}
    assert len(g.of_type(DATASET)) == 3 and g.one(WORKSPACE)
    assert plan["dlc"]["spot"] is None


def test_single_worker_without_storage_or_checkpoints(tmp_path: Path) -> None:
    plan, g = build(tmp_path, DLC_SMALL_SPEC)
    assert plan["dlc"]["worker_count"] == 1 and plan["dlc"]["data_sources"] == []
    assert not g.of_type(DATASET) and g.one(WORKSPACE)
    assert not g.of_type("alicloud:ram/policy:Policy")  # no bucket, no checkpoint grant
    assert not any(k.startswith("CHECKPOINT") for k, _ in plan["dlc"]["environment"])


def test_long_names_make_a_valid_workspace_name() -> None:
    spec = Spec.model_validate({"name": "a-very-long-training-run-name-for-dlc", "region": "cn-hangzhou",
                                "model": {"preset": "llama-2-7b"}, "compute": {"platform": "pai-dlc"}})
    name = make_plan(spec, CATALOG).dlc.workspace_name
    assert 3 <= len(name) <= 23 and name[0].isalpha() and all(ch.isalnum() or ch == "_" for ch in name)


def test_a_dlc_cpfs_stack_deploys_in_one_pass(tmp_path: Path) -> None:
    """`up` runs no second pass for the CPFS mount address on DLC: no node mounts it, DLC mounts it by id."""
    import dataclasses

    from generator.live.engine import Target
    from generator.live.mountaddr import needs_mount_address

    t = Target(stack_dir=tmp_path, project="dlc-cpfs", stack="dev", backend=f"file://{tmp_path}", shared_fs="cpfs",
               platform="pai-dlc")
    assert not needs_mount_address(t)
    assert needs_mount_address(dataclasses.replace(t, platform="ecs"))


def test_diff_of_dlc_programs_reads_the_pai_replacement_data(tmp_path: Path) -> None:
    """A new OSS data location replaces its dataset (uri is ForceNew); a new description updates it in place."""
    from generator.preview import diff as d

    base = (ROOT / "examples" / "finetune-dlc.yaml").read_text()
    moved = base.replace("oss://example-corpus/sft/llama2-mix/", "oss://example-corpus/sft/llama2-mix-v2/")
    assert moved != base
    graphs = []
    for name, text in (("base", base), ("head", moved)):
        spec = tmp_path / name / "finetune-dlc.yaml"
        spec.parent.mkdir()
        spec.write_text(text)
        graphs.append(api.preview(spec).graph)
    result = d.diff_graphs(*graphs)
    changed = {c.name: c for c in result.changes}
    assert set(changed) == {"dataset-data"}, sorted(changed)
    assert changed["dataset-data"].action == "replace"
    assert all(c.effect != "unknown" for c in changed["dataset-data"].properties)


# ------------------------------------------------------------------------------------------------ refusals

BASE = "name: bad-run\nregion: cn-hangzhou\nmodel: {preset: llama-2-7b}\n"
DLC = "compute: {platform: pai-dlc}\n"


@pytest.mark.parametrize("body, field, code, fields", [
    (DLC + "network: {admin_cidrs: [192.168.10.0/24]}", "network.admin_cidrs", "TSA008",
     {"admin_cidrs": ("192.168.10.0/24",)}),
    (DLC + "network: {rdma: true}", "network.rdma", "TSA009", {}),
    ("compute: {platform: pai-dlc, image_id: m-bp1g7004ksh0oeuc0000}", "compute.image_id", "TSA004", {}),
    ("compute: {platform: pai-dlc, paused: true}", "compute.paused", "TSA006", {}),
    ("compute: {platform: pai-dlc, data_disk_gib: 100}", "compute.data_disk_gib", "TSA005", {"gib": 100}),
    ("compute: {platform: pai-dlc, instance_types: [ecs.ebmgn7ex.32xlarge]}", "compute.instance_types[0]", "TSA003",
     {"index": 0, "instance_type": "ecs.ebmgn7ex.32xlarge"}),
    (DLC + "spot: {enabled: true}", "spot.on_demand_base", "TSA010", {"on_demand_base": 1}),
    (DLC + "spot: {enabled: true, on_demand_base: 0, interruption: stop}", "spot.interruption", "TSA013", {}),
    (DLC + "spot: {min_nodes: 1}", "spot.min_nodes", "TSA011", {"min_nodes": 1}),
    (DLC + "spot: {enabled: true, on_demand_base: 0, strategy: SpotAsPriceGo}", "spot.strategy", "TSA012",
     {"strategy": "SpotAsPriceGo"}),
    ("compute: {platform: pai-dlc, gpu: A100-40G}", "compute.gpu", "TSA002",
     {"gpu": "A100-40G", "region": "cn-hangzhou"}),
    (DLC + "spot: {enabled: true, on_demand_base: 0}\ncheckpoints: {enabled: false}", "spot.enabled", "TSC023", {}),
])
def test_dlc_refusals_are_spec_errors_with_a_hint(tmp_path: Path, body: str, field: str, code: str,
                                                  fields: dict[str, Any]) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(BASE + body + "\n")
    with pytest.raises(SpecErrors) as e:
        api.load(spec)
    hits = [p for p in e.value.problems if p.dotted == field and p.code == code]
    assert hits, e.value.render()
    assert all(p.hint for p in hits)
    assert fields.items() <= dict(hits[0].fields).items()
    assert "bad.yaml:" in e.value.render()  # located: file and line


def test_dlc_refuses_a_region_without_dlc_worker_types(tmp_path: Path) -> None:
    from generator.platforms.dlc.rules import dlc_rules

    region = CATALOG.region("cn-hangzhou")
    empty = CATALOG.__class__(**{**{f: getattr(CATALOG, f) for f in CATALOG.__dataclass_fields__}, "dlc_specs": ()})
    spec = Spec.model_validate({"name": "dlc-run", "region": "cn-hangzhou", "model": {"preset": "llama-2-7b"},
                                "compute": {"platform": "pai-dlc"}})
    p = next(p for p in dlc_rules(spec, empty, region) if p.path == ("compute", "platform"))
    assert p.code == "TSA001" and dict(p.fields)["region"] == "cn-hangzhou" and p.hint


# ------------------------------------------------------------------------------------------------ properties

SETTINGS: dict[str, Any] = {
    "deadline": None, "database": None, "derandomize": not os.environ.get("TRAINSTACK_HYPOTHESIS_RANDOM"),
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
}


@st.composite
def dlc_specs(draw: st.DrawFn) -> dict[str, Any]:
    model: dict[str, Any] = draw(st.sampled_from([{"parameters": p} for p in ("1B", "7B", "13B", "70B")]
                                                 + [{"preset": "llama-2-7b"}, {"preset": "qwen2-7b"}]))
    if draw(st.booleans()):
        model["tokens"] = draw(st.sampled_from(["2B", "300B"]))
    if draw(st.booleans()):
        model["finetune"] = {"method": draw(st.sampled_from(["full", "lora", "qlora"]))}
    compute: dict[str, Any] = {"platform": "pai-dlc", "nodes": draw(st.sampled_from(["auto", 1, 2, 8])),
                               "max_nodes": 64, "gpu": draw(st.sampled_from(["auto", "A100-80G", "H20", "A10"]))}
    storage: dict[str, Any] = {"shared": draw(st.sampled_from(["auto", "none", "extreme-nas", "cpfs"]))}
    if draw(st.booleans()):
        storage["dataset"] = {"source": "oss://corpus-bucket/tok/", "size": draw(st.sampled_from(["50GiB", "3TiB"]))}
    spec: dict[str, Any] = {"name": "dlc-prop", "region": draw(st.sampled_from(["cn-hangzhou", "cn-beijing"])),
                            "model": model, "compute": compute, "storage": storage,
                            "network": {"egress": draw(st.sampled_from(["nat", "none"]))},
                            "checkpoints": {"enabled": draw(st.booleans())}}
    if draw(st.booleans()):
        spec["spot"] = {"enabled": True, "on_demand_base": 0}
        if draw(st.booleans()):  # else the ECS default (SpotAsPriceGo), which DLC plans as SpotWithPriceLimit
            spec["spot"]["strategy"] = "SpotWithPriceLimit"
    return spec


@settings(max_examples=40, **SETTINGS)
@given(dlc_specs())
def test_dlc_plans_are_consistent(data: dict[str, Any]) -> None:
    spec = Spec.model_validate(data)
    assume(not validate.check(spec, CATALOG))
    try:
        plan = make_plan(spec, CATALOG)
    except PlanningError as e:  # a legitimate answer (too big, no type with that GPU...), with what to change
        assert e.problems and all(p.message for p in e.problems)
        return
    d, c = plan.dlc, plan.compute
    assert d is not None and plan.lingjun is None and c.platform == "pai-dlc"
    assert CATALOG.dlc_spec(c.instance_type) is not None
    assert (d.worker_count, d.worker_instance_type, d.tp, d.pp, d.dp) == (c.nodes, c.instance_type, c.tp, c.pp, c.dp)
    assert c.rdma == "none" and c.eri_per_node == 0 and not c.deployment_sets and c.min_nodes == c.nodes
    assert len(c.ranks) == c.nodes and all(r.private_ip == "" for r in c.ranks)
    assert not plan.checkpoints.facts_key  # no cluster facts: no node reads them
    assert (d.spot is not None) == spec.spot.enabled == plan.spot.enabled
    if d.spot is not None:
        assert plan.spot.on_demand_ranks == () and len(plan.spot.spot_ranks) == c.nodes
        # the only SpotStrategy DLC's API lists, with a limit, whatever the spec left as default
        assert d.spot.spot_strategy == plan.spot.strategy == "SpotWithPriceLimit" and d.spot.spot_price_limit
    env = dict(d.environment)
    assert len(d.environment) <= 20 and len(env) == len(d.environment)
    assert ("CHECKPOINT_URL" in env) == plan.checkpoints.enabled
    keys = [s.output_key for s in d.data_sources]
    assert len(set(keys)) == len(keys) and len({s.mount_path for s in d.data_sources}) == len(keys)
    assert (plan.storage.kind != "none") == any(s.kind in ("nas", "cpfs") for s in d.data_sources)
    vpc = ipaddress.ip_network(plan.network.vpc_cidr)
    assert all(ipaddress.ip_network(v.cidr).subnet_of(vpc) for v in plan.network.vswitches)
    assert not plan.network.admin_cidrs


# ------------------------------------------------------------------------------------------------ quota (P2-13)
def test_quota_warning_names_the_jobs_gpus_and_vcpus_against_the_default() -> None:
    from generator.platforms.dlc.plan import quota_warning
    assert quota_warning(1, 2, 8) is None  # exactly the default: no warning
    w = quota_warning(1, 8, 128)
    assert w is not None and (w.workers, w.gpus, w.vcpus) == (1, 8, 128) and w.over == ("GPUs", "CPU cores")
    w = quota_warning(2, 1, 8)  # two 1-GPU workers: within the GPUs, over the cores (per job, not per worker)
    assert w is not None and (w.workers, w.gpus, w.vcpus) == (2, 1, 8) and w.over == ("CPU cores",)


def test_the_plan_warns_with_the_workers_vcpus(tmp_path: Path) -> None:
    plan = api.plan(Path(__file__).resolve().parents[1] / "examples" / "finetune-dlc.yaml")
    (w,) = [w for w in plan.warnings if isinstance(w, warns.DlcQuota)]
    t = plan.dlc.worker_instance_type
    vcpu = next(x.vcpu for x in load_catalog().instance_types if x.name == t)
    assert (w.workers, w.vcpus) == (plan.dlc.worker_count, vcpu)
