"""Jobs and health checks on Lingjun stacks through the EFLO controller's Cloud Assistant (API 2022-12-15):
``submit`` (and ``--dry-run --json``), ``jobs``, ``logs``, ``cancel`` and ``check``; and ``heal --health`` over the
EFLO controller's node list, fault reports, RebootNodes and ReportNodeStatus.

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
from generator.live.jobs.fake import RecordedEcsApi, RecordedLogStore
from generator.platforms.lingjun.live.eflo import JOURNAL_FILE, EfloJobsApi, eflo_request_map, to_eflo
from generator.platforms.lingjun.live.fake import RecordedEfloApi

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "live_fixtures" / "eflo"
NOW = datetime.datetime(2026, 12, 1, 22, 15, 0, tzinfo=datetime.timezone.utc)
SPEC = "examples/lingjun.yaml"
LINGJUN = (
    "name: lj-run\nregion: cn-wulanchabu\nmodel: {preset: llama-2-70b, tokens: 20B}\n"
    "compute: {platform: lingjun, image_id: i190982651690986913088, nodes: 4}\n"
    "network: {vpc_cidr: 10.8.0.0/16, admin_cidrs: [192.168.10.0/24]}\n"
)
CLUSTER = "i15b480fbd2fcdbc2869cd80"
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
    return FakeEngine(
        state=[], stack_outputs={"node_ids": OutputValue(ids(4)), "cluster_id": OutputValue(CLUSTER)}
    )


def run(
    args: list[str],
    engine: FakeEngine | None = None,
    eflo: Any = None,
    input: str | None = None,
    store: RecordedLogStore | None = None,
) -> Result:
    obj = {
        "engine": engine or FakeEngine(state=None),
        "ecs_api": RecordedEcsApi(ROOT / "tests" / "live_fixtures" / "cloud_assistant"),
        "eflo_api": eflo if eflo is not None else RecordedEfloApi(FIXTURES),
        # the checkpoint bucket: a folder of the workspace (the invocation index is written there)
        "log_store": store if store is not None else RecordedLogStore(Path("bucket")),
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


def test_jobs_started_on_another_machine_are_listed_logged_and_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    from generator.live.jobs.client import EcsApiError

    engine = deploy(monkeypatch)
    bucket = RecordedLogStore(Path("bucket"))
    result = run(["submit", SPEC, "--yes", "--no-check", "--", "train.py"], engine, store=bucket)
    assert result.exit_code == 0, result.output
    c = plan_cluster()
    key = f"{c.prefix}_trainstack/invocations/t-lj0job000000001.json"
    assert ("put", key) in bucket.calls
    stored = json.loads((Path("bucket") / key).read_text())["invocation"]
    assert stored["Name"] == "lj-run-20261201-221500" and stored["NodeIdList"] == ids(4)
    assert "Pending" not in stored and stored["Created"]

    (Path("stacks/lj-run") / JOURNAL_FILE).unlink()  # another machine: the same stack folder, no local journal
    listed = run(["jobs", SPEC, "--json"], engine, store=bucket)
    assert listed.exit_code == 0, listed.output
    (job,) = json.loads(listed.stdout)
    assert job["job"] == "lj-run-20261201-221500" and job["invoke_ids"] == ["t-lj0job000000001"]
    cached = json.loads((Path("stacks/lj-run") / JOURNAL_FILE).read_text())  # the bucket's entry, cached
    assert [i["InvokeId"] for i in cached["invocations"]] == ["t-lj0job000000001"]

    logs = run(["logs", SPEC, "lj-run-20261201-221500", "--rank", "2"], engine, store=bucket)
    assert logs.exit_code == 0 and "step 10 loss 2.31" in logs.stdout
    (Path("stacks/lj-run") / JOURNAL_FILE).unlink()
    eflo = RecordedEfloApi(FIXTURES)
    stopped = run(["cancel", SPEC, "lj-run-20261201-221500", "--yes"], engine, eflo, store=bucket)
    assert stopped.exit_code == 0, stopped.output
    assert eflo.calls[-1] == ("StopInvocation", {"InvokeId": "t-lj0job000000001"})

    class Refusing(RecordedLogStore):  # a bucket write refused: the local journal keeps the entry, marked pending
        def put(self, bucket_name: str, key: str, data: bytes) -> None:
            raise EcsApiError(f"OSS PutObject of oss://{bucket_name}/{key} failed: AccessDenied.")

    (Path("bucket") / key).unlink()
    refused = run(["submit", SPEC, "--yes", "--no-check", "--", "train.py"], engine, store=Refusing(Path("bucket")))
    assert refused.exit_code == 0, refused.output
    assert "in the local journal only" in refused.stderr
    (entry,) = json.loads((Path("stacks/lj-run") / JOURNAL_FILE).read_text())["invocations"]
    assert entry["Pending"] is True
    again = run(["jobs", SPEC, "--json"], engine, store=bucket)  # the next listing writes it to the bucket
    assert again.exit_code == 0, again.output
    assert "Pending" not in json.loads((Path("bucket") / key).read_text())["invocation"]
    (entry,) = json.loads((Path("stacks/lj-run") / JOURNAL_FILE).read_text())["invocations"]
    assert "Pending" not in entry


def test_check_names_the_node_whose_gpu_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = deploy(monkeypatch)
    result = run(["check", SPEC, "--json"], engine)
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["failed_ranks"] == [2]
    (bad,) = [n for n in report["nodes"] if n["rank"] == 2]
    assert bad["instance_id"] == ids(4)[2] and bad["failed"] == ["gpus"]
    assert list(read_quarantine(Path("stacks/lj-run"))["nodes"]) == ["2"]


def quarantine(nodes: dict[str, Any], healed: dict[str, Any] | None = None) -> None:
    path = Path("stacks/lj-run/.trainstack/quarantine.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"nodes": nodes, "healed": healed or {}}))


SICK = {
    "0": {"instance_id": ids(4)[0], "failed": ["gpus"], "details": ["gpus: 7 of 8 GPUs"], "hardware_xids": []},
    "1": {"instance_id": ids(4)[1], "failed": ["xid"], "details": ["xid: hardware XID 79"], "hardware_xids": [79]},
    "2": {"instance_id": ids(4)[2], "failed": ["xid"], "details": ["xid: hardware XID 79"], "hardware_xids": [79]},
}


def test_the_lingjun_action_table() -> None:
    from generator.platforms.lingjun.live.eflo_cure import decide

    c = plan_cluster()
    node = c.node(0)
    listed = {"listed": True, "state": "Using", "reports": []}
    hw = {"failed": ["xid"], "hardware_xids": [79]}
    sw = {"failed": ["gpus"], "hardware_xids": []}
    rebooted = {"action": "reboot", "at": "2026-12-01T21:00:00Z"}
    cases = [
        ({"listed": False, "state": "", "reports": []}, sw, None, "replace"),
        (listed, sw, {"action": "reboot", "at": "2026-12-01T22:10:00Z"}, "wait"),  # 5 minutes ago: grace
        ({**listed, "reports": [{"id": "1", "status": "Processing", "description": ""}]}, hw, None, "wait"),
        (listed, hw, None, "report"),
        (listed, sw, None, "reboot"),
        (listed, sw, rebooted, "report"),
        (listed, None, None, "none"),  # application XIDs only: check does not quarantine the node
    ]
    for seen, marked, healed, kind in cases:
        assert decide(node, seen, marked, healed, NOW).kind == kind, (seen, marked, healed)


def test_heal_health_on_lingjun_reads_acts_and_keeps_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    from alibabacloud_eflo_controller20221215 import models

    engine = deploy(monkeypatch)
    quarantine(SICK)
    eflo = RecordedEfloApi(FIXTURES)
    result = run(["heal", SPEC, "--health", "--yes"], engine, eflo)
    assert result.exit_code == 0, result.output
    for action, _ in eflo.calls:  # every recorded answer is one the SDK's response model reads
        body = json.loads((FIXTURES / f"{action}.json").read_text())
        pages = [v for k, v in body.items() if k != "_by"] if "_by" in body else [body]  # by NextToken: "None" first
        for b in pages:
            assert getattr(models, f"{action}ResponseBody")().from_map(b).to_map() == b
    calls = dict(eflo.calls)
    assert [a for a, _ in eflo.calls] == [
        "ListClusterNodes", "ListClusterNodes", "ListFaultReports", "RebootNodes", "ReportNodeStatus"
    ]
    assert eflo.calls[1][1] == {"ClusterId": CLUSTER, "MaxResults": 100, "NextToken": "AAAAAXW/ZB9TBvH+0ZK0phtCibQ"}
    assert calls["ListFaultReports"] == {"Nodes": ids(4), "MaxResults": 100}
    assert calls["RebootNodes"] == {"ClusterId": CLUSTER, "Nodes": [ids(4)[0]], "IgnoreFailedNodeTasks": True}
    report = calls["ReportNodeStatus"]
    assert report["NodeId"] == ids(4)[1] and report["DiagnosisType"] == "COMPREHENSIVE"
    assert "hardware XID 79" in report["Description"]
    out = result.stdout
    assert f"rank 2 ({ids(4)[2]}): wait: open fault report 100184932123 (Processing)" in out
    assert f"rank 3 ({ids(4)[3]}): replace: the cluster does not list the node" in out
    healed = read_quarantine(Path("stacks/lj-run"))["healed"]
    assert healed[ids(4)[0]]["action"] == "reboot" and healed[ids(4)[0]]["ref"] == "i158475611663639202234"
    assert healed[ids(4)[1]] == {
        "action": "report", "at": "2026-12-01T22:15:00Z", "why": "hardware XID 79", "ref": "156837191934"
    }

    again = RecordedEfloApi(FIXTURES)  # a second run at the same time: both acted-on nodes are in their grace
    second = run(["heal", SPEC, "--health", "--yes"], engine, again)
    assert second.exit_code == 0, second.output
    assert {a for a, _ in again.calls} == {"ListClusterNodes", "ListFaultReports"}
    assert "wait: reboot at 2026-12-01T22:15:00Z" in second.stdout


def test_heal_health_dry_run_on_lingjun_prints_requests_the_sdk_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = deploy(monkeypatch)
    quarantine(SICK)
    eflo = RecordedEfloApi(FIXTURES)
    result = run(["heal", SPEC, "--health", "--dry-run"], engine, eflo)
    assert result.exit_code == 0, result.output
    items = json.loads(result.stdout)
    assert [i["action"] for i in items] == ["RebootNodes", "ReportNodeStatus"]
    for i in items:
        assert i["dry_run"] and i["api"] == "eflo-controller/2022-12-15"
        assert eflo_request_map(i["action"], i["request"]) == i["request"]
    assert {a for a, _ in eflo.calls} == {"ListClusterNodes", "ListFaultReports"}  # reads only
    assert read_quarantine(Path("stacks/lj-run")).get("healed") == {}
    assert "rank 0" in result.stderr and "reboot" in result.stderr


def test_heal_health_watch_on_lingjun_reboots_waits_then_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = deploy(monkeypatch)
    quarantine({"0": SICK["0"]})  # a software fault: reboot, then (failing again after the grace) report
    clock = [NOW]

    def sleep(seconds: float) -> None:  # a round every 10 minutes
        clock[0] += datetime.timedelta(seconds=seconds)

    eflo = RecordedEfloApi(FIXTURES)
    obj = {
        "engine": engine,
        "eflo_api": eflo,
        "log_store": RecordedLogStore(Path("bucket")),
        "clock": lambda: clock[0],
        "sleep": sleep,
        "rounds": 3,
    }
    result = CliRunner().invoke(
        main, ["heal", SPEC, "--health", "--watch", "600", "--yes"], obj=obj, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any(x.startswith("2026-12-01T22:15:00Z health: rank 0") and ": reboot: gpus failed" in x for x in lines)
    assert any(x.startswith("2026-12-01T22:25:00Z health: rank 0") and ": wait: reboot at" in x for x in lines)
    assert any(
        x.startswith("2026-12-01T22:35:00Z health: rank 0") and "report: gpus failed again after a reboot" in x
        for x in lines
    )
    assert [a for a, _ in eflo.calls if a in ("RebootNodes", "ReportNodeStatus")] == [
        "RebootNodes", "ReportNodeStatus"
    ]


def test_heal_without_health_is_refused_on_lingjun_in_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = deploy(monkeypatch)
    result = run(["heal", SPEC, "--yes", "--skip-stock-check"], engine)
    assert result.exit_code == 2 and "Lingjun" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
