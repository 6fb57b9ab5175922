"""PAI-DLC jobs from the command line: ``submit`` (and ``--dry-run --json``), ``jobs``, ``logs`` and ``cancel``.

Everything runs against recorded PAI-DLC responses (``tests/live_fixtures/dlc/``, bodies as the API returns them and
as the SDK's ``*ResponseBody.from_map`` reads them) through :class:`RecordedDlcClient`, and against
:class:`FakeEngine` for the stack outputs: no network, no credentials, no pulumi CLI. Tests that compare with the
SDK's own request models run when ``alibabacloud-pai-dlc20201203`` is installed (``trainstack[dlc]``).
"""

from __future__ import annotations

import datetime
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from generator import api, live
from generator.cli import main
from generator.live import FakeEngine, OutputValue
from generator.platforms.dlc import live as dlc
from generator.platforms.dlc.live import DlcApiError, DlcSdkMissing, RecordedDlcClient, SdkDlcClient

ROOT = Path(__file__).resolve().parent.parent
SPEC = "examples/finetune-dlc.yaml"
ECS_SPEC = "examples/finetune-7b.yaml"
FIXTURES = ROOT / "tests" / "live_fixtures" / "dlc"
NOW = datetime.datetime(2026, 11, 30, 14, 15, 0, tzinfo=datetime.timezone.utc)
CREDENTIAL_VARS = (*live.SECRET_ENV_VARS, "PULUMI_CONFIG_PASSPHRASE_FILE", "ALIBABA_CLOUD_PROFILE", "ALICLOUD_PROFILE",
                   "ALIBABA_CLOUD_CREDENTIALS_FILE", "ALICLOUD_SHARED_CREDENTIALS_FILE", "ALIBABA_CLOUD_ECS_METADATA",
                   "ALICLOUD_ECS_ROLE_NAME", "ALIBABA_CLOUD_ROLE_ARN", "ALIBABA_CLOUD_OIDC_TOKEN_FILE",
                   "ALIBABA_CLOUD_CREDENTIALS_URI", "TRAINSTACK_BACKEND", "TRAINSTACK_SECRETS_PROVIDER",
                   "PULUMI_BACKEND_URL")
OUTPUTS = {
    "pai_workspace_id": "ws-4f2k9c1m8x", "vpc_id": "vpc-bp1dlc000001", "vswitch_id": "vsw-bp1dlc000002",
    "security_group_id": "sg-bp1dlc000003", "job_role_arn": "acs:ram::1234567890123456:role/finetune-dlc-job",
    "checkpoint_bucket": "finetune-dlc-ckpt-7afc7f", "checkpoint_url": "oss://finetune-dlc-ckpt-7afc7f/checkpoints/",
    "dataset_shared_id": "d-shared0001", "dataset_data_id": "d-data0002", "dataset_checkpoints_id": "d-ckpt0003",
}


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch repository with the DLC and ECS examples, and an environment without secrets."""
    (tmp_path / "examples").mkdir()
    (tmp_path / ".git").mkdir()
    for spec in (SPEC, ECS_SPEC):
        shutil.copy(ROOT / spec, tmp_path / spec)
    monkeypatch.chdir(tmp_path)
    for var in CREDENTIAL_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    """The DLC stack rendered, with state in its file:// backend and the outputs a deploy gives (all fake)."""
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/opt/pulumi/bin/pulumi" if name == "pulumi"
                        else real_which(name, *a, **k))
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "correct-horse-battery-FAKE")
    folder = api.render_stack(SPEC).dest
    state = folder / ".trainstack" / "state" / ".pulumi" / "stacks" / "finetune-dlc" / "dev.json"
    state.parent.mkdir(parents=True)
    state.write_text("{}")
    return FakeEngine(state=[], stack_outputs={k: OutputValue(v) for k, v in OUTPUTS.items()})


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI5tFAKEKEYID0000001")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "FAKEsecretVALUE9f8e7d6c5b4a")


def run(args: list[str], engine: FakeEngine | None = None, client: Any = None, input: str | None = None) -> Result:
    obj = {"engine": engine or FakeEngine(state=None), "dlc_client": client or RecordedDlcClient(FIXTURES),
           "now": NOW}
    return CliRunner().invoke(main, args, obj=obj, input=input, catch_exceptions=False)


def one_sentence(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output + result.stderr
    return lines[0]


def plan():
    return api.plan(SPEC)


# ------------------------------------------------------------------------------------------- the request (pure)
def test_request_carries_the_plans_workers_network_data_and_role() -> None:
    p = plan()
    req = dlc.create_job_request(p, OUTPUTS, ["torchrun", "train.py"], "ft-1")
    assert req.unresolved == ()
    body = req.body
    (worker,) = body["JobSpecs"]
    assert (worker["Type"], worker["PodCount"], worker["EcsSpec"]) == ("Worker", p.dlc.worker_count,
                                                                       p.dlc.worker_instance_type)
    assert worker["Image"] == p.dlc.image and body["JobType"] == "PyTorchJob"
    assert body["WorkspaceId"] == "ws-4f2k9c1m8x"
    assert body["UserVpc"] == {"VpcId": "vpc-bp1dlc000001", "SwitchId": "vsw-bp1dlc000002",
                               "SecurityGroupId": "sg-bp1dlc000003", "ExtendedCIDRs": [p.network.vpc_cidr]}
    assert [(d["DataSourceId"], d["MountPath"], d["MountAccess"]) for d in body["DataSources"]] == [
        (OUTPUTS[ds.output_key], ds.mount_path, "RO" if ds.read_only else "RW") for ds in p.dlc.data_sources]
    roles = body["CredentialConfig"]["CredentialConfigItems"][0]["Roles"]
    assert roles[0]["RoleArn"] == OUTPUTS["job_role_arn"]
    assert body["Envs"]["TP_SIZE"] == str(p.dlc.tp) and body["Envs"]["DP_SIZE"] == str(p.dlc.dp)
    assert body["Envs"]["CHECKPOINT_URL"].startswith("oss://")
    assert body["Settings"]["Tags"] == {"trainstack-project": "finetune-dlc", "trainstack-stack": "dev"}


def test_spot_price_limit_is_converted_to_cny_per_minute() -> None:
    p = plan()
    assert p.dlc.spot is not None and p.dlc.spot.spot_price_limit
    spot = dlc.create_job_request(p, OUTPUTS, ["true"], "ft-1").body["JobSpecs"][0]["SpotSpec"]
    assert spot["SpotStrategy"] == p.dlc.spot.spot_strategy
    assert spot["SpotPriceLimit"] == pytest.approx(p.dlc.spot.spot_price_limit / 60, abs=1e-4)


@pytest.mark.parametrize("argv", [
    ["torchrun", "--nproc_per_node", "8", "train.py", "--note", "a b"],
    ["python", "-c", "print('it''s $HOME; `id`')"],
    ["bash", "-c", "echo \"$(hostname)\" && exit 3"],
    ["echo", "", "tab\there", "new\nline", "*.py"],
])
def test_several_words_are_an_exact_argv(argv: list[str]) -> None:
    command = dlc.user_command(argv)
    assert shlex.split(command) == argv


def test_one_word_is_a_shell_line_and_nothing_is_refused() -> None:
    assert dlc.user_command(["torchrun train.py && echo done"]) == "torchrun train.py && echo done"
    for empty in ([], [""], ["  "]):
        with pytest.raises(ValueError, match="after --"):
            dlc.user_command(empty)


def test_missing_outputs_become_marked_placeholders() -> None:
    req = dlc.create_job_request(plan(), {"pai_workspace_id": "ws-1"}, ["true"], "ft-1")
    assert req.body["WorkspaceId"] == "ws-1"
    assert req.body["UserVpc"]["VpcId"] == "<unresolved:vpc_id>"
    assert "vpc_id" in req.unresolved and "pai_workspace_id" not in req.unresolved
    assert "job_role_arn" in req.unresolved


def test_bad_job_names_and_non_dlc_plans_are_refused() -> None:
    with pytest.raises(ValueError, match="not a DLC display name"):
        dlc.create_job_request(plan(), OUTPUTS, ["true"], "my job!")
    with pytest.raises(ValueError, match="compute.platform: pai-dlc"):
        dlc.create_job_request(api.plan(ECS_SPEC), OUTPUTS, ["true"], "ft-1")


# ------------------------------------------------------------------------------------------- submit --dry-run
def test_dry_run_json_of_an_undeployed_stack_has_the_plans_workers_and_lists_placeholders() -> None:
    result = run(["submit", SPEC, "--dry-run", "--json", "--", "torchrun", "train.py", "--lr", "2e-5"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    p = json.loads(run(["plan", SPEC, "--json"]).stdout)["dlc"]
    worker = data["request"]["JobSpecs"][0]
    assert worker["PodCount"] == p["worker_count"] and worker["EcsSpec"] == p["worker_instance_type"]
    assert data["dry_run"] is True and data["action"] == "CreateJob" and data["region"] == "cn-hangzhou"
    assert set(data["unresolved"]) >= {"pai_workspace_id", "vpc_id", "vswitch_id", "security_group_id",
                                       "job_role_arn"}
    assert data["request"]["WorkspaceId"] == "<unresolved:pai_workspace_id>"
    assert data["request"]["UserCommand"] == "torchrun train.py --lr 2e-5"
    assert data["request"]["DisplayName"] == "finetune-dlc-20261130-141500"


def test_dry_run_of_a_deployed_stack_resolves_every_id(deployed: FakeEngine) -> None:
    client = RecordedDlcClient(FIXTURES)
    result = run(["submit", SPEC, "--dry-run", "--json", "--name", "ft-7", "--", "python", "train.py"], deployed,
                 client)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["unresolved"] == []
    assert data["request"]["UserVpc"]["SwitchId"] == "vsw-bp1dlc000002"
    assert {d["DataSourceId"] for d in data["request"]["DataSources"]} == {"d-shared0001", "d-data0002", "d-ckpt0003"}
    assert not [c for c in client.calls if c[0] == "CreateJob"]  # nothing sent
    assert [c[0] for c in deployed.calls] == ["outputs"]


def test_dry_run_of_a_rendered_but_undeployed_stack_needs_no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    api.render_stack(SPEC)  # the folder exists, its file:// state does not: no pulumi CLI or passphrase is needed
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    engine = FakeEngine(state=None)
    result = run(["submit", SPEC, "--dry-run", "--json", "--", "true"], engine)
    assert result.exit_code == 0, result.output
    assert "pai_workspace_id" in json.loads(result.stdout)["unresolved"] and engine.calls == []


def test_dry_run_text_shows_the_request_and_says_nothing_was_sent() -> None:
    result = run(["submit", SPEC, "--dry-run", "--", "torchrun train.py && echo ok"])
    assert result.exit_code == 0, result.output
    assert '"UserCommand": "torchrun train.py && echo ok"' in result.stdout
    assert "unresolved (the stack is not deployed" in result.stdout
    assert "dry run: nothing was submitted" in result.stdout


def test_dry_run_is_exactly_the_sdk_models_map() -> None:
    pytest.importorskip("alibabacloud_pai_dlc20201203")
    from alibabacloud_pai_dlc20201203 import models

    data = json.loads(run(["submit", SPEC, "--dry-run", "--json", "--", "true"]).stdout)
    body = dlc.create_job_request(plan(), {}, ["true"], "finetune-dlc-20261130-141500").body
    assert data["request"] == models.CreateJobRequest().from_map(body).to_map()
    assert data["request"]["JobSpecs"][0]["SpotSpec"]["SpotStrategy"] == "SpotWithPriceLimit"


# ------------------------------------------------------------------------------------------- submit
def test_submit_of_an_undeployed_stack_refuses_in_one_sentence(credentials: None) -> None:
    client = RecordedDlcClient(FIXTURES)
    result = run(["submit", SPEC, "--yes", "--", "true"], client=client)
    assert result.exit_code == live.EXIT_NOT_DEPLOYED
    assert "run `trainstack up` first" in one_sentence(result)
    assert client.calls == []


def test_submit_sends_the_request_and_prints_the_job_id(deployed: FakeEngine, credentials: None) -> None:
    client = RecordedDlcClient(FIXTURES)
    result = run(["submit", SPEC, "--yes", "--json", "--", "torchrun", "train.py"], deployed, client)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["job_id"] == "dlc1a2b3c4d5e6f"
    ((action, call),) = client.calls
    assert action == "CreateJob" and call["region"] == "cn-hangzhou"
    assert call["body"]["JobSpecs"][0]["PodCount"] == plan().dlc.worker_count
    assert call["body"]["UserCommand"] == "torchrun train.py"


def test_submit_asks_first_and_a_no_sends_nothing(deployed: FakeEngine, credentials: None) -> None:
    client = RecordedDlcClient(FIXTURES)
    result = run(["submit", SPEC, "--", "true"], deployed, client, input="n\n")
    assert result.exit_code == live.EXIT_DECLINED
    assert "2 x ecs.gn7e-c16g1.32xlarge" in result.stdout and client.calls == []
    result = run(["submit", SPEC, "--", "true"], deployed, client, input="y\n")
    assert result.exit_code == 0 and "submitted dlc1a2b3c4d5e6f" in result.stdout
    result = run(["submit", SPEC, "--json", "--", "true"], deployed, client, input="y\n")
    assert result.exit_code == 0 and json.loads(result.stdout)["job_id"] == "dlc1a2b3c4d5e6f"  # asked on stderr
    assert "Submit finetune-dlc-20261130-141500" in result.stderr


def test_submit_needs_a_command_and_dispatches_by_platform() -> None:
    result = run(["submit", SPEC, "--dry-run"])
    assert result.exit_code == 2 and "after --" in result.output
    # an ECS spec goes to Cloud Assistant (tests/test_ecs_jobs.py), not to PAI-DLC
    result = run(["submit", ECS_SPEC, "--dry-run", "--json", "--", "true"])
    assert result.exit_code == 0 and json.loads(result.stdout)["action"] == "RunCommand"


def test_missing_sdk_is_one_sentence_with_the_pip_command(deployed: FakeEngine, credentials: None) -> None:
    missing = DlcSdkMissing("this command calls Alibaba Cloud's PAI-DLC API through its SDK "
                            "(alibabacloud_pai_dlc20201203 is not installed): pip install 'trainstack[dlc]'.")
    for args in (["submit", SPEC, "--yes", "--", "true"], ["submit", SPEC, "--dry-run", "--", "true"],
                 ["jobs", SPEC], ["logs", SPEC, "dlc1a2b3c4d5e6f"], ["cancel", SPEC, "dlc1a2b3c4d5e6f", "--yes"]):
        result = run(args, deployed, RecordedDlcClient(FIXTURES, missing_sdk=missing))
        assert result.exit_code == live.EXIT_NO_SDK, args
        assert "pip install 'trainstack[dlc]'" in one_sentence(result)


def test_the_real_client_says_which_module_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "alibabacloud_pai_dlc20201203", None)  # what an absent package looks like
    with pytest.raises(DlcSdkMissing, match=r"alibabacloud_pai_dlc20201203 is not installed\): pip install "
                                            r"'trainstack\[dlc\]'") as err:
        SdkDlcClient().check()
    assert err.value.exit_code == live.EXIT_NO_SDK


def test_missing_credentials_are_one_sentence(deployed: FakeEngine) -> None:
    client = RecordedDlcClient(FIXTURES)
    result = run(["submit", SPEC, "--yes", "--", "true"], deployed, client)
    assert result.exit_code == live.EXIT_NO_CREDENTIALS
    one_sentence(result)
    assert client.calls == []
    assert run(["jobs", SPEC], deployed, client).exit_code == live.EXIT_NO_CREDENTIALS


class TeaLikeError(Exception):
    """What the SDK raises for an API error: a code and a message (Tea's exception carries both)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def test_an_api_error_is_one_sentence_with_its_code(deployed: FakeEngine, credentials: None) -> None:
    error = dlc.api_error("CreateJob", TeaLikeError("Forbidden.RAM", "User not authorized to operate on the "
                                                    "specified resource.\nRequestId: 5F6B1C2A"))
    client = RecordedDlcClient(FIXTURES, errors={"CreateJob": error})
    result = run(["submit", SPEC, "--yes", "--", "true"], deployed, client)
    assert result.exit_code == live.EXIT_ENGINE
    line = one_sentence(result)
    assert "PAI-DLC CreateJob failed: Forbidden.RAM: User not authorized" in line and "AliyunPAIDLCFullAccess" in line
    assert isinstance(dlc.api_error("ListJobs", OSError("connection reset")), DlcApiError)
    assert "OSError: connection reset" in str(dlc.api_error("ListJobs", OSError("connection reset")))


# ------------------------------------------------------------------------------------------- jobs, logs, cancel
def test_jobs_lists_only_this_stacks_jobs(deployed: FakeEngine, credentials: None) -> None:
    client = RecordedDlcClient(FIXTURES)
    result = run(["jobs", SPEC], deployed, client)
    assert result.exit_code == 0, result.output
    assert "dlc1a2b3c4d5e6f" in result.stdout and "dlc9z8y7x6w5v4u" in result.stdout
    assert "dlcotherteam001" not in result.stdout
    ((action, call),) = client.calls
    assert action == "ListJobs"
    assert call["query"]["WorkspaceId"] == "ws-4f2k9c1m8x"
    assert call["query"]["Tags"] == {"trainstack-project": "finetune-dlc", "trainstack-stack": "dev"}
    data = json.loads(run(["jobs", SPEC, "--json"], deployed, client).stdout)
    assert [j["JobId"] for j in data] == ["dlc1a2b3c4d5e6f", "dlc9z8y7x6w5v4u"]


def test_jobs_of_an_undeployed_stack_is_one_sentence() -> None:
    result = run(["jobs", SPEC])
    assert result.exit_code == live.EXIT_NOT_DEPLOYED and "trainstack up" in one_sentence(result)


def test_logs_print_each_pods_lines(deployed: FakeEngine, credentials: None) -> None:
    client = RecordedDlcClient(FIXTURES)
    result = run(["logs", SPEC, "dlc1a2b3c4d5e6f", "--lines", "50"], deployed, client)
    assert result.exit_code == 0, result.output
    assert "==> dlc1a2b3c4d5e6f-master-0 (master, Running) <==" in result.stdout
    assert "[rank0] step 110 loss 1.8107" in result.stdout and "[rank8] step 110 throughput" in result.stdout
    assert [c[1]["query"] for c in client.calls if c[0] == "GetPodLogs"] == [{"MaxLines": 50}] * 2
    only = run(["logs", SPEC, "dlc1a2b3c4d5e6f", "--pod", "dlc1a2b3c4d5e6f-worker-0"], deployed,
               RecordedDlcClient(FIXTURES))
    assert "[rank8]" in only.stdout and "[rank0]" not in only.stdout


def test_logs_and_cancel_refuse_other_jobs(deployed: FakeEngine, credentials: None) -> None:
    client = RecordedDlcClient(FIXTURES)
    for args in (["logs", SPEC, "dlcotherteam001"], ["cancel", SPEC, "dlcotherteam001", "--yes"]):
        result = run(args, deployed, client)
        assert result.exit_code == 2 and "was not submitted by trainstack for stack dev" in one_sentence(result)
    result = run(["cancel", SPEC, "dlc-no-such-job", "--yes"], deployed, client)
    assert result.exit_code == 2 and "no DLC job dlc-no-such-job" in one_sentence(result)
    assert not [c for c in client.calls if c[0] in ("StopJob", "GetPodLogs")]


def test_cancel_stops_a_running_job_and_leaves_a_finished_one(deployed: FakeEngine, credentials: None) -> None:
    client = RecordedDlcClient(FIXTURES)
    result = run(["cancel", SPEC, "dlc1a2b3c4d5e6f", "--yes"], deployed, client)
    assert result.exit_code == 0, result.output
    assert ("StopJob", {"region": "cn-hangzhou", "job_id": "dlc1a2b3c4d5e6f"}) in client.calls
    result = run(["cancel", SPEC, "dlc9z8y7x6w5v4u", "--yes"], deployed, client)
    assert result.exit_code == 0 and "already Succeeded" in result.stdout
    assert [c for c in client.calls if c[0] == "StopJob"] == [
        ("StopJob", {"region": "cn-hangzhou", "job_id": "dlc1a2b3c4d5e6f"})]
    declined = run(["cancel", SPEC, "dlc1a2b3c4d5e6f"], deployed, RecordedDlcClient(FIXTURES), input="n\n")
    assert declined.exit_code == live.EXIT_DECLINED


def test_recorded_responses_parse_with_the_sdk_models() -> None:
    pytest.importorskip("alibabacloud_pai_dlc20201203")
    from alibabacloud_pai_dlc20201203 import models

    def read(name: str) -> Any:
        return json.loads((FIXTURES / f"{name}.json").read_text())

    assert models.CreateJobResponseBody().from_map(read("create_job")).job_id == "dlc1a2b3c4d5e6f"
    assert models.StopJobResponseBody().from_map(read("stop_job")).job_id == "dlc1a2b3c4d5e6f"
    assert len(models.ListJobsResponseBody().from_map(read("list_jobs")).jobs) == 3
    for body in read("get_job").values():
        assert models.GetJobResponseBody().from_map(body).job_id
    for body in read("get_pod_logs").values():
        assert models.GetPodLogsResponseBody().from_map(body).logs


@pytest.mark.parametrize("printed,window,new", [
    ([], ["a", "b"], ["a", "b"]),
    (["a", "b"], ["a", "b", "c"], ["c"]),
    (["a", "b", "c"], ["b", "c", "d", "e"], ["d", "e"]),  # the window slid: overlap "b c"
    (["a", "b"], ["a", "b"], []),
    (["x", "y"], ["p", "q"], ["p", "q"]),  # more than N lines in between: the whole window is new
    (["s", "s"], ["s", "s", "s"], ["s"]),
])
def test_new_lines_finds_the_overlap(printed: list[str], window: list[str], new: list[str]) -> None:
    assert dlc.new_lines(printed, window) == new


class GrowingLogs(RecordedDlcClient):
    """The recorded job, running for two polls and then succeeded, whose master pod writes a line per poll."""

    def __init__(self) -> None:
        super().__init__(FIXTURES)
        self.polls = 0

    def get_job(self, region: str, job_id: str) -> dict[str, Any]:
        job = super().get_job(region, job_id)
        self.polls += 1
        return {**job, "Status": "Running" if self.polls < 3 else "Succeeded", "Pods": job["Pods"][:1]}

    def get_pod_logs(self, region: str, job_id: str, pod_id: str, query: Any) -> dict[str, Any]:
        self.calls.append(("GetPodLogs", {"pod_id": pod_id}))
        return {"Logs": [f"step {i}" for i in range(self.polls * 2)][-3:]}


def test_logs_follow_prints_each_line_once_until_the_job_ends(deployed: FakeEngine, credentials: None) -> None:
    client = GrowingLogs()
    slept: list[float] = []
    obj = {"engine": deployed, "dlc_client": client, "now": NOW, "sleep": slept.append}
    result = CliRunner().invoke(main, ["logs", SPEC, "dlc1a2b3c4d5e6f", "--follow", "--interval", "5", "--lines", "3"],
                                obj=obj, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = [x for x in result.stdout.splitlines() if x.startswith("[dlc1a2b3c4d5e6f-master-0] ")]
    assert [x.split("] ", 1)[1] for x in lines] == ["step 0", "step 1", "step 2", "step 3", "step 4", "step 5"]
    assert "job dlc1a2b3c4d5e6f is Succeeded" in result.stdout and slept == [5, 5]


def test_a_spec_changed_since_the_render_is_warned_about(deployed: FakeEngine) -> None:
    spec = Path(SPEC)
    spec.write_text(spec.read_text().replace("retention_days: 14", "retention_days: 21"))
    result = run(["submit", SPEC, "--dry-run", "--json", "--", "true"], deployed)
    assert result.exit_code == 0, result.output
    assert "warning:" in result.stderr and "another version of" in result.stderr
    json.loads(result.stdout)  # stdout stays JSON


def test_the_sdk_client_sends_what_the_dry_run_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real SdkDlcClient with the SDK's one HTTP entry point (call_api) replaced by the recorded answers."""
    pytest.importorskip("alibabacloud_pai_dlc20201203")
    from alibabacloud_tea_openapi.exceptions import ClientException

    client = SdkDlcClient(env={"ALICLOUD_ACCESS_KEY": "LTAI5tFAKE", "ALICLOUD_SECRET_KEY": "FAKE"})
    client.check()
    seen: list[dict[str, Any]] = []
    answers = {"CreateJob": json.loads((FIXTURES / "create_job.json").read_text()),
               "ListJobs": json.loads((FIXTURES / "list_jobs.json").read_text()),
               "StopJob": json.loads((FIXTURES / "stop_job.json").read_text())}
    make = client.client

    def offline(region: str) -> Any:
        sdk = make(region)

        def call_api(params: Any, request: Any, runtime: Any) -> dict[str, Any]:
            seen.append({"action": params.action, "version": params.version, "path": params.pathname,
                         "method": params.method, "endpoint": sdk._endpoint, "body": request.body,
                         "query": dict(request.query or {})})
            if params.action == "GetJob":
                raise ClientException(code="Forbidden.NoPermission", message="not authorized", status_code=403)
            return {"body": answers[params.action], "headers": {}, "statusCode": 200}

        sdk.call_api = call_api
        return sdk

    monkeypatch.setattr(client, "client", offline)
    body = dlc.create_job_request(plan(), OUTPUTS, ["torchrun", "train.py"], "ft-1").body
    assert client.create_job("cn-hangzhou", body) == answers["CreateJob"]
    create = seen[-1]
    assert (create["action"], create["version"], create["method"], create["path"]) == (
        "CreateJob", "2020-12-03", "POST", "/api/v1/jobs")
    assert create["endpoint"] == "pai-dlc.cn-hangzhou.aliyuncs.com"
    sent = create["body"]
    assert sent["JobSpecs"][0]["PodCount"] == plan().dlc.worker_count
    assert sent["JobSpecs"][0]["EcsSpec"] == plan().dlc.worker_instance_type
    assert sent["UserCommand"] == "torchrun train.py" and sent["WorkspaceId"] == "ws-4f2k9c1m8x"
    listed = client.list_jobs("cn-hangzhou", dlc.list_jobs_request(plan(), "ws-4f2k9c1m8x"))
    assert len(listed["Jobs"]) == 3
    assert json.loads(seen[-1]["query"]["Tags"]) == {"trainstack-project": "finetune-dlc", "trainstack-stack": "dev"}
    assert client.stop_job("cn-hangzhou", "dlc1a2b3c4d5e6f")["JobId"] == "dlc1a2b3c4d5e6f"
    assert seen[-1]["path"] == "/api/v1/jobs/dlc1a2b3c4d5e6f/stop"
    with pytest.raises(DlcApiError, match=r"PAI-DLC GetJob failed: Forbidden.NoPermission: .*AliyunPAIDLCFullAccess"):
        client.get_job("cn-hangzhou", "dlc1a2b3c4d5e6f")


def test_the_recorded_create_job_request(deployed: FakeEngine, snapshot: Any) -> None:
    """The whole CreateJob request for the example, deployed, as JSON (review a change with --update-snapshots)."""
    result = run(["submit", SPEC, "--dry-run", "--json", "--name", "finetune-dlc-20261130-141500", "--",
                  "torchrun", "--nproc_per_node", "8", "train.py", "--config", "configs/sft 7b.yaml"], deployed)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    body = dlc.create_job_request(plan(), OUTPUTS, ["torchrun", "--nproc_per_node", "8", "train.py", "--config",
                                                    "configs/sft 7b.yaml"], "finetune-dlc-20261130-141500").body
    snapshot(FIXTURES / "create_job_request.json", json.dumps(body, indent=2, sort_keys=True) + "\n")
    assert _without_empty_lists(data["request"]) == body  # the SDK's to_map adds the empty lists its models print


def _without_empty_lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_empty_lists(v) for k, v in value.items() if v != []}
    if isinstance(value, list):
        return [_without_empty_lists(v) for v in value]
    return value


@pytest.mark.usefixtures("credentials")
def test_heal_health_on_dlc_says_the_workers_are_dlcs_and_calls_nothing(deployed: FakeEngine) -> None:
    """PAI-DLC runs and restarts the job's workers: heal --health has no node of the stack to read or act on."""
    client = RecordedDlcClient(FIXTURES)
    result = run(["heal", SPEC, "--health", "--yes"], deployed, client)
    assert result.exit_code == 0, result.output
    assert "no nodes to check" in result.stdout  # wording: the one sentence of this case
    assert client.calls == [] and all(c[0] != "up" for c in deployed.calls)
