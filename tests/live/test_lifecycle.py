"""A cluster's life on the real Pulumi CLI against the fake Alibaba Cloud: up, up again, outputs, refresh, resize
4 -> 6, pause and resume, heal after a spot reclaim, destroy (keeping the data) and destroy --delete-data.

The steps run in order on one stack folder (a class-scoped :class:`~conftest.Live`); each asserts on what the fake
provider was asked to do (its call log), on the fake cloud's contents and on trainstack's exit code and output.
"""

from __future__ import annotations

from pathlib import Path

import fake_alicloud
import pytest
from conftest import Live, make_live, names

INSTANCE = "alicloud:ecs/instance:Instance"
DATA_TYPES = (
    "alicloud:oss/bucket:Bucket",
    "alicloud:oss/bucketAcl:BucketAcl",
    "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock",
)
FOUR = [f"live-4-node-00{i}" for i in range(4)]
SIX = [f"live-4-node-00{i}" for i in range(6)]


@pytest.fixture(scope="class")
def live(tmp_path_factory: pytest.TempPathFactory, pulumi_bin: Path, pulumi_home: Path) -> Live:
    return make_live(tmp_path_factory.mktemp("lifecycle"), pulumi_bin, pulumi_home, "live-4.yaml")


class TestLifecycle:
    def test_up_creates_the_cluster(self, live: Live) -> None:
        before = len(live.openapi.calls)
        out = live.ok("up", str(live.spec), "--yes")
        assert "installing the program's Python dependencies into venv/" in out.stdout  # `pulumi install` ran
        assert (live.stack_dir / "venv" / "bin" / "python").exists()
        nodes = live.nodes()
        assert sorted(nodes) == FOUR
        assert [nodes[n]["inputs"]["privateIp"] for n in FOUR] == [f"10.0.0.{10 + i}" for i in range(4)]
        assert all(n["outputs"]["status"] == "Running" for n in nodes.values())
        # the stock preflight asked the (fake) ECS API before creating the nodes
        stock = [c for c in live.openapi.calls[before:] if c["action"] == "DescribeAvailableResource"]
        assert stock and stock[0]["params"]["InstanceType"] == nodes[FOUR[0]]["inputs"]["instanceType"]
        assert "Resources: + " in out.stdout and "node_private_ips" in out.stdout

    def test_up_again_changes_nothing(self, live: Live) -> None:
        live.mark()
        out = live.ok("up", str(live.spec), "--yes")
        assert live.changes() == []
        assert "unchanged" in out.stdout

    def test_outputs(self, live: Live) -> None:
        outputs = live.outputs()
        assert outputs["node_private_ips"] == [f"10.0.0.{10 + i}" for i in range(4)]
        assert outputs["master_addr"] == "10.0.0.10"
        assert outputs["node_ids"] == _ids(live, FOUR)

    def test_refresh_reads_everything_and_changes_nothing(self, live: Live) -> None:
        live.mark()
        live.ok("refresh", str(live.spec), "--yes")
        read = {e["name"] for e in live.calls("Read")}
        assert set(FOUR) <= read and "checkpoint-bucket" in read
        assert live.changes() == []

    def test_resize_4_to_6_touches_no_survivor(self, live: Live) -> None:
        ids = _ids(live, FOUR)
        live.edit("nodes: 4", "nodes: 6")
        live.mark()
        live.ok("up", str(live.spec), "--yes")
        changes = live.changes()
        assert names(changes, "Create") >= {"live-4-node-004", "live-4-node-005"}
        touched = {n for _, n in changes}
        assert not touched & set(FOUR), f"a surviving node was touched: {changes}"
        assert not names(changes, "Delete") and not names(changes, "Replace")
        assert _ids(live, FOUR) == ids  # the same instances
        assert sorted(live.nodes()) == SIX

    def test_pause_and_resume_keep_names_and_addresses(self, live: Live) -> None:
        before = {n: r["inputs"]["privateIp"] for n, r in live.nodes().items()}
        data = _data_ids(live)
        live.edit("gpus_per_node: 8", "gpus_per_node: 8\n  paused: true")
        live.mark()
        live.ok("up", str(live.spec), "--yes")
        assert live.nodes() == {}
        assert names(live.changes(), "Delete") >= set(SIX)
        assert _data_ids(live) == data  # the data stayed
        live.edit("  paused: true", "  paused: false")
        live.mark()
        live.ok("up", str(live.spec), "--yes")
        after = {n: r["inputs"]["privateIp"] for n, r in live.nodes().items()}
        assert after == before
        assert _data_ids(live) == data

    def test_heal_recreates_a_lost_node(self, live: Live) -> None:
        others = {n: rid for n, rid in zip(SIX, _ids(live, SIX)) if n != "live-4-node-002"}
        fake_alicloud.lose(live.cloud_file, "live-4-node-002")  # a spot reclaim released it
        live.mark()
        out = live.ok("heal", str(live.spec), "--yes")
        assert any(e["name"] == "live-4-node-002" for e in live.calls("Read:gone"))
        changes = live.changes()
        assert names(changes, "Create") >= {"live-4-node-002"}
        assert not {n for _, n in changes} & set(others), changes
        healed = live.nodes()["live-4-node-002"]
        assert healed["inputs"]["privateIp"] == "10.0.0.12"
        assert {n: rid for n, rid in zip(SIX, _ids(live, SIX)) if n != "live-4-node-002"} == others
        assert "live-4-node-002" in out.stdout

    def test_heal_replaces_a_stopped_node_in_place(self, live: Live) -> None:
        stopped_id = live.nodes()["live-4-node-003"]["id"]
        fake_alicloud.set_status(live.cloud_file, "live-4-node-003", "Stopped")
        live.mark()
        live.ok("heal", str(live.spec), "--yes")
        changes = live.changes()
        # deleted first, then created: the new instance takes the old one's fixed private IP
        assert ("Delete", "live-4-node-003") in changes and ("Create", "live-4-node-003") in changes
        assert changes.index(("Delete", "live-4-node-003")) < changes.index(("Create", "live-4-node-003"))
        assert {n for _, n in changes} <= {"live-4-node-003", "live-4-node-003-role"}, changes
        node = live.nodes()["live-4-node-003"]
        assert node["id"] != stopped_id and node["inputs"]["privateIp"] == "10.0.0.13"
        assert node["outputs"]["status"] == "Running"

    def test_destroy_keeps_the_data(self, live: Live) -> None:
        data = _data_ids(live)
        live.mark()
        out = live.ok("destroy", str(live.spec), "--yes")
        deleted = names(live.changes(), "Delete")
        assert set(SIX) <= deleted
        assert not deleted & {
            "checkpoint-bucket",
            "checkpoint-bucket-acl",
            "checkpoint-bucket-public-access-block",
        }
        assert live.nodes() == {}
        assert _data_ids(live) == data
        assert "Kept" in out.stdout and "checkpoint-bucket" in out.stdout

    def test_destroy_delete_data_empties_the_state_and_keeps_the_cloud_data(self, live: Live) -> None:
        data = _data_ids(live)
        live.mark()
        out = live.ok("destroy", str(live.spec), "--yes", "--delete-data", "--confirm-name", "live-4")
        # retain_on_delete: Pulumi drops the data from the state without asking the provider to delete it
        assert not names(live.changes(), "Delete") & {"checkpoint-bucket"}
        assert _data_ids(live) == data
        assert "ossutil" in out.stdout
        assert live.pulumi("stack", "export").stdout.count('"urn"') <= 1  # nothing but the stack itself


def _ids(live: Live, nodes: list[str]) -> list[str]:
    by_name = {r["name"]: r["id"] for r in live.cloud(INSTANCE).values()}
    return [by_name[n] for n in nodes]


def _data_ids(live: Live) -> dict[str, str]:
    return {r["name"]: r["id"] for r in live.cloud().values() if r["type"] in DATA_TYPES}
