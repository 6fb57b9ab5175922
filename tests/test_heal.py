"""``trainstack heal``: missing and stopped nodes are found in the refreshed state and re-created, exactly those,
with targeted engine runs; stock is asked first (and again, with backoff); ``--watch`` loops until Ctrl-C.

Everything runs against FakeEngine, whose ``cloud`` is what a refresh finds, and recorded DescribeAvailableResource
answers; no network, CLI or credentials. pretrain-70b's committed plan.json gives 64 ranks (0-1 on demand, 2-63 spot,
all in cn-wulanchabu-c).
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from stock_recorded import RecordedStock

from generator import api, live
from generator.cli import main
from generator.live import FakeEngine, StateResource

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = "alicloud:ecs/instance:Instance"
ATTACHMENT = "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"
P70 = "urn:pulumi:dev::pretrain-70b::"
EBM = "ecs.ebmgn7ex.32xlarge"
TARGET = live.Target(ROOT / "stacks/pretrain-70b", "pretrain-70b", "dev", "file:///nowhere")
FLEET = live.fleet_of(TARGET.stack_dir)


def node(rank: int) -> str:
    return f"pretrain-70b-node-{rank:03d}"


def urn(rank: int) -> str:
    return f"{P70}{INSTANCE}::{node(rank)}"


def cluster() -> list[StateResource]:
    """A deployed pretrain-70b in the state: a vswitch, 64 running nodes, a role attachment each."""
    vsw = P70 + "alicloud:vpc/switch:Switch::vswitch-compute"
    out = [StateResource(P70 + "pulumi:pulumi:Stack::pretrain-70b-dev", "pulumi:pulumi:Stack"),
           StateResource(vsw, "alicloud:vpc/switch:Switch", "vsw-1")]
    for r in range(64):
        out.append(StateResource(urn(r), INSTANCE, f"i-{r:03d}", dependencies=(vsw,), status="Running"))
        out.append(StateResource(f"{P70}{ATTACHMENT}::{node(r)}-role", ATTACHMENT, f"i-{r:03d}:role",
                                 dependencies=(urn(r),)))
    return out


def engine_with(cloud_change: Any) -> FakeEngine:
    state = cluster()
    return FakeEngine(state=state, cloud=cloud_change(list(state)))


def released(*ranks: int) -> Any:
    return lambda cloud: [r for r in cloud if r.urn not in {urn(k) for k in ranks}]


def stopped(*ranks: int) -> Any:
    return lambda cloud: [replace(r, status="Stopped") if r.urn in {urn(k) for k in ranks} else r for r in cloud]


def in_stock() -> RecordedStock:
    return RecordedStock({("cn-wulanchabu-c", s): "ebmgn7ex_wulanchabu_c_with_stock"
                          for s in ("NoSpot", "SpotAsPriceGo")})


def heal(engine: FakeEngine, checker: Any = None, **kwargs: Any) -> tuple[list[live.SickNode], list[str]]:
    said: list[str] = []
    sick = live.heal_once(engine, TARGET, FLEET, checker or in_stock(), said.append, **kwargs)
    return sick, said


def calls(engine: FakeEngine) -> list[tuple[str, tuple[str, ...]]]:
    return [(name, kw.get("targets", ())) for name, kw in engine.calls]


# --------------------------------------------------------------------------------------------- one round
def test_heal_re_creates_exactly_the_missing_ranks() -> None:
    engine = engine_with(released(17, 40))
    sick, said = heal(engine)
    assert [(s.node.rank, s.why) for s in sick] == [(17, "missing"), (40, "missing")]
    all_nodes = tuple(urn(r) for r in range(64))
    assert calls(engine) == [("resources", ()), ("refresh", all_nodes), ("resources", ()),
                             ("up", (urn(17), urn(40)))], "refresh only the nodes; up only the missing ones"
    assert said == ["heal: rank 17 (pretrain-70b-node-017) missing", "heal: rank 40 (pretrain-70b-node-040) missing",
                    "stock: ecs.ebmgn7ex.32xlarge (spot) in cn-wulanchabu-c: Available/WithStock",
                    "heal: rank 17 (pretrain-70b-node-017) missing -> re-created",
                    "heal: rank 40 (pretrain-70b-node-040) missing -> re-created"]
    assert {r.name for r in engine.state or [] if r.type == INSTANCE} == {node(r) for r in range(64)}
    assert sick[0].node.private_ip == "10.20.0.27", "same rank, name and address as the plan"


def test_a_paused_cluster_has_no_node_to_heal_or_to_check_stock_for() -> None:
    paused = replace(FLEET, nodes=(), paused=True)  # what fleet_of reads from a plan.json with compute.paused
    engine = FakeEngine(state=[r for r in cluster() if r.type not in (INSTANCE, ATTACHMENT)])
    said: list[str] = []
    assert live.heal_once(engine, TARGET, paused, in_stock(), said.append) == []
    assert engine.calls == [] and said == ["heal: the cluster is paused (compute.paused): no node to heal"]


def test_a_paused_plan_json_declares_no_node(tmp_path: Path) -> None:
    import json

    data = json.loads((TARGET.stack_dir / "plan.json").read_text())
    data["compute"]["paused"] = True
    (tmp_path / "plan.json").write_text(json.dumps(data))
    fleet = live.fleet_of(tmp_path)
    assert fleet.paused and fleet.nodes == () and FLEET.nodes and not FLEET.paused


def test_heal_does_nothing_when_every_node_is_healthy() -> None:
    engine = engine_with(lambda cloud: cloud)
    checker = in_stock()
    sick, said = heal(engine, checker)
    assert sick == [] and said == ["heal: all 64 nodes are there and not stopped"]
    assert [c[0] for c in engine.calls] == ["resources", "refresh", "resources"]
    assert checker.calls == [], "no stock question when nothing is created"


def test_a_stopped_spot_node_is_deleted_then_created_at_its_address() -> None:
    engine = engine_with(stopped(5))
    sick, said = heal(engine)
    assert [(s.node.rank, s.node.spot, s.why) for s in sick] == [(5, True, "stopped")]
    assert calls(engine)[-2:] == [("destroy", (urn(5),)), ("up", (urn(5),))]
    assert not engine.calls[-2][1]["exclude_protected"]
    assert said[-1] == "heal: rank 5 (pretrain-70b-node-005) stopped -> replaced"


def test_heal_waits_for_stock_with_backoff_and_gives_up_after_its_attempts() -> None:
    engine = engine_with(released(9))
    short = ["ebmgn7ex_wulanchabu_c_spot_sold_out", "ebmgn7ex_wulanchabu_c_spot_sold_out",
             "ebmgn7ex_wulanchabu_c_with_stock"]
    slept: list[float] = []
    sick, said = heal(engine, RecordedStock({("cn-wulanchabu-c", "SpotAsPriceGo"): short},
                                            default="not_offered"), sleep=slept.append)
    assert [s.node.rank for s in sick] == [9] and slept == [60.0, 120.0]
    assert f"heal: no stock yet (cn-wulanchabu-c has no spot stock of {EBM} (SoldOut/WithoutStock)); asking again " \
        "in 60 s (1 of 5)" in said
    assert calls(engine)[-1] == ("up", (urn(9),))

    engine, slept = engine_with(released(9)), []
    with pytest.raises(live.NoStock) as e:
        heal(engine, RecordedStock({("cn-wulanchabu-c", "SpotAsPriceGo"): "ebmgn7ex_wulanchabu_c_spot_sold_out"}),
             sleep=slept.append, stock_attempts=3)
    assert e.value.exit_code == 30 and slept == [60.0, 120.0]
    assert "up" not in [c[0] for c in engine.calls], "nothing is created without stock"


def test_a_stack_without_nodes_in_its_state_is_not_healed_but_deployed() -> None:
    """A destroy keeps the data but deletes nodes and their role attachments: heal must not bring them back."""
    engine = FakeEngine(state=[r for r in cluster() if r.type not in (INSTANCE, ATTACHMENT)])
    with pytest.raises(live.StackNotDeployed) as e:
        heal(engine)
    assert "none of the 64 nodes of pretrain-70b is in the stack's state" in str(e.value)


# --------------------------------------------------------------------------------------------- --watch
def test_watch_heals_what_breaks_between_rounds_and_stops_after_its_rounds() -> None:
    engine = engine_with(lambda cloud: cloud)
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the cloud changes while the watcher sleeps
        slept.append(seconds)
        if len(slept) == 1:
            engine.cloud = released(33)(engine.cloud)

    said: list[str] = []
    healed = live.watch(engine, TARGET, FLEET, in_stock(), said.append, 300, rounds=3, sleep=sleep)
    assert healed == 1 and slept == [300, 300]
    assert said == ["heal: all 64 nodes are there and not stopped",
                    "heal: rank 33 (pretrain-70b-node-033) missing",
                    "stock: ecs.ebmgn7ex.32xlarge (spot) in cn-wulanchabu-c: Available/WithStock",
                    "heal: rank 33 (pretrain-70b-node-033) missing -> re-created",
                    "heal: all 64 nodes are there and not stopped"]


def test_watch_outlives_a_round_without_stock() -> None:
    engine = engine_with(released(2))
    checker = RecordedStock({("cn-wulanchabu-c", "SpotAsPriceGo"): "ebmgn7ex_wulanchabu_c_spot_sold_out"})
    said: list[str] = []
    healed = live.watch(engine, TARGET, FLEET, checker, said.append, 60, rounds=2, sleep=lambda s: None,
                        stock_attempts=1)
    assert healed == 0 and "up" not in [c[0] for c in engine.calls]
    assert sum("(trying again in 60 s)" in line for line in said) == 2


# --------------------------------------------------------------------------------------------- the command
@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "examples").mkdir()
    (tmp_path / ".git").mkdir()
    shutil.copy(ROOT / "examples/finetune-7b.yaml", tmp_path / "examples/finetune-7b.yaml")
    monkeypatch.chdir(tmp_path)
    for var in ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "PULUMI_CONFIG_PASSPHRASE_FILE", "TRAINSTACK_BACKEND",
                "TRAINSTACK_SECRETS_PROVIDER", "ALIBABA_CLOUD_PROFILE", "ALIBABA_CLOUD_CREDENTIALS_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/opt/pulumi/bin/pulumi" if name == "pulumi"
                        else real_which(name, *a, **k))
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI5tFAKEKEYID0000001")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "FAKEsecretVALUE9f8e7d6c5b4a")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "correct-horse-battery-FAKE")
    api.render_stack("examples/finetune-7b.yaml")
    return tmp_path


F7 = "urn:pulumi:dev::finetune-7b::"
F7_NODE = F7 + INSTANCE + "::finetune-7b-node-000"


def one_node_engine(cloud: list[StateResource]) -> FakeEngine:
    role = StateResource(F7 + ATTACHMENT + "::finetune-7b-node-000-role", ATTACHMENT, "i-1:role",
                         dependencies=(F7_NODE,))
    return FakeEngine(state=[StateResource(F7_NODE, INSTANCE, "i-1", status="Running"), role],
                      cloud=[role, *cloud])


def run(args: list[str], engine: FakeEngine, checker: Any = None, input: str | None = None, **obj: Any) -> Result:
    obj = {"engine": engine, "stock_checker": checker or RecordedStock.in_stock(), **obj}
    return CliRunner().invoke(main, ["heal", *args], obj=obj, input=input, catch_exceptions=False)


def test_heal_command_re_creates_a_released_node(workspace: Path) -> None:
    engine = one_node_engine([])
    result = run(["examples/finetune-7b.yaml", "--yes"], engine)
    assert result.exit_code == 0, result.output
    assert "heal: rank 0 (finetune-7b-node-000) missing -> re-created" in result.stdout
    assert calls(engine)[-1] == ("up", (F7_NODE,))


def test_heal_command_asks_first_without_yes(workspace: Path) -> None:
    engine = one_node_engine([])
    result = run(["stacks/finetune-7b"], engine)  # no terminal, no --yes
    assert result.exit_code == live.EXIT_DECLINED
    assert "up" not in [c[0] for c in engine.calls]
    assert run(["stacks/finetune-7b"], one_node_engine([]), input="y\n").exit_code == 0


def test_heal_command_has_the_live_preflight_and_the_sdk_check(workspace: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "alibabacloud_ecs20140526", None)
    engine = one_node_engine([])
    result = CliRunner().invoke(main, ["heal", "stacks/finetune-7b", "--yes"], obj={"engine": engine},
                                catch_exceptions=False)
    assert result.exit_code == live.EXIT_NO_SDK and engine.calls == []
    assert "pass --skip-stock-check" in result.stderr
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE")
    result = run(["stacks/finetune-7b", "--yes"], engine)
    assert result.exit_code == live.EXIT_NO_PASSPHRASE and engine.calls == []


def test_heal_command_without_stock_says_so_with_exit_30(workspace: Path) -> None:
    slept: list[float] = []
    checker = RecordedStock({("cn-hangzhou-k", "NoSpot"): "gn7e_hangzhou_k_sold_out",
                             ("cn-hangzhou-j", "NoSpot"): "gn7e_hangzhou_j_closed_with_stock"})
    engine = one_node_engine([])
    result = run(["stacks/finetune-7b", "--yes"], engine, checker, sleep=slept.append)
    assert result.exit_code == live.EXIT_NO_STOCK and slept == [60, 120, 240, 480]
    assert "zones of the spec with stock: cn-hangzhou-j" in result.stderr
    assert result.stdout.count("heal: no stock yet") == 4 and "up" not in [c[0] for c in engine.calls]


def test_heal_watch_stops_cleanly_on_ctrl_c(workspace: Path) -> None:
    engine = one_node_engine([StateResource(F7_NODE, INSTANCE, "i-1", status="Running")])

    def sleep(seconds: float) -> None:
        assert seconds == 120
        raise KeyboardInterrupt

    result = run(["stacks/finetune-7b", "--watch", "120", "--yes"], engine, sleep=sleep)
    assert result.exit_code == live.EXIT_INTERRUPTED == 130
    assert "heal: checking 1 nodes every 120 s; Ctrl-C stops" in result.stdout
    assert "heal: all 1 nodes are there and not stopped" in result.stdout
    assert result.stderr == ("error: heal --watch stopped (Ctrl-C) between checks, with nothing in flight; it healed "
                             "0 nodes.\n")


def test_heal_refuses_a_stale_folder(workspace: Path) -> None:
    main_py = workspace / "stacks/finetune-7b/__main__.py"
    main_py.write_text(main_py.read_text() + "\n# edited\n")
    result = run(["stacks/finetune-7b", "--yes"], one_node_engine([]))
    assert result.exit_code == live.EXIT_STALE and "is stale against" in result.stderr
