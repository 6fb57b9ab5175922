"""Fixtures of the live tests: the real Pulumi CLI (built by install-pulumi.sh), the fake alicloud provider and
the fake Alibaba OpenAPI endpoint, and :class:`Live`, one folder in which trainstack's commands run as a user
runs them (``python -m generator.cli ...`` in a subprocess).

The CLI comes from ``tests/live/install-pulumi.sh`` (cached; ``.ci/run`` runs it first). Without Go and no cached
build the live tests skip, except on CI (``CI=true``), where that is a failure: CI never skips them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

import fake_alicloud
from fake_openapi import FakeOpenApi

PULUMI_VERSION = "3.260.0"
# the user's cache folder, read before the suite's autouse fixture points XDG_CACHE_HOME at a temporary one
USER_CACHE = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
PROGRAM_PACKAGES = [f"pulumi=={PULUMI_VERSION}", "pulumi-alicloud==4.0.0"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.live)


@pytest.fixture(scope="session")
def pulumi_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pulumi-home")


@pytest.fixture(scope="session")
def pulumi_bin(pulumi_home: Path) -> Path:
    """The bin folder of the built CLI, with the fake provider installed into this session's PULUMI_HOME."""
    cached = Path(USER_CACHE) / "trainstack" / f"pulumi-{PULUMI_VERSION}" / "bin" / "pulumi"
    go = os.environ.get("GO", "/usr/local/go/bin/go")
    if not cached.exists() and not Path(go).exists() and os.environ.get("CI") != "true":
        pytest.skip("no Pulumi CLI built by tests/live/install-pulumi.sh and no Go to build it")
    env = {
        **os.environ,
        "XDG_CACHE_HOME": USER_CACHE,
        "PULUMI_HOME": str(pulumi_home),
        "PYTHON": sys.executable,
    }
    out = subprocess.run(
        ["bash", str(HERE / "install-pulumi.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if out.returncode != 0:
        pytest.fail(f"tests/live/install-pulumi.sh failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return Path(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def program_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One virtual environment with the program's packages, shared by the stacks that do not test `pulumi install`."""
    venv = tmp_path_factory.mktemp("program") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *PROGRAM_PACKAGES],
        check=True,
        timeout=900,
    )
    return venv


class Live:
    """A folder with a spec, its stack folder and its own fake cloud, and the environment of a user's shell."""

    def __init__(self, root: Path, bin_dir: Path, pulumi_home: Path, spec: str | Path):
        """``spec``: a file of tests/live/specs, or a path (tests/e2e's)."""
        self.root = root
        source = spec if isinstance(spec, Path) else HERE / "specs" / spec
        shutil.copy(source, root / source.name)
        self.spec = root / source.name
        self.name = self.spec.stem
        self.stack_dir = root / "stacks" / self.name
        self.cloud_file = root / "cloud.json"
        self.log_file = root / "calls.jsonl"
        self.control_file = root / "control.json"
        self.openapi_control = root / "openapi-control.json"
        self.openapi = FakeOpenApi(self.cloud_file, self.openapi_control).start()
        constraints = root / "constraints.txt"
        constraints.write_text(f"pulumi=={PULUMI_VERSION}\n")
        # the user's shell (proxies, certificates, pip's settings), without any cloud or Pulumi setting of theirs
        passed = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(
                (
                    "ALIBABA_",
                    "ALICLOUD_",
                    "PULUMI_",
                    "TRAINSTACK_",
                    "FAKE_",
                    "AWS_ACCESS",
                    "AWS_SECRET",
                    "VIRTUAL_ENV",
                    "PYTHONPATH",
                )
            )
        }
        self.env = {
            **passed,
            "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin",
            "HOME": os.environ.get("HOME", str(root)),
            "LANG": "C.UTF-8",
            "PULUMI_HOME": str(pulumi_home),
            "PIP_CONSTRAINT": str(constraints),
            "FAKE_ALICLOUD_STATE": str(self.cloud_file),
            "FAKE_ALICLOUD_LOG": str(self.log_file),
            "FAKE_ALICLOUD_CONTROL": str(self.control_file),
            "TRAINSTACK_ALIBABA_ENDPOINT": self.openapi.url,
            "ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAI5tFakeKeyForTests",
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "fake-secret",
            "PULUMI_CONFIG_PASSPHRASE": "correct horse battery staple",
            "XDG_CACHE_HOME": str(root / "cache"),
            "CI": "true",
        }
        self._mark = 0

    # ------------------------------------------------------------------------------------------ running
    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "generator.cli", *args]

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 900
    ) -> subprocess.CompletedProcess:
        full = {**self.env, "PYTHONPATH": str(REPO), **(env or {})}
        return subprocess.run(
            self.command(*args),
            cwd=self.root,
            env={k: v for k, v in full.items() if v is not None},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def ok(self, *args: str, **kw: Any) -> subprocess.CompletedProcess:
        out = self.run(*args, **kw)
        assert out.returncode == 0, (
            f"trainstack {' '.join(args)} exited {out.returncode}:\n{out.stdout}\n{out.stderr}"
        )
        return out

    def start(self, *args: str) -> subprocess.Popen:
        """A command in its own process group (so a test can kill it and everything it started)."""
        return subprocess.Popen(
            self.command(*args),
            cwd=self.root,
            env={**self.env, "PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def pulumi(self, *args: str) -> subprocess.CompletedProcess:
        """The pulumi CLI by hand in the stack folder, as docs/live.md tells a user to."""
        env = {**self.env, "PULUMI_BACKEND_URL": f"file://{self.stack_dir}/.trainstack/state"}
        return subprocess.run(
            ["pulumi", *args],
            cwd=self.stack_dir,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    # ------------------------------------------------------------------------------------------ the spec
    def edit(self, old: str, new: str) -> None:
        text = self.spec.read_text()
        assert old in text, f"{old!r} not in {self.spec}"
        self.spec.write_text(text.replace(old, new, 1))

    def share_venv(self, venv: Path) -> None:
        """Render the folder and give it the session's program venv (so its first `up` installs nothing)."""
        self.ok("render", str(self.spec))
        (self.stack_dir / "venv").symlink_to(venv, target_is_directory=True)

    # ------------------------------------------------------------------------------------------ the fake cloud
    def control(self, **rules: Any) -> None:
        self.control_file.write_text(json.dumps(rules))

    def mark(self) -> None:
        """Later :meth:`calls` return only the provider calls made after this."""
        self._mark = len(self.log_file.read_text().splitlines()) if self.log_file.exists() else 0

    def calls(self, *methods: str) -> list[dict[str, Any]]:
        if not self.log_file.exists():
            return []
        lines = self.log_file.read_text().splitlines()[self._mark :]
        entries = [json.loads(line) for line in lines if line.strip()]
        return [e for e in entries if not methods or e["method"] in methods]

    def changes(self) -> list[tuple[str, str]]:
        """(method, name) of every Create, Update and Delete since the mark, and of every replacing Diff."""
        out = [
            (e["method"], e["name"]) for e in self.calls("Create", "Update", "Delete") if not e.get("preview")
        ]
        out += [("Replace", e["name"]) for e in self.calls("Diff") if e.get("replaces")]
        return out

    def cloud(self, type_: str | None = None) -> dict[str, dict[str, Any]]:
        """The fake cloud's resources by name (of one type)."""
        if not self.cloud_file.exists():
            return {}
        with fake_alicloud._locked_state(self.cloud_file) as state:
            resources = list(state["resources"].values())
        return {r["name"]: r for r in resources if type_ is None or r["type"] == type_}

    def nodes(self) -> dict[str, dict[str, Any]]:
        return self.cloud("alicloud:ecs/instance:Instance")

    def outputs(self) -> dict[str, Any]:
        return json.loads(self.ok("outputs", str(self.spec), "--json").stdout)

    def wait_for(self, method: str, name_part: str, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(name_part in e["name"] for e in self.calls(method)):
                return
            time.sleep(0.2)
        raise AssertionError(f"no {method} of {name_part} within {timeout}s: {self.calls()[-5:]}")


def kill_group(proc: subprocess.Popen) -> None:
    """kill -9 the command and everything it started (the pulumi CLI, its plugins), as a crash would.

    The CLI starts each plugin in a process group of its own, so the group's kill leaves them running; they stay
    in the command's session (``start_new_session``), so every process of that session is killed too.
    """
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended meanwhile
        if int(fields[3]) == proc.pid:  # field 6 of /proc/PID/stat: the session id
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(stat.parent.name), signal.SIGKILL)


def make_live(tmp_path: Path, pulumi_bin: Path, pulumi_home: Path, spec: str) -> Live:
    return Live(tmp_path, pulumi_bin, pulumi_home, spec)


def names(entries: Sequence[tuple[str, str]], method: str) -> set[str]:
    return {n for m, n in entries if m == method}
