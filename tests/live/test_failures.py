"""What goes wrong, on the real Pulumi CLI: a crash (kill -9) in the middle of `up`, a stack locked by a running
update, a wrong passphrase, no credentials, a pulumi CLI of the wrong version; each with the exit code
docs/live.md gives and a fix that works.
"""

from __future__ import annotations

import json
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import Live, kill_group, make_live

INSTANCE = "alicloud:ecs/instance:Instance"
FOUR = [f"live-4-node-00{i}" for i in range(4)]


@pytest.fixture
def live(tmp_path: Path, pulumi_bin: Path, pulumi_home: Path, program_venv: Path) -> Live:
    lv = make_live(tmp_path, pulumi_bin, pulumi_home, "live-4.yaml")
    lv.share_venv(program_venv)
    return lv


def test_kill_9_in_the_middle_of_up_then_up_again(live: Live) -> None:
    live.control(slow=[{"method": "Create", "type": INSTANCE, "seconds": 20}])
    proc = live.start("up", str(live.spec), "--yes")
    try:
        live.wait_for("Create", "live-4-node-")
        # while it runs, the stack is locked: a second `up` is refused with exit 23 and changes nothing
        locked = live.run("up", str(live.spec), "--yes")
        assert locked.returncode == 23, locked.stdout + locked.stderr
        assert "locked" in locked.stderr and "pulumi cancel" in locked.stderr
    finally:
        kill_group(proc)  # kill -9 trainstack, the pulumi CLI and its plugins, mid-create
    live.control()
    # the crashed run left its lock: exit 23 again, with the fix in the message
    again = live.run("up", str(live.spec), "--yes")
    assert again.returncode == 23, again.stdout + again.stderr
    message = again.stderr
    assert "pulumi cancel" in message, message
    # the fix, as the message says it
    cancel = live.pulumi("cancel", "--stack", "dev", "--yes")
    assert cancel.returncode == 0, cancel.stdout + cancel.stderr
    out = live.ok("up", str(live.spec), "--yes")
    assert sorted(live.nodes()) == FOUR, out.stdout
    names = [r["name"] for r in live.cloud(INSTANCE).values()]
    assert len(names) == len(set(names)), f"an instance was created twice: {names}"
    state = json.loads(live.pulumi("stack", "export").stdout)
    urns = [r["urn"] for r in state["deployment"]["resources"]]
    assert all(any(u.endswith("::" + n) for u in urns) for n in FOUR)
    assert live.outputs()["node_private_ips"] == [f"10.0.0.{10 + i}" for i in range(4)]
    # Pulumi keeps the crashed run's creates as pending operations (and warns about them on every run) until a
    # refresh clears them: interactively, or with --clear-pending-creates once the cloud shows no such resource
    assert "pending operations from previous deployment" in out.stdout + out.stderr
    pending = {
        p["resource"]["urn"].rsplit("::", 1)[-1] for p in state["deployment"].get("pending_operations", [])
    }
    assert pending and pending <= set(FOUR)
    cleared = live.pulumi("refresh", "--clear-pending-creates", "--yes", "--stack", "dev")
    assert cleared.returncode == 0, cleared.stdout + cleared.stderr
    assert not json.loads(live.pulumi("stack", "export").stdout)["deployment"].get("pending_operations")
    live.mark()
    live.ok("up", str(live.spec), "--yes")
    assert live.changes() == []


def test_wrong_passphrase(live: Live) -> None:
    live.ok("up", str(live.spec), "--yes")
    wrong = {"PULUMI_CONFIG_PASSPHRASE": "not the passphrase"}
    live.mark()
    for verb in ("up", "refresh", "destroy"):
        out = live.run(verb, str(live.spec), "--yes", env=wrong)
        assert out.returncode == 22, out.stdout + out.stderr
        assert "incorrect passphrase" in out.stderr and "Traceback" not in out.stderr
    assert live.changes() == [] and sorted(live.nodes()) == FOUR
    # Pulumi checks the passphrase only to decrypt: the outputs of a stack without secret outputs need none
    assert live.run("outputs", str(live.spec), env=wrong).returncode == 0


def test_missing_credentials(live: Live) -> None:
    out = live.run(
        "up",
        str(live.spec),
        "--yes",
        env={"ALIBABA_CLOUD_ACCESS_KEY_ID": None, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": None},
    )
    assert out.returncode == 21, out.stdout + out.stderr
    assert "ALIBABA_CLOUD_ACCESS_KEY_ID" in out.stderr
    assert live.calls() == [] and live.cloud() == {}


def test_no_passphrase(live: Live) -> None:
    out = live.run("up", str(live.spec), "--yes", env={"PULUMI_CONFIG_PASSPHRASE": None})
    assert out.returncode == 22, out.stdout + out.stderr
    assert live.cloud() == {}


@pytest.mark.parametrize(
    ("printed", "words"),
    [
        ("v3.100.0", "older than trainstack needs"),
        ("v4.0.0", "a newer major version"),
        ("pulumi: command not found, sorry", "which is not a version"),
    ],
)
def test_a_pulumi_cli_of_the_wrong_version(live: Live, tmp_path: Path, printed: str, words: str) -> None:
    fake_bin = tmp_path / "other-pulumi"
    fake_bin.mkdir()
    script = fake_bin / "pulumi"
    script.write_text(f"#!/bin/sh\necho '{printed}'\n")
    script.chmod(0o755)
    out = live.run("up", str(live.spec), "--yes", env={"PATH": f"{fake_bin}:{live.env['PATH']}"})
    assert out.returncode == 20, out.stdout + out.stderr
    assert words in out.stderr and "too old" not in out.stderr.replace("older", "")
    assert live.cloud() == {}


def test_the_built_cli_is_the_version_of_the_pinned_sdk(pulumi_bin: Path) -> None:
    """pyproject.toml pins the pulumi SDK; install-pulumi.sh builds the CLI of the same version."""
    printed = subprocess.run(
        [str(pulumi_bin / "pulumi"), "version"], capture_output=True, text=True, check=True
    )
    assert printed.stdout.strip() == "v" + version("pulumi")


def test_a_failed_create_is_exit_26_with_the_clouds_error_and_up_again_finishes(live: Live) -> None:
    error = "InvalidResourceType.NotSupported: the instance type is not supported in this zone"
    live.control(fail=[{"method": "Create", "name": "live-4-node-001", "message": error}])
    out = live.run("up", str(live.spec), "--yes")
    assert out.returncode == 26, out.stdout + out.stderr
    assert "InvalidResourceType.NotSupported" in out.stderr and "live-4-node-001" in out.stdout + out.stderr
    survived = set(live.nodes())
    assert "live-4-node-001" not in survived
    live.control()
    live.mark()
    live.ok("up", str(live.spec), "--yes")
    assert sorted(live.nodes()) == FOUR
    # what the failed run created stays: only node-001 and the nodes Pulumi had not started when the failure stopped
    # it (which of those depends on the order its parallel creates ran in) are created now
    touched = {n for _, n in live.changes()}
    assert "live-4-node-001" in touched and not touched & survived
