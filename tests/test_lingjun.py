"""Lingjun (PAI intelligent computing, eflo) clusters: catalog rows, plans, the generated program under Pulumi's
mock runtime with the real pulumi_alicloud SDK (a wrong argument name raises), and the spec errors that say what
Lingjun cannot do."""

from __future__ import annotations

import base64
import ipaddress
import json
import math
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
from generator.preview.mockrun import Graph, run_program
from generator.render import userdata
from generator.spec.model import Spec

CATALOG = load_catalog()
VPD = "alicloud:eflo/vpd:Vpd"
SUBNET = "alicloud:eflo/subnet:Subnet"
CLUSTER = "alicloud:eflo/cluster:Cluster"
NODE = "alicloud:eflo/node:Node"
NODE_GROUP = "alicloud:eflo/nodeGroup:NodeGroup"
BUCKET = "alicloud:oss/bucket:Bucket"
IMAGE = "i190982651690986913088"  # the image id of the provider's eflo examples

# Spec texts of the Lingjun programs (tests/test_diff_coverage.py runs them too, to find the inputs they set)
LINGJUN_SPEC = f"""
name: lj-run
region: cn-wulanchabu
model: {{preset: llama-2-70b, tokens: 20B}}
compute: {{platform: lingjun, image_id: {IMAGE}, nodes: 4}}
network: {{vpc_cidr: 10.8.0.0/16, admin_cidrs: [192.168.10.0/24]}}
"""
LINGJUN_SUBSCRIPTION_SPEC = f"""
name: lj-sub
region: cn-wulanchabu
zones: [cn-wulanchabu-b]
model: {{parameters: 13B, tokens: 300B}}
compute: {{platform: lingjun, image_id: {IMAGE}, instance_types: [efg1.nvga1n], nodes: 2}}
checkpoints: {{enabled: false}}
"""


def build(tmp_path: Path, body: str) -> tuple[dict, Graph, Path]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent(body))
    result = api.render_stack(spec, tmp_path / "stack")  # lints too: a failing rule raises LintFailed
    assert result.lint is not None and not result.lint.failed
    plan = json.loads((result.dest / "plan.json").read_text())
    graph = run_program(result.dest, project=plan["name"], stack=plan["stack"],
                        config={"alicloud:region": plan["region"]})
    return plan, graph, result.dest


# ------------------------------------------------------------------------------------------------ catalog


def test_catalog_has_lingjun_machine_types_with_sources() -> None:
    t = CATALOG.lingjun_type("efg1.nvga8n")
    assert t is not None and t.family == "efg1" and t.gpus == 8 and t.gpu == "A100-80G"
    assert not t.gpu_verified  # no source names its GPUs
    assert t.rdma_gbps == 800 and t.bonds == 5
    assert t.regions == ("cn-wulanchabu",) and t.hpn_zone("cn-wulanchabu-a") == "A1"
    assert set(t.payment_types) == {"PayAsYouGo", "Subscription"}
    assert t.availability == "contact-sales" and t.price.estimated and "estimate:" in t.price.source
    assert {"TF-eflo-node", "DOC-PAI-LJ"} <= set(t.source.split("|"))
    # every Lingjun region is marked in regions.csv; ECS queries are unchanged
    for lt in CATALOG.lingjun_types:
        assert all(CATALOG.region(r).lingjun for r in lt.regions)
        assert lt.name not in {x.name for x in CATALOG.instance_types}
    assert not any(x.family == "efg1" for x in CATALOG.types_in_region("cn-wulanchabu"))
    assert {x.name for x in CATALOG.lingjun_types_in_region("cn-wulanchabu")} == {"efg1.nvga1n", "efg1.nvga8n"}
    # seen as an InstanceType (for the planner and cost reports): bare metal, no ERI, no SCC
    it = CATALOG.instance("efg1.nvga8n")
    assert it is not None and it.bare_metal and it.eri_count == 0 and not it.scc


# ------------------------------------------------------------------------------------------------ plan + program


def test_lingjun_spec_renders_vpd_subnet_cluster_nodes_and_bucket(tmp_path: Path) -> None:
    plan, g, dest = build(tmp_path, LINGJUN_SPEC)
    c, lj = plan["compute"], plan["lingjun"]
    assert c["platform"] == "lingjun" and c["rdma"] == "lingjun-hpn" and c["instance_type"] == "efg1.nvga8n"
    assert lj["payment_type"] == "PayAsYouGo" and lj["period_months"] is None  # PAYG beats subscription-only
    assert lj["hpn_zone"] == "A1" and lj["cluster_type"] == "Lite"
    assert plan["storage"]["kind"] == "none" and plan["spot"]["enabled"] is False
    topics = {d["topic"]: d for d in plan["decisions"]}
    assert {"zone", "hpn zone", "rdma", "network", "billing", "lingjun cluster", "node credentials",
            "shared storage"} <= set(topics)
    assert "never destroyed" in topics["billing"]["reason"]
    codes = [w["code"] for w in plan["warnings"]]
    assert warns.LingjunStock.code in codes
    assert warns.LingjunGpusUndocumented.code in codes  # GPU identity unverified

    # network.vpc_cidr is split: the lower half is the VPD, the upper half the VPC
    vpd = g.one(VPD)
    assert vpd.get("cidr") == "10.8.0.0/17" == lj["vpd_cidr"]
    assert g.one("alicloud:vpc/network:Network").get("cidr_block") == "10.8.128.0/17"
    subnet = g.one(SUBNET)
    assert subnet.get("vpd_id") == f"{vpd.name}-id" and subnet.get("zone_id") == "cn-wulanchabu-a"
    net = ipaddress.ip_network(subnet.get("cidr"))
    assert net.subnet_of(ipaddress.ip_network("10.8.0.0/17")) and net.num_addresses - 8 >= 4 * 5
    subnet_id = f"subnet-{subnet.name}"  # the mock's computed subnet_id

    cluster = g.one(CLUSTER)
    assert cluster.get("cluster_type") == "Lite" and cluster.get("hpn_zone") == "A1"
    networks = cluster.get("networks")
    assert networks["vpdInfo"] == {"vpdId": f"{vpd.name}-id", "vpdSubnets": [subnet_id]}
    assert networks["securityGroupId"] and networks["vpcId"] and networks["vswitchId"]

    nodes = sorted(g.of_type(NODE), key=lambda r: r.name)
    assert [n.name for n in nodes] == [f"lj-run-node-{i:03d}" for i in range(4)]
    for n in nodes:
        assert n.get("machine_type") == "efg1.nvga8n" and n.get("hpn_zone") == "A1"
        assert n.get("zone") == "cn-wulanchabu-a" and n.get("payment_type") == "PayAsYouGo"
        assert n.get("login_password") is None and n.get("period") is None
        assert n.get("tags")["managed-by"] == "trainstack"

    group = g.one(NODE_GROUP)
    assert group.get("cluster_id") == f"{cluster.name}-id" and group.get("machine_type") == "efg1.nvga8n"
    assert group.get("image_id") == IMAGE and group.get("key_pair_name") == "lj-run-admin"
    assert group.get("login_password") is None
    assert group.get("vpd_subnets") == [subnet_id]
    assert group.get("ip_allocation_policies") == [{"bondPolicy": {"bondDefaultSubnet": subnet_id}}]
    members = group.get("nodes")
    assert [m["nodeId"] for m in members] == [f"{n.name}-id" for n in nodes]
    assert [m["hostname"] for m in members] == [n.name for n in nodes]
    assert all("loginPassword" not in m for m in members)
    script = base64.b64decode(group.get("user_data"))
    assert len(script) <= lj["user_data_max_bytes"] == 16 * 1024
    assert script.decode().startswith("#!/bin/bash\n# trainstack node bootstrap (Lingjun)")  # the unpacking wrapper
    text = userdata.wrapped_script("lingjun", script.decode())
    assert text.startswith("#!/bin/bash") and 'NODE_SUFFIX="${NODE_NAME#lj-run-node-}"' in text
    assert "__TRAINSTACK_NODE_RANK__" not in text
    # written through an unquoted heredoc: launch.env keeps ${MASTER_ADDR:-...} for the launcher to expand
    assert "MASTER_ADDR=\\${MASTER_ADDR:-lj-run-node-000}" in text
    assert text == (dest / "node-init.sh").read_text()

    # no ECS compute, no ECS role; checkpoints: the same private bucket, the one-bucket policy on a RAM user
    assert not g.of_type("alicloud:ecs/instance:Instance") and not g.of_type("alicloud:ram/role:Role")
    bucket = g.one(BUCKET)
    assert bucket.protect and bucket.retain_on_delete and bucket.get("bucket") == plan["checkpoints"]["bucket"]
    for securing in (g.one("alicloud:oss/bucketAcl:BucketAcl"),
                     g.one("alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock")):
        assert securing.protect and securing.retain_on_delete and securing.get("bucket") == bucket.get("bucket")
    user = g.one("alicloud:ram/user:User")
    attach = g.one("alicloud:ram/userPolicyAttachment:UserPolicyAttachment")
    assert attach.get("user_name") == user.get("name") == "lj-run-checkpoints"
    assert not g.of_type("alicloud:ram/accessKey:AccessKey")  # no secret in the state
    assert g.outputs["node_hostnames"] == [n.name for n in nodes] and g.outputs["subnet_ids"] == [subnet_id]
    assert g.outputs["checkpoint_ram_user"] == "lj-run-checkpoints"


def test_subscription_only_type_is_prepaid_and_says_pulumi_cannot_destroy_it(tmp_path: Path) -> None:
    plan, g, _ = build(tmp_path, LINGJUN_SUBSCRIPTION_SPEC)
    lj = plan["lingjun"]
    assert lj["machine_type"] == "efg1.nvga1n" and lj["hpn_zone"] == "B1" and lj["payment_type"] == "Subscription"
    hours = plan["cost"]["run_hours"] + plan["cost"]["expected_rework_hours"]
    assert lj["period_months"] == max(1, math.ceil(hours / 730))  # the expected run, in whole months
    codes = [w["code"] for w in plan["warnings"]]
    assert warns.SubscriptionNotDestroyed.code in codes and warns.SubscriptionPrepaid.code in codes
    nodes = g.of_type(NODE)
    assert len(nodes) == 2
    for n in nodes:
        assert n.get("payment_type") == "Subscription" and n.get("period") == lj["period_months"]
        assert n.get("renewal_status") == "ManualRenewal" and n.get("zone") == "cn-wulanchabu-b"
    # checkpoints off: no bucket, no RAM user
    assert not g.of_type(BUCKET) and not g.of_type("alicloud:ram/user:User")


def test_auto_storage_resolves_to_none_and_says_why() -> None:
    spec = Spec.model_validate({"name": "lj-auto", "region": "cn-wulanchabu", "model": {"parameters": "70B"},
                                "compute": {"platform": "lingjun", "image_id": IMAGE, "nodes": 8}})
    assert validate.check(spec, CATALOG) == []
    plan = make_plan(spec, CATALOG)
    d = next(d for d in plan.decisions if d.topic == "shared storage")
    assert d.choice == "none" and "bmcpfs" in d.reason and "OSS" in d.reason
    assert plan.storage.kind == "none"
    # every node has a rank and a name but no fixed address (Lingjun assigns them at deploy time)
    assert [r.private_ip for r in plan.compute.ranks] == [""] * 8


def test_ecs_plans_carry_no_lingjun_block() -> None:
    spec = Spec.model_validate({"name": "ecs-run", "region": "cn-wulanchabu", "model": {"parameters": "7B"}})
    plan = make_plan(spec, CATALOG)
    assert plan.lingjun is None and "lingjun" not in plan.to_dict()


# ------------------------------------------------------------------------------------------------ refusals

BASE = "name: bad-run\nregion: cn-wulanchabu\nmodel: {parameters: 7B}\n"
LJ = f"compute: {{platform: lingjun, image_id: {IMAGE}}}\n"


@pytest.mark.parametrize("body, field, code, fields", [
    (LJ + "storage: {shared: cpfs}", "storage.shared", "TSJ007", {}),
    (LJ + "storage: {shared: extreme-nas}", "storage.shared", "TSJ008", {}),
    (LJ + "storage: {dataset: {source: 'oss://corpus-bucket/tok/', size: 1TiB}}", "storage.dataset", "TSJ009", {}),
    (LJ + "spot: {enabled: true}", "spot.enabled", "TSJ010", {}),
    ("compute: {platform: lingjun}", "compute.platform", "TSJ004", {}),
    (f"compute: {{platform: lingjun, image_id: {IMAGE}, data_disk_gib: 100}}", "compute.data_disk_gib", "TSJ005",
     {"gib": 100}),
    (f"compute: {{platform: lingjun, image_id: {IMAGE}, bare_metal: avoid}}", "compute.bare_metal", "TSJ006", {}),
    (f"compute: {{platform: lingjun, image_id: {IMAGE}, instance_types: [ecs.ebmgn7ex.32xlarge]}}",
     "compute.instance_types[0]", "TSC011", {"name": "ecs.ebmgn7ex.32xlarge", "ecs_type": True}),
    (f"compute: {{platform: lingjun, image_id: {IMAGE}, instance_types: [efg1.nvga9n]}}",
     "compute.instance_types[0]", "TSC011", {"name": "efg1.nvga9n", "ecs_type": False, "close": "efg1.nvga8n"}),
    ("compute: {instance_types: [efg1.nvga8n]}", "compute.instance_types[0]", "TSC012", {"name": "efg1.nvga8n"}),
    ("zones: [cn-wulanchabu-c]\n" + LJ, "zones", "TSJ003",
     {"known": (("cn-wulanchabu-a", "A1"), ("cn-wulanchabu-b", "B1"))}),
    (f"compute: {{platform: lingjun, image_id: {IMAGE}, gpu: H20}}", "compute.gpu", "TSC009",
     {"gpu": "H20", "region": "cn-wulanchabu"}),
])
def test_lingjun_refusals_are_spec_errors_with_a_hint(tmp_path: Path, body: str, field: str, code: str,
                                                      fields: dict[str, Any]) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(BASE + body + "\n")
    with pytest.raises(SpecErrors) as e:
        api.load(spec)
    hits = [p for p in e.value.problems if p.dotted == field and p.code == code]
    assert hits, e.value.render()
    assert all(p.hint for p in hits)
    assert fields.items() <= dict(hits[0].fields).items()


def test_lingjun_outside_its_regions_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(BASE.replace("cn-wulanchabu", "cn-hangzhou") + LJ)
    with pytest.raises(SpecErrors) as e:
        api.load(spec)
    p = next(p for p in e.value.problems if p.dotted == "compute.platform")
    assert p.code == "TSJ001" and dict(p.fields) == {"region": "cn-hangzhou", "regions": ("cn-wulanchabu",)}
    assert "cn-wulanchabu" in p.hint


# ------------------------------------------------------------------------------------------------ properties

SETTINGS: dict[str, Any] = {
    "deadline": None, "database": None, "derandomize": not os.environ.get("TRAINSTACK_HYPOTHESIS_RANDOM"),
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
}


@st.composite
def lingjun_specs(draw: st.DrawFn) -> dict[str, Any]:
    model: dict[str, Any] = draw(st.sampled_from([{"parameters": p} for p in ("1B", "7B", "13B", "70B", "175B")]
                                                 + [{"preset": "llama-3-70b"}, {"preset": "qwen2-7b"}]))
    if draw(st.booleans()):
        model["tokens"] = draw(st.sampled_from(["2B", "300B", "2T"]))
    compute: dict[str, Any] = {"platform": "lingjun", "image_id": IMAGE,
                               "nodes": draw(st.sampled_from(["auto", 1, 2, 16, 64])), "max_nodes": 256}
    if draw(st.booleans()):
        compute["instance_types"] = draw(st.sampled_from([["efg1.nvga8n"], ["efg1.nvga1n"],
                                                          ["efg1.nvga1n", "efg1.nvga8n"]]))
    spec: dict[str, Any] = {"name": "lj-prop", "region": "cn-wulanchabu", "model": model, "compute": compute,
                            "network": {"vpc_cidr": draw(st.sampled_from(["10.0.0.0/16", "192.168.0.0/24",
                                                                           "172.16.0.0/12"])),
                                        "egress": draw(st.sampled_from(["nat", "none"]))},
                            "checkpoints": {"enabled": draw(st.booleans())},
                            "storage": {"shared": draw(st.sampled_from(["auto", "none"]))}}
    if draw(st.booleans()):
        spec["zones"] = draw(st.sampled_from([["cn-wulanchabu-a"], ["cn-wulanchabu-b"],
                                              ["cn-wulanchabu-c", "cn-wulanchabu-b"]]))
    return spec


@settings(max_examples=40, **SETTINGS)
@given(lingjun_specs())
def test_lingjun_plans_are_consistent(data: dict[str, Any]) -> None:
    spec = Spec.model_validate(data)
    assume(not validate.check(spec, CATALOG))
    try:
        plan = make_plan(spec, CATALOG)
    except PlanningError as e:  # a legitimate answer (too big, VPC too small...), with what to change
        assert e.problems and all(p.message for p in e.problems)
        return
    lj, c = plan.lingjun, plan.compute
    assert lj is not None and c.platform == "lingjun" and c.rdma == "lingjun-hpn"
    t = CATALOG.lingjun_type(lj.machine_type)
    assert t is not None and "cn-wulanchabu" in t.regions and c.instance_type == t.name
    zone = c.ranks[0].zone
    assert t.hpn_zone(zone) == lj.hpn_zone and (not spec.zones or zone in spec.zones)
    assert lj.payment_type in t.payment_types
    assert (lj.period_months is None) == (lj.payment_type == "PayAsYouGo")
    assert len(c.ranks) == c.nodes and not plan.spot.enabled and plan.storage.kind == "none"
    vpd, vpc = ipaddress.ip_network(lj.vpd_cidr), ipaddress.ip_network(plan.network.vpc_cidr)
    assert not vpd.overlaps(vpc) and vpd.subnet_of(ipaddress.ip_network(spec.network.vpc_cidr))
    for sn in lj.subnets:
        net = ipaddress.ip_network(sn.cidr)
        assert net.subnet_of(vpd) and net.num_addresses - 8 >= c.nodes * (lj.bonds or 8)
    assert ipaddress.ip_network(plan.network.vswitches[0].cidr).subnet_of(vpc)
