"""Every example: its committed stack equals what the spec renders (golden), and the program, executed under
Pulumi's mock runtime with the real pulumi_alicloud SDK, declares what the spec asks for."""

from __future__ import annotations

import base64
import gzip
import json
import os
from pathlib import Path

import pytest

from generator import api
from generator.preview.mockrun import Graph, run_program
from generator.render import files as render
from generator.render import stackdir

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.yaml"))
# examples whose program declares nodes (ECS, Lingjun); PAI-DLC runs its workers itself (tests/test_dlc.py)
NODE_EXAMPLES = [e for e in EXAMPLES if "platform: pai-dlc" not in (ROOT / "examples" / f"{e}.yaml").read_text()]
INSTANCE = "alicloud:ecs/instance:Instance"


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # spec paths are recorded relative to the working folder


def test_examples_exist() -> None:
    assert {"finetune-7b", "pretrain-70b", "foundation-1t", "finetune-dlc"} <= set(EXAMPLES)
    assert "finetune-dlc" not in NODE_EXAMPLES


@pytest.mark.parametrize("name", EXAMPLES)
def test_committed_stack_is_what_the_spec_renders(name: str) -> None:
    plan = api.plan(f"examples/{name}.yaml")
    files = render.render(plan, f"examples/{name}.yaml")
    stale = [c for c in stackdir.compare(files, ROOT / "stacks" / plan.name) if c.action != "identical"]
    assert not stale, f"stacks/{plan.name} is stale; run `trainstack render examples/{name}.yaml`: {stale}"


@pytest.mark.parametrize("name", EXAMPLES)
def test_render_is_deterministic_and_portable(name: str) -> None:
    plan = api.plan(f"examples/{name}.yaml")
    a = render.render(plan, f"examples/{name}.yaml")
    b = render.render(api.plan(f"examples/{name}.yaml"), f"examples/{name}.yaml")
    assert a == b
    blob = "\n".join(a.values())
    for leak in (str(ROOT), os.environ.get("USER", "\0"), os.environ.get("HOME", "\0")):
        if leak and leak != "/":
            assert leak not in blob
    assert all(text.endswith("\n") and "\r" not in text for text in a.values())


_graphs: dict[str, Graph] = {}


def graph_of(name: str) -> Graph:
    if name not in _graphs:
        plan = json.loads((ROOT / "stacks" / name / "plan.json").read_text())
        _graphs[name] = run_program(ROOT / "stacks" / name, project=name, stack=plan["stack"],
                                    config={"alicloud:region": plan["region"]})
    return _graphs[name]


def plan_of(name: str) -> dict:
    return json.loads((ROOT / "stacks" / name / "plan.json").read_text())


@pytest.mark.parametrize("name", NODE_EXAMPLES)
def test_program_runs_under_the_mock_runtime(name: str) -> None:
    g = graph_of(name)
    p = plan_of(name)
    nodes = g.of_type(INSTANCE)
    assert len(nodes) == p["compute"]["nodes"]
    assert {n.get("instance_type") for n in nodes} == {p["compute"]["instance_type"]}
    # a fixed private IP per rank makes the hostfile known before deploy
    assert [n.get("private_ip") for n in sorted(nodes, key=lambda r: r.name)] == \
        [r["private_ip"] for r in p["compute"]["ranks"]]
    assert g.outputs["hostfile"].count("\n") == p["compute"]["nodes"]
    assert g.outputs["master_addr"] == p["compute"]["ranks"][0]["private_ip"]
    # secure defaults on every node
    for n in nodes:
        assert n.get("http_tokens") == "required"
        assert n.get("internet_max_bandwidth_out") == 0
        assert n.get("system_disk_encrypted") is True
        assert not n.get("key_name") and not n.get("password")  # no key pair: access through Cloud Assistant
        assert n.get("image_id") == p["compute"]["image"]  # the pinned image of plan.json, never a lookup
    sg_rules = g.of_type("alicloud:ecs/securityGroupRule:SecurityGroupRule")
    assert all(r.get("cidr_ip") not in ("0.0.0.0/0",) for r in sg_rules)


@pytest.mark.parametrize("name", EXAMPLES)
def test_what_secures_the_checkpoint_bucket_is_kept_with_it(name: str) -> None:
    """A data-keeping destroy keeps protected resources only: the ACL and the public-access block must be too."""
    g = graph_of(name)
    bucket = g.one("alicloud:oss/bucket:Bucket")
    acl = g.one("alicloud:oss/bucketAcl:BucketAcl")
    block = g.one("alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock")
    for r in (bucket, acl, block):
        assert r.protect and r.retain_on_delete, f"{r.name} would not survive `trainstack destroy` with its bucket"
    assert acl.get("bucket") == block.get("bucket") == bucket.get("bucket")
    assert acl.get("acl") == "private" and block.get("block_public_access") is True
    # versioning, encryption and lifecycle are the bucket's own arguments, so they are kept with it
    assert bucket.get("versioning") == {"status": "Enabled"} and bucket.get("server_side_encryption_rule")
    assert not g.of_type("alicloud:oss/bucketVersioning:BucketVersioning")
    assert not g.of_type("alicloud:oss/bucketServerSideEncryption:BucketServerSideEncryption")


def _user_data(node) -> str:
    return gzip.decompress(base64.b64decode(node.get("user_data"))).decode()


def test_finetune_is_one_8_gpu_node_without_rdma() -> None:
    g, p = graph_of("finetune-7b"), plan_of("finetune-7b")
    (node,) = g.of_type(INSTANCE)
    assert p["compute"]["gpus_per_node"] == 8 and p["compute"]["nodes"] == 1
    assert node.get("network_interface_traffic_mode") is None
    assert not g.of_type("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet")
    assert not g.of_type("alicloud:nas/fileSystem:FileSystem")
    script = _user_data(node)
    assert "NODE_RANK=\"0\"" in script and "NNODES=" not in script  # the node count is in the cluster facts
    facts = json.loads(g.one("alicloud:oss/bucketObject:BucketObject").get("content"))
    assert (facts["nodes"], facts["min_nodes"], facts["max_nodes"]) == (1, 1, 1)


def test_pretrain_has_erdma_cpfs_checkpoints_and_spot() -> None:
    g, p = graph_of("pretrain-70b"), plan_of("pretrain-70b")
    nodes = sorted(g.of_type(INSTANCE), key=lambda r: r.name)
    assert 10 <= len(nodes) < 100  # "tens of nodes"
    for n in nodes:
        assert n.get("network_interface_traffic_mode") == "HighPerformance"
        # ebmgn7ex needs two ERIs on distinct network cards for its full 160 Gbit/s
        assert n.get("network_interfaces")["networkCardIndex"] == 1
        assert n.get("network_interfaces")["networkInterfaceTrafficMode"] == "HighPerformance"
        # ebmgn7ex: no source documents jumbo frames for the family, so they stay off (MTU 1400 below)
        assert n.get("enable_jumbo_frame") is None
    # LowLatency deployment sets of at most 20 instances
    sets = g.of_type("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet")
    assert sets and all(s.get("strategy") == "LowLatency" for s in sets)
    assert all(len(d["ranks"]) <= 20 for d in p["compute"]["deployment_sets"])
    # spot: the on-demand base keeps rank 0 and 1; every other node is spot with the watcher
    assert [n.get("spot_strategy") for n in nodes[:2]] == ["NoSpot", "NoSpot"]
    assert all(n.get("spot_strategy") == "SpotAsPriceGo" for n in nodes[2:])
    assert "trainstack-spot-watcher" in _user_data(nodes[5])
    assert "meta-data/instance/spot/termination-time" in _user_data(nodes[5])
    # CPFS general-purpose, capacity on its 1,200 GiB step, protected, dataset imported through a data flow
    fs = g.one("alicloud:nas/fileSystem:FileSystem")
    assert fs.get("file_system_type") == "cpfs" and fs.get("protocol_type") == "cpfs"
    assert fs.get("capacity") >= 3600 and fs.get("capacity") % 1200 == 0
    assert fs.protect and fs.retain_on_delete
    # the protocol service (up to 32 addresses) and its export sit in the storage vSwitch, never among the nodes
    service = g.one("alicloud:nas/protocolService:ProtocolService")
    assert service.get("vswitch_id") == "vswitch-storage-id" != nodes[0].get("vswitch_id")
    assert g.one("alicloud:vpc/natGateway:NatGateway").get("vswitch_id") == "vswitch-egress-id"
    flow = g.one("alicloud:nas/dataFlow:DataFlow")
    assert flow.get("source_storage") == "oss://corpus-pretrain-2026"
    assert flow.get("throughput") in (600, 1200, 1500)
    # checkpoints: private, versioned, encrypted, lifecycle rules, protected
    bucket = g.one("alicloud:oss/bucket:Bucket")
    assert bucket.protect and bucket.retain_on_delete
    assert bucket.get("versioning") == {"status": "Enabled"}
    assert bucket.get("server_side_encryption_rule")["sseAlgorithm"] in ("KMS", "AES256")
    rule_ids = {r["id"] for r in bucket.get("lifecycle_rules")}
    assert {"expire-noncurrent-checkpoints", "abort-stale-multipart-uploads", "old-checkpoints-to-ia"} <= rule_ids
    assert g.one("alicloud:oss/bucketAcl:BucketAcl").get("acl") == "private"
    assert g.one("alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock").get("block_public_access") is True
    # the nodes' RAM policy reaches only that bucket
    policy = json.loads(g.one("alicloud:ram/policy:Policy").get("policy_document"))
    resources = {r for s in policy["Statement"] for r in s["Resource"]}
    assert resources == {f"acs:oss:*:*:{bucket.get('bucket')}", f"acs:oss:*:*:{bucket.get('bucket')}/checkpoints/*",
                         f"acs:oss:*:*:{bucket.get('bucket')}/trainstack/cluster.json"}  # the cluster facts, read only
    assert g.outputs["checkpoint_internal_endpoint"] == "oss-cn-wulanchabu-internal.aliyuncs.com"
    # NCCL over eRDMA: MTU and environment in the launch file
    script = _user_data(nodes[0])
    assert 'ip link set dev "${nic}" mtu 1400' in script  # trainstack-boot, at every boot
    facts = json.loads(g.one("alicloud:oss/bucketObject:BucketObject").get("content"))
    assert facts["nccl_env"]["NCCL_IB_HCA"] == "erdma" and facts["master_addr"] == "10.20.0.10"


def test_foundation_is_over_a_thousand_bare_metal_gpus() -> None:
    g, p = graph_of("foundation-1t"), plan_of("foundation-1t")
    assert p["compute"]["total_gpus"] > 1000 and p["compute"]["bare_metal"]
    nodes = g.of_type(INSTANCE)
    assert len(nodes) == p["compute"]["nodes"]
    sets = g.of_type("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet")
    assert len(sets) * 20 >= len(nodes)
    assert all(n.get("spot_strategy") in (None, "NoSpot") for n in nodes)


@pytest.mark.parametrize("name", NODE_EXAMPLES)
def test_node_bootstrap_is_valid_bash(name: str, tmp_path: Path) -> None:
    import shutil
    import subprocess

    script = (ROOT / "stacks" / name / "node-init.sh").read_text()
    for key, value in (("RANK", "1"), ("NAME", "node-1"), ("SPOT", "true"), ("SHARED_FS_ADDRESS", "fs.example")):
        script = script.replace(f"__TRAINSTACK_NODE_{key}__" if key != "SHARED_FS_ADDRESS"
                                else "__TRAINSTACK_SHARED_FS_ADDRESS__", value)
    assert "__TRAINSTACK_" not in script
    path = tmp_path / "node-init.sh"
    path.write_text(script)
    subprocess.run(["bash", "-n", str(path)], check=True)
    if shutil.which("shellcheck"):
        subprocess.run(["shellcheck", "-S", "warning", str(path)], check=True)


@pytest.mark.parametrize("name", EXAMPLES)
def test_no_credentials_or_passwords_in_the_stack_folder(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    # credentials in the environment must never leak into what render writes
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI5tFAKEFAKEFAKE00000")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "fake-secret-value-0000000000000")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "fake-passphrase-0000")
    plan = api.plan(f"examples/{name}.yaml")
    files = render.render(plan, f"examples/{name}.yaml")
    blob = "\n".join(files.values())
    for secret in ("LTAI5tFAKEFAKEFAKE00000", "fake-secret-value-0000000000000", "fake-passphrase-0000"):
        assert secret not in blob
    assert not re.search(r"LTAI[0-9A-Za-z]{12,}", blob)  # the shape of an Alibaba Cloud AccessKey id
    assert not re.search(r"-----BEGIN [A-Z ]*PRIVATE KEY-----", blob)
    assert not re.search(r"\b(password|login_password|kms_encrypted_password)\s*=", files["__main__.py"])
    from ruamel.yaml import YAML

    config = YAML(typ="safe").load(files[f"Pulumi.{plan.stack}.yaml"])["config"]
    assert set(config) == {"alicloud:region"}  # nothing sensitive is rendered; secrets go through `pulumi config set --secret`
