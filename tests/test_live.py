"""The live commands (up, destroy, refresh, outputs, preview --live) behind the Engine port.

Every command runs against :class:`generator.live.FakeEngine` with a faked ``pulumi`` on PATH and a controlled
environment, so these tests need no CLI, credentials or network. The Pulumi-specific pieces (event and error
translation) are tested with the Automation API's own classes. One integration test runs the real engine when a
``pulumi`` CLI is installed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from stock_recorded import RecordedStock

from generator import api, live
from generator.cli import main
from generator.live import FakeEngine, OutputValue, StateResource, Step
from generator.live.pulumi_engine import _Collector
from generator.render.stackdir import load_yaml

ROOT = Path(__file__).resolve().parent.parent
SPEC = "examples/finetune-7b.yaml"
FAKE_KEY_ID = "LTAI5tFAKEKEYID0000001"
FAKE_SECRET = "FAKEsecretVALUE9f8e7d6c5b4a"
FAKE_PASSPHRASE = "correct-horse-battery-FAKE"
CREDENTIAL_VARS = (
    *live.SECRET_ENV_VARS, "PULUMI_CONFIG_PASSPHRASE_FILE", "ALIBABA_CLOUD_PROFILE", "ALICLOUD_PROFILE",
    "ALIBABA_CLOUD_CREDENTIALS_FILE", "ALICLOUD_SHARED_CREDENTIALS_FILE", "ALIBABA_CLOUD_ECS_METADATA",
    "ALICLOUD_ECS_ROLE_NAME", "ALIBABA_CLOUD_ROLE_ARN", "ALIBABA_CLOUD_OIDC_TOKEN_FILE",
    "ALIBABA_CLOUD_CREDENTIALS_URI", "TRAINSTACK_BACKEND", "TRAINSTACK_SECRETS_PROVIDER", "PULUMI_BACKEND_URL",
)
URN = "urn:pulumi:dev::finetune-7b::"


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch repository (examples/ copied in) as the working folder, and an environment with no secrets."""
    (tmp_path / "examples").mkdir()
    (tmp_path / ".git").mkdir()  # the top of a repository: stacks/ goes here, whatever the working folder
    shutil.copy(ROOT / SPEC, tmp_path / SPEC)
    monkeypatch.chdir(tmp_path)
    for var in CREDENTIAL_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.fixture
def pulumi_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/opt/pulumi/bin/pulumi" if name == "pulumi"
                        else real_which(name, *a, **k))


@pytest.fixture
def ready(pulumi_on_path: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything preflight wants: a CLI, an AccessKey pair and a passphrase (all fake)."""
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", FAKE_KEY_ID)
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", FAKE_SECRET)
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", FAKE_PASSPHRASE)


def cli(args: list[str], engine: FakeEngine, input: str | None = None) -> Result:
    obj = {"engine": engine, "stock_checker": RecordedStock.in_stock()}
    return CliRunner().invoke(main, args, obj=obj, input=input, catch_exceptions=False)


def plan_steps() -> list[Step]:
    return [Step("create", "alicloud:vpc/network:Network", "vpc", URN + "alicloud:vpc/network:Network::vpc"),
            Step("create", "alicloud:oss/bucket:Bucket", "checkpoint-bucket",
                 URN + "alicloud:oss/bucket:Bucket::checkpoint-bucket"),
            Step("create", "alicloud:ecs/instance:Instance", "finetune-7b-node-000",
                 URN + "alicloud:ecs/instance:Instance::finetune-7b-node-000")]


def deployed_state() -> list[StateResource]:
    """A CPFS-style cluster: the file system lives in the VPC, so destroying around it must keep the VPC."""
    vpc, vsw = URN + "alicloud:vpc/network:Network::vpc", URN + "alicloud:vpc/switch:Switch::vswitch-storage"
    return [
        StateResource(URN + "pulumi:pulumi:Stack::finetune-7b-dev", "pulumi:pulumi:Stack"),
        StateResource(URN + "pulumi:providers:alicloud::default_4_0_0", "pulumi:providers:alicloud", "prov-1"),
        StateResource(vpc, "alicloud:vpc/network:Network", "vpc-123"),
        StateResource(vsw, "alicloud:vpc/switch:Switch", "vsw-456", dependencies=(vpc,)),
        StateResource(URN + "alicloud:nas/fileSystem:FileSystem::shared-fs", "alicloud:nas/fileSystem:FileSystem",
                      "cpfs-0011", protect=True, retain_on_delete=True, dependencies=(vpc, vsw)),
        StateResource(URN + "alicloud:oss/bucket:Bucket::checkpoint-bucket", "alicloud:oss/bucket:Bucket",
                      "ft7b-ckpt", protect=True, retain_on_delete=True),
        StateResource(URN + "alicloud:ecs/instance:Instance::finetune-7b-node-000", "alicloud:ecs/instance:Instance",
                      "i-789", dependencies=(vsw,)),
    ]


def render_folder() -> Path:
    return api.render_stack(SPEC).dest


def edit_spec(old: str, new: str) -> None:
    text = Path(SPEC).read_text()
    assert old in text
    Path(SPEC).write_text(text.replace(old, new))


# --------------------------------------------------------------------------------------------- preflight
def test_missing_cli_is_one_sentence_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    engine = FakeEngine(plan_steps())
    result = cli(["up", SPEC, "--yes"], engine)
    assert result.exit_code == live.EXIT_NO_PULUMI == 20
    assert result.stderr.strip() == ("error: the pulumi CLI is not on PATH: install the Pulumi CLI: "
                                     "curl -fsSL https://get.pulumi.com | sh, or see https://www.pulumi.com/docs/install/")
    assert engine.calls == []
    assert not Path("stacks").exists(), "preflight must fail before anything is rendered"


def test_missing_credentials(pulumi_on_path: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", FAKE_PASSPHRASE)
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", FAKE_KEY_ID)  # an id without its secret is not enough
    engine = FakeEngine(plan_steps())
    result = cli(["up", SPEC, "--yes"], engine)
    assert result.exit_code == live.EXIT_NO_CREDENTIALS == 21
    assert "no Alibaba Cloud credentials found: set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET" \
        in result.stderr
    assert "Traceback" not in result.output and engine.calls == []


@pytest.mark.parametrize("setup", ["legacy-env", "profile-file"])
def test_other_credential_sources_are_accepted(setup: str, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if setup == "legacy-env":
        monkeypatch.setenv("ALICLOUD_ACCESS_KEY", FAKE_KEY_ID)
        monkeypatch.setenv("ALICLOUD_SECRET_KEY", FAKE_SECRET)
    else:
        (workspace / "home" / ".aliyun").mkdir(parents=True)
        (workspace / "home" / ".aliyun" / "config.json").write_text('{"current": "default", "profiles": []}')
    assert live.credential_source(dict(__import__("os").environ)) is not None


def test_missing_passphrase(pulumi_on_path: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", FAKE_KEY_ID)
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", FAKE_SECRET)
    result = cli(["up", SPEC, "--yes"], FakeEngine(plan_steps()))
    assert result.exit_code == live.EXIT_NO_PASSPHRASE == 22
    assert "export PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE)" in result.stderr
    # another secrets provider needs no passphrase
    monkeypatch.setenv("TRAINSTACK_SECRETS_PROVIDER", "awskms://alias/trainstack")
    assert cli(["up", SPEC, "--yes"], FakeEngine(plan_steps())).exit_code == 0


def test_passphrase_file_must_exist(ready: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE_FILE", "/nonexistent/passphrase")
    result = cli(["up", SPEC, "--yes"], FakeEngine(plan_steps()))
    assert result.exit_code == live.EXIT_NO_PASSPHRASE
    assert "/nonexistent/passphrase, which does not exist" in result.stderr


# --------------------------------------------------------------------------------------------- up
def test_up_spec_renders_then_deploys_with_progress(ready: None) -> None:
    engine = FakeEngine(plan_steps(), stack_outputs={"master_addr": OutputValue("10.0.0.10")})
    result = cli(["up", SPEC], engine, input="y\n")
    assert result.exit_code == 0, result.output
    folder = Path("stacks/finetune-7b")
    assert stackdir_is_fresh(folder)
    assert [c[0] for c in engine.calls] == ["resources", "preview", "up"]
    target = engine.calls[1][1]["target"]
    assert target.stack_dir == folder and target.project == "finetune-7b" and target.stack == "dev"
    assert target.backend == "file://" + (folder.resolve() / ".trainstack/state").as_posix()
    out = result.stdout
    assert f"stack digest: {live.stack_digest(folder)}" in out
    assert "  +  ecs:Instance" in out and "Resources: + 3 to create" in out
    assert "creating ecs:Instance finetune-7b-node-000 ... done (3/3)" in out
    assert "master_addr" in out and "10.0.0.10" in out


def test_up_from_a_subfolder_deploys_the_repository_stack(ready: None, workspace: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    render_folder()
    monkeypatch.chdir(workspace / "examples")
    engine = FakeEngine(plan_steps())
    result = cli(["up", "finetune-7b.yaml", "--yes"], engine)
    assert result.exit_code == 0, result.output
    target = engine.calls[-1][1]["target"]
    assert target.stack_dir.resolve() == workspace / "stacks" / "finetune-7b"
    assert not (workspace / "examples" / "stacks").exists()


def test_up_refuses_to_start_a_second_state_beside_an_existing_one(ready: None, workspace: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """trainstack 0.1 put stacks/ under the working folder: a stack deployed from examples/ has its state there."""
    old = workspace / "examples" / "stacks" / "finetune-7b"
    state = old / ".trainstack" / "state" / ".pulumi" / "stacks" / "finetune-7b" / "dev.json"
    state.parent.mkdir(parents=True)
    state.write_text("{}")
    engine = FakeEngine(plan_steps())
    result = cli(["up", SPEC, "--yes"], engine)
    assert result.exit_code == 2 and engine.calls == []
    assert "already holds the Pulumi state of finetune-7b (stack dev)" in result.stderr
    assert "a second, empty state" in result.stderr and not (workspace / "stacks").exists()
    monkeypatch.setenv("TRAINSTACK_BACKEND", "file:///elsewhere")  # an explicit backend: the user's choice
    assert cli(["up", SPEC, "--yes"], engine).exit_code == 0


def stackdir_is_fresh(folder: Path) -> bool:
    return live.check_fresh(folder).stale == ()


def test_up_declined_changes_nothing(ready: None) -> None:
    engine = FakeEngine(plan_steps())
    result = cli(["up", SPEC], engine, input="n\n")
    assert result.exit_code == live.EXIT_DECLINED
    assert [c[0] for c in engine.calls] == ["resources", "preview"]


def test_up_yes_skips_preview_and_question(ready: None) -> None:
    engine = FakeEngine(plan_steps())
    result = cli(["up", SPEC, "--yes"], engine)
    assert result.exit_code == 0
    assert [c[0] for c in engine.calls] == ["resources", "up"]
    assert "creating oss:Bucket checkpoint-bucket ... done (2)" in result.stdout


def test_stale_stack_folder_is_refused(ready: None) -> None:
    folder = render_folder()
    edit_spec("team: llm-apps", "team: platform")
    engine = FakeEngine(plan_steps())
    result = cli(["up", str(folder), "--yes"], engine)
    assert result.exit_code == live.EXIT_STALE
    assert "is stale against examples/finetune-7b.yaml" in result.stderr
    assert "trainstack render examples/finetune-7b.yaml" in result.stderr
    assert engine.calls == []


def test_hand_edited_program_is_stale(ready: None) -> None:
    folder = render_folder()
    main_py = folder / "__main__.py"
    main_py.write_text(main_py.read_text() + "\n# tweak\n")
    result = cli(["up", str(folder), "--yes"], FakeEngine(plan_steps()))
    assert result.exit_code == live.EXIT_STALE and "__main__.py" in result.stderr


def test_pulumi_additions_to_stack_config_are_not_stale_and_salt_does_not_move_the_digest(ready: None) -> None:
    folder = render_folder()
    before = live.stack_digest(folder)
    config = folder / "Pulumi.dev.yaml"
    config.write_text(config.read_text() + "encryptionsalt: v1:c2FsdA==:v1:abc:def\n")
    assert live.stack_digest(folder) == before, "Pulumi's passphrase salt is bookkeeping, not deployed content"
    config.write_text(config.read_text().replace("config:\n", "config:\n  trainstack:imageId: m-abc123\n"))
    assert live.stack_digest(folder) != before, "a config value changes what is deployed"
    engine = FakeEngine(plan_steps())
    assert cli(["up", str(folder), "--yes"], engine).exit_code == 0
    assert [c[0] for c in engine.calls] == ["resources", "up"]


def test_up_spec_rerender_keeps_settings_made_with_pulumi(ready: None) -> None:
    folder = render_folder()
    config = folder / "Pulumi.dev.yaml"
    config.write_text(config.read_text() + "  trainstack:imageId: m-abc123\nencryptionsalt: v1:salt\n")
    edit_spec("team: llm-apps", "team: platform")
    result = cli(["up", SPEC, "--yes"], FakeEngine(plan_steps()))
    assert result.exit_code == 0, result.output
    assert "update  stacks/finetune-7b/plan.json" in result.stdout
    kept = load_yaml(config.read_text())
    assert kept["config"]["trainstack:imageId"] == "m-abc123" and kept["encryptionsalt"] == "v1:salt"
    assert kept["config"]["alicloud:region"] == "cn-hangzhou"
    assert stackdir_is_fresh(folder)


def test_digest_mismatch_is_refused_and_the_right_digest_deploys(ready: None) -> None:
    folder = render_folder()
    engine = FakeEngine(plan_steps())
    result = cli(["up", str(folder), "--yes", "--expect-digest", "0" * 64], engine)
    assert result.exit_code == live.EXIT_DIGEST
    assert f"has stack digest {live.stack_digest(folder)}, not the reviewed {'0' * 64}" in result.stderr
    spec_digest = json.loads((folder / "plan.json").read_text())["spec_digest"]
    result = cli(["up", str(folder), "--yes", "--expect-digest", spec_digest], engine)
    assert result.exit_code == live.EXIT_DIGEST and "not the spec digest" in result.stderr
    assert engine.calls == []
    good = live.stack_digest(folder)
    assert cli(["up", str(folder), "--yes", "--expect-digest", good.upper()], engine).exit_code == 0
    assert [c[0] for c in engine.calls] == ["resources", "up"]


def test_stack_digest_covers_the_program_not_local_tooling(workspace: Path) -> None:
    folder = render_folder()
    d0 = live.stack_digest(folder)
    for junk in ("venv/bin/python", ".trainstack/state/.pulumi/stacks/x.json", "__pycache__/m.pyc",
                 "Pulumi.other.yaml"):
        (folder / junk).parent.mkdir(parents=True, exist_ok=True)
        (folder / junk).write_text("anything")
    assert live.stack_digest(folder) == d0
    (folder / "node-init.sh").write_text((folder / "node-init.sh").read_text() + "echo extra\n")
    assert live.stack_digest(folder) != d0
    assert len(d0) == 64


# --------------------------------------------------------------------------------------------- backends
def test_backend_default_env_and_flag(ready: None, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = render_folder()
    assert live.target_for(folder).backend.endswith("/stacks/finetune-7b/.trainstack/state")
    monkeypatch.setenv("TRAINSTACK_BACKEND", "s3://team-state?endpoint=oss-cn-hangzhou.aliyuncs.com")
    assert live.target_for(folder).backend.startswith("s3://team-state")
    assert live.target_for(folder, backend="https://api.pulumi.com").backend == "https://api.pulumi.com"
    result = cli(["up", str(folder), "--yes", "--backend", "oss://bucket"], FakeEngine())
    assert result.exit_code == 2 and "Pulumi has no oss:// backend" in result.stderr
    assert live.display_backend("postgres://user:pw@db/state?sslmode=x") == "postgres://***@db/state?..."


# --------------------------------------------------------------------------------------------- destroy
def test_destroy_keeps_data_and_says_what_was_kept(ready: None) -> None:
    folder = render_folder()
    engine = FakeEngine(state=deployed_state())
    result = cli(["destroy", str(folder), "--yes"], engine)
    assert result.exit_code == 0, result.output
    destroys = [c for c in engine.calls if c[0] == "destroy"]
    assert [(c[1]["exclude_protected"], c[1]["preview_only"]) for c in destroys] == [(True, False)]
    assert {r.name for r in engine.state or []} >= {"shared-fs", "checkpoint-bucket", "vpc", "vswitch-storage"}
    assert "finetune-7b-node-000" not in {r.name for r in engine.state or []}
    out = result.stdout
    assert "Kept 4 resources" in out
    assert "shared-fs" in out and "(protected data)" in out and "(needed by the data)" in out
    assert "trainstack destroy stacks/finetune-7b --delete-data" in out


def test_destroy_previews_and_asks_first(ready: None) -> None:
    folder = render_folder()
    engine = FakeEngine(state=deployed_state())
    result = cli(["destroy", str(folder)], engine, input="n\n")
    assert result.exit_code == live.EXIT_DECLINED
    assert [c[1]["preview_only"] for c in engine.calls if c[0] == "destroy"] == [True]
    assert "-  ecs:Instance" in result.stdout
    assert "Kept (protected data, what secures it, and what it needs):" in result.stdout
    assert len(engine.state or []) == len(deployed_state())


def test_delete_data_requires_the_stack_name(ready: None) -> None:
    folder = render_folder()
    engine = FakeEngine(state=deployed_state())
    result = cli(["destroy", str(folder), "--yes", "--delete-data"], engine, input="dev\n")
    assert result.exit_code == live.EXIT_DECLINED
    assert "Type the stack name (finetune-7b) to confirm" in result.stdout
    assert [c[0] for c in engine.calls] == ["resources"], "nothing may be unprotected or destroyed"
    result = cli(["destroy", str(folder), "--yes", "--delete-data", "--confirm-name", "dev"], engine)
    assert result.exit_code == live.EXIT_DECLINED and "is not the stack name 'finetune-7b'" in result.stderr


def test_delete_data_with_the_name_unprotects_then_destroys_and_explains_retention(ready: None) -> None:
    folder = render_folder()
    engine = FakeEngine(state=deployed_state())
    result = cli(["destroy", str(folder), "--delete-data"], engine, input="finetune-7b\n")
    assert result.exit_code == 0, result.output
    ops = [(c[0], c[1].get("exclude_protected")) for c in engine.calls if c[0] != "resources"]
    assert ops == [("unprotect_all", None), ("destroy", False)]
    assert engine.state == []
    out = result.stdout
    assert "were NOT deleted (retain_on_delete)" in out
    assert "ossutil rm oss://ft7b-ckpt -r -f --all-versions" in out
    assert "aliyun nas DeleteFileSystem --FileSystemId cpfs-0011" in out
    # pipelines: --confirm-name replaces the prompt
    engine = FakeEngine(state=deployed_state())
    result = cli(["destroy", str(folder), "--yes", "--delete-data", "--confirm-name", "finetune-7b"], engine)
    assert result.exit_code == 0 and "Type the stack name" not in result.stdout


BUCKET_URN = URN + "alicloud:oss/bucket:Bucket::checkpoint-bucket"
BUCKET_ACL = "alicloud:oss/bucketAcl:BucketAcl"
BUCKET_PAB = "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock"


def state_with_bucket_security(folder: Path, protected: bool | None = None) -> list[StateResource]:
    """deployed_state() plus the bucket's ACL and public access block, with the options the rendered program gives
    them under the mock runtime (or ``protected``, for a stack deployed by an older program)."""
    from generator.preview.mockrun import run_program

    graph = run_program(folder, project="finetune-7b", stack="dev", config={"alicloud:region": "cn-hangzhou"})
    extra = []
    for token in (BUCKET_ACL, BUCKET_PAB):
        r = graph.one(token)
        protect = r.protect if protected is None else protected
        retain = r.retain_on_delete if protected is None else protected
        extra.append(StateResource(f"{URN}{token}::{r.name}", token, "ft7b-ckpt", protect=protect,
                                   retain_on_delete=retain, dependencies=(BUCKET_URN,)))
    return [*deployed_state(), *extra]


def test_data_keeping_destroy_keeps_what_secures_the_bucket_and_says_why(ready: None) -> None:
    folder = render_folder()
    engine = FakeEngine(state=state_with_bucket_security(folder))
    result = cli(["destroy", str(folder), "--yes"], engine)
    assert result.exit_code == 0, result.output
    left = {r.name for r in engine.state or []}
    assert {"checkpoint-bucket", "checkpoint-bucket-acl", "checkpoint-bucket-public-access-block"} <= left
    out = result.stdout
    assert "Kept 6 resources" in out
    for name in ("checkpoint-bucket-acl", "checkpoint-bucket-public-access-block"):
        line = next(line for line in out.splitlines() if f" {name} " in line)
        assert line.endswith("(secures the kept bucket ft7b-ckpt)"), line
    assert "warning" not in result.stderr
    # the preview before the question lists them too
    engine = FakeEngine(state=state_with_bucket_security(folder))
    result = cli(["destroy", str(folder)], engine, input="n\n")
    assert result.exit_code == live.EXIT_DECLINED
    kept = result.stdout.split("Kept (protected data, what secures it, and what it needs):", 1)[1]
    assert "checkpoint-bucket-public-access-block" in kept and "(secures the kept bucket ft7b-ckpt)" in kept


def test_delete_data_releases_what_secures_the_bucket_with_it(ready: None) -> None:
    folder = render_folder()
    engine = FakeEngine(state=state_with_bucket_security(folder))
    result = cli(["destroy", str(folder), "--yes", "--delete-data", "--confirm-name", "finetune-7b"], engine)
    assert result.exit_code == 0, result.output
    assert engine.state == []
    assert "public access block of OSS bucket ft7b-ckpt" in result.stdout and "goes with it" in result.stdout


def test_destroy_of_a_stack_whose_bucket_security_is_unprotected_warns_and_needs_a_person(ready: None) -> None:
    folder = render_folder()
    engine = FakeEngine(state=state_with_bucket_security(folder, protected=False))
    result = cli(["destroy", str(folder), "--yes"], engine)
    assert result.exit_code == live.EXIT_DECLINED
    assert "would lose its public access block" in result.stderr and f"trainstack up {folder}" in result.stderr
    assert [c[0] for c in engine.calls] == ["resources"], "nothing may be destroyed"
    result = cli(["destroy", str(folder)], engine, input="y\n")
    assert result.exit_code == 0, result.output
    assert "would lose its ACL" in result.stderr
    assert "checkpoint-bucket-public-access-block" not in {r.name for r in engine.state or []}


def test_destroy_of_a_stack_never_deployed_is_a_no_op(ready: None) -> None:
    folder = render_folder()
    result = cli(["destroy", str(folder), "--yes"], FakeEngine(state=None))
    assert result.exit_code == 0 and "nothing to destroy" in result.stdout


# --------------------------------------------------------------------------------------------- outputs, refresh
def test_outputs_mask_secrets_and_need_no_cloud_credentials(pulumi_on_path: None,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", FAKE_PASSPHRASE)
    folder = render_folder()
    engine = FakeEngine(state=deployed_state(), stack_outputs={
        "hostfile": OutputValue("10.0.0.10 slots=8\n"), "admin_token": OutputValue("tok-123456", secret=True)})
    result = cli(["outputs", str(folder), "--json"], engine)
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"admin_token": "[secret]", "hostfile": "10.0.0.10 slots=8\n"}
    text = cli(["outputs", SPEC], engine).stdout
    assert "hostfile:\n    10.0.0.10 slots=8" in text and "tok-123456" not in text
    assert cli(["outputs", str(folder)], FakeEngine(state=None)).exit_code == live.EXIT_NOT_DEPLOYED


def test_refresh_without_drift_writes_nothing(ready: None) -> None:
    folder = render_folder()
    engine = FakeEngine(state=deployed_state())
    result = cli(["refresh", str(folder)], engine)
    assert result.exit_code == 0 and "no drift" in result.stdout
    assert [c[1]["preview_only"] for c in engine.calls if c[0] == "refresh"] == [True]


def test_commands_on_a_spec_without_a_folder_say_so(ready: None) -> None:
    result = cli(["refresh", SPEC, "--yes"], FakeEngine())
    assert result.exit_code == 2 and "has no stack folder at stacks/finetune-7b" in result.stderr
    assert cli(["up", "nope.yaml"], FakeEngine()).exit_code == 2


# --------------------------------------------------------------------------------------------- secrets
def test_no_secret_value_is_ever_printed(ready: None) -> None:
    leaky = f"InvalidAccessKeyId: AccessKeyId {FAKE_KEY_ID} with secret {FAKE_SECRET}, passphrase {FAKE_PASSPHRASE}"
    engine = FakeEngine(plan_steps(), diagnostics=[("error", leaky)])
    result = cli(["up", SPEC, "--yes"], engine)
    failing = FakeEngine(plan_steps(), fail_with=live.EngineFailed(f"the Pulumi engine failed: {leaky}"))
    failed = cli(["up", SPEC, "--yes"], failing)
    assert failed.exit_code == live.EXIT_ENGINE
    for output in (result.output, failed.output):
        assert "[redacted]" in output
        for secret in (FAKE_KEY_ID, FAKE_SECRET, FAKE_PASSPHRASE):
            assert secret not in output


# --------------------------------------------------------------------------------------------- Pulumi adapters
def test_pulumi_command_errors_become_one_sentence(ready: None) -> None:
    from pulumi.automation import CommandResult, errors

    target = live.target_for(render_folder())
    stderr = ("warning: A new version of Pulumi is available\n"
              f"error: InvalidAccessKeyId {FAKE_KEY_ID}\nerror: update failed")
    err = live.engine_error(errors.create_command_error(CommandResult("Diagnostics:", stderr, 255)), target)
    assert isinstance(err, live.EngineFailed) and err.exit_code == live.EXIT_ENGINE
    assert str(err).startswith("the Pulumi engine failed for finetune-7b/dev: error: InvalidAccessKeyId [redacted]")
    assert "new version" not in str(err) and FAKE_KEY_ID not in str(err)
    locked = live.engine_error(errors.create_command_error(CommandResult(
        "", "error: the stack is currently locked by 1 lock(s).", 255)), target)
    assert isinstance(locked, live.StackLocked) and locked.exit_code == live.EXIT_LOCKED
    assert "pulumi cancel --stack dev" in str(locked)
    missing = live.engine_error(errors.create_command_error(CommandResult("", "no stack named 'dev' found", 255)),
                                target)
    assert missing.exit_code == live.EXIT_NOT_DEPLOYED


def test_pulumi_events_become_progress_lines() -> None:
    from pulumi.automation import events

    def event(kind: str, op: str, name: str, typ: str = "alicloud:ecs/instance:Instance") -> Any:
        meta = {"op": op, "urn": f"{URN}{typ}::{name}", "type": typ, "provider": ""}
        return events.EngineEvent.from_json({"sequence": 1, "timestamp": 0, kind: {"metadata": meta}})

    lines, emit = live.collect_lines()
    collector = _Collector(live.ProgressPrinter(emit, total=2))
    collector(event("resourcePreEvent", "create", "pulumi-stack", "pulumi:pulumi:Stack"))
    collector(event("resourcePreEvent", "create", "pretrain-70b-node-003"))
    collector(event("resOutputsEvent", "create", "pretrain-70b-node-003"))
    collector(event("resourcePreEvent", "same", "vpc", "alicloud:vpc/network:Network"))
    collector(events.EngineEvent.from_json({"sequence": 2, "timestamp": 0, "diagnosticEvent": {
        "message": "quota exceeded\n", "color": "never", "severity": "error",
        "urn": f"{URN}alicloud:ecs/instance:Instance::pretrain-70b-node-004"}}))
    assert lines == [
        ("creating ecs:Instance pretrain-70b-node-003 ...", False),
        ("creating ecs:Instance pretrain-70b-node-003 ... done (1/2)", False),
        ("error: ecs:Instance pretrain-70b-node-004: quota exceeded", True),
    ]
    summary = collector.summary({"create": 2, "same": 1})
    assert [s.name for s in summary.changes] == ["pretrain-70b-node-003"]
    assert summary.totals() == "+ 2 to create, 1 unchanged"


# --------------------------------------------------------------------------------------------- preview --live
def test_live_preview_of_a_folder_prints_changes_warnings_and_the_digest(ready: None) -> None:
    folder = render_folder()
    engine = FakeEngine(plan_steps(), diagnostics=[("warning", f"deprecated argument; key {FAKE_SECRET}")])
    text = live.live_preview(folder, engine=engine)
    assert "+  ecs:Instance" in text and "Resources: + 3 to create" in text
    assert "warning: deprecated argument; key [redacted]" in text and FAKE_SECRET not in text
    digest = live.stack_digest(folder)
    assert f"stack digest: {digest}" in text
    assert f"to deploy exactly this: trainstack up {folder} --expect-digest {digest}" in text
    edit_spec("team: llm-apps", "team: platform")
    assert "the folder is stale against its spec" in live.live_preview(folder, engine=engine)


def test_live_preview_of_a_spec_without_a_folder_writes_nothing(ready: None) -> None:
    engine = FakeEngine(plan_steps())
    text = live.live_preview(SPEC, engine=engine)
    seen = engine.calls[0][1]["target"]
    assert seen.stack_dir.name == "finetune-7b" and not seen.stack_dir.exists(), "a temporary render, cleaned up"
    assert "stacks/finetune-7b is missing" in text
    assert not Path("stacks").exists()
    folder = render_folder()
    assert f"stack digest: {live.stack_digest(folder)}" in text, "the digest a later render + up will match"


# --------------------------------------------------------------------------------------------- PulumiEngine
# A stand-in `pulumi` executable that speaks just enough of the CLI's protocol (version, stack select/init,
# install, preview/up/destroy with a file event log, stack output/history/export, state unprotect) for the real
# Automation API to drive it. It records every invocation, so these tests check what PulumiEngine really asks of
# the CLI: arguments, backend, secrets provider, event translation and results, without the cloud.
FAKE_PULUMI = r'''
import json, os, sys
args = sys.argv[1:]
if args == ["version"]:
    print("v3.150.0"); sys.exit(0)
state = os.environ["PULUMI_BACKEND_URL"][len("file://"):]
with open(os.environ["FAKE_PULUMI_LOG"], "a") as log:
    log.write(json.dumps({"args": args, "backend": os.environ.get("PULUMI_BACKEND_URL"),
                          "fallback": os.environ.get("PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER")}) + "\n")
words = [a for a in args if not a.startswith("--")]
marker = os.path.join(state, "stack-created")
URN = "urn:pulumi:dev::finetune-7b::"
def events(path, op, names):
    with open(path, "a") as f:
        def put(e): f.write(json.dumps(dict(e, sequence=1, timestamp=0)) + "\n")
        put({"preludeEvent": {"config": {}}})
        for n in names:
            typ = "alicloud:ecs/instance:Instance"
            meta = {"op": op, "urn": URN + typ + "::" + n, "type": typ, "provider": ""}
            put({"resourcePreEvent": {"metadata": meta}})
            if op != "same":
                put({"resOutputsEvent": {"metadata": meta}})
        put({"summaryEvent": {"maybeCorrupt": False, "durationSeconds": 1, "resourceChanges": {op: len(names)},
                              "PolicyPacks": {}}})
        put({"cancelEvent": {}})  # the real CLI ends every event log with it
if "select" in words:
    if not os.path.exists(marker):
        print("error: no stack named 'dev' found", file=sys.stderr); sys.exit(255)
    sys.exit(0)
if "init" in words:
    open(marker, "w").close(); sys.exit(0)
if words[:1] == ["install"]:
    os.makedirs("venv", exist_ok=True); sys.exit(0)
log_path = args[args.index("--event-log") + 1] if "--event-log" in args else None
if words[:1] == ["preview"]:
    events(log_path, "create", ["node-0", "node-1"]); sys.exit(0)
if words[:1] == ["up"]:
    if os.environ.get("FAKE_PULUMI_FAIL"):
        open(log_path, "a").write(json.dumps({"sequence": 1, "timestamp": 0, "cancelEvent": {}}) + "\n")
        print("error: the stack is currently locked by 1 lock(s).", file=sys.stderr); sys.exit(255)
    events(log_path, "create", ["node-0", "node-1"]); sys.exit(0)
if words[:1] == ["destroy"]:
    events(log_path, "delete", ["node-0"]); sys.exit(0)
if words[:1] == ["refresh"]:
    events(log_path, "same", ["node-0"]); sys.exit(0)
if words[:2] == ["stack", "output"]:
    secret = "--show-secrets" in args
    print(json.dumps({"master_addr": "10.0.0.10", "token": "tok-1" if secret else "[secret]"})); sys.exit(0)
if words[:2] == ["stack", "history"]:
    print(json.dumps([{"kind": "update", "startTime": "2025-01-01T00:00:00.000Z", "message": "", "environment": {},
                       "config": {}, "result": "succeeded", "endTime": "2025-01-01T00:01:00.000Z", "version": 1,
                       "resourceChanges": {"create": 2}}])); sys.exit(0)
if words[:2] == ["stack", "export"]:
    print(json.dumps({"version": 3, "deployment": {"resources": [
        {"urn": URN + "pulumi:pulumi:Stack::finetune-7b-dev", "type": "pulumi:pulumi:Stack"},
        {"urn": URN + "alicloud:oss/bucket:Bucket::checkpoint-bucket", "type": "alicloud:oss/bucket:Bucket",
         "id": "ft7b-ckpt", "protect": True, "retainOnDelete": True},
        {"urn": URN + "alicloud:ecs/instance:Instance::finetune-7b-node-000", "type": "alicloud:ecs/instance:Instance",
         "id": "i-789", "outputs": {"status": "Stopped", "privateIp": "10.0.0.10"}}]}})); sys.exit(0)
if words[:2] == ["state", "unprotect"]:
    sys.exit(0)
if words[:2] == ["config", "set"]:
    sys.exit(0)
print("fake pulumi: unexpected " + " ".join(args), file=sys.stderr); sys.exit(2)
'''


@pytest.fixture
def fake_pulumi(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import os
    import sys

    bin_dir = workspace / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "pulumi"
    exe.write_text(f"#!{sys.executable}\n{FAKE_PULUMI}")
    exe.chmod(0o755)
    log = workspace / "pulumi-calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_PULUMI_LOG", str(log))
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", FAKE_PASSPHRASE)
    return log


def pulumi_calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_pulumi_engine_drives_the_cli_through_the_automation_api(fake_pulumi: Path) -> None:
    folder = render_folder()
    target = live.target_for(folder)
    lines, emit = live.collect_lines()
    summary = live.PulumiEngine().preview(target, live.ProgressPrinter(emit))
    assert summary.count("create") == 2 and [s.name for s in summary.changes] == ["node-0", "node-1"]
    result = live.PulumiEngine().up(target, live.ProgressPrinter(emit, total=2))
    assert ("creating ecs:Instance node-1 ... done (2/2)", False) in lines
    assert result.summary.totals() == "+ 2 to create"
    assert result.outputs["token"] == OutputValue("tok-1", secret=True)
    assert live.format_outputs(result.outputs) == {"master_addr": "10.0.0.10", "token": "[secret]"}
    calls = pulumi_calls(fake_pulumi)
    assert all(c["backend"] == target.backend and c["fallback"] == "true" for c in calls)
    init = next(c["args"] for c in calls if "init" in c["args"])
    assert init[init.index("--secrets-provider") + 1] == "passphrase"
    assert any(c["args"][1:2] == ["install"] for c in calls), "the program's venv is installed on first use"
    up_args = next(c["args"] for c in calls if "up" in c["args"])
    assert "--color" in up_args and up_args[up_args.index("--color") + 1] == "never"
    assert Path(target.backend[len("file://"):]).is_dir(), "the file:// state folder is created"


def test_pulumi_engine_destroy_keeps_protected_and_unprotects_on_request(fake_pulumi: Path) -> None:
    target = live.target_for(render_folder())
    engine = live.PulumiEngine()
    engine.preview(target, lambda e: None)  # creates the stack
    summary = engine.destroy(target, lambda e: None, exclude_protected=True)
    assert summary.count("delete") == 1
    [bucket] = [r for r in engine.resources(target) if not r.bookkeeping and r.short_type == "oss:Bucket"]
    assert (bucket.name, bucket.id, bucket.protect, bucket.retain_on_delete) == ("checkpoint-bucket", "ft7b-ckpt",
                                                                                True, True)
    engine.unprotect_all(target)
    calls = [c["args"] for c in pulumi_calls(fake_pulumi)]
    destroy = next(a for a in calls if "destroy" in a)
    assert "--exclude-protected" in destroy
    unprotect = next(a for a in calls if "unprotect" in a)
    assert {"--all", "--yes"} <= set(unprotect) and unprotect[unprotect.index("--stack") + 1] == "dev"


def test_pulumi_engine_runs_targeted_and_reads_the_instance_status(fake_pulumi: Path) -> None:
    """What heal needs: --target URN (with --target-dependents for up and destroy), and each instance's status."""
    target = live.target_for(render_folder())
    engine = live.PulumiEngine()
    node = URN + "alicloud:ecs/instance:Instance::finetune-7b-node-000"
    engine.preview(target, lambda e: None)  # creates the stack
    engine.refresh(target, lambda e: None, targets=[node])
    engine.destroy(target, lambda e: None, exclude_protected=False, targets=[node])
    engine.up(target, lambda e: None, targets=[node])
    calls = [c["args"] for c in pulumi_calls(fake_pulumi)]
    for verb, dependents in (("refresh", False), ("destroy", True), ("up", True)):
        args = next(a for a in calls if verb in a)
        assert args[args.index("--target") + 1] == node, verb
        assert ("--target-dependents" in args) is dependents, verb
    assert "--target" not in next(a for a in calls if "preview" in a)
    [instance] = [r for r in engine.resources(target) if r.short_type == "ecs:Instance"]
    assert (instance.name, instance.id, instance.status) == ("finetune-7b-node-000", "i-789", "Stopped")


def test_pulumi_engine_sets_plain_config_through_the_automation_api(fake_pulumi: Path) -> None:
    target = live.target_for(render_folder())
    live.PulumiEngine().preview(target, lambda e: None)  # creates the stack
    live.PulumiEngine().set_config(target, "trainstack:sharedFsAddress", "cpfs-0011.cn-hangzhou.cpfs.aliyuncs.com")
    args = next(c["args"] for c in pulumi_calls(fake_pulumi) if c["args"][:2] == ["config", "set"])
    assert args == ["config", "set", "trainstack:sharedFsAddress", "--plaintext", "--stack", "dev", "--non-interactive",
                    "--", "cpfs-0011.cn-hangzhou.cpfs.aliyuncs.com"]


def test_pulumi_engine_translates_failures(fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = live.target_for(render_folder())
    with pytest.raises(live.StackNotDeployed) as not_deployed:
        live.PulumiEngine().outputs(target)
    assert not_deployed.value.exit_code == live.EXIT_NOT_DEPLOYED
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "1")
    with pytest.raises(live.StackLocked) as locked:
        live.PulumiEngine().up(target, lambda e: None)
    assert "is locked by another update" in str(locked.value)


def test_ctrl_c_during_a_deploy_says_the_cloud_work_may_be_half_done(ready: None) -> None:
    class Interrupting(FakeEngine):
        def up(self, target: live.Target, on_event: live.OnEvent) -> live.UpResult:
            raise KeyboardInterrupt

    result = cli(["up", SPEC, "--yes"], Interrupting(plan_steps()))
    assert result.exit_code == live.EXIT_INTERRUPTED == 130
    assert "run the command again to continue" in result.stderr and "nothing half-written" not in result.output
