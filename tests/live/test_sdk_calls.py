"""The Alibaba SDK calls trainstack makes itself, end to end on the real Pulumi CLI and the fake OpenAPI endpoint
(TRAINSTACK_ALIBABA_ENDPOINT): the CPFS two-pass `up` (NAS DescribeProtocolMountTarget between the passes), the
stock preflight (ECS DescribeAvailableResource) refusing a sold-out zone, and a PAI-DLC `submit` and `jobs`.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Live, make_live

INSTANCE = "alicloud:ecs/instance:Instance"
EXPORT = "alicloud:nas/protocolMountTarget:ProtocolMountTarget"


def _live(tmp_path: Path, pulumi_bin: Path, pulumi_home: Path, venv: Path, spec: str) -> Live:
    lv = make_live(tmp_path, pulumi_bin, pulumi_home, spec)
    lv.share_venv(venv)
    return lv


def test_cpfs_up_deploys_twice_with_the_mount_address(
    tmp_path: Path, pulumi_bin: Path, pulumi_home: Path, program_venv: Path
) -> None:
    live = _live(tmp_path, pulumi_bin, pulumi_home, program_venv, "live-cpfs.yaml")
    before = len(live.openapi.calls)
    out = live.ok("up", str(live.spec), "--yes")
    assert "second pass: deploying the nodes with the CPFS mount address" in out.stdout, out.stdout
    lookups = [c for c in live.openapi.calls[before:] if c["action"] == "DescribeProtocolMountTarget"]
    export = next(iter(live.cloud(EXPORT).values()))
    assert lookups and export["outputs"]["exportId"] in json.dumps(lookups[0]["params"])
    config = (live.stack_dir / "Pulumi.dev.yaml").read_text()
    assert "trainstack:sharedFsAddress" in config and ".cpfs.aliyuncs.com" in config
    # the nodes came with the second pass, with the address in their boot facts
    creates = [e["name"] for e in live.calls("Create:done")]
    assert creates.index("live-cpfs-node-000") > creates.index("shared-fs-export")
    assert sorted(live.nodes()) == ["live-cpfs-node-000", "live-cpfs-node-001"]
    assert live.outputs()["shared_fs_mount_address"].endswith(".cpfs.aliyuncs.com")
    # a rerun has the address: one pass, nothing changes
    live.mark()
    again = live.ok("up", str(live.spec), "--yes")
    assert "second pass" not in again.stdout and live.changes() == []


def test_the_stock_preflight_stops_up_before_any_node(
    tmp_path: Path, pulumi_bin: Path, pulumi_home: Path, program_venv: Path
) -> None:
    live = _live(tmp_path, pulumi_bin, pulumi_home, program_venv, "live-4.yaml")
    live.openapi_control.write_text(json.dumps({"sold_out": ["cn-hangzhou-k", "cn-hangzhou-j"]}))
    out = live.run("up", str(live.spec), "--yes")
    assert out.returncode == 30, out.stdout + out.stderr
    assert live.nodes() == {}
    # with --skip-stock-check it deploys
    live.ok("up", str(live.spec), "--yes", "--skip-stock-check")
    assert len(live.nodes()) == 4


def test_submit_a_dlc_job_and_list_it(
    tmp_path: Path, pulumi_bin: Path, pulumi_home: Path, program_venv: Path
) -> None:
    live = _live(tmp_path, pulumi_bin, pulumi_home, program_venv, "live-dlc.yaml")
    live.ok("up", str(live.spec), "--yes")
    assert live.nodes() == {}  # DLC runs the workers itself
    before = len(live.openapi.calls)
    out = live.ok("submit", str(live.spec), "--yes", "--json", "--", "torchrun", "train.py")
    created = [c for c in live.openapi.calls[before:] if c["action"] == "CreateJob"]
    assert len(created) == 1
    body = created[0]["body"]
    assert body["UserCommand"].endswith("train.py") and body["JobType"] == "PyTorchJob"
    workspace = next(
        r for r in live.cloud().values() if r["type"].endswith("workspaceWorkspace:WorkspaceWorkspace")
    )
    assert body["WorkspaceId"] == workspace["id"]
    job_id = json.loads(out.stdout)["job_id"] if out.stdout.strip().startswith("{") else ""
    jobs = live.ok("jobs", str(live.spec), "--json")
    listed = json.loads(jobs.stdout)
    assert job_id and job_id in json.dumps(listed)
