"""The admin key pair: none by default on ECS (Cloud Assistant access), an optional ``compute.admin_key_pair`` that
the nodes name, and the preflight that asks ECS DescribeKeyPairs before ``trainstack up`` creates nodes.

Answers are replayed from recorded-shape bodies (tests/live_fixtures/describe_key_pairs.json) through the
KeyPairChecker port; one test builds the request with the real SDK's model.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from stock_recorded import RecordedStock

from generator import api
from generator.cli import main
from generator.live import FakeEngine, Step
from generator.live.keypair import has_key_pair

ROOT = Path(__file__).resolve().parent.parent
SPEC = "examples/finetune-7b.yaml"
INSTANCE = "alicloud:ecs/instance:Instance"
NODE_URN = "urn:pulumi:dev::finetune-7b::" + INSTANCE + "::finetune-7b-node-000"
RECORDED = json.loads((ROOT / "tests" / "live_fixtures" / "describe_key_pairs.json").read_text())


class RecordedKeyPairs:
    def __init__(self, answer: str):
        self.answer, self.calls = answer, []

    def check(self) -> None:
        pass

    def describe(self, region: str, name: str) -> Mapping[str, Any]:
        self.calls.append((region, name))
        return RECORDED[self.answer]


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "examples").mkdir()
    (tmp_path / ".git").mkdir()
    shutil.copy(ROOT / SPEC, tmp_path / SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/opt/pulumi/bin/pulumi" if name == "pulumi"
                        else real_which(name, *a, **k))
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI5tFAKEKEYID0000001")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "FAKEsecretVALUE9f8e7d6c5b4a")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "correct-horse-battery-FAKE")
    return tmp_path


def with_key_pair(name: str) -> None:
    spec = Path(SPEC)
    text = spec.read_text()
    assert "compute:\n" in text
    spec.write_text(text.replace("compute:\n", f"compute:\n  admin_key_pair: {name}\n", 1))


def up(engine: FakeEngine, keys: RecordedKeyPairs) -> Result:
    return CliRunner().invoke(main, ["up", SPEC, "--yes"], catch_exceptions=False, obj={
        "engine": engine, "stock_checker": RecordedStock.in_stock(), "key_pair_checker": keys})


def test_a_documented_answer_lists_the_key_pair_or_not() -> None:
    assert has_key_pair(RECORDED["found"], "ops-admin")
    assert not has_key_pair(RECORDED["found"], "ops-admin2") and not has_key_pair(RECORDED["missing"], "ops-admin")


def test_ecs_nodes_name_no_key_pair_unless_the_spec_does() -> None:
    graph = api.preview(Path(SPEC)).graph
    assert all(not r.get("key_name") for r in graph.of_type(INSTANCE))
    with_key_pair("ops-admin")
    graph = api.preview(Path(SPEC)).graph
    assert {r.get("key_name") for r in graph.of_type(INSTANCE)} == {"ops-admin"}
    assert api.plan(Path(SPEC)).compute.key_pair == "ops-admin"


def test_a_bad_key_pair_name_is_refused_with_its_field(tmp_path: Path) -> None:
    with_key_pair("'1bad name'")
    result = CliRunner().invoke(main, ["validate", SPEC])
    assert result.exit_code == 2 and "admin_key_pair" in result.output, result.output


def test_without_a_key_pair_up_asks_nothing() -> None:
    keys = RecordedKeyPairs("missing")
    result = up(FakeEngine([Step("create", INSTANCE, "finetune-7b-node-000", NODE_URN)]), keys)
    assert result.exit_code == 0, result.output
    assert keys.calls == [] and "key pair: none (nodes are reached through Cloud Assistant)" in result.stdout


def test_a_missing_key_pair_stops_up_before_anything_is_created() -> None:
    with_key_pair("ops-admin")
    engine = FakeEngine([Step("create", INSTANCE, "finetune-7b-node-000", NODE_URN)])
    keys = RecordedKeyPairs("missing")
    result = CliRunner().invoke(main, ["up", SPEC, "--yes"], obj={
        "engine": engine, "stock_checker": RecordedStock.in_stock(), "key_pair_checker": keys})
    assert result.exit_code == 30, result.output
    assert keys.calls == [("cn-hangzhou", "ops-admin")]
    assert "up" not in [c[0] for c in engine.calls]
    assert "key pair ops-admin (compute.admin_key_pair), which cn-hangzhou does not have" in result.output


def test_an_existing_key_pair_lets_up_deploy() -> None:
    with_key_pair("ops-admin")
    engine = FakeEngine([Step("create", INSTANCE, "finetune-7b-node-000", NODE_URN)])
    result = up(engine, RecordedKeyPairs("found"))
    assert result.exit_code == 0, result.output
    assert "up" in [c[0] for c in engine.calls] and "key pair: ops-admin exists in cn-hangzhou" in result.stdout


def test_the_sdk_request_names_the_region_and_the_key_pair() -> None:
    from alibabacloud_ecs20140526 import models

    request = models.DescribeKeyPairsRequest(region_id="cn-hangzhou", key_pair_name="ops-admin")
    sent = request.to_map()
    assert sent["RegionId"] == "cn-hangzhou" and sent["KeyPairName"] == "ops-admin"


def test_the_key_pair_check_has_its_own_flag_and_the_stock_flag_does_not_skip_it() -> None:
    with_key_pair("ops-admin")
    engine = FakeEngine([Step("create", INSTANCE, "finetune-7b-node-000", NODE_URN)])
    keys = RecordedKeyPairs("missing")
    stock_only = CliRunner().invoke(main, ["up", SPEC, "--yes", "--skip-stock-check"], obj={
        "engine": engine, "stock_checker": RecordedStock.in_stock(), "key_pair_checker": keys})
    assert stock_only.exit_code == 30 and keys.calls == [("cn-hangzhou", "ops-admin")], stock_only.output
    assert "or pass --skip-key-pair-check to try anyway" in stock_only.output
    stock = RecordedStock.in_stock()
    skipped = CliRunner().invoke(main, ["up", SPEC, "--yes", "--skip-key-pair-check"], obj={
        "engine": engine, "stock_checker": stock, "key_pair_checker": keys})
    assert skipped.exit_code == 0, skipped.output
    assert keys.calls == [("cn-hangzhou", "ops-admin")]  # not asked again
    assert stock.calls and "up" in [c[0] for c in engine.calls]  # the stock check still ran
