"""The cluster parts of generated programs, per spec variant, asserted on the resources the real SDK receives
under Pulumi's mock runtime (not on template text)."""

from __future__ import annotations

import base64
import gzip
import json
import textwrap
from pathlib import Path

import pytest

from generator import api
from generator.errors import SpecErrors
from generator.preview.mockrun import Graph, run_program

INSTANCE = "alicloud:ecs/instance:Instance"

# The variants' spec texts (tests/test_diff_coverage.py runs them too, to find the inputs the programs set)
SCC_SPEC = """
name: scc-run
region: cn-wulanchabu
model: {preset: llama-2-13b, sequence_length: 4096}
compute: {instance_types: [ecs.sccgn7ex.32xlarge], nodes: 2}
"""
ERI_SPOT_SPEC = """
name: gn8v-run
region: cn-wulanchabu
model: {parameters: 30B, sequence_length: 4096}
compute: {instance_types: [ecs.gn8v-8x.48xlarge], nodes: 4}
spot: {enabled: true, strategy: SpotWithPriceLimit, max_price_ratio: 0.6, on_demand_base: 1}
network: {admin_cidrs: [192.168.10.0/24], egress: none}
"""
EXTREME_NAS_SPEC = """
name: nas-run
region: cn-wulanchabu
model: {parameters: 13B, sequence_length: 4096}
compute: {instance_types: [ecs.ebmgn7ex.32xlarge], nodes: 2}
network: {vpc_cidr: 172.16.0.0/16}
"""


def build(tmp_path: Path, body: str) -> tuple[dict, Graph]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent(body))
    result = api.render_stack(spec, tmp_path / "stack")
    plan = json.loads((result.dest / "plan.json").read_text())
    graph = run_program(result.dest, project=plan["name"], stack=plan["stack"],
                        config={"alicloud:region": plan["region"]})
    return plan, graph


def test_scc_nodes_are_placed_in_an_hpc_cluster(tmp_path: Path) -> None:
    plan, g = build(tmp_path, SCC_SPEC)
    assert plan["compute"]["rdma"] == "roce" and plan["compute"]["hpc_cluster"]
    hpc = g.one("alicloud:ecs/hpcCluster:HpcCluster")
    nodes = g.of_type(INSTANCE)
    assert len(nodes) == 2
    assert all(n.get("hpc_cluster_id") == f"{hpc.name}-id" for n in nodes)
    # RoCE is the SCC fabric: no eRDMA traffic mode, no LowLatency sets
    assert all(n.get("network_interface_traffic_mode") is None for n in nodes)
    assert not g.of_type("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet")


def test_ecs_erdma_type_uses_one_eri_on_the_primary_eni(tmp_path: Path) -> None:
    plan, g = build(tmp_path, ERI_SPOT_SPEC)
    assert plan["compute"]["eri_per_node"] == 1
    nodes = sorted(g.of_type(INSTANCE), key=lambda r: r.name)
    for n in nodes:
        assert n.get("network_interface_traffic_mode") == "HighPerformance"
        assert n.get("network_interfaces") is None
    # gn8v supports LowLatency deployment sets
    assert g.one("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet").get("strategy") == "LowLatency"
    # spot with a price limit derived from the catalog price; rank 0 on demand
    assert nodes[0].get("spot_strategy") == "NoSpot"
    limit = plan["spot"]["price_limit"]
    assert limit == pytest.approx(277.93 * 0.6, abs=0.01)
    for n in nodes[1:]:
        assert n.get("spot_strategy") == "SpotWithPriceLimit" and n.get("spot_price_limit") == pytest.approx(limit)
        assert n.get("spot_duration") == 1 and n.get("spot_interruption_behavior") == "Terminate"
    # SSH only from the named CIDR, no NAT when egress is none
    ssh = [r for r in g.of_type("alicloud:ecs/securityGroupRule:SecurityGroupRule") if r.get("port_range") == "22/22"]
    assert [r.get("cidr_ip") for r in ssh] == ["192.168.10.0/24"]
    assert not g.of_type("alicloud:vpc/natGateway:NatGateway")


def test_small_multi_node_run_gets_extreme_nas_limited_to_the_vpc(tmp_path: Path) -> None:
    plan, g = build(tmp_path, EXTREME_NAS_SPEC)
    assert plan["storage"]["kind"] == "extreme-nas"
    fs = g.one("alicloud:nas/fileSystem:FileSystem")
    assert fs.get("file_system_type") == "extreme" and fs.get("protocol_type") == "NFS" and fs.protect
    assert fs.get("vpc_id") is None  # Extreme NAS must not set vpc_id/vswitch_id (permanent diff)
    rule = g.one("alicloud:nas/accessRule:AccessRule")
    assert rule.get("source_cidr_ip") == "172.16.0.0/16"
    mt = g.one("alicloud:nas/mountTarget:MountTarget")
    assert g.outputs["shared_fs_mount_address"] == f"{mt.name}.mock.nas.aliyuncs.com"
    script = gzip.decompress(base64.b64decode(g.of_type(INSTANCE)[0].get("user_data"))).decode()
    # the address is in the cluster facts the nodes read at boot, not in their user data
    facts = json.loads(g.one("alicloud:oss/bucketObject:BucketObject").get("content"))
    assert facts["shared_fs"]["address"] == f"{mt.name}.mock.nas.aliyuncs.com" and ":/share" in script
    assert f"{mt.name}.mock.nas.aliyuncs.com" not in script


@pytest.mark.parametrize("body, field, words", [
    ("compute: {instance_types: [ecs.gn7i-c8g1.2xlarge]}\nnetwork: {rdma: true}",
     "compute.instance_types[0]", "has no eRDMA"),
    ("storage: {shared: cpfs, capacity: 5000GiB}", "storage.capacity", "1200 GiB"),
    ("spot: {enabled: true}\ncheckpoints: {enabled: false}", "spot.enabled", "need checkpoints"),
    ("checkpoints: {region: cn-beijing}", "checkpoints.region", "compute region"),
    ("compute: {platform: lingjun}", "compute.platform", "Lingjun"),
])
def test_platform_refusals_are_spec_errors(tmp_path: Path, body: str, field: str, words: str) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: bad-run\nregion: cn-wulanchabu\nmodel: {parameters: 7B}\n" + body + "\n")
    with pytest.raises(SpecErrors) as e:
        api.load(spec)
    assert any(p.dotted == field and words in p.message for p in e.value.problems), e.value.render()


def test_render_refuses_an_insecure_program_and_writes_nothing(tmp_path: Path) -> None:
    from generator.api import LintFailed

    spec = tmp_path / "open.yaml"
    base = "name: open-run\nregion: cn-wulanchabu\nmodel: {parameters: 7B}\nnetwork: {admin_cidrs: [0.0.0.0/0]}\n"
    spec.write_text(base)
    with pytest.raises(LintFailed) as e:
        api.render_stack(spec, tmp_path / "stack")
    assert "TS001" in str(e.value) and "nothing was written" in str(e.value)
    assert not (tmp_path / "stack").exists()
    # a written reason waives the rule; the waiver shows in the plan and in the lint report
    spec.write_text(base + "waivers: [{rule: TS001, reason: 'bastion-less lab account, isolated by ACL'}]\n")
    result = api.render_stack(spec, tmp_path / "stack")
    assert (tmp_path / "stack" / "__main__.py").is_file()
    assert [w.rule for w in result.plan.waivers] == ["TS001"]
    assert result.lint.waived and not result.lint.failed
