"""model.precision fp8 / estimate --precision fp8: the catalog's FP8 peaks, Transformer Engine's bytes (bf16 states,
an FP8 weight cache, FP8 GEMM inputs), the time at 1.3x bf16, and the refusal on GPUs without FP8 (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from generator import api, sizing
from generator.catalog import load_catalog
from generator.errors import SpecErrors
from generator.plan import catalog_refusals
from generator.plan.pipeline import load, plan_located
from generator.sizing.fp8 import activation_saving as fp8_activation_saving
from generator.sizing.memory import TrainingSetup, per_gpu_memory

ROOT = Path(__file__).resolve().parent.parent
CATALOG = load_catalog()
GiB = 2**30


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "generator.cli", *args], check=False, capture_output=True, text=True, cwd=ROOT
    )


def _setup(precision: str, **kw: object) -> TrainingSetup:
    base: dict = {
        "arch": sizing.PRESETS["llama-2-70b"],
        "seq_len": 4096,
        "micro_batch": 1,
        "precision": precision,
        "optimizer": "adamw",
        "zero_stage": 1,
        "tp": 8,
        "pp": 4,
        "dp": 4,
        "sequence_parallel": True,
        "recompute": "selective",
        "framework": "megatron",
    }
    base.update(kw)
    return TrainingSetup(**base)


def test_the_catalog_has_fp8_peaks_only_where_the_gpu_has_fp8() -> None:
    fp8 = {g.name: g.fp8_tflops for g in CATALOG.gpus}
    assert fp8["H20"] == 2 * CATALOG.gpu("H20").bf16_tflops == 296
    assert fp8["L20"] == 239 and fp8["B-48G"] == fp8["B-PRO-72G"] == 536
    assert fp8["A100-80G"] is fp8["A100-40G"] is fp8["A10"] is fp8["V100-16G"] is fp8["V100-32G"] is None
    for g in CATALOG.gpus:
        assert ("fp8" in g.notes) or ("No FP8" in g.notes)  # every row says where its FP8 figure comes from


def test_fp8_keeps_bf16_states_adds_the_weight_cache_and_halves_the_gemm_inputs() -> None:
    bf16, fp8 = per_gpu_memory(_setup("bf16")), per_gpu_memory(_setup("fp8"))
    assert (fp8.gradients, fp8.optimizer_states) == (bf16.gradients, bf16.optimizer_states)
    arch = sizing.PRESETS["llama-2-70b"]
    cache = 2 * (80 // 4) * arch.layer_parameters / 8  # cast + transpose of the local GEMM weights
    assert fp8.weights - bf16.weights == pytest.approx(cache, abs=1)
    # SP, t=8: [SP]'s 34/t per layer loses (2 + 2 + 2 + 8)/2 / t = 7/8 s*b*h
    assert fp8_activation_saving(8, True, "selective") == Fraction(7, 8)
    assert fp8_activation_saving(8, False, "selective") == 2 + Fraction(5, 8)
    assert fp8_activation_saving(1, False, "none") == 7 and fp8_activation_saving(8, True, "full") == 0
    per_layer = 4096 * 8192 * Fraction(7, 8)
    assert bf16.activations - fp8.activations == pytest.approx(
        float(per_layer * 80), rel=1e-6
    )  # L layer-batches
    assert any("FP8 weight cache" in n for n in fp8.notes)
    # ZeRO-3 / FSDP: the cast comes from the gathered unit, nothing persistent
    z3 = per_gpu_memory(_setup("fp8", zero_stage=3, framework="fsdp", pp=1, tp=1, dp=64))
    z3b = per_gpu_memory(_setup("bf16", zero_stage=3, framework="fsdp", pp=1, tp=1, dp=64))
    assert z3.weights == z3b.weights


def test_fp8_checkpoints_are_bf16_sized() -> None:
    assert sizing.checkpoint_size_bytes(10**9, "adamw", "fp8") == sizing.checkpoint_size_bytes(
        10**9, "adamw", "bf16"
    )


def test_fp8_time_is_bf16_time_over_the_published_speedup() -> None:
    peak, mfu = sizing.precision_peak(148, 296, 0.40, "fp8")
    assert peak == 296 and peak * mfu == pytest.approx(148 * 0.40 * sizing.fp8_speedup(0.0))
    # the attention core stays in BF16: the larger its share, the smaller FP8's gain (1 when it is all attention)
    assert sizing.fp8_speedup(0.0) == pytest.approx(sizing.mfu.fitted().fp8_gemm_speedup)
    assert 1.0 < sizing.fp8_speedup(0.3) < sizing.fp8_speedup(0.1) and sizing.fp8_speedup(1.0) == 1.0
    shared = sizing.precision_peak(148, 296, 0.40, "fp8", 0.2)
    assert shared[0] * shared[1] == pytest.approx(148 * 0.40 * sizing.fp8_speedup(0.2))
    assert sizing.precision_peak(148, 296, 0.40, "bf16") == (148, 0.40)
    with pytest.raises(sizing.SizingError, match="FP8 tensor cores"):
        sizing.precision_peak(312, None, 0.40, "fp8")
    runs = {}
    for precision in ("bf16", "fp8"):
        out = _cli(
            "estimate",
            "--preset",
            "llama-2-70b",
            "--gpus",
            "64",
            "--tp",
            "8",
            "--pp",
            "4",
            "--gpu",
            "H20",
            "--tokens",
            "2T",
            "--precision",
            precision,
            "--json",
        )
        assert out.returncode == 0, out.stderr
        runs[precision] = json.loads(out.stdout)
    assert runs["fp8"]["gpu"]["peak_tflops"] == 296 and runs["bf16"]["gpu"]["peak_tflops"] == 148
    setup = runs["fp8"]["setup"]
    share = sizing.attention_share(sizing.PRESETS["llama-2-70b"], setup["seq_len"], setup["recompute"])
    assert runs["bf16"]["gpu_hours"] / runs["fp8"]["gpu_hours"] == pytest.approx(sizing.fp8_speedup(share), rel=1e-3)
    assert runs["fp8"]["setup"]["precision"] == "fp8"
    # an H100 answer (not offered on Alibaba Cloud) has Hopper's FP8 peak
    h100 = _cli("estimate", "--preset", "llama-2-7b", "--gpu", "H100", "--precision", "fp8", "--json")
    assert h100.returncode == 0, h100.stderr
    assert json.loads(h100.stdout)["gpu"]["peak_tflops"] == 1978


def test_estimate_refuses_fp8_on_a_gpu_without_it_naming_the_flag() -> None:
    out = _cli(
        "estimate",
        "--preset",
        "llama-2-70b",
        "--gpus",
        "64",
        "--tp",
        "8",
        "--gpu",
        "A100-80G",
        "--precision",
        "fp8",
    )
    assert out.returncode == 2 and "--precision fp8" in out.stderr and "A100-80G" in out.stderr
    assert "fp8" in _cli("estimate", "--help").stdout
    qlora = _cli("estimate", "--preset", "llama-2-7b", "--lora-rank", "16", "--qlora", "--precision", "fp8")
    assert qlora.returncode == 2 and "NF4" in qlora.stderr


def _spec(tmp_path: Path, gpu: str | None = None) -> Path:
    text = (
        (ROOT / "examples" / "pretrain-70b.yaml").read_text().replace("  precision: bf16", "  precision: fp8")
    )
    if gpu:
        text = text.replace("  gpu: auto", f"  gpu: {gpu}")
    path = tmp_path / "fp8.yaml"
    path.write_text(text)
    return path


def test_a_spec_with_fp8_plans_on_an_fp8_gpu_and_is_faster(tmp_path: Path) -> None:
    plan = plan_located(load(_spec(tmp_path)))
    gpu = CATALOG.gpu(CATALOG.instance(plan.compute.instance_type).gpu)
    assert gpu.fp8_tflops
    assert plan.sizing.peak_tflops == gpu.fp8_tflops
    # every type the plan sized has FP8; A100 types (the 1T example's in this region) are left out for it
    sized = [CATALOG.instance(c.instance_type) for c in plan.candidates if c.nodes]
    assert sized and all(CATALOG.gpu(t.gpu).fp8_tflops for t in sized)
    # the same GPU, nodes and layout in bf16 computes longer (the pretrain-70b example itself plans on A100s)
    same = (ROOT / "examples" / "pretrain-70b.yaml").read_text().replace("  gpu: auto", f"  gpu: {gpu.name}")
    same = same.replace("  nodes: auto", f"  nodes: {plan.compute.nodes}")
    (tmp_path / "bf16.yaml").write_text(same)
    bf16 = plan_located(load(tmp_path / "bf16.yaml"))
    assert bf16.compute.instance_type == plan.compute.instance_type and bf16.compute.nodes == plan.compute.nodes
    assert plan.schedule.compute_hours < bf16.schedule.compute_hours
    from generator.plan import layout, rejections, shape

    spec = load(_spec(tmp_path)).spec
    _, rejected = layout.search(spec, CATALOG, CATALOG.region(spec.region), shape.architecture(spec), None)
    no_fp8 = [r for r in rejected.values() if isinstance(r, rejections.NoPrecision)]
    assert no_fp8 and {(r.code, r.kind, r.precision) for r in no_fp8} == {("TSR003", "filter", "fp8")}
    assert all(not CATALOG.gpu(r.gpu).fp8_tflops for r in no_fp8)
    assert rejections.order(("x", rejections.NoPrecision("fp8", "A100-80G")))[0] == 1


def test_a_spec_with_fp8_on_a_gpu_without_it_is_refused_on_the_field(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "A100-80G")
    out = _cli("plan", str(spec))
    assert out.returncode == 2
    assert f"{spec}:8:3: model.precision: fp8 needs a GPU with FP8 tensor cores" in out.stderr  # wording
    with pytest.raises(SpecErrors) as e:
        api.plan(spec)
    (p,) = e.value.problems
    assert (p.code, p.dotted) == (catalog_refusals.NoFp8.code, "model.precision")
    assert {k: v for k, v in p.fields if k in ("gpu", "source")} == {"gpu": "A100-80G", "source": "compute.gpu"}
    assert "fp8" in json.dumps(
        json.loads(_cli("schema").stdout)["$defs"]["ModelSpec"]["properties"]["precision"]
    )
    hint = _cli("plan", str(_spec(tmp_path, "A100-80G").with_name("fp8.yaml")))
    assert "H20" in hint.stderr  # the FP8 GPUs of the region are named, even when sold through sales only
