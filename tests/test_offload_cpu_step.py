"""The CPU optimizer step under offload (generator/sizing/offload.py): DeepSpeed's CPU-Adam and PyTorch's CPU Adam
at the throughput Ren et al. 2021 (ZeRO-Offload, arXiv:2101.06840) measured, the instance type's vCPUs from the
catalog, and its time in the plan's schedule, not overlapped."""

from __future__ import annotations

import pytest

from generator import sizing
from generator.catalog import load_catalog
from generator.plan.planner import make_plan
from generator.sizing.offload import DEFAULT_VCPUS_PER_GPU, PAPER_HOST_THREADS, cpu_adam_params_per_second
from generator.spec.model import Spec

CATALOG = load_catalog()


@pytest.mark.parametrize(("framework", "seconds"), [("deepspeed", 2.57), ("fsdp", 14.76)])
def test_the_papers_host_steps_10b_parameters_in_the_papers_time(framework: str, seconds: float) -> None:
    # the paper's DGX-2 host: 96 hardware threads stepping 10 B parameters (all 16 GPUs' shards together)
    t = sizing.cpu_optimizer_seconds(framework, 10e9 / 16, 16, PAPER_HOST_THREADS)
    assert t == pytest.approx(seconds)
    # CPU-Adam is the paper's 5-6x faster than PyTorch's CPU Adam
    assert cpu_adam_params_per_second("deepspeed", 96) / cpu_adam_params_per_second(
        "fsdp", 96
    ) == pytest.approx(14.76 / 2.57)


def test_time_scales_with_parameters_and_inversely_with_vcpus() -> None:
    one = sizing.cpu_optimizer_seconds("deepspeed", 1e9, 8, 96)
    assert sizing.cpu_optimizer_seconds("deepspeed", 2e9, 8, 96) == pytest.approx(2 * one)
    assert sizing.cpu_optimizer_seconds("deepspeed", 1e9, 8, 192) == pytest.approx(one / 2)
    # a type without stated vCPUs is given the paper's 6 per GPU
    assert sizing.cpu_optimizer_seconds("deepspeed", 1e9, 8, 0) == pytest.approx(
        sizing.cpu_optimizer_seconds("deepspeed", 1e9, 8, DEFAULT_VCPUS_PER_GPU * 8)
    )


def _plan(nodes: int, framework: str = "deepspeed", offload: str = "optimizer+params"):
    doc = {
        "name": "offload-run",
        "region": "cn-wulanchabu",
        "model": {"preset": "llama-2-70b", "tokens": "1B"},
        "compute": {"gpu": "A100-80G", "nodes": nodes},
        "parallelism": {
            "framework": framework,
            "zero_stage": 3,
            "offload": offload,
            "recompute": "full",
            "tensor": 1,
            "pipeline": 1,
        },
    }
    return make_plan(Spec.model_validate(doc), CATALOG)


@pytest.mark.parametrize("framework", ["deepspeed", "fsdp"])
def test_the_schedule_charges_the_cpu_step_on_the_types_vcpus(framework: str) -> None:
    p = _plan(4, framework)
    assert p.schedule is not None
    note = next(n for n in p.schedule.notes if "over PCIe" in n)
    t = CATALOG.instance(p.compute.instance_type)
    assert t is not None and t.vcpu > 0
    shard = sizing.PRESETS["llama-2-70b"].parameters / (p.compute.nodes * t.gpus)  # tp = pp = 1, d = all GPUs
    cpu = sizing.cpu_optimizer_seconds(framework, shard, t.gpus, t.vcpu)
    assert f"on {t.vcpu} vCPUs ({cpu:,.2f} s" in note
    assert ("DeepSpeed CPU-Adam" if framework == "deepspeed" else "PyTorch CPU Adam") in note


def test_the_cpu_step_lowers_the_layout_mfu_beyond_the_pcie_time() -> None:
    ds, fsdp = _plan(4, "deepspeed"), _plan(4, "fsdp")
    assert ds.schedule is not None and fsdp.schedule is not None
    # FSDP steps with PyTorch's CPU Adam, ~5.7x slower than CPU-Adam: more of the step is spent on the CPU
    share = {}
    for name, p in (("deepspeed", ds), ("fsdp", fsdp)):
        note = next(n for n in p.schedule.notes if "over PCIe" in n)
        share[name] = int(note.split("% of compute")[0].rsplit(" ", 1)[1].replace(",", ""))
    assert share["fsdp"] > share["deepspeed"] > 0
