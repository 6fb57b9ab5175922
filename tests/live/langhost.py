#!/usr/bin/env python3
"""A Pulumi language host for Python programs, for tests/live: ``pulumi-language-python``.

Pulumi's own host (the Go module ``github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3``) is not
served by the Go module proxy this project may use, so ``tests/live/install-pulumi.sh`` installs this one next to
the CLI it builds. It implements the LanguageRuntime gRPC service (``pulumi/proto/pulumi/language.proto``) as far
as ``pulumi up``, ``preview``, ``refresh``, ``destroy`` and ``install`` use it, the way Pulumi's host does:

* ``InstallDependencies``: ``python3 -m venv <root>/<virtualenv>`` and ``pip install -r requirements.txt`` in it;
* ``GetRequiredPackages`` / ``GetRequiredPlugins``: the ``pulumi-plugin.json`` of every package in the venv
  (``pulumi_alicloud``'s names ``resource alicloud`` and its version);
* ``Run``: the program through the SDK's ``pulumi-language-python-exec`` in the venv's interpreter, with the
  stack config in ``PULUMI_CONFIG`` / ``PULUMI_CONFIG_SECRET_KEYS``; exit code 32 means "the program already
  reported its error" (bail), any other non-zero code is an error.

It is started by the engine with the engine's address as its last argument and answers with its port on stdout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2

VERSION = "3.260.0"  # the version of the CLI it is installed with (install-pulumi.sh)
BAIL = 32  # pulumi-language-python-exec: "an error message was displayed to the user"

_LIST_PLUGINS = r"""
import json, importlib.metadata as md
out = []
for dist in md.distributions():
    for f in dist.files or ():
        if f.name == "pulumi-plugin.json" and len(f.parts) == 2:
            try:
                data = json.loads(f.locate().read_text())
            except (OSError, ValueError):
                continue
            if data.get("resource", True):
                out.append({"name": data.get("name") or dist.metadata["Name"].removeprefix("pulumi_"),
                            "version": data.get("version") or dist.version, "server": data.get("server", "")})
print(json.dumps(out))
"""


def _options(info: Any) -> dict[str, Any]:
    return dict(info.options.items()) if info is not None and info.HasField("options") else {}


def _root(info: Any, fallback: str = "") -> Path:
    return Path(info.root_directory or info.program_directory or fallback or os.getcwd())


def _venv(info: Any, fallback: str = "") -> Path | None:
    name = _options(info).get("virtualenv")
    if not name:
        return None
    path = Path(str(name))
    return path if path.is_absolute() else _root(info, fallback) / path


def _python(info: Any, fallback: str = "") -> str:
    venv = _venv(info, fallback)
    if venv is not None:
        return str(venv / "bin" / "python")
    return os.environ.get("PULUMI_PYTHON_CMD") or shutil.which("python3") or "python3"


def _env(venv: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env.pop("PYTHONHOME", None)
    return env


def _plugins(info: Any, fallback: str = "") -> list[dict[str, str]]:
    python = _python(info, fallback)
    if not Path(python).exists() and os.sep in python:
        return []  # no venv yet: `pulumi install` will make it
    out = subprocess.run(
        [python, "-c", _LIST_PLUGINS],
        capture_output=True,
        text=True,
        check=False,
        env=_env(_venv(info, fallback)),
    )
    if out.returncode != 0:
        raise RuntimeError(f"listing the packages of {python} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def _version(v: str) -> str:
    return v if v.startswith("v") else "v" + v


class LanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    def __init__(self, engine: str):
        self.engine = engine

    def Handshake(self, request: Any, context: Any) -> Any:
        self.engine = request.engine_address or self.engine
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(self, request: Any, context: Any) -> Any:
        return plugin_pb2.PluginInfo(version=VERSION)

    def GetRequiredPackages(self, request: Any, context: Any) -> Any:
        deps = [
            plugin_pb2.PackageDependency(
                name=p["name"], kind="resource", version=_version(p["version"]), server=p["server"]
            )
            for p in _plugins(request.info)
        ]
        return language_pb2.GetRequiredPackagesResponse(packages=deps)

    def GetRequiredPlugins(self, request: Any, context: Any) -> Any:
        deps = [
            plugin_pb2.PluginDependency(
                name=p["name"], kind="resource", version=_version(p["version"]), server=p["server"]
            )
            for p in _plugins(request.info, request.pwd)
        ]
        return language_pb2.GetRequiredPluginsResponse(plugins=deps)

    def InstallDependencies(self, request: Any, context: Any) -> Any:
        info = request.info
        root = _root(info, request.directory)
        venv = _venv(info, request.directory)
        steps: list[list[str]] = []
        if venv is not None and not (venv / "bin" / "python").exists():
            base = os.environ.get("PULUMI_PYTHON_CMD") or shutil.which("python3") or "python3"
            steps.append([base, "-m", "venv", str(venv)])
        python = _python(info, request.directory)
        steps.append([python, "-m", "pip", "install", "--upgrade", "pip", "setuptools", "wheel"])
        if (root / "requirements.txt").exists():
            steps.append([python, "-m", "pip", "install", "-r", str(root / "requirements.txt")])
        for cmd in steps:
            yield language_pb2.InstallDependenciesResponse(stdout=(" ".join(cmd) + "\n").encode())
            proc = subprocess.run(cmd, capture_output=True, cwd=root, env=_env(venv), check=False)
            yield language_pb2.InstallDependenciesResponse(stdout=proc.stdout, stderr=proc.stderr)
            if proc.returncode != 0:
                context.abort(
                    grpc.StatusCode.UNKNOWN, f"{' '.join(cmd)} failed with exit code {proc.returncode}"
                )

    def Run(self, request: Any, context: Any) -> Any:
        info = request.info
        root = _root(info, request.pwd)
        venv = _venv(info, request.pwd)
        python = _python(info, request.pwd)
        exec_ = os.environ.get("PULUMI_LANGUAGE_PYTHON_EXEC") or shutil.which("pulumi-language-python-exec")
        if not exec_:
            return language_pb2.RunResponse(error="pulumi-language-python-exec is not on PATH")
        program = request.program or info.entry_point or "."
        if not os.path.isabs(program):
            program = str(Path(info.program_directory or request.pwd or root) / program)
        cmd = [
            python,
            "-u",
            exec_,
            "--monitor",
            request.monitor_address,
            "--engine",
            self.engine,
            "--project",
            request.project,
            "--stack",
            request.stack,
            "--pwd",
            request.pwd or str(root),
            "--dry_run",
            "true" if request.dryRun else "false",
            "--parallel",
            str(request.parallel),
            "--organization",
            request.organization,
            "--root_directory",
            str(root),
            program,
            *request.args,
        ]
        env = _env(venv)
        env["PULUMI_CONFIG"] = json.dumps(dict(request.config))
        env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(request.configSecretKeys))
        env["PULUMI_PROJECT"], env["PULUMI_STACK"] = request.project, request.stack
        env["PULUMI_ORGANIZATION"] = request.organization
        env["PULUMI_DRY_RUN"] = "true" if request.dryRun else "false"
        if not Path(python).exists() and os.sep in python:
            return language_pb2.RunResponse(
                error=f"the virtual environment {venv} does not exist: run `pulumi install`"
            )
        code = subprocess.run(cmd, cwd=request.pwd or str(root), env=env, check=False).returncode
        if code == 0:
            return language_pb2.RunResponse()
        if code == BAIL:
            return language_pb2.RunResponse(bail=True)
        return language_pb2.RunResponse(error=f"Program exited with non-zero exit code: {code}")

    def About(self, request: Any, context: Any) -> Any:
        return language_pb2.AboutResponse(executable=sys.executable, version=sys.version.split()[0])

    def GetProgramDependencies(self, request: Any, context: Any) -> Any:
        deps = [
            language_pb2.DependencyInfo(name="pulumi-" + p["name"], version=p["version"])
            for p in _plugins(request.info, request.pwd)
        ]
        return language_pb2.GetProgramDependenciesResponse(dependencies=deps)

    def RuntimeOptionsPrompts(self, request: Any, context: Any) -> Any:
        return language_pb2.RuntimeOptionsResponse()

    def Cancel(self, request: Any, context: Any) -> Any:
        return empty_pb2.Empty()


def main() -> None:
    engine = sys.argv[-1] if len(sys.argv) > 1 else ""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        options=[("grpc.max_receive_message_length", 400 * 1024 * 1024)],
    )
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(LanguageHost(engine), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    server.stop(0)


if __name__ == "__main__":
    main()
