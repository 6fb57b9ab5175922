"""Context parallelism (parallelism.context, estimate --cp), the one data-parallel degree, uneven pipeline stages
and the sourced runtime reserve (issue 24): sizing, the planner's choice of cp, the plan and estimate outputs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator import sizing
from generator.catalog import load_catalog
from generator.cli import main
from generator.estimate import EstimateError, data_parallel_degree, estimate
from generator.plan import rejections, unfit_refusals
from generator.plan.fit import data_parallel, replica_gpus
from generator.plan.planner import PlanningError, make_plan
from generator.sizing.activations import stage_sizes
from generator.sizing.context import context_ratio, kv_bytes_per_token
from generator.sizing.reserve import CUDA_CONTEXT_BYTES, NCCL_BUFFSIZE, communicators, runtime_reserve
from generator.spec.model import Spec


def plan(**overrides):
    doc = {"name": "cp-run", "region": "cn-wulanchabu", "model": {"preset": "llama-3-70b", "tokens": "10B"},
           "compute": {"gpu": "H20"}}
    doc.update(overrides)
    return make_plan(Spec.model_validate(doc), load_catalog())


def setup(**kw) -> sizing.TrainingSetup:
    base = {"arch": sizing.PRESETS["llama-3-70b"], "seq_len": 131072, "micro_batch": 1, "tp": 8, "pp": 4, "dp": 4,
            "sequence_parallel": True, "recompute": "selective", "framework": "megatron", "zero_stage": 1}
    return sizing.TrainingSetup(**{**base, **kw})


def test_one_data_parallel_degree() -> None:
    assert replica_gpus(8, 16, 16) == 2048
    assert data_parallel(16384, 8, 16, 16) == 8 and data_parallel(16384, 8, 16) == 128
    assert data_parallel(100, 8, 1) == 0  # not whole replicas
    assert data_parallel_degree(16384, 8, 16, 16) == 8
    with pytest.raises(EstimateError, match="tp x pp x cp"):
        data_parallel_degree(1000, 8, 4, 2)


def test_cp_divides_the_activations_and_shards_states_over_dp_x_cp() -> None:
    one = sizing.per_gpu_memory(setup(seq_len=32768))
    four = sizing.per_gpu_memory(setup(seq_len=131072, cp=4))
    # the same tokens per rank: the layers' activations match, plus one layer's ring buffers
    assert 0 < four.activations - one.activations < 0.01 * one.activations
    # the distributed optimizer shards over dp x cp = 16 ranks instead of 4
    assert four.optimizer_states * 4 == pytest.approx(one.optimizer_states, rel=1e-6)
    assert four.weights == one.weights


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from(["none", "selective",
                                                                                              "full"]))
def test_more_context_parallelism_never_needs_more_memory(a: int, b: int, recompute: str) -> None:
    lo, hi = sorted((a, b))
    small = sizing.per_gpu_memory(setup(cp=hi, recompute=recompute, seq_len=65536))
    large = sizing.per_gpu_memory(setup(cp=lo, recompute=recompute, seq_len=65536))
    assert small.total <= large.total


def test_cp_must_split_the_sequence_into_2cp_chunks() -> None:
    with pytest.raises(sizing.SizingError, match="multiple of 16"):
        sizing.per_gpu_memory(setup(seq_len=8200, cp=8))


def test_uneven_stages_peak_where_layers_times_micro_batches_peak() -> None:
    assert stage_sizes(126, 16) == (7, *(8,) * 14, 7)
    assert stage_sizes(70, 12) == (5, *(6,) * 10, 5)
    assert stage_sizes(80, 8) == (10,) * 8
    for layers in (33, 70, 80, 126):
        for pp in range(1, 17):
            if sizing.pipeline_splits(layers, pp):
                assert sum(stage_sizes(layers, pp)) == layers and len(stage_sizes(layers, pp)) == pp
    m = sizing.per_gpu_memory(setup(arch=sizing.PRESETS["llama-3-405b"], seq_len=8192, pp=16, dp=128))
    assert any("pipeline stage 1 (8 layers x 15 micro-batches)" in n for n in m.notes)


def test_llama3_405b_published_layouts_fit_and_the_one_without_cp_does_not() -> None:
    common = {"preset": "llama-3-405b", "gpus": 16384, "tp": 8, "pp": 16, "zero": 2, "framework": "fsdp",
              "gpu": "H100"}
    assert estimate(**common, seq_len=8192)["fits"]
    long = estimate(**common, seq_len=131072, cp=16)
    assert long["fits"] and long["setup"]["cp"] == 16 and long["setup"]["dp"] == 8
    assert not estimate(**common, seq_len=131072)["fits"]
    # Megatron's fp32 main gradients unsharded (ZeRO-1): not how Llama 3 ran, and it does not fit 80 GB
    assert not estimate(**{**common, "zero": 1, "framework": "megatron"}, seq_len=8192)["fits"]


def test_reserve_terms() -> None:
    assert communicators(1, 1, 1, 1) == 1 and communicators(8, 16, 16, 1) == 4
    notes: list[str] = []
    r = runtime_reserve(100 * 2**30, tp=8, pp=4, cp=1, ep=1, notes=notes)
    assert r == CUDA_CONTEXT_BYTES + 3 * 16 * 2 * NCCL_BUFFSIZE + 5 * 2**30
    assert "NCCL_BUFFSIZE" in notes[0]


def test_context_traffic_is_free_inside_a_node_and_charged_across() -> None:
    arch = sizing.PRESETS["llama-3-405b"]
    assert kv_bytes_per_token(arch, 1) == 0
    assert context_ratio(arch, 131072, 1, 8, 8, 2048, 400, 989, 0.4) == 0.0
    assert context_ratio(arch, 131072, 2, 4, 8, 2048, 400, 989, 0.4) == 0.0
    assert context_ratio(arch, 131072, 16, 8, 8, 2048, 400, 989, 0.4) > 0.0


def test_auto_takes_cp_only_for_long_sequences_that_need_it() -> None:
    short = plan(model={"preset": "llama-3-70b", "tokens": "10B", "sequence_length": 8192})
    assert short.compute.cp == 1
    long = plan(model={"preset": "llama-3-70b", "tokens": "10B", "sequence_length": 131072})
    c = long.compute
    assert c.cp > 1 and c.dp == c.total_gpus // (c.tp * c.pp * c.cp)
    assert json.loads(long.to_json())["compute"]["cp"] == c.cp
    assert any(d.topic == "parallelism" and f"cp={c.cp}" in d.choice for d in long.decisions)
    # a 32K sequence that fits without it keeps cp = 1
    assert plan(model={"preset": "llama-3-8b", "tokens": "1B", "sequence_length": 32768}).compute.cp == 1


def test_fixed_context_is_honoured_and_checked() -> None:
    p = plan(model={"preset": "llama-3-70b", "tokens": "10B", "sequence_length": 32768}, parallelism={"context": 2})
    assert p.compute.cp == 2 and p.compute.dp * p.compute.tp * p.compute.pp * 2 == p.compute.total_gpus
    with pytest.raises(PlanningError) as e:
        plan(model={"preset": "llama-3-70b", "tokens": "10B", "sequence_length": 32770}, parallelism={"context": 2})
    assert e.value.problems[0].path == ("parallelism", "context")


def test_estimate_cli_cp(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["estimate", "--preset", "llama-3-405b", "--gpus", "16384", "--tp", "8", "--pp", "16", "--cp", "16",
              "--seq-len", "131072", "--json"])
    assert e.value.code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["setup"]["cp"] == 16 and data["setup"]["dp"] == 8
    with pytest.raises(SystemExit) as e:
        main(["estimate", "--help"])
    assert "--cp" in capsys.readouterr().out


# ---- CPU offload (parallelism.offload, estimate --offload) ----

def offload_setup(**kw) -> sizing.TrainingSetup:
    base = {"arch": sizing.PRESETS["llama-2-70b"], "seq_len": 4096, "micro_batch": 1, "dp": 16, "zero_stage": 3,
            "framework": "deepspeed", "recompute": "full"}
    return sizing.TrainingSetup(**{**base, **kw})


def test_offload_moves_states_to_the_host_as_deepspeed_estimates_them() -> None:
    none = sizing.per_gpu_memory(offload_setup())
    opt = sizing.per_gpu_memory(offload_setup(offload="optimizer"))
    both = sizing.per_gpu_memory(offload_setup(offload="optimizer+params"))
    assert none.host == 0 and none.pcie_bytes == 0
    assert both.model_states < opt.model_states < none.model_states
    assert opt.gradients == opt.optimizer_states == 0 and opt.host > 0
    # ZeRO-Infinity to CPU: 18 bytes/param over all GPUs, x1.5 buffers (estimate_zero3_model_states_mem_needs)
    params = sizing.PRESETS["llama-2-70b"].parameters
    assert both.host == pytest.approx(18 * params / 16 * 1.5, rel=1e-6)
    assert both.pcie_bytes > opt.pcie_bytes > 0
    # ZeRO-Offload under ZeRO-2: only the 16-bit weights stay (estimate_zero2_model_states_mem_needs: 2 B/param)
    z2 = sizing.per_gpu_memory(offload_setup(zero_stage=2, offload="optimizer"))
    assert z2.model_states == 2 * params
    fsdp = sizing.per_gpu_memory(offload_setup(framework="fsdp", offload="optimizer+params"))
    assert fsdp.optimizer_states == 0 and fsdp.host == pytest.approx(16 * params / 16, rel=1e-6)


@pytest.mark.parametrize("kw, needle", [
    ({"framework": "megatron", "zero_stage": 1, "offload": "optimizer"}, "not megatron"),
    ({"framework": "fsdp", "offload": "optimizer"}, "no optimizer-only offload"),
    ({"zero_stage": 2, "offload": "optimizer+params"}, "only under ZeRO-3"),
    ({"zero_stage": 0, "offload": "optimizer"}, "zero_stage 1, 2 or 3"),
])
def test_offload_refused_where_the_framework_does_not_run_it(kw: dict, needle: str) -> None:
    with pytest.raises(sizing.SizingError, match=needle):
        sizing.per_gpu_memory(offload_setup(**kw))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 16, 32, 64]), st.sampled_from([1, 2, 4, 8, 16, 32, 64]),
       st.sampled_from(["optimizer", "optimizer+params"]))
def test_offload_host_memory_never_grows_with_dp(a: int, b: int, offload: str) -> None:
    lo, hi = sorted((a, b))
    assert (sizing.per_gpu_memory(offload_setup(dp=hi, offload=offload)).host
            <= sizing.per_gpu_memory(offload_setup(dp=lo, offload=offload)).host)


def test_planner_checks_host_memory_and_charges_pcie() -> None:
    par = {"framework": "deepspeed", "zero_stage": 3, "offload": "optimizer+params", "recompute": "full",
           "tensor": 1, "pipeline": 1}
    model = {"preset": "llama-2-70b", "tokens": "1B"}
    p = plan(model=model, compute={"gpu": "A100-80G", "nodes": 4}, parallelism=par)
    assert p.sizing.total < 10 * 2**30
    assert p.schedule is not None and any("over PCIe" in n for n in p.schedule.notes)
    with pytest.raises(PlanningError) as e:
        plan(model=model, compute={"gpu": "A100-80G", "nodes": 2}, parallelism=par)
    [problem] = e.value.problems
    assert problem.code == unfit_refusals.NoTypeFitsNodes.code  # the hint names more host memory first
    assert rejections.HostMemoryShort.code in {r["code"] for r in dict(problem.fields)["rejected"]}
    with pytest.raises(Exception) as bad:
        plan(model=model, parallelism={"framework": "megatron", "offload": "optimizer"})
    assert "offload" in str(bad.value)
    with pytest.raises(PlanningError) as e:
        plan(model=model, parallelism={"framework": "fsdp", "zero_stage": 3, "offload": "optimizer"})
    assert e.value.problems[0].path == ("parallelism", "offload")


def test_estimate_offload_json() -> None:
    r = estimate(preset="llama-2-70b", gpus=16, zero=3, framework="deepspeed", offload="optimizer+params",
                 recompute="full", gpu="A100-80G")
    assert r["fits"] and r["setup"]["offload"] == "optimizer+params"
    assert r["offload"]["host_bytes_per_gpu"] > 0 and r["offload"]["pcie_bytes_per_step"] > 0
    assert estimate(preset="llama-2-7b")["offload"] is None
    with pytest.raises(EstimateError, match="not megatron"):
        estimate(preset="llama-2-70b", gpus=16, offload="optimizer")


def test_estimate_and_the_spec_share_one_home_for_defaults() -> None:
    from generator.spec import defaults
    from generator.spec.model import ModelSpec, ParallelismSpec

    m, p = ModelSpec.model_fields, ParallelismSpec.model_fields
    assert m["sequence_length"].default == defaults.SEQUENCE_LENGTH
    assert (m["micro_batch_size"].default, m["precision"].default, m["optimizer"].default) == (
        defaults.MICRO_BATCH_SIZE, defaults.PRECISION, defaults.OPTIMIZER)
    assert (p["zero_stage"].default, p["recompute"].default, p["framework"].default, p["memory_headroom"].default,
            p["sequence_parallel"].default, p["offload"].default) == (
        defaults.ZERO_STAGE, defaults.RECOMPUTE, defaults.FRAMEWORK, defaults.MEMORY_HEADROOM,
        defaults.SEQUENCE_PARALLEL, defaults.OFFLOAD)
    s = estimate(preset="llama-2-7b")["setup"]
    assert (s["seq_len"], s["micro_batch"], s["precision"], s["optimizer"], s["zero_stage"], s["recompute"],
            s["headroom"], s["offload"]) == (defaults.SEQUENCE_LENGTH, defaults.MICRO_BATCH_SIZE, defaults.PRECISION,
                                             defaults.OPTIMIZER, defaults.ZERO_STAGE, defaults.RECOMPUTE,
                                             defaults.MEMORY_HEADROOM, defaults.OFFLOAD)
