"""Base weights on PAI-DLC (``model.weights`` with ``compute.platform: pai-dlc``, issue #16 item 3): DLC runs no node
bootstrap, so OSS weights are mounted read-only as a workspace dataset (nothing copied, storage not sized for them,
no grant to the job's role: DLC mounts datasets with its service role, as it does the training data), and ModelScope
weights are fetched once to the shared file system dataset by ``trainstack-weights``, which the stack publishes in the
checkpoint bucket and the job runs before its command.
The script runs here as two "worker containers" at once with a fake ``python3 -m pip`` and ``modelscope``."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from generator import api
from generator.catalog import runtime
from generator.errors import SpecErrors
from generator.plan import refusals, warns
from generator.platforms.dlc import weights as dlc_weights
from generator.render import files as render_files

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "finetune-dlc.yaml"
POLICY = "alicloud:ram/policy:Policy"
ROLE_ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
OBJECT = "alicloud:oss/bucketObject:BucketObject"
DATASET = "alicloud:pai/workspaceDataset:WorkspaceDataset"
MODELSCOPE = "modelscope://modelscope/Llama-2-7b-ms@v1.0.0"
OSS = "oss://my-models/llama-2-7b/"


def _spec(tmp_path: Path, weights: str | None, *, replace: tuple[tuple[str, str], ...] = (), extra: str = "") -> Path:
    """The finetune-dlc example (2 workers, Extreme NAS, OSS data, checkpoints), with ``model.weights``."""
    text = EXAMPLE.read_text()
    if weights:
        text = text.replace("model:\n", f"model:\n  weights: {weights}\n", 1)
    for old, new in replace:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "dlc.yaml"
    path.write_text(text + textwrap.dedent(extra))
    return path


def _plan(tmp_path: Path, weights: str | None, **kw):
    return api.plan(_spec(tmp_path, weights, **kw))


def _decision(plan, topic: str) -> str:
    return next(d for d in plan.decisions if d.topic == topic).reason


# ------------------------------------------------------------------------------------------------ plan
def test_oss_weights_are_mounted_read_only_not_copied(tmp_path: Path) -> None:
    plan = _plan(tmp_path, OSS)
    w = plan.weights
    assert (w.source_kind, w.bucket, w.prefix) == ("oss", "my-models", "llama-2-7b/")
    # where every worker reads them, and that nothing is downloaded
    assert w.landing_path == dlc_weights.WEIGHTS_MOUNT == "/mnt/weights"
    assert w.fetches == 0 and not w.shared
    assert w.size_bytes == plan.model.parameters * 2  # still an estimate of their size, for the reader
    reason = _decision(plan, "base weights")
    assert reason.startswith("mounted read-only from OSS by DLC, not copied")
    assert "no storage is sized for them" in reason and "the node that takes the lock" not in reason
    # the read-only dataset, with the output its id lands in
    ds = {d.output_key: d for d in plan.dlc.data_sources}
    weights = ds["dataset_weights_id"]
    assert (weights.name, weights.kind, weights.mount_path, weights.uri, weights.read_only) == (
        "finetune-dlc-weights", "oss", "/mnt/weights", OSS, True)
    assert "dataset_tools_id" not in ds  # nothing to fetch, so no script
    env = dict(plan.dlc.environment)
    assert env["TRAINSTACK_WEIGHTS_DIR"] == "/mnt/weights" and env["TRAINSTACK_WEIGHTS_SOURCE"] == OSS
    assert plan.dlc.prelude == "" and plan.dlc.weights_script_key == ""
    data = json.loads(plan.to_json())
    assert data["weights"]["fetches"] == 0 and "prelude" not in data["dlc"]


def test_oss_weights_do_not_size_the_shared_file_system(tmp_path: Path) -> None:
    without = _plan(tmp_path, None)
    mounted = _plan(tmp_path, OSS)
    fetched = _plan(tmp_path, MODELSCOPE)
    assert mounted.storage == without.storage
    assert "base weights" not in _decision(mounted, "shared storage")
    assert "holds the base weights" in _decision(fetched, "shared storage")
    # a capacity too small for a copy is fine when nothing is copied (Llama 2 70B: about 128 GiB of weights)
    big = (("preset: llama-2-7b", "preset: llama-2-70b"), ("nodes: 2", "nodes: 8"),
           ("shared: extreme-nas ", "capacity: 100GiB\n  shared: extreme-nas "))
    assert _plan(tmp_path, OSS, replace=big).storage.capacity_gib == 100
    with pytest.raises(SpecErrors) as e:
        _plan(tmp_path, MODELSCOPE, replace=big)
    assert [p.path for p in e.value.problems] == [("storage", "capacity")]


def test_modelscope_weights_land_once_on_the_shared_dataset(tmp_path: Path) -> None:
    plan = _plan(tmp_path, MODELSCOPE)
    w = plan.weights
    assert w.landing_path == "/mnt/shared/weights/modelscope/Llama-2-7b-ms@v1.0.0"
    assert w.shared and w.fetches == 1
    reason = _decision(plan, "base weights")
    assert "fetched once" in reason and "DLC runs no node bootstrap" in reason
    assert "the worker that takes the lock (mkdir on the shared file system)" in reason
    assert "modelscope download --model modelscope/Llama-2-7b-ms --revision v1.0.0" in reason
    env = dict(plan.dlc.environment)
    assert env["TRAINSTACK_WEIGHTS_DIR"] == w.landing_path and env["SHARED_DIR"] == "/mnt/shared"
    assert env["TRAINSTACK_WEIGHTS_SOURCE"] == MODELSCOPE  # the ModelScope id and revision
    assert len(plan.dlc.environment) <= 20  # DLC takes at most 20 custom variables
    # the script rides in a read-only dataset of the checkpoint bucket's tools folder
    tools = {d.output_key: d for d in plan.dlc.data_sources}["dataset_tools_id"]
    assert (tools.kind, tools.mount_path, tools.read_only) == ("oss", "/mnt/trainstack", True)
    assert tools.uri == f"oss://{plan.checkpoints.bucket}/trainstack/"
    assert plan.dlc.prelude == "bash /mnt/trainstack/weights.sh"
    assert plan.dlc.weights_script_key == "trainstack/weights.sh"
    assert not plan.checkpoints.prefix.startswith("trainstack")  # the job cannot write the script
    data = json.loads(plan.to_json())
    assert data["dlc"]["prelude"] == plan.dlc.prelude and data["weights"]["shared"] is True


def test_plan_text_says_mounted_or_fetched_once(tmp_path: Path) -> None:
    from generator.present import markdown as report_markdown
    from generator.present import text as report

    mounted = _plan(tmp_path, OSS)
    assert f"weights      {OSS} -> /mnt/weights, about 12.55 GiB (ESTIMATE), mounted read-only, not copied" in \
        report.plan_text(mounted)
    assert "mounted read-only, not copied" in report_markdown.plan_markdown(mounted)
    assert "(ESTIMATE), fetched once" in report.plan_text(_plan(tmp_path, MODELSCOPE))


def test_the_tools_folder_stays_apart_from_the_checkpoint_prefix() -> None:
    assert dlc_weights.tools_dir("checkpoints/") == "trainstack/"
    assert dlc_weights.tools_dir("trainstack/") == "trainstack-tools/"
    assert dlc_weights.tools_dir("trainstack/ckpt/") == "trainstack-tools/"
    assert dlc_weights.tools_dir("trainstack-tools/a/") == "trainstack/"
    assert dlc_weights.script_key("trainstack/") == "trainstack-tools/weights.sh"


# ------------------------------------------------------------------------------------------------ refusals
def test_modelscope_on_several_workers_without_shared_storage_is_refused(tmp_path: Path) -> None:
    nas = (("shared: extreme-nas ", "shared: none "),)
    with pytest.raises(SpecErrors) as e:
        _plan(tmp_path, MODELSCOPE, replace=nas)
    (p,) = e.value.problems
    assert (p.code, p.path, dict(p.fields)["nodes"]) == (refusals.DlcWeightsNeedShared.code, ("storage", "shared"), 2)
    assert "storage.shared: auto or extreme-nas" in p.hint and "oss://BUCKET/PREFIX/" in p.hint  # wording: the hint
    # OSS weights are mounted in every worker: no shared file system needed
    plan = _plan(tmp_path, OSS, replace=nas)
    assert plan.storage.kind == "none" and plan.weights.fetches == 0


def test_modelscope_without_the_checkpoint_bucket_is_refused(tmp_path: Path) -> None:
    off = (("checkpoints:\n  interval: 30m\n  retention_days: 14\n", "checkpoints:\n  enabled: false\n"),
           ("spot:\n  enabled: true", "spot:\n  enabled: false"))
    with pytest.raises(SpecErrors) as e:
        _plan(tmp_path, MODELSCOPE, replace=off)
    (p,) = e.value.problems
    assert p.path == ("checkpoints", "enabled") and "trainstack-weights" in p.message
    assert "checkpoints.enabled: true" in p.hint and "oss://" in p.hint
    assert _plan(tmp_path, OSS, replace=off).weights.fetches == 0


def test_modelscope_without_egress_is_refused_on_dlc(tmp_path: Path) -> None:
    with pytest.raises(SpecErrors) as e:
        _plan(tmp_path, MODELSCOPE, extra="network:\n  egress: none\n")
    (p,) = e.value.problems
    assert p.path == ("model", "weights") and "egress" in p.message


def test_one_worker_without_shared_storage_downloads_per_job_and_says_so(tmp_path: Path) -> None:
    one = (("nodes: 2", "nodes: 1"), ("shared: extreme-nas ", "shared: none "))
    plan = _plan(tmp_path, MODELSCOPE, replace=one)
    assert plan.weights.landing_path.startswith("/mnt/local/") and not plan.weights.shared
    assert "every job downloads them again" in _decision(plan, "base weights")
    assert warns.DlcWeightsRefetch(plan.weights.size_bytes) in plan.warnings


# ------------------------------------------------------------------------------------------------ program
def test_preview_of_oss_weights_mounts_a_dataset_and_grants_the_job_role_nothing_for_it(tmp_path: Path) -> None:
    # DLC mounts workspace datasets with its service role, so the job's role gets no read grant for any read-only
    # OSS dataset: not for the weights, not for the training data (the two are handled the same way)
    g = api.preview(_spec(tmp_path, OSS)).graph
    datasets = {r.get("dataset_name"): r for r in g.of_type(DATASET)}
    ds = datasets["finetune-dlc-weights"]
    assert ds.get("uri") == "oss://my-models.oss-cn-hangzhou.aliyuncs.com/llama-2-7b/"
    assert ds.get("data_source_type") == "OSS" and json.loads(ds.get("options")) == {"mountPath": "/mnt/weights"}
    assert ds.get("description") == "trainstack: base weights, read-only"
    assert "finetune-dlc-data" in datasets
    policies = {r.get("policy_name"): json.loads(r.get("policy_document")) for r in g.of_type(POLICY)}
    assert set(policies) == {"finetune-dlc-checkpoints"}
    assert "my-models" not in json.dumps(policies) and "example-corpus" not in json.dumps(policies)
    attached = {r.get("policy_name"): r.get("role_name") for r in g.of_type(ROLE_ATTACHMENT)}
    assert attached == {"finetune-dlc-checkpoints": "finetune-dlc-dlc-job"}
    assert not g.of_type(OBJECT)  # nothing to fetch, no script published
    assert "dataset_weights_id" in g.outputs


def test_preview_of_modelscope_weights_publishes_the_script_mounted_read_only(tmp_path: Path) -> None:
    spec = _spec(tmp_path, MODELSCOPE)
    result = api.render_stack(spec, tmp_path / "stack")
    script = (result.dest / "weights.sh").read_text()
    assert script == render_files.weights_script(api.plan(spec))
    g = api.preview(result.dest).graph
    (obj,) = g.of_type(OBJECT)
    assert obj.get("key") == "trainstack/weights.sh" and obj.get("content") == script
    assert obj.get("acl") == "private" and obj.get("server_side_encryption") == "AES256"
    bucket = api.plan(spec).checkpoints.bucket
    # the tools folder is a read-only dataset DLC mounts with its service role: the job's role gets no grant for it
    policies = {r.get("policy_name") for r in g.of_type(POLICY)}
    assert policies == {"finetune-dlc-checkpoints"}
    tools = {r.get("dataset_name"): r for r in g.of_type(DATASET)}["finetune-dlc-tools"]
    assert tools.get("uri") == f"oss://{bucket}.oss-cn-hangzhou.aliyuncs.com/trainstack/"
    assert json.loads(tools.get("options")) == {"mountPath": "/mnt/trainstack"}
    assert "dataset_tools_id" in g.outputs
    assert not api.lint_target(result.dest).findings


def test_only_modelscope_dlc_stacks_carry_weights_sh(tmp_path: Path) -> None:
    for weights, expected in ((None, False), (OSS, False), (MODELSCOPE, True)):
        files = render_files.render(_plan(tmp_path, weights))
        assert ("weights.sh" in files) is expected and "node-init.sh" not in files


# ------------------------------------------------------------------------------------------------ the script
FAKE_MODELSCOPE = r"""#!/bin/bash
# fake `modelscope download --model M --revision R --local_dir D`: counts calls, writes two files slowly
set -eu
[ "$1" = download ] || exit 2
while [ $# -gt 0 ]; do case "$1" in --local_dir) dir="$2"; shift ;; --model) model="$2"; shift ;;
  --revision) rev="$2"; shift ;; esac; shift; done
echo "$model@$rev" >> "$FAKE_LOG"
mkdir -p "$dir"; echo '{"model_type": "llama"}' > "$dir/config.json"; sleep 1
echo weights > "$dir/model.safetensors"
"""
# fake `python3 -m pip install -q --target DIR modelscope`: puts the fake CLI in DIR/bin, as pip puts console scripts;
# any other use of python3 goes to the real one
FAKE_PYTHON = r"""#!/bin/bash
if [ "$1 $2 $3" = "-m pip install" ]; then
  echo "pip $*" >> "$FAKE_PIP_LOG"
  while [ $# -gt 0 ]; do case "$1" in --target) target="$2"; shift ;; esac; shift; done
  [ -n "${target:-}" ] || exit 3  # only a private --target install is expected in a DLC container
  mkdir -p "$target/bin"; cp "$FAKE_MODELSCOPE" "$target/bin/modelscope"; chmod 0755 "$target/bin/modelscope"
  exit 0
fi
exec REAL_PYTHON "$@"
"""


def _container(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The DLC script and the environment of a worker container without modelscope installed."""
    plan = _plan(tmp_path, MODELSCOPE)
    script = tmp_path / "weights.sh"
    script.write_text(render_files.weights_script(plan))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "fake-modelscope").write_text(FAKE_MODELSCOPE)
    real = shutil.which("python3") or shutil.which("python")
    (bin_dir / "python3").write_text(FAKE_PYTHON.replace("REAL_PYTHON", real))
    (bin_dir / "python3").chmod(0o755)
    dest = tmp_path / "shared" / "weights" / "modelscope" / "Llama-2-7b-ms@v1.0.0"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_LOG": str(tmp_path / "calls.log"),
           "FAKE_PIP_LOG": str(tmp_path / "pip.log"), "FAKE_MODELSCOPE": str(tmp_path / "fake-modelscope"),
           "TRAINSTACK_WEIGHTS_DIR": str(dest), "TRAINSTACK_WEIGHTS_MOUNT": "", "TRAINSTACK_WEIGHTS_POLL": "0.2",
           "TRAINSTACK_WEIGHTS_PIPDIR": str(tmp_path / "pip"), "TMPDIR": str(tmp_path)}
    return script, env


def test_the_dlc_script_has_no_node_bootstrap_in_it(tmp_path: Path) -> None:
    script, _ = _container(tmp_path)
    text = script.read_text()
    subprocess.run(["bash", "-n", str(script)], check=True)
    if shutil.which("shellcheck"):
        subprocess.run(["shellcheck", "-S", "warning", str(script)], check=True)
    # no metadata-service STS (a ModelScope script sets no OSS role at all, an OSS one an empty role); the shared dataset
    assert ("ROLE=" not in text or 'ROLE=""' in text) and 'MOUNT="/mnt/shared"' in text
    assert "systemctl" not in text and "trainstack-launch" not in text
    assert "apt-get" not in text and "dnf" not in text  # a container: pip only, into a folder of its own
    assert '--target "${PIPDIR}"' in text


def test_two_workers_download_modelscope_weights_once_with_a_private_pip_install(tmp_path: Path) -> None:
    if shutil.which("modelscope"):
        pytest.skip("a real modelscope CLI is on PATH")
    script, env = _container(tmp_path)
    procs = [subprocess.Popen(["bash", str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    runs = [(p.wait(timeout=60), p.stderr.read()) for p in procs]
    assert [code for code, _ in runs] == [0, 0], runs
    dest = Path(env["TRAINSTACK_WEIGHTS_DIR"])
    assert (tmp_path / "calls.log").read_text() == "modelscope/Llama-2-7b-ms@v1.0.0\n"  # one download
    assert (dest / "model.safetensors").exists() and (dest / ".trainstack-weights-complete").exists()
    pip = (tmp_path / "pip.log").read_text().splitlines()
    # by the lock holder only: the hash-pinned set of the catalog (modelscope_wheels.csv), into the private folder
    assert len(pip) == 1 and f"--target {tmp_path / 'pip'} -r " in pip[0], pip
    assert "--require-hashes --only-binary=:all:" in pip[0]
    assert (tmp_path / "pip" / ".trainstack-requirements.txt").read_text() == runtime.modelscope_requirements()
    logs = "".join(err for _, err in runs)
    assert "this node fetches" in logs and "waiting for" in logs
    # the job's next start (a restart after a reclaim, or the next job) finds them at once
    again = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert again.returncode == 0 and "is ready" in again.stderr
    assert (tmp_path / "calls.log").read_text().count("\n") == 1


def test_the_dlc_script_refuses_a_shared_path_that_is_not_mounted(tmp_path: Path) -> None:
    script, env = _container(tmp_path)
    env["TRAINSTACK_WEIGHTS_MOUNT"] = str(tmp_path / "not-mounted")
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 1 and "the job must mount the shared file system dataset" in run.stderr
    assert not (tmp_path / "calls.log").exists()


# ------------------------------------------------------------------------------------------------ submit
WEIGHTS_SPEC = "examples/finetune-dlc-weights.yaml"


def _submit_dry_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: str, command: list[str]) -> dict:
    """``trainstack submit SPEC --dry-run --json -- COMMAND`` in a scratch repository, with recorded DLC answers."""
    from click.testing import CliRunner

    from generator.cli import main
    from generator.live import FakeEngine
    from generator.platforms.dlc.live import RecordedDlcClient

    (tmp_path / "examples").mkdir()
    (tmp_path / ".git").mkdir()
    shutil.copy(ROOT / spec, tmp_path / spec)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    obj = {"engine": FakeEngine(state=None), "dlc_client": RecordedDlcClient(ROOT / "tests" / "live_fixtures" / "dlc")}
    result = CliRunner().invoke(main, ["submit", spec, "--dry-run", "--json", "--", *command], obj=obj,
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["request"]


def test_submit_puts_the_prelude_before_the_quoted_user_command(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["torchrun", "train.py", "--note", "it's a b; echo no", "$HOME"]
    request = _submit_dry_run(tmp_path, monkeypatch, WEIGHTS_SPEC, argv)
    line = shlex.join(argv)
    assert request["UserCommand"] == f"bash /mnt/trainstack/weights.sh && exec bash -c {shlex.quote(line)}"
    assert request["UserCommand"].startswith(dlc_weights.PRELUDE + " && ")
    mounts = {d["MountPath"]: d["MountAccess"] for d in request["DataSources"]}
    assert mounts["/mnt/trainstack"] == "RO" and mounts["/mnt/shared"] == "RW"
    envs = request["Envs"]
    assert envs["TRAINSTACK_WEIGHTS_DIR"] == "/mnt/shared/weights/modelscope/Llama-2-7b-ms@master"
    assert envs["TRAINSTACK_WEIGHTS_SOURCE"] == "modelscope://modelscope/Llama-2-7b-ms@master"


def test_a_spec_without_modelscope_weights_runs_the_command_as_given(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    request = _submit_dry_run(tmp_path, monkeypatch, "examples/finetune-dlc.yaml", ["torchrun", "train.py"])
    assert request["UserCommand"] == "torchrun train.py"


def test_the_wrapped_command_keeps_the_argv_and_runs_only_after_the_prelude(tmp_path: Path) -> None:
    """The UserCommand through a shell, with the prelude replaced by `true` (fetched) or `false` (failed)."""
    from generator.platforms.dlc.live.request import job_command

    dlc = api.plan(ROOT / WEIGHTS_SPEC).dlc
    probe = tmp_path / "argv.json"
    argv = ["python3", "-c", "import json, sys; open(sys.argv[1], 'w').write(json.dumps(sys.argv[2:]))", str(probe),
            "a b", "it's", "$HOME", "; touch pwned", "#x"]
    wrapped = job_command(dlc, argv)
    env = {**os.environ, "RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "dlc-master-0"}
    for prelude, ran in (("true", True), ("false", False)):
        probe.unlink(missing_ok=True)
        line = prelude + wrapped.removeprefix(dlc.prelude)
        subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, check=False)
        assert probe.exists() is ran
        if ran:
            assert json.loads(probe.read_text()) == ["a b", "it's", "$HOME", "; touch pwned", "#x"]
    assert not (tmp_path / "pwned").exists()
    # the user's command sees the variables DLC injects
    seen = job_command(dlc, ["bash", "-c", f"echo $RANK/$WORLD_SIZE/$MASTER_ADDR > {probe}"])
    subprocess.run(["bash", "-c", "true" + seen.removeprefix(dlc.prelude)], env=env, check=True)
    assert probe.read_text() == "1/2/dlc-master-0\n"
