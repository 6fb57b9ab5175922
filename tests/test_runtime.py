"""The mock runtime's own weight (issue #15, 2 and 4): the collector is tuned for the run and restored after, and the
mock runner loads only the pulumi_alicloud modules a program uses; neither changes what a program declares.
Speed is measured in benchmarks/ (bench_scaling.py), never here."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from generator.preview import lean, mockrun, sdkload

ROOT = Path(__file__).resolve().parents[1]
STACKS = sorted(p.name for p in (ROOT / "stacks").iterdir() if (p / "__main__.py").is_file())


def _run(stack: str) -> mockrun.Graph:
    return mockrun.run_program(ROOT / "stacks" / stack, project=stack, stack="dev",
                               config={"alicloud:region": "cn-wulanchabu"}, derive=False)  # every registration


@pytest.mark.parametrize("mode", lean.GC_MODES)
def test_every_collector_mode_declares_the_same_graph_and_restores_the_collector(
        mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before = (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count())
    monkeypatch.setenv(lean.GC_ENV, "default")
    reference = _run("finetune-7b")
    monkeypatch.setenv(lean.GC_ENV, mode)
    assert lean.gc_mode() == mode
    assert _run("finetune-7b") == reference
    assert (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()) == before


def test_an_unknown_collector_mode_means_tuned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lean.GC_ENV, "bogus")
    assert lean.gc_mode() == "tuned"


def test_the_collector_is_tuned_during_the_run() -> None:
    seen = []
    with lean.tuned_gc("tuned"):
        seen.append((gc.isenabled(), gc.get_threshold()[0], gc.get_freeze_count() > 0))
    with lean.tuned_gc("off"):
        seen.append((gc.isenabled(), None, gc.get_freeze_count() > 0))
    assert seen == [(True, lean.TUNED_THRESHOLDS[0], True), (False, None, True)]


def test_services_are_read_from_the_program() -> None:
    source = (ROOT / "stacks" / "foundation-1t" / "__main__.py").read_text()
    assert sdkload.services(source) == ["ecs", "nas", "oss", "ram", "vpc"]
    text = "alicloud.a x=pulumi_alicloud.b(xalicloud.c, my_pulumi_alicloud.d, _alicloud.e, (alicloud.f_1.G\nalicloud.Hi"
    assert sdkload.services(text) == ["a", "b", "f_1"]


def test_lean_packages_find_every_kind_of_name() -> None:
    code = ("import sys\nfrom generator.preview import sdkload\n"
            "sdkload.lean_packages(['ecs', 'oss'])\n"
            "built, index = [], sdkload._index\n"
            "sdkload._index = lambda folder: built.append(folder.name) or index(folder)\n"
            "import pulumi_alicloud as alicloud\n"
            "assert alicloud.ecs.Instance.__module__ == 'pulumi_alicloud.ecs.instance'\n"
            "assert alicloud.ecs.InstanceArgs.__module__ == 'pulumi_alicloud.ecs.instance'\n"
            "assert alicloud.ecs.get_images.__module__ == 'pulumi_alicloud.ecs.get_images'\n"
            "assert alicloud.ecs.GetImagesResult.__module__ == 'pulumi_alicloud.ecs.get_images'\n"
            "assert alicloud.ecs.InstanceDataDiskArgs.__module__ == 'pulumi_alicloud.ecs._inputs'\n"
            "assert alicloud.oss.BucketLifecycleRuleArgs.__module__ == 'pulumi_alicloud.oss._inputs'\n"
            "assert alicloud.ecs.GetImagesImageResult.__module__ == 'pulumi_alicloud.ecs.outputs'\n"
            "assert alicloud.ecs.outputs is sys.modules['pulumi_alicloud.ecs.outputs']\n"
            "assert alicloud.oss.Bucket and built == []\n"  # `from . import outputs` needs no __all__ search
            "try:\n    alicloud.ecs.NoSuchThing\nexcept AttributeError:\n    pass\nelse:\n    raise SystemExit(1)\n"
            "assert built == ['ecs']\n"
            "assert 'pulumi_alicloud.ecs.launch_template' not in sys.modules\n"
            "from pulumi_alicloud.ecs import EcsDeploymentSet\n"
            "import pulumi_alicloud.ecs.hpc_cluster\n"
            "print(sum(m.startswith('pulumi_alicloud.ecs.') for m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) < 20  # of the 90 modules of pulumi_alicloud.ecs


_TOP = """
import json, sys, types
from generator.preview import sdkload
sdkload.defer_unused()
lean = sys.argv[1] == "lean" and sdkload.lean_top()
import pulumi_alicloud as top
from pulumi.runtime import rpc
names = sorted(sys.argv[2].split(",")) if len(sys.argv) > 2 else sorted(n for n in vars(top) if not n.startswith("__"))
def what(value):
    if isinstance(value, types.ModuleType):
        return "module " + value.__name__
    return getattr(value, "__module__", "") + ":" + getattr(value, "__qualname__", repr(value))
print(json.dumps({
    "lean": lean,
    "names": {n: what(getattr(top, n)) for n in names},
    "modules": {k: [type(m).__name__ + m.mod_info["fqn"] for m in v] for k, v in rpc._RESOURCE_MODULES.items()},
    "packages": {k: [p.pkg_info["fqn"] for p in v] for k, v in rpc._RESOURCE_PACKAGES.items()},
}))
"""


def test_the_lean_top_package_binds_and_registers_what_the_sdk_does() -> None:
    def run(*args: str) -> dict[str, Any]:
        proc = subprocess.run([sys.executable, "-c", _TOP, *args], cwd=ROOT, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        got: dict[str, Any] = json.loads(proc.stdout)
        return got

    full = run("full")
    lean = run("lean", ",".join(full["names"]))
    assert lean["lean"] is True and full["lean"] is False
    assert lean["names"] == full["names"] and len(full["names"]) > 150  # service packages, resources, outputs
    assert lean["modules"] == full["modules"] and lean["packages"] == full["packages"]
    assert len(full["modules"]) > 1000


def test_an_unknown_top_package_layout_runs_the_real_init() -> None:
    source = (Path(sdkload.importlib.util.find_spec(sdkload.SDK).origin or "")).read_text()  # type: ignore[union-attr]
    assert sdkload._top_layout(source) is not None
    assert sdkload._top_layout(source.replace("import typing\n", "import typing\nprint(1)\n", 1)) is None
    assert sdkload._top_layout(source.replace('resource_packages="""', 'resource_packages=f"""', 1)) is None
    assert sdkload._top_layout(source + "x = 1\n") is None


@pytest.mark.parametrize("stack", STACKS)
def test_a_lean_run_declares_what_a_full_run_does_with_fewer_modules(stack: str) -> None:
    code = ("import json, sys\nfrom generator.preview import mockrun\n"
            f"g = mockrun.run_program({str(ROOT / 'stacks' / stack)!r}, project={stack!r}, stack='dev')\n"
            "print(json.dumps({'graph': [[r.type, r.name, r.inputs, r.protect, r.retain_on_delete, r.parent] "
            "for r in g.resources], 'outputs': g.outputs, 'warnings': g.warnings, "
            "'modules': sum(m.startswith('pulumi_alicloud') for m in sys.modules)}, default=str))\n")
    out = {}
    for lean_sdk in ("on", "off"):
        env = {**os.environ, mockrun.LEAN_SDK_ENV: lean_sdk}
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, check=False)
        assert proc.returncode == 0, proc.stderr
        out[lean_sdk] = json.loads(proc.stdout)
    assert out["on"]["graph"] == out["off"]["graph"] and out["on"]["outputs"] == out["off"]["outputs"]
    assert out["on"]["warnings"] == out["off"]["warnings"]
    assert out["on"]["modules"] < out["off"]["modules"] * 0.6


# Issue #28, 1: each runtime setting that the mock monitor never observes is applied, and none changes the graph.
LIGHT = [{"stack_traces": st, "inline": inline} for st in (False, True) for inline in (True, False)]


@pytest.mark.parametrize("settings", LIGHT, ids=lambda s: f"traces-{s['stack_traces']}-inline-{s['inline']}")
@pytest.mark.parametrize("stack", ["pretrain-70b", "finetune-dlc"])
def test_light_runtime_settings_declare_the_same_graph(stack: str, settings: dict[str, bool],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lean.STACK_TRACES_ENV, "on")
    monkeypatch.setenv(lean.INLINE_ENV, "off")
    assert lean.light_settings() == {"stack_traces": True, "inline": False}  # Pulumi's own behaviour
    reference = _run(stack)
    monkeypatch.setenv(lean.STACK_TRACES_ENV, "on" if settings["stack_traces"] else "off")
    monkeypatch.setenv(lean.INLINE_ENV, "on" if settings["inline"] else "off")
    assert lean.light_settings() == settings
    graph = _run(stack)
    assert graph == reference
    assert json.dumps(graph.outputs, sort_keys=True) == json.dumps(reference.outputs, sort_keys=True)


def test_the_defaults_skip_stack_traces_and_answer_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(lean.STACK_TRACES_ENV, raising=False)
    monkeypatch.delenv(lean.INLINE_ENV, raising=False)
    assert lean.light_settings() == {"stack_traces": False, "inline": True}


def test_light_runtime_restores_pulumi() -> None:
    import asyncio

    from pulumi.runtime import mocks
    from pulumi.runtime import resource as runtime_resource

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        before = (runtime_resource._get_stack_trace, runtime_resource._get_source_position, mocks._sync_await,
                  getattr(loop, "_default_executor", None))
        with lean.light_runtime(stack_traces=False, inline=True):
            assert runtime_resource._get_stack_trace().frames == []  # an empty trace: the monitor never reads it
            assert isinstance(loop._default_executor, lean._InlineExecutor)  # type: ignore[attr-defined]
        after = (runtime_resource._get_stack_trace, runtime_resource._get_source_position, mocks._sync_await,
                 getattr(loop, "_default_executor", None))
        assert after == before
    finally:
        loop.close()


def test_inline_calls_run_in_the_calling_thread() -> None:
    import threading

    done = lean._InlineExecutor().submit(threading.get_ident)
    assert done.result() == threading.get_ident()
    failed = lean._InlineExecutor().submit(lambda: 1 / 0)
    assert isinstance(failed.exception(), ZeroDivisionError)


@pytest.mark.parametrize("args", [["preview", "stacks/pretrain-70b"], ["validate", "examples/finetune-7b.yaml"],
                                  ["preview", "stacks/no-such-folder"]])
def test_skipping_teardown_keeps_output_and_exit_code(args: list[str], tmp_path: Path) -> None:
    """`trainstack` skips interpreter teardown after a mock run (generator.cli.entry): same output, same code."""
    seen = []
    for fast in ("on", "off"):
        env = {**os.environ, "TRAINSTACK_FAST_EXIT": fast, "TRAINSTACK_GRAPH_CACHE": "off",
               "XDG_CACHE_HOME": str(tmp_path)}
        proc = subprocess.run([sys.executable, "-m", "generator.cli", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=False)
        seen.append((proc.returncode, proc.stdout, proc.stderr))
    assert seen[0] == seen[1]
    assert (seen[0][0] == 0) == ("no-such" not in args[1])  # a failure still fails


_ENTRY = """
import atexit, sys
atexit.register(lambda: print("teardown", file=sys.stderr))
if sys.argv[1] == "opened":
    import generator.live.pulumi_engine as engine
    engine.OPENED = True  # as PulumiEngine._open sets it
sys.argv = ["trainstack", "validate", "examples/finetune-7b.yaml"]
from generator.cli import entry
entry()
"""


@pytest.mark.parametrize("case", ["mock", "opened", "off"])
def test_teardown_is_skipped_after_a_mock_run_only(case: str, tmp_path: Path) -> None:
    """The fast exit happens (`import pulumi` loads pulumi.automation, so its presence cannot be the test): after a
    mock run no atexit handler runs, and the exit code is the command's; a process that opened a stack with the live
    engine, or TRAINSTACK_FAST_EXIT=off, tears down normally."""
    env = {**os.environ, "TRAINSTACK_FAST_EXIT": "off" if case == "off" else "on", "TRAINSTACK_GRAPH_CACHE": "off",
           "XDG_CACHE_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", _ENTRY, case], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert ("teardown" in proc.stderr.splitlines()) == (case != "mock")


def test_the_command_s_process_settings_keep_output_and_exit_code(tmp_path: Path) -> None:
    """`trainstack` raises the collector's first threshold for the command (generator.cli.entry): the same output
    and exit code as with CPython's thresholds. When the command returns, the thresholds are CPython's again and
    PYDANTIC_DISABLE_PLUGINS is unset again; while it ran, pydantic looked for no plugins (no entry-point scan)."""
    seen = []
    for mode in ("tuned", "default"):
        env = {**os.environ, "TRAINSTACK_CLI_GC": mode, "TRAINSTACK_GRAPH_CACHE": "off", "XDG_CACHE_HOME": str(tmp_path)}
        proc = subprocess.run([sys.executable, "-m", "generator.cli", "validate", "examples/finetune-7b.yaml"],
                              cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        seen.append((proc.returncode, proc.stdout, proc.stderr))
    assert seen[0] == seen[1] and seen[0][0] == 0
    probe = ("import gc, os, sys; sys.argv = ['trainstack', 'validate', 'examples/finetune-7b.yaml']\n"
             "from generator.cli import entry\nbefore = gc.get_threshold()\ntry:\n    entry()\nexcept SystemExit:\n"
             "    pass\nassert gc.get_threshold() == before, gc.get_threshold()\n"
             "assert 'PYDANTIC_DISABLE_PLUGINS' not in os.environ\n"
             "from pydantic.plugin import _loader\nassert _loader._plugins is None, _loader._plugins")
    env = {**os.environ, "TRAINSTACK_FAST_EXIT": "off", "TRAINSTACK_GRAPH_CACHE": "off", "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
