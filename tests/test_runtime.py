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

import pytest

from generator.preview import mockrun, sdkload

ROOT = Path(__file__).resolve().parents[1]
STACKS = sorted(p.name for p in (ROOT / "stacks").iterdir() if (p / "__main__.py").is_file())


def _run(stack: str) -> mockrun.Graph:
    return mockrun.run_program(ROOT / "stacks" / stack, project=stack, stack="dev",
                               config={"alicloud:region": "cn-wulanchabu"})


@pytest.mark.parametrize("mode", mockrun.GC_MODES)
def test_every_collector_mode_declares_the_same_graph_and_restores_the_collector(
        mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before = (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count())
    monkeypatch.setenv(mockrun.GC_ENV, "default")
    reference = _run("finetune-7b")
    monkeypatch.setenv(mockrun.GC_ENV, mode)
    assert mockrun.gc_mode() == mode
    assert _run("finetune-7b") == reference
    assert (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()) == before


def test_an_unknown_collector_mode_means_tuned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(mockrun.GC_ENV, "bogus")
    assert mockrun.gc_mode() == "tuned"


def test_the_collector_is_tuned_during_the_run() -> None:
    seen = []
    with mockrun.tuned_gc("tuned"):
        seen.append((gc.isenabled(), gc.get_threshold()[0], gc.get_freeze_count() > 0))
    with mockrun.tuned_gc("off"):
        seen.append((gc.isenabled(), None, gc.get_freeze_count() > 0))
    assert seen == [(True, mockrun.TUNED_THRESHOLDS[0], True), (False, None, True)]


def test_services_are_read_from_the_program() -> None:
    source = (ROOT / "stacks" / "foundation-1t" / "__main__.py").read_text()
    assert sdkload.services(source) == ["ecs", "nas", "oss", "ram", "vpc"]


def test_lean_packages_find_every_kind_of_name() -> None:
    code = ("import sys\nfrom generator.preview import sdkload\n"
            "sdkload.lean_packages(['ecs', 'oss'])\n"
            "import pulumi_alicloud as alicloud\n"
            "assert alicloud.ecs.Instance.__module__ == 'pulumi_alicloud.ecs.instance'\n"
            "assert alicloud.ecs.InstanceArgs.__module__ == 'pulumi_alicloud.ecs.instance'\n"
            "assert alicloud.ecs.get_images.__module__ == 'pulumi_alicloud.ecs.get_images'\n"
            "assert alicloud.ecs.GetImagesResult.__module__ == 'pulumi_alicloud.ecs.get_images'\n"
            "assert alicloud.ecs.InstanceDataDiskArgs.__module__ == 'pulumi_alicloud.ecs._inputs'\n"
            "assert alicloud.oss.BucketLifecycleRuleArgs.__module__ == 'pulumi_alicloud.oss._inputs'\n"
            "assert alicloud.ecs.GetImagesImageResult.__module__ == 'pulumi_alicloud.ecs.outputs'\n"
            "try:\n    alicloud.ecs.NoSuchThing\nexcept AttributeError:\n    pass\nelse:\n    raise SystemExit(1)\n"
            "assert 'pulumi_alicloud.ecs.launch_template' not in sys.modules\n"
            "from pulumi_alicloud.ecs import EcsDeploymentSet\n"
            "import pulumi_alicloud.ecs.hpc_cluster\n"
            "print(sum(m.startswith('pulumi_alicloud.ecs.') for m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) < 20  # of the 90 modules of pulumi_alicloud.ecs


@pytest.mark.parametrize("stack", STACKS)
def test_a_lean_run_declares_what_a_full_run_does_with_fewer_modules(stack: str) -> None:
    code = ("import json, sys\nfrom generator.preview import mockrun\n"
            f"g = mockrun.run_program({str(ROOT / 'stacks' / stack)!r}, project={stack!r}, stack='dev')\n"
            "print(json.dumps({'graph': [[r.type, r.name, r.inputs, r.protect, r.retain_on_delete, r.parent] "
            "for r in g.resources], 'outputs': g.outputs, 'warnings': g.warnings, "
            "'modules': sum(m.startswith('pulumi_alicloud') for m in sys.modules)}, default=str))\n")
    out = {}
    for lean in ("on", "off"):
        env = {**os.environ, mockrun.LEAN_SDK_ENV: lean}
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        out[lean] = json.loads(proc.stdout)
    assert out["on"]["graph"] == out["off"]["graph"] and out["on"]["outputs"] == out["off"]["outputs"]
    assert out["on"]["warnings"] == out["off"]["warnings"]
    assert out["on"]["modules"] < out["off"]["modules"] * 0.6
