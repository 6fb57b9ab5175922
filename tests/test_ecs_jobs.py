"""Jobs and health checks on ECS stacks through Cloud Assistant: ``submit`` (and ``--dry-run --json``), ``jobs``,
``logs`` (also after the nodes are gone), ``cancel`` and ``check``.

Everything runs against recorded ECS responses (``tests/live_fixtures/cloud_assistant/``, bodies as the API returns
them and as the SDK's ``*ResponseBody.from_map`` reads them) through :class:`RecordedEcsApi`, which also passes every
request through the SDK's request model, and against :class:`FakeEngine` for the stack outputs. The job script
itself is run by bash with a stand-in ``trainstack-launch`` to show that hostile arguments stay data.
"""

from __future__ import annotations

import base64
import datetime
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from generator import api, live
from generator.cli import main
from generator.live import FakeEngine, OutputValue
from generator.live.jobs import health
from generator.live.jobs import request as rq
from generator.live.jobs.client import sdk_request_map
from generator.live.jobs.cluster import cluster_from_plan, parse_ranks, read_quarantine, select
from generator.live.jobs.fake import RecordedEcsApi, RecordedLogStore

ROOT = Path(__file__).resolve().parent.parent
SMALL = "examples/finetune-7b.yaml"  # 1 x ecs.gn7e-c16g1.32xlarge, no RDMA
BIG = "examples/pretrain-70b.yaml"  # 64 x ecs.ebmgn7ex.32xlarge with eRDMA
HUGE = "examples/foundation-1t.yaml"  # 128 nodes (what its 90-day budget asks for)
FIXTURES = ROOT / "tests" / "live_fixtures" / "cloud_assistant"
NOW = datetime.datetime(2026, 12, 1, 22, 15, 0, tzinfo=datetime.timezone.utc)
HOSTILE = [
    "train.py",
    "$(touch PWNED)",
    "; rm -rf KEEP",
    "`touch PWNED2`",
    "a b\nc",
    "*",
    "{{ACS::InstanceId}}",
    "--lr=3e-4",
    "'",
    '"',
    "\\",
]
CREDENTIAL_VARS = (
    *live.SECRET_ENV_VARS,
    "PULUMI_CONFIG_PASSPHRASE_FILE",
    "ALIBABA_CLOUD_PROFILE",
    "ALICLOUD_PROFILE",
    "ALIBABA_CLOUD_CREDENTIALS_FILE",
    "ALIBABA_CLOUD_ECS_METADATA",
    "ALIBABA_CLOUD_ROLE_ARN",
    "ALIBABA_CLOUD_OIDC_TOKEN_FILE",
    "ALIBABA_CLOUD_CREDENTIALS_URI",
    "TRAINSTACK_BACKEND",
    "TRAINSTACK_SECRETS_PROVIDER",
    "PULUMI_BACKEND_URL",
)


def ids(n: int) -> list[str]:
    return [f"i-wl{r:014d}" for r in range(n)]


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "examples").mkdir()
    (tmp_path / ".git").mkdir()
    for spec in (SMALL, BIG, HUGE):
        shutil.copy(ROOT / spec, tmp_path / spec)
    monkeypatch.chdir(tmp_path)
    for var in CREDENTIAL_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI5tFAKEKEYID0000001")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "FAKEsecretVALUE9f8e7d6c5b4a")


def deploy(monkeypatch: pytest.MonkeyPatch, spec: str, node_ids: list[str] | None) -> FakeEngine:
    """The spec rendered, with state in its file:// backend and the outputs a deploy gives (fake ids)."""
    real_which = shutil.which
    monkeypatch.setattr(
        shutil,
        "which",
        lambda name, *a, **k: "/opt/pulumi/bin/pulumi" if name == "pulumi" else real_which(name, *a, **k),
    )
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "correct-horse-battery-FAKE")
    result = api.render_stack(spec)
    p = api.plan(spec)
    state = result.dest / ".trainstack" / "state" / ".pulumi" / "stacks" / p.name / f"{p.stack}.json"
    state.parent.mkdir(parents=True)
    state.write_text("{}")
    outputs = {"node_ids": node_ids} if node_ids is not None else {}
    return FakeEngine(state=[], stack_outputs={k: OutputValue(v) for k, v in outputs.items()})


def run(
    args: list[str],
    engine: FakeEngine | None = None,
    ecs: Any = None,
    store: Any = None,
    input: str | None = None,
    rounds: int | None = None,
) -> Result:
    obj = {
        "engine": engine or FakeEngine(state=None),
        "ecs_api": ecs or RecordedEcsApi(FIXTURES),
        "log_store": store or RecordedLogStore(FIXTURES / "oss"),
        "now": NOW,
        "sleep": lambda s: None,
        "rounds": rounds,
    }
    return CliRunner().invoke(main, args, obj=obj, input=input, catch_exceptions=False)


def plan_cluster(spec: str, n: int | None = None) -> Any:
    p = api.plan(ROOT / spec)
    return cluster_from_plan(
        json.loads(p.to_json()), {"node_ids": ids(n if n is not None else p.compute.nodes)}
    )


def script_of(request: dict[str, Any]) -> str:
    return base64.b64decode(request["CommandContent"]).decode()


# ------------------------------------------------------------------------------------------------ requests (pure)
def test_every_request_is_taken_key_for_key_by_the_sdk_models() -> None:
    c = plan_cluster(BIG)
    nodes, _ = select(c, None)
    exp = health.expectation(c)
    requests = [
        *rq.submit_requests(c, nodes, "pretrain-70b-1", HOSTILE),
        *health.check_requests(c, nodes, "full", "pretrain-70b-check-1", exp),
        rq.describe_invocations_request(c, "pretrain-70b-1"),
        rq.describe_results_request(c, "t-1", "i-1"),
        rq.stop_invocation_request(c, "t-1", ["i-1"]),
    ]
    for r in requests:
        back = sdk_request_map(r.action, r.request)
        assert {k: back[k] for k in r.request} == r.request, r.action
        assert set(back) - set(r.request) <= {
            "ResourceTag",
            "Tag",
        }  # the SDK's empty default lists, nothing else
        assert all(back[k] == [] for k in set(back) - set(r.request))


def test_batches_stay_within_100_instances_per_runcommand() -> None:
    c = plan_cluster(HUGE)
    nodes, _ = select(c, None)
    requests = rq.submit_requests(c, nodes, "foundation-1t-1", ["train.py"])
    assert [len(r.request["InstanceId"]) for r in requests] == [100, 28]
    assert len({r.request["ClientToken"] for r in requests}) == 2
    assert [i for r in requests for i in r.request["InstanceId"]] == ids(128)
    assert (
        len({r.request["CommandContent"] for r in requests}) == 1
    )  # one script: the same world size everywhere
    assert all(len(r.request["CommandContent"]) <= rq.MAX_CONTENT_BYTES for r in requests)
    big = plan_cluster(BIG)
    assert len(rq.submit_requests(big, select(big, None)[0], "pretrain-70b-1", ["x"])) == 1


def test_the_argv_is_data_the_script_holds_no_word_of_it() -> None:
    c = plan_cluster(SMALL)
    text = script_of(rq.submit_requests(c, select(c, None)[0], "finetune-7b-1", HOSTILE)[0].request)
    assert "touch" not in text and "rm -rf" not in text and "ACS::" not in text
    encoded = text.split("TRAINSTACK_JOB_ARGV=", 1)[1].split("\n", 1)[0]
    assert rq.decode_argv(encoded) == HOSTILE


def test_quarantine_shrinks_the_world_and_moves_the_rendezvous() -> None:
    c = plan_cluster(BIG)
    nodes, left = select(c, parse_ranks("0-7", 64), quarantined=[0, 5])
    assert [n.rank for n in left] == [0, 5] and len(nodes) == 6
    text = script_of(rq.submit_requests(c, nodes, "pretrain-70b-1", ["train.py"])[0].request)
    assert "TRAINSTACK_JOB_NNODES=6\n" in text
    assert f"TRAINSTACK_JOB_MASTER_ADDR={c.node(1).private_ip}\n" in text


@pytest.mark.parametrize("bad", ["8-3", "x", "0-64", ""])
def test_bad_ranks_are_refused(bad: str) -> None:
    from generator.errors import BadInput

    with pytest.raises(BadInput):
        parse_ranks(bad, 64)


# ------------------------------------------------------------------------------------- the job script, run by bash
def test_the_job_script_passes_hostile_words_to_the_launcher_unrun(tmp_path: Path) -> None:
    c = plan_cluster(SMALL)
    text = script_of(rq.submit_requests(c, select(c, None)[0], "finetune-7b-1", HOSTILE)[0].request)
    work = tmp_path / "node"
    (work / "run").mkdir(parents=True)
    (work / "run" / "bootstrap-done").touch()
    (work / "KEEP").mkdir()
    (work / "bin").mkdir()
    (work / "bin" / "curl").write_text(  # the metadata service answers the instance id only
        '#!/bin/bash\ncase "${@: -1}" in */instance-id) echo i-wl00000000000000 ;; *) exit 7 ;; esac\n'
    )
    launcher = work / "bin" / "trainstack-launch"
    launcher.write_text(
        '#!/bin/bash\nfor a in "$@"; do printf \'%s\\0\' "$a"; done > "$ARGS_OUT"\n'
        'echo "nnodes=$TRAINSTACK_JOB_NNODES master=$TRAINSTACK_JOB_MASTER_ADDR"\nexit 3\n'
    )
    for f in (work / "bin").iterdir():
        f.chmod(0o755)
    env = {
        "PATH": f"{work / 'bin'}:/usr/bin:/bin",
        "TRAINSTACK_RUN_DIR": str(work / "run"),
        "TRAINSTACK_STATE_DIR": str(work / "state"),
        "TRAINSTACK_LOG_ROOT": str(work / "logs"),
        "TRAINSTACK_LAUNCH": str(launcher),
        "ARGS_OUT": str(work / "args"),
    }
    done = subprocess.run(
        ["bash", "-c", text], check=False, cwd=work, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stderr  # the launcher's exit code is the job's
    assert (work / "args").read_bytes().split(b"\0")[:-1] == [w.encode() for w in HOSTILE]
    assert not (work / "PWNED").exists() and not (work / "PWNED2").exists() and (work / "KEEP").is_dir()
    log = (work / "logs" / "finetune-7b-1" / "rank-0.log").read_text()
    assert "nnodes=1 master=10.0.0.10" in log and "nnodes=1" in done.stdout
    status = json.loads((work / "logs" / "finetune-7b-1" / "rank-0.exit.json").read_text())
    assert status["state"] == "finished" and status["exit_code"] == 3 and status["rank"] == "0"


def test_the_job_script_refuses_a_node_whose_bootstrap_failed(tmp_path: Path) -> None:
    c = plan_cluster(SMALL)
    text = script_of(rq.submit_requests(c, select(c, None)[0], "finetune-7b-1", ["train.py"])[0].request)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "bootstrap-failed").touch()
    env = {
        "PATH": "/usr/bin:/bin",
        "TRAINSTACK_RUN_DIR": str(tmp_path / "run"),
        "TRAINSTACK_STATE_DIR": str(tmp_path / "state"),
        "TRAINSTACK_LOG_ROOT": str(tmp_path / "logs"),
        "TRAINSTACK_LAUNCH": "/bin/false",
    }
    done = subprocess.run(
        ["bash", "-c", text], check=False, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3 and "bootstrap" in done.stderr
    # after a reboot /run is empty: a bootstrap-done kept in /var/lib/trainstack lets the job start
    (tmp_path / "run" / "bootstrap-failed").unlink()
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "bootstrap-done").touch()
    done = subprocess.run(
        ["bash", "-c", text],
        check=False,
        env={**env, "TRAINSTACK_LAUNCH": "/bin/true"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------------------------------------- the commands
def test_dry_run_json_is_offline_and_in_the_dlc_shape() -> None:
    result = run(["submit", SMALL, "--dry-run", "--json", "--", *HOSTILE])
    assert result.exit_code == 0, result.output
    item = json.loads(result.stdout)
    assert item["action"] == "RunCommand" and item["dry_run"] is True and item["region"] == "cn-hangzhou"
    assert item["request"]["InstanceId"] == ["<unresolved:node_ids[0]>"]
    assert item["request"] == sdk_request_map("RunCommand", item["request"])
    result = run(["submit", HUGE, "--dry-run", "--json", "--", "train.py"])
    items = json.loads(result.stdout)
    assert isinstance(items, list) and [len(i["request"]["InstanceId"]) for i in items] == [100, 28]


def test_submit_runs_the_gate_leaves_the_bad_node_out_and_starts_the_rest(
    monkeypatch: pytest.MonkeyPatch, credentials: None, tmp_path: Path
) -> None:
    engine = deploy(monkeypatch, BIG, ids(64))
    folder = tmp_path / "recorded"
    shutil.copytree(FIXTURES, folder)
    healthy_lines = [
        'TRAINSTACK-CHECK {"check": "bootstrap", "ok": true, "detail": "bootstrap-done", "value": null}',
        'TRAINSTACK-CHECK {"check": "gpus", "ok": true, "detail": "8 GPUs", "value": 8}',
        'TRAINSTACK-CHECK {"check": "xid", "ok": true, "detail": "none", "value": []}',
        'TRAINSTACK-CHECK {"check": "dcgm", "ok": true, "detail": "dcgmi diag -r 1 passed", "value": null}',
        'TRAINSTACK-CHECK {"check": "erdma", "ok": true, "detail": "2 RDMA link(s) ACTIVE", "value": 2}',
    ]
    healthy = "\n".join(healthy_lines)
    sick = healthy.replace(
        '"check": "xid", "ok": true, "detail": "none", "value": []',
        '"check": "xid", "ok": false, "detail": "XID 79", "value": [79]',
    )
    records = [
        {
            "InvokeId": "t-hz0jdfwd8y4ts01",
            "InstanceId": i,
            "InvokeRecordStatus": "Finished",
            "ExitCode": 0,
            "Output": sick if r == 17 else healthy,
        }
        for r, i in enumerate(ids(64))
    ]
    body = {
        "RequestId": "R1",
        "Invocation": {"TotalCount": 64, "InvocationResults": {"InvocationResult": records}},
    }
    started = {
        "RequestId": "R2",
        "Invocation": {
            "TotalCount": 63,
            "InvocationResults": {
                "InvocationResult": [
                    {"InvokeId": "t-hz0jdfwd8y4ts02", "InstanceId": i, "InvokeRecordStatus": "Running"}
                    for r, i in enumerate(ids(64))
                    if r != 17
                ]
            },
        },
    }
    (folder / "DescribeInvocationResults.json").write_text(
        json.dumps({"_by": "InvokeId", "t-hz0jdfwd8y4ts01": body, "t-hz0jdfwd8y4ts02": started})
    )
    ecs = RecordedEcsApi(folder)
    result = run(["submit", BIG, "--yes", "--", "train.py", "--config", "70b.yaml"], engine, ecs)
    assert result.exit_code == 0, result.output
    assert "rank 17: FAILED xid: hardware XID 79 (redeploy)" in result.output
    assert "nodes started: 63/63" in result.output and "started pretrain-70b-20261201-221500" in result.output
    runs = [body for action, body in ecs.calls if action == "RunCommand"]
    assert len(runs) == 2  # the gate, then the job
    job = runs[1]
    assert ids(64)[17] not in job["InstanceId"] and len(job["InstanceId"]) == 63
    assert "TRAINSTACK_JOB_NNODES=63\n" in script_of(job)
    quarantine = read_quarantine(Path("stacks/pretrain-70b"))
    assert quarantine["nodes"]["17"]["hardware_xids"] == [79]


def test_submit_asks_first_and_a_no_sends_nothing(monkeypatch: pytest.MonkeyPatch, credentials: None) -> None:
    engine = deploy(monkeypatch, SMALL, ids(1))
    ecs = RecordedEcsApi(FIXTURES)
    result = run(["submit", SMALL, "--no-check", "--", "train.py"], engine, ecs, input="n\n")
    assert result.exit_code == live.EXIT_DECLINED and ecs.calls == []


def test_submit_of_an_undeployed_stack_is_one_sentence(credentials: None) -> None:
    result = run(["submit", SMALL, "--no-check", "--yes", "--", "train.py"])
    assert result.exit_code == live.EXIT_NOT_DEPLOYED and "trainstack up" in result.stderr


def test_jobs_lists_only_this_stacks_jobs(monkeypatch: pytest.MonkeyPatch, credentials: None) -> None:
    engine = deploy(monkeypatch, SMALL, ids(1))
    result = run(["jobs", SMALL, "--json"], engine)
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert [j["job"] for j in found] == ["finetune-7b-20261201-221500", "finetune-7b-20261130-090000"]
    assert found[0]["invoke_ids"] == [
        "t-hz0jdfwd8y4ts01"
    ]  # the prod stack's invocation of that name is not ours
    assert [j["status"] for j in found] == ["Running", "Success"]


def test_logs_read_the_bucket_after_the_nodes_are_gone(
    credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = deploy(monkeypatch, SMALL, None)  # destroyed: no node outputs any more
    ecs = RecordedEcsApi(FIXTURES)
    result = run(["logs", SMALL, "finetune-7b-20261130-090000"], engine, ecs)
    assert result.exit_code == 0, result.output
    assert "==> rank 0 (finished, exit 0) <==" in result.output and "training done" in result.output
    assert ecs.calls == []  # nothing asked of Cloud Assistant: the nodes are gone
    result = run(["jobs", SMALL], engine, ecs)
    assert result.exit_code == 0 and "  finetune-7b-20261130-090000" in result.output and ecs.calls == []
    result = run(["logs", SMALL, "finetune-7b-20991231-000000"], engine, ecs)
    assert result.exit_code == 2 and "no log of job" in result.stderr


def test_logs_of_a_running_job_fall_back_to_cloud_assistant_and_follow(
    monkeypatch: pytest.MonkeyPatch, credentials: None
) -> None:
    engine = deploy(monkeypatch, SMALL, ids(1)[:1])
    ecs_ids = RecordedEcsApi(FIXTURES)
    engine.stack_outputs = {"node_ids": OutputValue(["i-bp1ts7b000000000"])}
    result = run(["logs", SMALL, "finetune-7b-20261201-221500", "--rank", "0"], engine, ecs_ids)
    assert result.exit_code == 0, result.output
    assert "step 10 loss 2.31" in result.output and "(Running" in result.output
    result = run(["logs", SMALL, "finetune-7b-20261201-221500", "--follow"], engine, ecs_ids, rounds=2)
    assert result.output.count("[rank 0] step 10 loss 2.31") == 1  # a line is printed once


def test_cancel_stops_the_running_invocations_and_refuses_others(
    monkeypatch: pytest.MonkeyPatch, credentials: None
) -> None:
    engine = deploy(monkeypatch, SMALL, ["i-bp1ts7b000000000"])
    ecs = RecordedEcsApi(FIXTURES)
    result = run(["cancel", SMALL, "finetune-7b-20261201-221500", "--yes"], engine, ecs)
    assert result.exit_code == 0, result.output
    assert [b for a, b in ecs.calls if a == "StopInvocation"] == [
        {"RegionId": "cn-hangzhou", "InvokeId": "t-hz0jdfwd8y4ts01"}
    ]
    result = run(["cancel", SMALL, "finetune-7b-20261130-090000", "--yes"], engine, ecs)
    assert "already Success" in result.output
    folder_ecs = RecordedEcsApi(FIXTURES)
    result = run(["cancel", SMALL, "someone-elses-job", "--yes"], engine, folder_ecs)
    assert result.exit_code == 2 and not [a for a, _ in folder_ecs.calls if a == "StopInvocation"]


def test_check_names_the_failed_node_and_check(
    monkeypatch: pytest.MonkeyPatch, credentials: None, tmp_path: Path
) -> None:
    engine = deploy(monkeypatch, BIG, ids(64))
    folder = tmp_path / "recorded"
    shutil.copytree(FIXTURES, folder)
    good = [
        '{"check": "bootstrap", "ok": true, "detail": "bootstrap-done"}',
        '{"check": "gpus", "ok": true, "detail": "8 GPUs", "value": 8}',
        '{"check": "xid", "ok": true, "detail": "none", "value": []}',
        '{"check": "dcgm", "ok": null, "detail": "DCGM is not installed"}',
        '{"check": "fabricmanager", "ok": true, "detail": "active"}',
        '{"check": "erdma", "ok": true, "detail": "2 ACTIVE", "value": 2}',
        '{"check": "nccl-intra", "ok": true, "detail": "", "value": 190.5, "net": "none"}',
        '{"check": "nccl-inter", "ok": true, "detail": "", "value": 18.2, "net": "ib"}',
    ]
    out = {r: list(good) for r in range(64)}
    out[3][4] = '{"check": "fabricmanager", "ok": false, "detail": "nvidia-fabricmanager is not active"}'
    out[9][7] = '{"check": "nccl-inter", "ok": true, "detail": "", "value": 2.1, "net": "socket"}'
    out[12][6] = '{"check": "nccl-intra", "ok": true, "detail": "", "value": 61.0, "net": "none"}'
    records = [
        {
            "InvokeId": "t-hz0jdfwd8y4ts01",
            "InstanceId": i,
            "InvokeRecordStatus": "Finished",
            "Output": "\n".join("TRAINSTACK-CHECK " + line for line in out[r]),
        }
        for r, i in enumerate(ids(64))
    ]
    (folder / "DescribeInvocationResults.json").write_text(
        json.dumps(
            {
                "RequestId": "R",
                "Invocation": {"TotalCount": 64, "InvocationResults": {"InvocationResult": records}},
            }
        )
    )
    ecs = RecordedEcsApi(folder)
    result = run(["check", BIG, "--level", "full"], engine, ecs)
    assert result.exit_code == 1
    assert "rank   3 pretrain-70b-node-003 (i-wl00000000000003): FAILED fabricmanager" in result.output
    assert "rank   9" in result.output and "plain TCP sockets (NET/Socket)" in result.output
    assert "rank  12" in result.output and "below the expected 184.0 GB/s" in result.output
    assert "61/64 node(s) healthy" in result.output and "(not run: dcgm)" in result.output
    assert sorted(read_quarantine(Path("stacks/pretrain-70b"))["nodes"]) == ["12", "3", "9"]
    result = run(["check", BIG, "--json"], engine, RecordedEcsApi(folder))
    report = json.loads(result.stdout)
    assert report["failed_ranks"] == [3, 9, 12] and report["expected"]["nccl_inter_min_gbs"] == 10.0


def test_check_dry_run_sends_nothing() -> None:
    result = run(["check", BIG, "--dry-run", "--json", "--level", "full"])
    item = json.loads(result.stdout)
    text = script_of(item["request"])
    assert item["action"] == "RunCommand" and "TRAINSTACK_CHECK_NVSWITCH=true" in text
    assert "TRAINSTACK_CHECK_RDMA=erdma" in text and "dcgmi diag" in text
    assert "export NCCL_IB_HCA=erdma\n" in text  # the plan's NCCL settings, as training gets them


# ------------------------------------------------------------------------------------------------ verdicts (pure)
def test_xids_are_classified_by_nvidias_catalog() -> None:
    assert health.classify_xids([13, 79, 31, 48, 8]) == ((48, 79), (13, 31), (8,))
    exp = health.expectation(plan_cluster(BIG))
    app_only = health.node_report(
        plan_cluster(BIG).node(0),
        {
            "InvokeRecordStatus": "Finished",
            "Output": "\n".join(
                "TRAINSTACK-CHECK " + json.dumps(x)
                for x in [
                    {"check": "bootstrap", "ok": True},
                    {"check": "gpus", "ok": True},
                    {"check": "dcgm", "ok": True},
                    {"check": "xid", "ok": False, "detail": "XID 13", "value": [13]},
                ]
            ),
        },
        exp,
    )
    assert app_only.healthy  # a program's fault does not quarantine the node
    missing = health.node_report(plan_cluster(BIG).node(0), None, exp)
    assert [f.check for f in missing.failed] == ["cloud-assistant"]


def test_the_check_script_run_by_bash_finds_a_hardware_xid_and_a_dead_fabric_manager(tmp_path: Path) -> None:
    c = plan_cluster(BIG)
    nodes, _ = select(c, None)
    item = health.check_requests(c, nodes[:1], "quick", "pretrain-70b-check-1", health.expectation(c))[0]
    text = script_of(item.request)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "bootstrap-done").touch()
    fakes = {
        "nvidia-smi": 'case "$*" in *driver_version*) echo 535.161.08 ;; '
        '*) for i in 0 1 2 3 4 5 6 7; do echo "$i, 00000000:0$i:00.0"; done ;; esac',
        "journalctl": 'echo "kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."\n'
        'echo "kernel: NVRM: Xid (PCI:0000:3c:00): 13, pid=99, Graphics Exception \\"x\\""',
        "systemctl": "exit 3",  # nvidia-fabricmanager is not active
        "rdma": 'echo "link erdma_0/1 state ACTIVE physical_state LINK_UP"\n'
        'echo "link erdma_1/1 state ACTIVE physical_state LINK_UP"',
    }
    for name, body in fakes.items():
        (bin_ / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_ / name).chmod(0o755)
    env = {
        "PATH": f"{bin_}:/usr/bin:/bin",
        "TRAINSTACK_RUN_DIR": str(tmp_path / "run"),
        "TRAINSTACK_STATE_DIR": str(tmp_path / "state"),
    }
    done = subprocess.run(
        ["bash", "-c", text], check=False, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    report = health.node_report(
        nodes[0], {"InvokeRecordStatus": "Finished", "Output": done.stdout}, health.expectation(c)
    )
    by_check = {f.check: f for f in report.findings}
    assert by_check["gpus"].ok is True and by_check["bootstrap"].ok is True and by_check["erdma"].ok is True
    assert by_check["xid"].ok is False and "hardware XID 79" in by_check["xid"].detail
    assert "application XID 13" in by_check["xid"].detail and report.hardware_xids == (79,)
    assert by_check["fabricmanager"].ok is False
    assert by_check["dcgm"].ok is None  # dcgmi is not installed: reported, never counted as passed
    assert sorted(f.check for f in report.failed) == ["fabricmanager", "xid"]


def _real_launcher(tmp_path: Path) -> Path:
    """trainstack-launch as node-init.sh installs it (the committed pretrain-70b stack), its node paths moved under
    tmp_path and the cluster-facts tool a no-op, with a launch.env of rank 1 of a 8:64 elastic cluster."""
    node_init = (ROOT / "stacks" / "pretrain-70b" / "node-init.sh").read_text()
    body = node_init.split("<<'LAUNCH'\n", 1)[1].split("\nLAUNCH\n", 1)[0] + "\n"
    run_dir, etc = tmp_path / "run", tmp_path / "etc"
    etc.mkdir()
    (etc / "launch.env").write_text(
        "NODE_RANK=1\nMIN_NODES=8\nMAX_NODES=64\nGPUS_PER_NODE=8\nMASTER_ADDR=10.20.0.10\nMASTER_PORT=29400\n"
        "TRAINSTACK_NAME=pretrain-70b\nMAX_RESTARTS=100\nTRAINSTACK_CHECKPOINT_DIR=\nTRAINSTACK_CHECKPOINT_OSS=\n"
    )
    body = (
        body.replace("/run/trainstack", str(run_dir))
        .replace("/etc/trainstack", str(etc))
        .replace("/usr/local/bin/trainstack-facts", "true")
    )
    assert "trainstack-facts" not in body and "exec torchrun" in body
    launcher = tmp_path / "trainstack-launch"
    launcher.write_text(body)
    return launcher


def test_the_launcher_shrinks_the_world_and_moves_the_rendezvous_only(tmp_path: Path) -> None:
    """rank 0 quarantined: the real trainstack-launch (`exec torchrun --nnodes 8:64 ... --rdzv-endpoint RANK0:PORT`)
    runs with 8:63 and rank 1's address; the user's words, even ones that look like torchrun options, pass untouched."""
    c = plan_cluster(BIG)
    nodes, _ = select(c, None, quarantined=[0])
    words = ["train.py", "--nnodes", "2", "--rdzv-endpoint", "evil:1"]
    text = script_of(rq.submit_requests(c, nodes, "pretrain-70b-1", words)[0].request)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "bootstrap-done").touch()
    (bin_ / "curl").write_text(
        '#!/bin/bash\ncase "${@: -1}" in */instance-id) echo i-wl00000000000001 ;; *) exit 7 ;; esac\n'
    )
    (bin_ / "torchrun").write_text(
        '#!/bin/bash\nfor a in "$@"; do printf \'%s\\0\' "$a"; done > "$ARGS_OUT"\n'
    )
    launcher = _real_launcher(tmp_path)
    launcher.chmod(0o755)
    for f in bin_.iterdir():
        f.chmod(0o755)
    env = {
        "PATH": f"{bin_}:/usr/bin:/bin",
        "TRAINSTACK_RUN_DIR": str(tmp_path / "run"),
        "TRAINSTACK_STATE_DIR": str(tmp_path / "state"),
        "TRAINSTACK_LOG_ROOT": str(tmp_path / "logs"),
        "TRAINSTACK_LAUNCH": str(launcher),
        "ARGS_OUT": str(tmp_path / "args"),
    }
    done = subprocess.run(
        ["bash", "-c", text], check=False, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    got = [a.decode() for a in (tmp_path / "args").read_bytes().split(b"\0")[:-1]]
    assert got == [
        "--nnodes",
        "8:63",
        "--nproc-per-node",
        "8",
        "--rdzv-backend",
        "c10d",
        "--rdzv-endpoint",
        f"{c.node(1).private_ip}:29400",
        "--rdzv-id",
        "pretrain-70b",
        "--max-restarts",
        "100",
        *words,
    ]
    assert (tmp_path / "logs" / "pretrain-70b-1" / "rank-1.log").is_file()


def test_submit_refuses_fewer_nodes_than_the_elastic_minimum() -> None:
    result = run(["submit", BIG, "--dry-run", "--nodes", "0-6", "--", "train.py"])
    assert result.exit_code == 2 and "elastic minimum of 8" in result.stderr


def test_every_busbw_floor_says_whether_it_is_measured_or_a_threshold() -> None:
    import csv

    text = (ROOT / "generator" / "live" / "jobs" / "busbw.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    assert rows
    for r in rows:
        assert r["floor_kind"] in ("measured", "threshold"), r["gpu"]
        assert r["source"].startswith("https://"), r["gpu"]
        if r["floor_kind"] == "measured":  # a published figure: the number and where it was published
            assert float(r["measured_busbw_gbs"]) > 0 and "https://" in r["measured_source"], r["gpu"]
        else:  # a threshold: no figure, and the search that found none, dated
            assert not r["measured_busbw_gbs"] and r["measured_source"][:4].isdigit(), r["gpu"]
    exp = health.expectation(plan_cluster(BIG))  # A100-80G: 80% of the published 230 GB/s; eRDMA: a threshold
    assert exp.intra_kind == "measured" and exp.intra_floor_gbs == pytest.approx(184.0)
    assert exp.inter_kind == "threshold"
    assert exp.intra_source.startswith("https://docs.alayanew.com/")
