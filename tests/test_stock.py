"""The stock preflight: ECS DescribeAvailableResource, asked before ``trainstack up`` creates nodes.

Answers are replayed from recorded-shape bodies (tests/live_fixtures/describe_available_resource.json) through the
StockChecker port; nothing here needs the network, a Pulumi CLI or credentials. One test drives the real SDK
checker with the SDK's HTTP call replaced.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from stock_recorded import RECORDED_STOCK, RecordedStock

from generator import live
from generator.cli import main
from generator.live import FakeEngine, StateResource, Step

ROOT = Path(__file__).resolve().parent.parent
SPEC = "examples/finetune-7b.yaml"
GN7E = "ecs.gn7e-c16g1.32xlarge"
EBM = "ecs.ebmgn7ex.32xlarge"
INSTANCE = "alicloud:ecs/instance:Instance"
URN = "urn:pulumi:dev::finetune-7b::"
NODE_URN = URN + INSTANCE + "::finetune-7b-node-000"


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "examples").mkdir()
    (tmp_path / ".git").mkdir()
    shutil.copy(ROOT / SPEC, tmp_path / SPEC)
    monkeypatch.chdir(tmp_path)
    for var in ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "PULUMI_CONFIG_PASSPHRASE_FILE", "TRAINSTACK_BACKEND",
                "TRAINSTACK_SECRETS_PROVIDER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/opt/pulumi/bin/pulumi" if name == "pulumi"
                        else real_which(name, *a, **k))
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI5tFAKEKEYID0000001")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "FAKEsecretVALUE9f8e7d6c5b4a")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "correct-horse-battery-FAKE")
    return tmp_path


def up(args: list[str], engine: FakeEngine, checker: Any) -> Result:
    return CliRunner().invoke(main, ["up", *args], obj={"engine": engine, "stock_checker": checker},
                              catch_exceptions=False)


def node_step() -> Step:
    return Step("create", INSTANCE, "finetune-7b-node-000", NODE_URN)


# --------------------------------------------------------------------------------------------- reading answers
@pytest.mark.parametrize("name, zone, itype, ok, said", [
    ("gn7e_hangzhou_k_with_stock", "cn-hangzhou-k", GN7E, True, "Available/WithStock"),
    ("gn7e_hangzhou_k_sold_out", "cn-hangzhou-k", GN7E, False, "SoldOut/WithoutStock"),
    ("gn7e_hangzhou_j_closed_with_stock", "cn-hangzhou-j", GN7E, True, "Available/ClosedWithStock"),
    ("gn7e_hangzhou_j_sold_out", "cn-hangzhou-j", GN7E, False, "SoldOut/WithoutStock"),
    ("gn7e_hangzhou_k_with_stock", "cn-hangzhou-k", EBM, False, "not offered"),  # another type
    ("gn7e_hangzhou_k_with_stock", "cn-hangzhou-j", GN7E, False, "not offered"),  # another zone
    ("not_offered", "cn-hangzhou-k", GN7E, False, "not offered"),
])
def test_a_documented_answer_reads_as_stock_or_not(name: str, zone: str, itype: str, ok: bool, said: str) -> None:
    assert live.zone_stock(RECORDED_STOCK[name], zone, itype) == (ok, said)


# --------------------------------------------------------------------------------------------- trainstack up
def test_no_stock_stops_up_before_anything_is_created_and_names_the_zones_with_stock() -> None:
    engine = FakeEngine([node_step()])
    checker = RecordedStock({("cn-hangzhou-k", "NoSpot"): "gn7e_hangzhou_k_sold_out",
                             ("cn-hangzhou-j", "NoSpot"): "gn7e_hangzhou_j_closed_with_stock"})
    result = up([SPEC, "--yes"], engine, checker)
    assert result.exit_code == live.EXIT_NO_STOCK == 30
    assert result.stderr == (
        f"error: cn-hangzhou-k has no on-demand stock of {GN7E} (SoldOut/WithoutStock) for the 1 node this run would "
        "create, so nothing was created; zones of the spec with stock: cn-hangzhou-j (put one first in the spec's "
        "`zones`); retry later, or pass --skip-stock-check to try anyway.\n")
    assert [c[0] for c in engine.calls] == ["resources"], "the state is read, nothing is deployed"
    assert checker.calls == [("cn-hangzhou", "cn-hangzhou-k", GN7E, "NoSpot"),
                             ("cn-hangzhou", "cn-hangzhou-j", GN7E, "NoSpot")]
    assert "stock: 1 node to create; asking ECS DescribeAvailableResource for " \
        f"{GN7E} in cn-hangzhou-k" in result.stdout


def test_no_zone_of_the_spec_has_stock() -> None:
    checker = RecordedStock({("cn-hangzhou-k", "NoSpot"): "gn7e_hangzhou_k_sold_out",
                             ("cn-hangzhou-j", "NoSpot"): "gn7e_hangzhou_j_sold_out"})
    result = up([SPEC, "--yes"], FakeEngine([node_step()]), checker)
    assert result.exit_code == 30
    assert "no other zone of the spec's `zones` has stock either" in result.stderr


def test_with_stock_up_deploys_and_says_what_it_asked() -> None:
    engine = FakeEngine([node_step()])
    checker = RecordedStock({("cn-hangzhou-k", "NoSpot"): "gn7e_hangzhou_k_with_stock"})
    result = up([SPEC, "--yes"], engine, checker)
    assert result.exit_code == 0, result.output
    assert [c[0] for c in engine.calls] == ["resources", "up"]
    assert f"stock: {GN7E} (on-demand) in cn-hangzhou-k: Available/WithStock" in result.stdout


def test_nodes_already_in_the_state_are_not_asked_about() -> None:
    state = [StateResource(NODE_URN, INSTANCE, "i-789", status="Running")]
    engine = FakeEngine([Step("update", INSTANCE, "finetune-7b-node-000", NODE_URN)], state=state)
    checker = RecordedStock({("cn-hangzhou-k", "NoSpot"): "gn7e_hangzhou_k_sold_out"})
    result = up([SPEC, "--yes"], engine, checker)
    assert result.exit_code == 0, result.output
    assert checker.calls == [] and "stock:" not in result.stdout


def test_skip_stock_check_asks_nothing_and_needs_no_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "alibabacloud_ecs20140526", None)
    engine = FakeEngine([node_step()])
    result = CliRunner().invoke(main, ["up", SPEC, "--yes", "--skip-stock-check"], obj={"engine": engine},
                                catch_exceptions=False)  # the real SdkStockChecker would fail: it is not made
    assert result.exit_code == 0, result.output
    assert [c[0] for c in engine.calls] == ["up"]


def test_missing_sdk_is_one_sentence_and_its_exit_code_before_any_change(workspace: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "alibabacloud_ecs20140526", None)
    engine = FakeEngine([node_step()])
    result = CliRunner().invoke(main, ["up", SPEC, "--yes"], obj={"engine": engine}, catch_exceptions=False)
    assert result.exit_code == live.EXIT_NO_SDK == 29
    assert result.stderr == ("error: the stock check before creating nodes asks Alibaba Cloud's ECS SDK "
                             "(alibabacloud_ecs20140526 is not installed), so nothing was deployed: "
                             "pip install 'trainstack[live]', or pass --skip-stock-check.\n")
    assert [c[0] for c in engine.calls] == ["resources"], "only the state was read: nothing previewed or deployed"


def test_without_the_sdk_an_up_that_creates_no_node_needs_no_stock_check(workspace: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A stack whose nodes are all in the state: `up` of a non-node change works without the live extra."""
    from generator.live import StateResource

    result = CliRunner().invoke(main, ["up", SPEC, "--yes", "--skip-stock-check"], obj={"engine": FakeEngine([node_step()])},
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    monkeypatch.setitem(sys.modules, "alibabacloud_ecs20140526", None)
    urn = "urn:pulumi:dev::finetune-7b::alicloud:ecs/instance:Instance::finetune-7b-node-000"
    state = [StateResource(urn, "alicloud:ecs/instance:Instance", "i-1")]
    engine = FakeEngine([], state=state)
    result = CliRunner().invoke(main, ["up", SPEC, "--yes"], obj={"engine": engine}, catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_an_api_error_is_one_sentence() -> None:
    class Denied:
        def check(self) -> None:
            return None

        def describe(self, *args: Any) -> Any:
            err = RuntimeError("You are not authorized to do this action.")
            err.code = "Forbidden.RAM"  # type: ignore[attr-defined]
            raise err

    result = up([SPEC, "--yes"], FakeEngine([node_step()]), Denied())
    assert result.exit_code == live.EXIT_ENGINE
    assert result.stderr.startswith("error: the stock check (ECS DescribeAvailableResource for "
                                    f"{GN7E} in cn-hangzhou-k) failed: RuntimeError: You are not authorized")
    assert "grant ecs:DescribeAvailableResource, or pass --skip-stock-check" in result.stderr


def test_spot_and_on_demand_nodes_are_asked_with_their_own_spot_strategy() -> None:
    """pretrain-70b: ranks 0-1 on demand, 2-63 spot (SpotAsPriceGo), all in cn-wulanchabu-c."""
    target = live.Target(ROOT / "stacks/pretrain-70b", "pretrain-70b", "dev", "file:///nowhere")
    checker = RecordedStock({("cn-wulanchabu-c", "NoSpot"): "ebmgn7ex_wulanchabu_c_with_stock",
                             ("cn-wulanchabu-c", "SpotAsPriceGo"): "ebmgn7ex_wulanchabu_c_spot_sold_out",
                             ("cn-wulanchabu-b", "SpotAsPriceGo"): "ebmgn7ex_wulanchabu_b_with_stock"})
    said: list[str] = []
    with pytest.raises(live.NoStock) as e:
        live.stock_preflight(FakeEngine(), target, checker, said.append)  # never deployed: all 64 nodes are new
    assert str(e.value).startswith(f"cn-wulanchabu-c has no spot stock of {EBM} (SoldOut/WithoutStock) for the 62 "
                                   "nodes this run would create, so nothing was created; zones of the spec with "
                                   "stock: cn-wulanchabu-b")
    assert checker.calls == [("cn-wulanchabu", "cn-wulanchabu-c", EBM, "NoSpot"),
                             ("cn-wulanchabu", "cn-wulanchabu-c", EBM, "SpotAsPriceGo"),
                             ("cn-wulanchabu", "cn-wulanchabu-b", EBM, "SpotAsPriceGo")]
    assert said[-1] == f"stock: {EBM} (on-demand) in cn-wulanchabu-c: Available/WithStock"


# --------------------------------------------------------------------------------------------- the real SDK
def test_the_sdk_checker_sends_the_documented_request(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("alibabacloud_ecs20140526")
    checker = live.SdkStockChecker(env={"ALICLOUD_ACCESS_KEY": "LTAI5tFAKE", "ALICLOUD_SECRET_KEY": "FAKE"})
    checker.check()
    seen: dict[str, Any] = {}
    make_client = checker.client

    def offline_client(region: str) -> Any:
        client = make_client(region)
        seen["region"] = client._region_id

        def call_api(params: Any, request: Any, runtime: Any) -> dict[str, Any]:  # the SDK's one HTTP entry point
            seen["action"], seen["version"], seen["query"] = params.action, params.version, dict(request.query)
            return {"body": RECORDED_STOCK["gn7e_hangzhou_k_with_stock"], "headers": {}, "statusCode": 200}

        client.call_api = call_api
        return client

    monkeypatch.setattr(checker, "client", offline_client)
    body = checker.describe("cn-hangzhou", "cn-hangzhou-k", GN7E, "NoSpot")
    assert seen == {"region": "cn-hangzhou", "action": "DescribeAvailableResource", "version": "2014-05-26",
                    "query": {"RegionId": "cn-hangzhou", "ZoneId": "cn-hangzhou-k",
                              "DestinationResource": "InstanceType", "InstanceType": GN7E,
                              "InstanceChargeType": "PostPaid", "SpotStrategy": "NoSpot"}}
    assert live.zone_stock(body, "cn-hangzhou-k", GN7E) == (True, "Available/WithStock")
