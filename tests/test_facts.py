"""The cluster facts (issue #12 A): what the whole cluster shares lives in one private OSS object, not in the nodes'
user data, so a resize leaves the nodes that stay alone; the nodes read it with their RAM role, and
trainstack-launch runs torchrun's elastic rendezvous between the plan's minimum and the node count.

The programs run under Pulumi's mock runtime with the real SDK; the facts tool of node-init.sh runs for real in
bash against a sample cluster.json in a temporary folder (no network, no metadata service).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
import subprocess
import textwrap
from functools import cache
from pathlib import Path

import pytest

from generator import api
from generator.errors import SpecErrors
from generator.plan import refusals
from generator.preview import diff as d
from generator.preview.mockrun import Graph

ROOT = Path(__file__).resolve().parents[1]
PRETRAIN = ROOT / "examples" / "pretrain-70b.yaml"
INSTANCE = "alicloud:ecs/instance:Instance"
FACTS = "alicloud:oss/bucketObject:BucketObject"
POLICY = "alicloud:ram/policy:Policy"
NODES_LINE = "  nodes: auto               # sized from memory and the deadline below\n"


def _pretrain_at(folder: Path, nodes: int) -> Path:
    """pretrain-70b at a fixed node count, on the instance type its own plan chose: resizing is about the nodes; at
    128 nodes the network-aware time would pick another type (RoCE at 800 Gbit/s), which replaces every node."""
    text = PRETRAIN.read_text()
    assert NODES_LINE in text
    spec = folder / f"pretrain-{nodes}.yaml"
    chosen = api.plan(PRETRAIN).compute.instance_type
    spec.write_text(text.replace(NODES_LINE, f"  nodes: {nodes}\n  instance_types: [{chosen}]\n"))
    return spec


@cache
def _graph(nodes: int | None) -> Graph:
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="facts-"))
    spec = PRETRAIN if nodes is None else _pretrain_at(folder, nodes)
    return api.preview(spec).graph


def _user_data(g: Graph) -> dict[str, str]:
    return {r.name: gzip.decompress(base64.b64decode(r.get("user_data"))).decode() for r in g.of_type(INSTANCE)}


def _facts(g: Graph) -> dict:
    return json.loads(g.one(FACTS).get("content"))


# --------------------------------------------------------------------------------------------- resizing
@pytest.mark.parametrize("head", [128, 32])
def test_resizing_changes_no_node_that_stays(head: int) -> None:
    base, new = _graph(None), _graph(head)
    result = d.diff_graphs(base, new)
    kept = {r.name for r in base.of_type(INSTANCE)} & {r.name for r in new.of_type(INSTANCE)}
    assert len(kept) == min(64, head)
    for change in result.changes:
        if change.type == INSTANCE:
            # only nodes that come or go; none that stays is updated, rebooted or replaced
            assert change.action == ("create" if head > 64 else "delete"), change
            assert change.name not in kept
        else:
            assert change.impact == "safe", change
            if change.action == "update":
                assert change.type in (FACTS, "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet"), change
    assert not [c for c in result.changes if c.impact in ("restarts-nodes", "unknown", "never-applied")]
    assert {c.name for c in result.changes if c.impact == "replaces-nodes"} == \
        {f"pretrain-70b-node-{i:03d}" for i in range(min(64, head), max(64, head))}
    assert any(c.type == FACTS and c.action == "update" for c in result.changes)


def test_user_data_holds_only_what_never_changes_for_a_node() -> None:
    small, large = _user_data(_graph(32)), _user_data(_graph(128))
    for name, script in small.items():
        assert large[name] == script  # the same bytes whatever the node count
    sizes = [len(s) for s in large.values()]
    assert max(sizes) - min(sizes) <= 8  # ranks differ only in the rank's digits and the spot flag
    script = large["pretrain-70b-node-007"]
    assert 'NODE_RANK="7"' in script and 'NODE_NAME="pretrain-70b-node-007"' in script
    assert 'SPOT="true"' in script
    for shared in ("10.20.0.10 slots=", "NNODES=", "WORLD_SIZE=", "cpfs-export.example.invalid", "MASTER_ADDR=10."):
        assert shared not in script
    assert 'FACTS_KEY="trainstack/cluster.json"' in script


def test_the_facts_object_lists_every_member_and_the_shared_file_system() -> None:
    g = _graph(None)
    obj = g.one(FACTS)
    facts = _facts(g)
    bucket = g.one("alicloud:oss/bucket:Bucket").get("bucket")
    assert obj.get("bucket") == bucket and obj.get("key") == "trainstack/cluster.json"
    assert obj.get("acl") == "private"
    nodes = sorted(g.of_type(INSTANCE), key=lambda r: r.name)
    assert facts["members"] == [{"rank": i, "name": r.name, "ip": r.get("private_ip")} for i, r in enumerate(nodes)]
    assert (facts["nodes"], facts["gpus_per_node"], facts["world_size"], facts["max_nodes"]) == (64, 8, 512, 64)
    assert facts["master_addr"] == nodes[0].get("private_ip") and facts["master_port"] == 29500
    assert 1 <= facts["min_nodes"] < 64
    assert facts["shared_fs"] == {"kind": "cpfs", "address": "cpfs-export.example.invalid", "mount_path": "/mnt/shared"}
    assert facts["checkpoint"]["url"] == f"oss://{bucket}/checkpoints/"
    assert facts["checkpoint"]["endpoint"].endswith("-internal.aliyuncs.com")
    assert facts["parallel"]["tp"] * facts["parallel"]["pp"] * facts["parallel"]["dp"] == 512
    # no credential in the facts: the only text fields are the static node programs shipped in them (their source
    # names AccessKeyId and SecurityToken as the metadata service's fields, and holds no value of its own)
    scripts = {"ckpt_sync", "torch_requirements"}
    assert scripts <= set(facts)
    assert "#!/usr/bin/env python3" in facts["ckpt_sync"] and "--hash=sha256:" in facts["torch_requirements"]
    text = json.dumps({k: v for k, v in facts.items() if k not in scripts}).lower()
    for secret in ("accesskey", "secret", "password", "token"):
        assert secret not in text
    assert not re.search(r"LTAI[0-9A-Za-z]{12,}", json.dumps(facts))  # no AccessKey id anywhere, scripts included
    assert len(_facts(_graph(128))["members"]) == 128


def test_the_node_role_reads_exactly_the_facts_key_and_lint_passes() -> None:
    g = _graph(None)
    bucket = g.one("alicloud:oss/bucket:Bucket").get("bucket")
    policy = json.loads(g.one(POLICY).get("policy_document"))
    reads = [s for s in policy["Statement"] if f"acs:oss:*:*:{bucket}/trainstack/cluster.json" in s["Resource"]]
    assert reads == [{"Effect": "Allow", "Action": ["oss:GetObject"],
                      "Resource": [f"acs:oss:*:*:{bucket}/trainstack/cluster.json"]}]
    report = api.lint_target(PRETRAIN)
    assert not report.errors and not [f for f in report.findings if f.rule in ("TS008", "TS009")]


def test_a_checkpoint_prefix_that_covers_the_key_moves_the_facts_out_of_it(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(PRETRAIN.read_text().replace("checkpoints:\n", "checkpoints:\n  prefix: trainstack/\n", 1))
    plan = api.plan(spec)
    assert plan.checkpoints.prefix == "trainstack/"
    assert plan.checkpoints.facts_key == "trainstack-facts/cluster.json"


# --------------------------------------------------------------------------------------------- elastic minimum
def test_the_plan_has_an_elastic_minimum_that_fits_memory() -> None:
    plan = api.plan(PRETRAIN)
    c = plan.compute
    assert 1 <= c.min_nodes < c.nodes
    assert any(dec.topic == "elastic minimum" for dec in plan.decisions)
    assert (c.min_nodes * c.gpus_per_node) % (c.tp * c.pp) == 0


@pytest.mark.parametrize(("value", "refusal"), [(65, refusals.MinNodesOverPlan), (1, refusals.MinNodesShort)])
def test_spot_min_nodes_is_checked_against_the_plan(tmp_path: Path, value: int, refusal: type) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(PRETRAIN.read_text().replace("spot:\n", f"spot:\n  min_nodes: {value}\n", 1))
    with pytest.raises(SpecErrors) as info:
        api.plan(spec)
    (p,) = info.value.problems
    assert (p.code, p.dotted, dict(p.fields)["asked"]) == (refusal.code, "spot.min_nodes", value) and p.line
    assert value == 1 or dict(p.fields)["nodes"] == 64


def test_spot_min_nodes_from_the_spec_is_the_launch_minimum(tmp_path: Path) -> None:
    floor = api.plan(PRETRAIN).compute.min_nodes
    spec = tmp_path / "spec.yaml"
    spec.write_text(PRETRAIN.read_text().replace("spot:\n", f"spot:\n  min_nodes: {floor + 1}\n", 1))
    assert api.plan(spec).compute.min_nodes == floor + 1


def test_spot_min_nodes_below_one_is_a_spec_error(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(PRETRAIN.read_text().replace("spot:\n", "spot:\n  min_nodes: 0\n", 1))
    with pytest.raises(SpecErrors):
        api.plan(spec)


# --------------------------------------------------------------------------------------------- node-init.sh
def _node_init(stack: str) -> str:
    return (ROOT / "stacks" / stack / "node-init.sh").read_text()


@pytest.mark.parametrize("stack", ["finetune-7b", "pretrain-70b", "foundation-1t"])
def test_node_init_is_valid_bash_and_launches_elastically(stack: str) -> None:
    text = _node_init(stack)
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)
    launch = text.split("<<'LAUNCH'\n", 1)[1].split("\nLAUNCH\n", 1)[0]
    for flag in ('--nnodes "${MIN_NODES}:${MAX_NODES}"', "--rdzv-backend c10d",
                 '--rdzv-endpoint "${MASTER_ADDR}:${MASTER_PORT}"', '--rdzv-id "${TRAINSTACK_NAME}"',
                 '--max-restarts "${MAX_RESTARTS}"', '--nproc-per-node "${GPUS_PER_NODE}"'):
        assert flag in launch
    assert "trainstack-facts fetch" in launch  # the facts are read again at every start
    assert "--node-rank" not in launch  # the rendezvous assigns ranks


def _facts_tool(tmp_path: Path, rank: int = 1, name: str = "run-node-001") -> tuple[Path, Path]:
    text = _node_init("pretrain-70b")
    tool = tmp_path / "trainstack-facts"
    tool.write_text(text.split("<<'FACTS_TOOL'\n", 1)[1].split("\nFACTS_TOOL\n", 1)[0] + "\n")
    tool.chmod(0o755)
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "node.env").write_text(f"NODE_RANK={rank}\nNODE_NAME={name}\nSPOT=true\nFACTS_BUCKET=\n"
                                  "FACTS_KEY=\nFACTS_ENDPOINT=\nFACTS_ROLE=run-node\n")
    return tool, etc


SAMPLE = {
    "schema": 1, "name": "run", "nodes": 3, "gpus_per_node": 8, "world_size": 24, "min_nodes": 2, "max_nodes": 3,
    "max_restarts": 100, "master_addr": "10.0.0.10", "master_port": 29500,
    "members": [{"rank": 2, "name": "run-node-002", "ip": "10.0.0.12"},
                {"rank": 0, "name": "run-node-000", "ip": "10.0.0.10"},
                {"rank": 1, "name": "run-node-001", "ip": "10.0.0.11"}],
    "shared_fs": {"kind": "cpfs", "address": "fs.example.invalid$(touch pwned)", "mount_path": "/mnt/cpfs"},
    "checkpoint": {"url": "oss://b/checkpoints/", "endpoint": "oss-cn-x-internal.aliyuncs.com",
                   "interval_seconds": 1800},
    "parallel": {"tp": 8, "pp": 1, "dp": 3, "zero_stage": 1},
    "nccl_env": {"NCCL_IB_HCA": "erdma", "NCCL_SOCKET_IFNAME": "eth0"},
}


@pytest.mark.skipif(shutil.which("python3") is None, reason="the facts tool parses JSON with python3")
def test_the_facts_tool_writes_the_hostfile_and_launch_env(tmp_path: Path) -> None:
    tool, etc = _facts_tool(tmp_path)
    sample = tmp_path / "cluster.json"
    sample.write_text(json.dumps(SAMPLE))
    env = {"PATH": "/usr/bin:/bin", "TRAINSTACK_ETC": str(etc)}
    subprocess.run([str(tool), "apply", str(sample)], env=env, check=True, cwd=tmp_path)
    assert (etc / "hostfile").read_text() == "10.0.0.10 slots=8\n10.0.0.11 slots=8\n10.0.0.12 slots=8\n"
    shown = subprocess.run(["bash", "-c", 'set -a; . "$1/launch.env"; set +a; env', "_", str(etc)],
                           env=env, check=True, capture_output=True, text=True, cwd=tmp_path).stdout
    got = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
    assert got["MASTER_ADDR"] == "10.0.0.10" and got["MASTER_PORT"] == "29500"
    assert (got["MIN_NODES"], got["MAX_NODES"], got["NNODES"], got["WORLD_SIZE"]) == ("2", "3", "3", "24")
    assert (got["NODE_RANK"], got["NODE_NAME"], got["TRAINSTACK_NAME"]) == ("1", "run-node-001", "run")
    assert got["SHARED_FS_ADDRESS"] == "fs.example.invalid$(touch pwned)"  # read back literally, never run
    assert not (tmp_path / "pwned").exists()
    assert got["CHECKPOINT_URL"] == "oss://b/checkpoints/" and got["NCCL_IB_HCA"] == "erdma"
    assert (got["TP_SIZE"], got["PP_SIZE"], got["DP_SIZE"]) == ("8", "1", "3")


def test_the_facts_tool_accepts_only_facts_that_list_this_node(tmp_path: Path) -> None:
    # no bucket in node.env: the facts came with the user data, and fetch only checks that they list this node
    for rank, expected in ((1, 0), (5, 1)):  # rank 5 is missing, as from facts published before a resize
        folder = tmp_path / str(rank)
        folder.mkdir()
        tool, etc = _facts_tool(folder, rank=rank, name=f"run-node-{rank:03d}")
        (etc / "cluster.json").write_text(json.dumps(SAMPLE))
        env = {"PATH": "/usr/bin:/bin", "TRAINSTACK_ETC": str(etc)}
        assert (subprocess.run([str(tool), "fetch", "1"], env=env, cwd=folder, check=False).returncode != 0) == bool(expected)


def test_the_oss_request_is_signed_as_alibaba_documents() -> None:
    """The string to sign of a V1 GET with an STS token: VERB, empty Content-MD5 and Content-Type, Date, the
    x-oss-security-token header, then /bucket/key (OSS "Include a V1 signature in the Authorization header")."""
    tool = _node_init("pretrain-70b").split("<<'FACTS_TOOL'\n", 1)[1]
    assert re.search(r"printf 'GET\\n\\n\\n%s\\nx-oss-security-token:%s\\n/%s/%s' \"\$\{date\}\" \"\$\{sts\}\" "
                     r"\"\$\{FACTS_BUCKET\}\" \"\$\{FACTS_KEY\}\"", tool)
    assert "openssl dgst -sha1 -hmac" in tool and 'Authorization: OSS ${id}:${signature}' in tool
    assert "/meta-data/ram/security-credentials/${FACTS_ROLE}" in tool and "api/token" in tool


def test_lingjun_keeps_hostname_ranks_and_launches_elastically(tmp_path: Path) -> None:
    from test_lingjun import LINGJUN_SPEC

    spec = tmp_path / "lingjun.yaml"
    spec.write_text(textwrap.dedent(LINGJUN_SPEC))
    files = api.render_files(api.plan(spec))
    script = files["node-init.sh"]
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    assert "hostname -s" in script and "trainstack-facts" not in script
    assert '--nnodes "${MIN_NODES}:${MAX_NODES}"' in script and "MIN_NODES=" in script
    assert "cluster-facts" not in files["__main__.py"]
