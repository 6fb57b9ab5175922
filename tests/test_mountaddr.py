"""The CPFS export's mount address: the program declares its nodes only once it is configured, offline runs use a
placeholder, and ``trainstack up`` looks it up in the NAS API between two passes.

The NAS API is replayed from recorded-shape responses (tests/live_fixtures/) through the MountAddressResolver port;
nothing here needs the network, a Pulumi CLI or credentials. One test drives the real SDK resolver when the
``trainstack[live]`` packages are installed, with the SDK's HTTP call replaced.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from stock_recorded import RecordedStock

from generator import api, live
from generator.cli import main
from generator.live import FakeEngine, OutputValue, StateResource, Step, mountaddr
from generator.preview import mockrun
from generator.render.stackdir import load_yaml

ROOT = Path(__file__).resolve().parent.parent
SPEC = "examples/pretrain-70b.yaml"
RECORDED = json.loads((ROOT / "tests/live_fixtures/describe_protocol_mount_target.json").read_text())
ADDRESS = RECORDED["available"]["ProtocolMountTargets"][0]["ProtocolMountTargetDomain"]
EXPORT_ID = RECORDED["available"]["ProtocolMountTargets"][0]["ExportId"]
FS_ID = "cpfs-0011a2b3c4d5e6f7"
INSTANCE = "alicloud:ecs/instance:Instance"
ROLE_ATTACHMENT = "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"
URN = "urn:pulumi:dev::pretrain-70b::"
ENV_VARS = ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALICLOUD_ACCESS_KEY",
            "ALICLOUD_SECRET_KEY", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE", "TRAINSTACK_BACKEND",
            "TRAINSTACK_SECRETS_PROVIDER", "ALIBABA_CLOUD_PROFILE", "ALIBABA_CLOUD_CREDENTIALS_FILE")


# --------------------------------------------------------------------------------------------- the program
_graphs: dict[str, mockrun.Graph] = {}


def graph(address: str | None) -> mockrun.Graph:
    """pretrain-70b under mocks: ``None`` leaves the config to the mock runner (its placeholder)."""
    key = repr(address)
    if key not in _graphs:
        config = {"alicloud:region": "cn-wulanchabu"}
        if address is not None:
            config[mockrun.SHARED_FS_ADDRESS_KEY] = address
        _graphs[key] = mockrun.run_program(ROOT / "stacks/pretrain-70b", project="pretrain-70b", stack="dev",
                                           config=config)
    return _graphs[key]


def nodes_in_plan() -> int:
    return json.loads((ROOT / "stacks/pretrain-70b/plan.json").read_text())["compute"]["nodes"]


def user_data(node: mockrun.Resource) -> str:
    import base64
    import gzip

    return gzip.decompress(base64.b64decode(node.get("user_data"))).decode()


def facts_address(g: mockrun.Graph) -> str:
    import json

    return json.loads(g.one("alicloud:oss/bucketObject:BucketObject").get("content"))["shared_fs"]["address"]


def test_cpfs_program_without_the_address_declares_no_nodes_and_says_when_they_come() -> None:
    pending, full = graph(""), graph(None)
    assert not pending.of_type(INSTANCE) and not pending.of_type(ROLE_ATTACHMENT)
    assert pending.outputs["nodes_pending"] is True and pending.outputs["node_ids"] == []
    [warning] = [w for w in pending.warnings if "no nodes yet" in w]
    assert f"the {nodes_in_plan()} nodes come with the next `trainstack up` pass" in warning
    assert mockrun.PLACEHOLDER_NOTE not in pending.warnings, "an explicit empty address is not the placeholder"
    # everything else is declared: the file system, its export, the network, the bucket ...
    others = {r.urn_key for r in full.resources if r.type not in (INSTANCE, ROLE_ATTACHMENT)}
    assert {r.urn_key for r in pending.resources} == others
    assert pending.one("alicloud:nas/protocolMountTarget:ProtocolMountTarget")
    assert pending.outputs["hostfile"] == full.outputs["hostfile"], "the hostfile is known before any node exists"


def test_offline_runs_model_every_node_with_the_placeholder_and_say_so() -> None:
    g = graph(None)
    nodes = g.of_type(INSTANCE)
    assert len(nodes) == nodes_in_plan() and len(g.of_type(ROLE_ATTACHMENT)) == len(nodes)
    assert g.outputs["nodes_pending"] is False
    assert g.outputs["shared_fs_mount_address"] == mockrun.PLACEHOLDER_SHARED_FS_ADDRESS
    assert facts_address(g) == mockrun.PLACEHOLDER_SHARED_FS_ADDRESS
    assert mockrun.PLACEHOLDER_SHARED_FS_ADDRESS not in user_data(nodes[0])  # the nodes read it from the facts
    assert mockrun.PLACEHOLDER_NOTE in g.warnings and "`trainstack up`" in mockrun.PLACEHOLDER_NOTE
    assert not [w for w in g.warnings if "no nodes yet" in w]


def test_a_configured_address_reaches_every_node_and_replaces_the_placeholder() -> None:
    g = graph(ADDRESS)
    nodes = g.of_type(INSTANCE)
    assert len(nodes) == nodes_in_plan()
    assert facts_address(g) == ADDRESS  # in the cluster facts every node reads, not in their user data
    assert mockrun.PLACEHOLDER_NOTE not in g.warnings


def test_programs_without_cpfs_are_untouched_by_the_placeholder() -> None:
    g = mockrun.run_program(ROOT / "stacks/finetune-7b", project="finetune-7b", stack="dev",
                            config={"alicloud:region": "cn-hangzhou", mockrun.SHARED_FS_ADDRESS_KEY: ""})
    assert len(g.of_type(INSTANCE)) == 1 and "nodes_pending" not in g.outputs
    assert "NODES_PENDING" not in (ROOT / "stacks/finetune-7b/__main__.py").read_text()


def test_folder_preview_uses_the_address_up_has_set(tmp_path: Path) -> None:
    folder = tmp_path / "pretrain-70b"
    shutil.copytree(ROOT / "stacks/pretrain-70b", folder)
    config = folder / "Pulumi.dev.yaml"
    config.write_text(config.read_text() + f"  trainstack:sharedFsAddress: {ADDRESS}\n")
    result = api.preview(folder)
    assert result.graph.outputs["shared_fs_mount_address"] == ADDRESS  # type: ignore[attr-defined]
    assert mockrun.PLACEHOLDER_NOTE not in result.graph.warnings  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------- waiting for it
class Recorded:
    """A MountAddressResolver that replays response bodies in order (the last one repeats)."""

    def __init__(self, *bodies: Mapping[str, Any] | Exception):
        self.bodies = list(bodies)
        self.calls: list[tuple[str, str, str]] = []

    def check(self) -> None:
        return None

    def describe(self, region: str, file_system_id: str, export_id: str) -> Mapping[str, Any]:
        self.calls.append((region, file_system_id, export_id))
        body = self.bodies.pop(0) if len(self.bodies) > 1 else self.bodies[0]
        if isinstance(body, Exception):
            raise body
        return body


class Clock:
    def __init__(self) -> None:
        self.now, self.slept = 0.0, []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


class ApiError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def wait(resolver: Recorded, clock: Clock, said: list[str], timeout: float = 300) -> str:
    return live.wait_for_mount_address(resolver, "cn-wulanchabu", FS_ID, EXPORT_ID, say=said.append,
                                       timeout=timeout, sleep=clock.sleep, clock=clock)


def test_waits_with_backoff_until_the_export_is_available() -> None:
    clock, said = Clock(), []
    resolver = Recorded(RECORDED["creating"], RECORDED["creating"], ApiError("Throttling.User", "slow down"),
                        RECORDED["available"])
    assert wait(resolver, clock, said) == ADDRESS
    assert clock.slept == [2, 4, 8]
    assert resolver.calls == [("cn-wulanchabu", FS_ID, EXPORT_ID)] * 4
    assert said[0] == f"CPFS: export {EXPORT_ID} is CREATING, without a mount address yet; asking again in 2 s"


def test_a_resolver_timeout_is_a_clear_error() -> None:
    clock, said = Clock(), []
    with pytest.raises(live.MountAddressError) as e:
        wait(Recorded(RECORDED["creating"]), clock, said, timeout=60)
    message = str(e.value)
    assert message.startswith(f"export {EXPORT_ID} of {FS_ID} has no mount address after 60 s (last: CREATING), so no "
                              "nodes were deployed. Run `trainstack up` again to retry")
    assert "pulumi config set trainstack:sharedFsAddress ADDRESS" in message
    assert e.value.exit_code == live.EXIT_ENGINE and sum(clock.slept) <= 60


def test_an_api_error_that_will_not_pass_stops_at_once() -> None:
    clock, said = Clock(), []
    with pytest.raises(live.MountAddressError) as e:
        wait(Recorded(ApiError("InvalidAccessKeyId.NotFound", "Specified access key is not found.")), clock, said)
    message = str(e.value)
    assert "DescribeProtocolMountTarget for export" in message and "Specified access key is not found" in message
    assert clock.slept == []


# --------------------------------------------------------------------------------------------- trainstack up
@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch repository with the CPFS example, a fake pulumi on PATH, fake credentials and a passphrase."""
    (tmp_path / "examples").mkdir()
    (tmp_path / ".git").mkdir()
    shutil.copy(ROOT / SPEC, tmp_path / SPEC)
    monkeypatch.chdir(tmp_path)
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/opt/pulumi/bin/pulumi" if name == "pulumi"
                        else real_which(name, *a, **k))
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI5tFAKEKEYID0000001")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "FAKEsecretVALUE9f8e7d6c5b4a")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "correct-horse-battery-FAKE")
    return tmp_path


def cpfs_engine(**kwargs: Any) -> FakeEngine:
    steps = [Step("create", "alicloud:nas/fileSystem:FileSystem", "shared-fs",
                  URN + "alicloud:nas/fileSystem:FileSystem::shared-fs")]
    outputs = {"shared_fs_id": OutputValue(FS_ID), "shared_fs_export_id": OutputValue(EXPORT_ID)}
    return FakeEngine(steps, stack_outputs=outputs, **kwargs)


def up(args: list[str], engine: FakeEngine, resolver: Any = None, input: str | None = None) -> Result:
    obj = {"engine": engine, "mount_address_resolver": resolver, "stock_checker": RecordedStock.in_stock()}
    return CliRunner().invoke(main, ["up", *args], obj=obj, input=input, catch_exceptions=False)


def stack_config(folder: Path) -> dict[str, Any]:
    return load_yaml((folder / "Pulumi.dev.yaml").read_text())["config"]


def test_up_of_a_cpfs_stack_deploys_twice_with_the_address_it_looked_up(workspace: Path) -> None:
    engine = cpfs_engine()
    resolver = Recorded(RECORDED["available"])
    result = up([SPEC, "--yes"], engine, resolver)
    assert result.exit_code == 0, result.output
    assert [c[0] for c in engine.calls] == ["resources", "outputs", "up", "set_config", "up"]
    assert engine.calls[3][1]["key"] == "trainstack:sharedFsAddress" and engine.calls[3][1]["value"] == ADDRESS
    assert resolver.calls == [("cn-wulanchabu", FS_ID, EXPORT_ID)], "region from the stack config, IDs from outputs"
    folder = workspace / "stacks/pretrain-70b"
    assert stack_config(folder)["trainstack:sharedFsAddress"] == ADDRESS
    out = result.stdout
    for line in ("CPFS: the nodes mount the file system at first boot, so they come in a second pass",
                 (f"CPFS: looking up the mount address of export {EXPORT_ID} of {FS_ID} (NAS API "
                  "DescribeProtocolMountTarget at nas.cn-wulanchabu.aliyuncs.com)"),
                 f"CPFS: export {EXPORT_ID} mounts at {ADDRESS}; setting trainstack:sharedFsAddress in Pulumi.dev.yaml",
                 f"stack digest: {live.stack_digest(folder)} (with trainstack:sharedFsAddress)",
                 "second pass: deploying the nodes with the CPFS mount address"):
        assert line in out
    assert out.count("Resources: ") == 2
    # the address is now configured: the folder is still fresh, and the next up is one pass without the NAS API
    again = cpfs_engine(state=list(engine.state or []))
    assert up([SPEC, "--yes"], again, Recorded(ValueError("must not be called"))).exit_code == 0
    assert [c[0] for c in again.calls] == ["resources", "up"]


def test_up_asks_before_each_pass(workspace: Path) -> None:
    engine = cpfs_engine()
    result = up([SPEC], engine, Recorded(RECORDED["available"]), input="y\ny\n")
    assert result.exit_code == 0, result.output
    assert [c[0] for c in engine.calls] == ["resources", "outputs", "preview", "up", "set_config", "preview", "up"]
    assert result.stdout.count("Deploy these changes to pretrain-70b (stack dev)?") == 2


def test_a_stack_with_the_address_set_deploys_once_without_the_sdk(workspace: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    folder = api.render_stack(SPEC).dest
    config = folder / "Pulumi.dev.yaml"
    config.write_text(config.read_text() + f"  trainstack:sharedFsAddress: {ADDRESS}\n")
    monkeypatch.setitem(sys.modules, "alibabacloud_nas20170626", None)  # the SDK is not needed, so not checked
    engine = cpfs_engine()
    result = up([str(folder), "--yes"], engine)
    assert result.exit_code == 0, result.output
    assert [c[0] for c in engine.calls] == ["resources", "up"]
    assert "CPFS" not in result.stdout


def test_missing_sdk_is_one_sentence_and_its_own_exit_code_before_anything_runs(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "alibabacloud_nas20170626", None)
    engine = cpfs_engine()
    result = up([SPEC, "--yes"], engine)  # the real SdkMountAddressResolver
    assert result.exit_code == live.EXIT_NO_NAS_SDK == 29
    assert result.stderr == ("error: this stack's CPFS mount address is looked up with Alibaba Cloud's NAS SDK "
                             "(alibabacloud_nas20170626 is not installed), so nothing was deployed: "
                             "pip install 'trainstack[live]'.\n")
    assert engine.calls == [] and not (workspace / "stacks").exists(), "before any engine call or render"
    assert "Traceback" not in result.output


def test_a_lookup_that_times_out_leaves_a_clear_error_and_no_config(workspace: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mountaddr, "WAIT_SECONDS", 0.0)
    engine = cpfs_engine()
    result = up([SPEC, "--yes"], engine, Recorded(RECORDED["creating"]))
    assert result.exit_code == live.EXIT_ENGINE
    assert [c[0] for c in engine.calls] == ["resources", "outputs", "up"]
    assert f"error: export {EXPORT_ID} of {FS_ID} has no mount address after 0 s (last: CREATING)" in result.stderr
    assert "Run `trainstack up` again to retry" in result.stderr
    assert "trainstack:sharedFsAddress" not in stack_config(workspace / "stacks/pretrain-70b")


def test_after_an_earlier_deploy_the_address_is_looked_up_first_and_up_runs_once(workspace: Path) -> None:
    """A rerun after a failed lookup, or nodes made by an older trainstack: no pass may run without the address."""
    state = [StateResource(URN + "alicloud:nas/fileSystem:FileSystem::shared-fs",
                           "alicloud:nas/fileSystem:FileSystem", FS_ID, protect=True, retain_on_delete=True)]
    engine = cpfs_engine(state=state)
    result = up([SPEC, "--yes"], engine, Recorded(RECORDED["available"]))
    assert result.exit_code == 0, result.output
    assert [c[0] for c in engine.calls] == ["resources", "outputs", "set_config", "up"]
    assert "an earlier deploy created the export" in result.stdout and "second pass" not in result.stdout


def test_live_preview_of_a_cpfs_stack_says_the_nodes_come_in_a_second_pass(workspace: Path) -> None:
    text = live.live_preview(SPEC, engine=cpfs_engine())
    assert "CPFS: these are the changes of the first pass; `trainstack up` then looks up the export's mount " \
        "address, sets trainstack:sharedFsAddress and deploys the nodes in a second pass" in text
    folder = api.render_stack(SPEC).dest
    config = folder / "Pulumi.dev.yaml"
    config.write_text(config.read_text() + f"  trainstack:sharedFsAddress: {ADDRESS}\n")
    assert "CPFS:" not in live.live_preview(folder, engine=cpfs_engine())


def test_missing_export_outputs_are_a_clear_error(workspace: Path) -> None:
    engine = FakeEngine([], stack_outputs={})
    result = up([SPEC, "--yes"], engine, Recorded(RECORDED["available"]))
    assert result.exit_code == live.EXIT_ENGINE
    assert "has no shared_fs_id / shared_fs_export_id outputs" in result.stderr


# --------------------------------------------------------------------------------------------- the real SDK
def test_the_sdk_resolver_sends_the_documented_request(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("alibabacloud_nas20170626")
    resolver = live.SdkMountAddressResolver(env={"ALICLOUD_ACCESS_KEY": "LTAI5tFAKE", "ALICLOUD_SECRET_KEY": "FAKE"})
    resolver.check()
    assert resolver.request(FS_ID, EXPORT_ID).to_map() == {
        "FileSystemId": FS_ID, "Filters": [{"Key": "ExportIds", "Value": EXPORT_ID}]}
    seen: dict[str, Any] = {}
    make_client = resolver.client

    def offline_client(region: str) -> Any:
        client = make_client(region)
        seen["endpoint"], seen["region"] = client._endpoint, client._region_id

        def call_api(params: Any, request: Any, runtime: Any) -> dict[str, Any]:  # the SDK's one HTTP entry point
            seen["action"], seen["version"], seen["query"] = params.action, params.version, dict(request.query)
            return {"body": RECORDED["available"], "headers": {}, "statusCode": 200}

        client.call_api = call_api
        return client

    monkeypatch.setattr(resolver, "client", offline_client)
    body = resolver.describe("cn-wulanchabu", FS_ID, EXPORT_ID)
    assert seen == {"endpoint": "nas.cn-wulanchabu.aliyuncs.com", "region": "cn-wulanchabu",
                    "action": "DescribeProtocolMountTarget", "version": "2017-06-26",
                    "query": {"FileSystemId": FS_ID, "Filters.1.Key": "ExportIds", "Filters.1.Value": EXPORT_ID}}
    assert live.wait_for_mount_address(Recorded(body), "cn-wulanchabu", FS_ID, EXPORT_ID, say=print) == ADDRESS
