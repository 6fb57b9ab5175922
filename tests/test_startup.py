"""What a command's process runs (generator/deferred.py; benchmarks/README.md, "Results of 2026-12-03, session 10:
start-up"): a side-cached ``diff``, a cold ``preview`` and a ``validate`` never run the modules only other paths read
(the planner's refusal classes, the estimate command, pulumi's Automation API and dynamic providers with PyYAML and
dill, the live engine, the catalog listings), so no later import brings their start-up cost back unnoticed; a
refused spec still gets its refusal, and the live engine's ``pulumi.automation`` still loads after a mock run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_incremental import _spec

ROOT = Path(__file__).resolve().parent.parent
PRETRAIN = ROOT / "examples" / "pretrain-70b.yaml"
SMALL = {"compute.max_nodes": 64, "model.global_batch_tokens": None, "compute.nodes": 4}

# never run on the paths below (a deferred module is in sys.modules, but its code has not run)
NOT_RUN = (
    "generator.plan.refusals",
    "generator.plan.catalog_refusals",
    "generator.plan.spec_refusals",
    "generator.plan.shape_refusals",
    "generator.plan.unfit_refusals",
    "generator.estimate",
    "generator.estimate.events",
    "generator.live",
    "generator.live.pulumi_engine",
    "generator.catalog.listing",
    "pulumi.automation",
    "pulumi.dynamic",
    "yaml",
    "dill",
    # gRPC and OpenTelemetry's SDK: no mock run talks to an engine or traces without a TRACEPARENT (sdkload.py)
    "grpc",
    "grpc.aio",
    "grpc._cython.cygrpc",
    "pulumi.runtime._instrumentation",
    "opentelemetry.sdk.trace",
)

# The trainstack command in this process, then the modules whose code ran (exec gives a module's namespace its
# __builtins__ first: a deferred module that has not run has none) and the exit code, as JSON in the file argv[1].
_PROBE = """
import json, sys
from generator import cli
code = None
try:
    cli.main(sys.argv[2:])
except SystemExit as e:
    code = e.code
{after}
ran = sorted(m for m, mod in list(sys.modules.items()) if mod is not None and "__builtins__" in vars(mod))
with open(sys.argv[1], "w") as out:
    json.dump({{"code": code, "ran": ran}}, out)
"""


def _env(**extra: str) -> dict[str, str]:
    """This process's environment without a TRACEPARENT (under which pulumi traces, so its tracing module runs)."""
    return {**{k: v for k, v in os.environ.items() if k != "TRACEPARENT"}, **extra}


def _probe(tmp: Path, args: list[str], after: str = "", env: dict[str, str] | None = None) -> dict[str, Any]:
    out = tmp / "probe.json"
    run = subprocess.run(
        [sys.executable, "-c", _PROBE.format(after=after), str(out), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env or _env(),
        check=False,
    )
    assert out.is_file(), run.stderr
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def _ran_after_preview(tmp: Path, after: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules that ran in a preview of the base spec followed by ``after`` (which asserts what it reads)."""
    base, _ = _specs(tmp)
    got = _probe(tmp, ["preview", str(base)], after, env=env)
    assert got["code"] in (0, None)
    return set(got["ran"])


def _specs(tmp: Path) -> tuple[Path, Path]:
    return _spec(tmp, PRETRAIN, SMALL, "base"), _spec(tmp, PRETRAIN, SMALL | {"compute.nodes": 5}, "head")


def test_a_side_cached_diff_runs_none_of_them(tmp_path: Path) -> None:
    base, head = _specs(tmp_path)
    primed = subprocess.run(
        [sys.executable, "-m", "generator.cli", "diff", "-", str(base)],
        cwd=ROOT,
        capture_output=True,
        env=_env(),
        check=False,
    )
    assert primed.returncode == 2, primed.stderr  # the run that made BASE leaves its side
    got = _probe(tmp_path, ["diff", str(base), str(head)])
    assert got["code"] == 2
    assert {"pulumi", "generator.plan.planner", "generator.preview.diff.compare"} <= set(got["ran"])  # HEAD ran
    assert sorted(set(NOT_RUN) & set(got["ran"])) == []


@pytest.mark.parametrize("command", ["preview", "validate"])
def test_a_cold_preview_or_validate_runs_none_of_them(tmp_path: Path, command: str) -> None:
    base, _ = _specs(tmp_path)
    got = _probe(tmp_path, [command, str(base)])
    assert got["code"] in (0, None)
    assert {"pulumi", "generator.plan.planner"} <= set(got["ran"])
    assert sorted(set(NOT_RUN) & set(got["ran"])) == []


def test_a_refused_spec_still_gets_its_refusal(tmp_path: Path) -> None:
    spec = _spec(tmp_path, PRETRAIN, SMALL | {"region": "mars-north-1"}, "refused")
    got = _probe(tmp_path, ["validate", str(spec)])
    assert got["code"] == 2
    assert "generator.plan.catalog_refusals" in got["ran"]  # run when the check read its refusal class


def test_the_live_engine_loads_pulumi_automation_after_a_mock_run(tmp_path: Path) -> None:
    after = (
        "import types, pulumi\nfrom pulumi.automation import LocalWorkspace\n"
        "assert pulumi.automation is sys.modules['pulumi.automation']\n"
        "assert type(pulumi.automation) is types.ModuleType and LocalWorkspace is pulumi.automation.LocalWorkspace\n"
    )
    assert {"pulumi.automation", "yaml"} <= _ran_after_preview(tmp_path, after)


def test_grpc_and_tracing_run_at_their_first_read_after_a_mock_run(tmp_path: Path) -> None:
    after = (
        "import types, grpc, pulumi\n"
        "assert grpc.StatusCode.UNIMPLEMENTED.name == 'UNIMPLEMENTED' and type(grpc) is types.ModuleType\n"
        "assert grpc.aio.server and type(grpc.aio) is types.ModuleType\n"
        "assert pulumi.runtime._instrumentation is sys.modules['pulumi.runtime._instrumentation']\n"
        "assert pulumi.runtime._instrumentation._tracer_provider is None\n"  # no TRACEPARENT: no tracing
    )
    ran = _ran_after_preview(tmp_path, after)
    assert {"grpc", "grpc.aio", "pulumi.runtime._instrumentation", "opentelemetry.sdk.trace"} <= ran


def test_with_a_traceparent_pulumi_traces_a_mock_run(tmp_path: Path) -> None:
    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    after = "import pulumi\nassert pulumi.runtime._instrumentation._tracer_provider is not None\n"
    ran = _ran_after_preview(tmp_path, after, env=_env(TRACEPARENT=traceparent))
    assert {"pulumi.runtime._instrumentation", "opentelemetry.sdk.trace"} <= ran
