"""Jobs and health checks on Lingjun stacks through the EFLO controller's Cloud Assistant (API 2022-12-15):
``submit`` (and ``--dry-run --json``), ``jobs``, ``logs``, ``cancel`` and ``check``.

Everything runs against recorded EFLO answers (``tests/live_fixtures/eflo/``, bodies as the SDK's
``*ResponseBody.from_map`` reads them) through :class:`RecordedEfloApi`, which passes every request through
``alibabacloud_eflo_controller20221215``'s request model, and against :class:`FakeEngine` for the stack outputs.
"""

from __future__ import annotations

import base64
import datetime
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from generator import api
from generator.cli import main
from generator.live import FakeEngine, OutputValue
from generator.live.jobs import request as rq
from generator.live.jobs.cluster import cluster_from_plan, read_quarantine, select
from generator.live.jobs.eflo import JOURNAL_FILE, EfloJobsApi, eflo_request_map, to_eflo
from generator.live.jobs.fake import RecordedEcsApi, RecordedEfloApi, RecordedLogStore

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "live_fixtures" / "eflo"
NOW = datetime.datetime(2026, 12, 1, 22, 15, 0, tzinfo=datetime.timezone.utc)
SPEC = "examples/lingjun.yaml"
LINGJUN = (
    "name: lj-run\nregion: cn-wulanchabu\nmodel: {preset: llama-2-70b, tokens: 20B}\n"
    "compute: {platform: lingjun, image_id: i190982651690986913088, nodes: 4}\n"
    "network: {vpc_cidr: 10.8.0.0/16, admin_cidrs: [192.168.10.0/24]}\n"
)
HOSTILE = ["train.py", "$(touch PWNED)", "; rm -rf KEEP", "{{ACS::InstanceId}}", "'"]


def ids(n: int) -> list[str]:
    return [f"e01-cn-lj{r:011d}" for r in range(n)]


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "examples").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / SPEC).write_text(LINGJUN)
    monkeypatch.chdir(tmp_path)
    for var in ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "TRAINSTACK_BACKEND"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI5tFAKEKEYID0000001")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "FAKEsecretVALUE9f8e7d6c5b4a")
    return tmp_path


def deploy(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    real_which = shutil.which
    monkeypatch.setattr(
        shutil,
        "which",
        lambda name, *a, **k: "/opt/pulumi/bin/pulumi" if name == "pulumi" else real_which(name, *a, **k),
    )
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "correct-horse-battery-FAKE")
    result = api.render_stack(SPEC)
    p = api.plan(SPEC)
    state = result.dest / ".trainstack" / "state" / ".pulumi" / "stacks" / p.name / f"{p.stack}.json"
    state.parent.mkdir(parents=True)
    state.write_text("{}")
    return FakeEngine(state=[], stack_outputs={"node_ids": OutputValue(ids(4))})


def run(args: list[str], engine: FakeEngine | None = None, eflo: Any = None, input: str | None = None) -> Result:
    obj = {
        "engine": engine or FakeEngine(state=None),
        "ecs_api": RecordedEcsApi(ROOT / "tests" / "live_fixtures" / "cloud_assistant"),
        "eflo_api": eflo if eflo is not None else RecordedEfloApi(FIXTURES),
        "log_store": RecordedLogStore(FIXTURES / "oss"),
        "now": NOW,
        "sleep": lambda s: None,
    }
    return CliRunner().invoke(main, args, obj=obj, input=input, catch_exceptions=False)


def plan_cluster() -> Any:
    return cluster_from_plan(json.loads(api.plan(SPEC).to_json()), {"node_ids": ids(4)})


def script_of(request: dict[str, Any]) -> str:
    return base64.b64decode(request["CommandContent"]).decode()


# ------------------------------------------------------------------------------------------------ requests (pure)
def test_every_eflo_request_is_taken_key_for_key_by_the_sdk_models() -> None:
    c = plan_cluster()
    nodes, _ = select(c, None)
    requests = [
        *rq.submit_requests(c, nodes, "lj-run-1", HOSTILE),
        rq.describe_results_request(c, "t-1", ids(4)[1]),
        rq.stop_invocation_request(c, "t-1", [ids(4)[0]]),
        rq.ApiRequest("DescribeInvocations", {"InvokeId": "t-1"}),
    ]
    for r in requests:
        action, body = to_eflo(r.action, r.request)
        assert eflo_request_map(action, body) == body, action
    run_cmd = to_eflo("RunCommand", requests[0].request)[1]
    assert run_cmd["NodeIdList"] == ids(4) and "RegionId" not in run_cmd and "Tag" not in run_cmd
    assert run_cmd["ContentEncoding"] == "Base64" and run_cmd["EnableParameter"] is False
    results = to_eflo("DescribeInvocationResults", requests[1].request)
    assert results == (
        "DescribeInvocations",
        {"InvokeId": "t-1", "IncludeOutput": True, "ContentEncoding": "PlainText", "NodeId": ids(4)[1]},
    )


def test_the_rendezvous_is_rank_0s_host_name_and_the_argv_stays_data() -> None:
    c = plan_cluster()
    assert c.platform == "lingjun" and c.node(0).private_ip == "lj-run-node-000"
    text = script_of(rq.submit_requests(c, select(c, None)[0], "lj-run-1", HOSTILE)[0].request)
    assert "TRAINSTACK_JOB_MASTER_ADDR=lj-run-node-000\n" in text
    assert "TRAINSTACK_JOB_REGION=cn-wulanchabu\n" in text
    assert "touch" not in text and "ACS::" not in text
    encoded = text.split("TRAINSTACK_JOB_ARGV=", 1)[1].split("\n", 1)[0]
    assert rq.decode_argv(encoded) == HOSTILE


def test_ecs_only_calls_are_refused_on_lingjun(tmp_path: Path) -> None:
    from generator.live.jobs.client import EcsApiError

    eflo = EfloJobsApi(RecordedEfloApi(FIXTURES), tmp_path)
    with pytest.raises(EcsApiError, match="no EFLO controller counterpart"):
        eflo.call("DescribeInstancesFullStatus", {"RegionId": "cn-wulanchabu", "InstanceId": ids(1)})


# ----------------------------------------------------------------------------------------------- the commands
def test_dry_run_prints_eflo_requests_offline() -> None:
    result = run(["submit", SPEC, "--dry-run", "--json", "--", *HOSTILE])
    assert result.exit_code == 0, result.output
    item = json.loads(result.stdout)
    assert item["action"] == "RunCommand" and item["api"] == "eflo-controller/2022-12-15" and item["dry_run"]
    assert eflo_request_map("RunCommand", item["request"]) == item["request"]
    assert item["request"]["NodeIdList"] == [f"<unresolved:node_ids[{r}]>" for r in range(4)]
    assert "TRAINSTACK_JOB_MASTER_ADDR=lj-run-node-000\n" in script_of(item["request"])


def test_submit_jobs_logs_cancel_through_the_eflo_controller(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = deploy(monkeypatch)
    eflo = RecordedEfloApi(FIXTURES)
    result = run(["submit", SPEC, "--yes", "--no-check", "--", "train.py", "--lr=3e-4"], engine, eflo)
    assert result.exit_code == 0, result.output
    assert "nodes started: 4/4" in result.stdout and "started lj-run-20261201-221500" in result.stdout
    sent = [a for a, _ in eflo.calls]
    assert sent[0] == "RunCommand" and set(sent[1:]) == {"DescribeInvocations"}
    assert eflo.calls[0][1]["NodeIdList"] == ids(4)
    journal = json.loads((Path("stacks/lj-run") / JOURNAL_FILE).read_text())
    assert [i["InvokeId"] for i in journal["invocations"]] == ["t-lj0job000000001"]

    listed = run(["jobs", SPEC, "--json"], engine, eflo)
    assert listed.exit_code == 0, listed.output
    (job,) = json.loads(listed.stdout)
    assert job["job"] == "lj-run-20261201-221500" and job["status"] == "Running" and job["nodes"] == 4

    logs = run(["logs", SPEC, "lj-run-20261201-221500", "--rank", "2"], engine, eflo)
    assert logs.exit_code == 0, logs.output
    assert "==> rank 2 (Running, exit 0) <==" in logs.stdout and "step 10 loss 2.31" in logs.stdout

    unknown = run(["cancel", SPEC, "someone-elses-job", "--yes"], engine, eflo)
    assert unknown.exit_code == 2

    stopped = run(["cancel", SPEC, "lj-run-20261201-221500", "--yes"], engine, eflo)
    assert stopped.exit_code == 0, stopped.output
    assert eflo.calls[-1] == ("StopInvocation", {"InvokeId": "t-lj0job000000001"})


def test_check_names_the_node_whose_gpu_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = deploy(monkeypatch)
    result = run(["check", SPEC, "--json"], engine)
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["failed_ranks"] == [2]
    (bad,) = [n for n in report["nodes"] if n["rank"] == 2]
    assert bad["instance_id"] == ids(4)[2] and bad["failed"] == ["gpus"]
    assert list(read_quarantine(Path("stacks/lj-run"))["nodes"]) == ["2"]


def test_heal_health_is_refused_on_lingjun_in_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = deploy(monkeypatch)
    result = run(["heal", SPEC, "--health", "--yes", "--skip-stock-check"], engine)
    assert result.exit_code == 2 and "Lingjun" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
