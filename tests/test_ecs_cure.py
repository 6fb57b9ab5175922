"""``trainstack heal --health``: the action table (reboot first for software faults, redeploy on hardware XIDs and
system events, nothing for application XIDs, a grace period, a stock cool-down) and its calls, against recorded
ECS answers (``tests/live_fixtures/cloud_assistant/``)."""

from __future__ import annotations

import dataclasses
import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from generator import api
from generator.live.jobs.client import EcsApiError
from generator.live.jobs.cluster import Node, cluster_from_plan
from generator.live.jobs.fake import RecordedEcsApi
from generator.platforms.ecs.live import cure

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "live_fixtures" / "cloud_assistant"
NOW = datetime.datetime(2026, 12, 1, 22, 30, 0, tzinfo=datetime.timezone.utc)
NODE = Node(5, "pretrain-70b-node-005", "10.20.0.15", "i-wl00000000000005")
RUNNING = {"status": "Running", "health": "Ok", "events": []}


def cluster(n: int = 4):
    """The 70B example's cluster, cut to its first ``n`` nodes."""
    p = api.plan(ROOT / "examples" / "pretrain-70b.yaml")
    c = cluster_from_plan(json.loads(p.to_json()), {"node_ids": [f"i-wl{r:014d}" for r in range(n)]})
    return dataclasses.replace(c, nodes=c.nodes[:n])


@pytest.mark.parametrize(
    "ecs, marked, healed, cooling, kind",
    [
        (None, None, None, False, "replace"),
        ({"status": "", "health": "", "events": []}, None, None, False, "replace"),
        (RUNNING, {"failed": ["gpus"]}, {"action": "reboot", "at": "2026-12-01T22:20:00Z"}, False, "wait"),
        ({**RUNNING, "events": ["SystemFailure.Redeploy"]}, None, None, False, "redeploy"),
        ({**RUNNING, "events": ["SystemMaintenance.Reboot"]}, None, None, False, "reboot"),
        ({**RUNNING, "health": "Impaired"}, None, None, False, "redeploy"),
        (RUNNING, {"failed": ["xid"], "hardware_xids": [79]}, None, False, "redeploy"),
        (RUNNING, {"failed": ["xid"], "hardware_xids": [79]}, None, True, "wait"),
        (RUNNING, {"failed": ["fabricmanager"]}, None, False, "reboot"),
        (
            RUNNING,
            {"failed": ["nccl-inter"]},
            {"action": "reboot", "at": "2026-12-01T21:00:00Z"},
            False,
            "redeploy",
        ),
        (RUNNING, None, None, False, "none"),
    ],
)
def test_the_action_table(ecs, marked, healed, cooling, kind) -> None:
    node = NODE if ecs is not None or kind != "replace" else Node(5, NODE.name, NODE.private_ip, "")
    assert cure.decide(node, ecs, marked, healed, cooling, NOW).kind == kind


def test_an_application_xid_never_leads_to_an_action() -> None:
    # health.py does not quarantine a node for XID 13 alone, so it has no entry: the table says none
    assert cure.decide(NODE, RUNNING, None, None, False, NOW).kind == "none"


def test_status_and_events_are_read_and_acted_on() -> None:
    c = cluster()
    ecs = RecordedEcsApi(FIXTURES)
    ids = [n.instance_id for n in c.nodes]
    status = cure.instance_status(ecs, c, ids)
    assert status[ids[1]]["health"] == "Impaired" and status[ids[2]]["events"] == ["SystemMaintenance.Reboot"]
    assert status[ids[3]]["events"] == ["SystemFailure.Redeploy"]
    quarantine = {"nodes": {"0": {"failed": ["gpus"], "hardware_xids": []}}, "healed": {}}
    actions = cure.plan_actions(c, c.nodes, status, quarantine, NOW)
    assert [a.kind for a in actions] == ["reboot", "redeploy", "reboot", "redeploy"]
    said: list[str] = []
    after = cure.apply(ecs, c, actions, quarantine, NOW, said.append)
    calls = [(a, b["InstanceId"]) for a, b in ecs.calls if a in ("RebootInstance", "RedeployInstance")]
    assert calls == [
        ("RebootInstance", ids[0]),
        ("RedeployInstance", ids[1]),
        ("RebootInstance", ids[2]),
        ("RedeployInstance", ids[3]),
    ]
    assert after["healed"][ids[0]] == {
        "action": "reboot",
        "at": "2026-12-01T22:30:00Z",
        "why": "gpus failed (a software fault until a reboot says otherwise)",
    }
    # within the grace period nothing is done again
    assert {a.kind for a in cure.plan_actions(c, c.nodes, status, after, NOW)} == {"wait"}


def test_a_redeploy_without_stock_starts_the_cool_down() -> None:
    c = cluster()
    error = EcsApiError("ECS RedeployInstance failed: OperationDenied.NoStock: The resource is out of stock.")
    ecs = RecordedEcsApi(FIXTURES, errors={"RedeployInstance": error})
    status = cure.instance_status(ecs, c, [n.instance_id for n in c.nodes])
    quarantine: dict = {"nodes": {}, "healed": {}}
    after = cure.apply(
        ecs, c, cure.plan_actions(c, c.nodes, status, quarantine, NOW), quarantine, NOW, lambda s: None
    )
    assert after["cooldown"] == {"ecs.ebmgn7ex.32xlarge": "2026-12-01T23:00:00Z"}
    later = cure.plan_actions(c, c.nodes, status, after, NOW + datetime.timedelta(minutes=5))
    assert [a.kind for a in later] == ["none", "wait", "wait", "wait"]  # rank 2: rebooted 5 minutes ago
    refused = EcsApiError(
        "ECS RedeployInstance failed: IncorrectInstanceStatus: the instance has no system event."
    )
    ecs = RecordedEcsApi(FIXTURES, errors={"RedeployInstance": refused})
    after = cure.apply(
        ecs, c, [cure.Action(1, "i-wl00000000000001", "redeploy", "x")], quarantine, NOW, lambda s: None
    )
    assert ecs.calls[-1] == ("StopInstance", {"InstanceId": "i-wl00000000000001", "ForceStop": False})
    assert after["healed"]["i-wl00000000000001"]["action"] == "replace"
    forbidden = EcsApiError("ECS RebootInstance failed: Forbidden.RAM: no permission.")
    with pytest.raises(EcsApiError):
        cure.apply(
            RecordedEcsApi(FIXTURES, errors={"RebootInstance": forbidden}),
            c,
            [cure.Action(1, "i-wl00000000000001", "reboot", "x")],
            quarantine,
            NOW,
            lambda s: None,
        )


def _quarantined_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Any]:
    """finetune-7b rendered with state, its one node Running and quarantined for a failed GPU check."""
    import shutil

    from generator.live import FakeEngine, OutputValue, StateResource
    from generator.live.jobs.cluster import write_quarantine

    (tmp_path / "examples").mkdir()
    (tmp_path / ".git").mkdir()
    shutil.copy(ROOT / "examples" / "finetune-7b.yaml", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    real_which = shutil.which
    monkeypatch.setattr(
        shutil,
        "which",
        lambda name, *a, **k: "/opt/pulumi/bin/pulumi" if name == "pulumi" else real_which(name, *a, **k),
    )
    for var, value in (
        ("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI5tFAKEKEYID0000001"),
        ("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "FAKEsecretVALUE9f8e7d6c5b4a"),
        ("PULUMI_CONFIG_PASSPHRASE", "correct-horse-battery-FAKE"),
    ):
        monkeypatch.setenv(var, value)
    folder = api.render_stack("examples/finetune-7b.yaml").dest
    state = folder / ".trainstack" / "state" / ".pulumi" / "stacks" / "finetune-7b" / "dev.json"
    state.parent.mkdir(parents=True)
    state.write_text("{}")
    write_quarantine(folder, {"nodes": {"0": {"failed": ["gpus"], "hardware_xids": []}}, "healed": {}})
    node_urn = "urn:pulumi:dev::finetune-7b::alicloud:ecs/instance:Instance::finetune-7b-node-000"
    engine = FakeEngine(
        state=[
            StateResource(node_urn, "alicloud:ecs/instance:Instance", "i-wl00000000000000", status="Running")
        ],
        stack_outputs={"node_ids": OutputValue(["i-wl00000000000000"])},
    )
    return folder, engine


def test_heal_health_command_reboots_a_quarantined_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner
    from stock_recorded import RecordedStock

    from generator.cli import main
    from generator.live.jobs.cluster import read_quarantine

    folder, engine = _quarantined_stack(tmp_path, monkeypatch)
    ecs = RecordedEcsApi(FIXTURES)
    obj = {"engine": engine, "stock_checker": RecordedStock.in_stock(), "ecs_api": ecs, "now": NOW}
    result = CliRunner().invoke(
        main, ["heal", "examples/finetune-7b.yaml", "--health", "--yes"], obj=obj, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "rank 0 (i-wl00000000000000): reboot: gpus failed" in result.output
    assert [(a, b) for a, b in ecs.calls if a == "RebootInstance"] == [
        ("RebootInstance", {"InstanceId": "i-wl00000000000000", "ForceStop": False})
    ]
    assert read_quarantine(folder)["healed"]["i-wl00000000000000"]["action"] == "reboot"


def test_heal_health_dry_run_prints_the_reboot_and_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from click.testing import CliRunner

    from generator.cli import main
    from generator.live.jobs.client import sdk_request_map
    from generator.live.jobs.cluster import read_quarantine

    folder, engine = _quarantined_stack(tmp_path, monkeypatch)
    ecs = RecordedEcsApi(FIXTURES)
    obj = {"engine": engine, "ecs_api": ecs, "now": NOW}
    result = CliRunner().invoke(main, ["heal", "examples/finetune-7b.yaml", "--health", "--dry-run"], obj=obj)
    assert result.exit_code == 0, result.output
    (item,) = json.loads(result.stdout)
    assert item["action"] == "RebootInstance" and item["dry_run"] and item["region"] == "cn-hangzhou"
    assert item["request"] == sdk_request_map("RebootInstance", item["request"])
    assert item["request"]["InstanceId"] == "i-wl00000000000000"
    assert {a for a, _ in ecs.calls} == {"DescribeInstancesFullStatus", "DescribeInstanceHistoryEvents"}
    assert read_quarantine(folder)["healed"] == {}
    alone = CliRunner().invoke(main, ["heal", "examples/finetune-7b.yaml", "--dry-run"], obj=obj)
    assert alone.exit_code == 2 and "--health" in alone.stderr


def test_heal_health_watch_reboots_waits_out_the_grace_then_redeploys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datetime

    from click.testing import CliRunner
    from stock_recorded import RecordedStock

    from generator.cli import main
    from generator.live.jobs.cluster import read_quarantine

    folder, engine = _quarantined_stack(tmp_path, monkeypatch)
    ecs = RecordedEcsApi(FIXTURES)
    clock = [NOW]
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the fake clock: a round every 10 minutes
        slept.append(seconds)
        clock[0] += datetime.timedelta(seconds=seconds)

    obj = {
        "engine": engine,
        "stock_checker": RecordedStock.in_stock(),
        "ecs_api": ecs,
        "clock": lambda: clock[0],
        "sleep": sleep,
        "rounds": 3,
    }
    result = CliRunner().invoke(
        main,
        ["heal", "stacks/finetune-7b", "--health", "--watch", "600", "--yes"],
        obj=obj,
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert slept == [600, 600]
    t0, t1, t2 = (NOW + datetime.timedelta(minutes=m) for m in (0, 10, 20))
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    lines = result.output.splitlines()
    assert f"{t0.strftime(fmt)} health: rank 0 (i-wl00000000000000): reboot: gpus failed" in "\n".join(lines)
    assert any(x.startswith(f"{t1.strftime(fmt)} health: rank 0") and ": wait: reboot at" in x for x in lines)
    assert any(
        x.startswith(f"{t2.strftime(fmt)} health: rank 0") and "redeploy: gpus failed again after a reboot" in x
        for x in lines
    )
    assert [a for a, _ in ecs.calls if a in ("RebootInstance", "RedeployInstance")] == [
        "RebootInstance",
        "RedeployInstance",
    ]
    healed = read_quarantine(folder)["healed"]["i-wl00000000000000"]
    assert healed["action"] == "redeploy" and healed["at"] == t2.strftime(fmt)


def test_heal_health_watch_stops_on_ctrl_c_between_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner
    from stock_recorded import RecordedStock

    from generator.cli import main

    _, engine = _quarantined_stack(tmp_path, monkeypatch)

    def sleep(seconds: float) -> None:
        raise KeyboardInterrupt

    obj = {
        "engine": engine,
        "stock_checker": RecordedStock.in_stock(),
        "ecs_api": RecordedEcsApi(FIXTURES),
        "now": NOW,
        "sleep": sleep,
    }
    result = CliRunner().invoke(main, ["heal", "stacks/finetune-7b", "--health", "--watch", "60", "--yes"], obj=obj)
    assert result.exit_code == 130 and "between checks" in result.output
