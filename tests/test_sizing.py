"""Tests for generator.sizing against the numbers published in the cited papers."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.sizing import (
    OPTIMIZER_BYTES,
    PRESETS,
    RECOMPUTE_MODES,
    Architecture,
    CheckpointModel,
    MemoryBreakdown,
    SizingError,
    TrainingSetup,
    activation_bytes_per_layer,
    architecture_for,
    checkpoint_plan,
    checkpoint_size_bytes,
    derive_architecture,
    lora_trainable_parameters,
    loss,
    model_state_bytes,
    optimizer_bytes_per_param,
    parameters_of,
    per_gpu_memory,
    training_flops,
    training_hours,
    young_daly_interval,
)

GB = 1e9


# ---------------------------------------------------------------------------------------------
# ZeRO (Rajbhandari et al. 2020), Sec. 5 / Figure 1: 7.5B model, Nd = 64, K = 12.
# Table values: baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB (GB = 1e9 bytes).
# ---------------------------------------------------------------------------------------------
ZERO_PSI = 7_500_000_000
ZERO_PAPER_GB = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.9}
ZERO_EXACT_GB = {0: 120.0, 1: 31.40625, 2: 16.640625, 3: 1.875}  # (2+2+K)Psi with the /Nd terms


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_zero_paper_model_states(stage: int) -> None:
    w, g, o = model_state_bytes(ZERO_PSI, precision="bf16", optimizer="adam", zero_stage=stage, dp=64)
    total = w + g + o
    assert total == pytest.approx(ZERO_EXACT_GB[stage] * GB, rel=1e-12)
    # The paper prints one decimal: within 1%, or within its rounding (0.05 GB) for 1.9 GB.
    paper = ZERO_PAPER_GB[stage] * GB
    assert abs(total - paper) <= max(0.01 * paper, 0.05 * GB)


def test_zero_paper_via_per_gpu_memory() -> None:
    arch = derive_architecture(ZERO_PSI)
    assert arch.parameters == ZERO_PSI
    for stage in (0, 1, 2):
        m = per_gpu_memory(TrainingSetup(arch=arch, seq_len=2048, micro_batch=1, zero_stage=stage, dp=64))
        assert m.model_states == pytest.approx(ZERO_EXACT_GB[stage] * GB, rel=1e-9)
    # ZeRO-3 adds the documented gather working set (2 layers of 16-bit weights) on top of 2Psi/Nd.
    m3 = per_gpu_memory(TrainingSetup(arch=arch, seq_len=2048, micro_batch=1, zero_stage=3, dp=64))
    assert m3.gradients + m3.optimizer_states == pytest.approx((2 + 12) * ZERO_PSI / 64, abs=2)
    assert m3.weights == math.ceil(2 * ZERO_PSI / 64) + 2 * 2 * arch.layer_parameters
    assert any("ZeRO-3 gather" in n for n in m3.notes)


def test_fp32_has_no_master_copy() -> None:
    assert optimizer_bytes_per_param("adamw", "bf16") == 12
    assert optimizer_bytes_per_param("adamw", "fp32") == 8
    w, g, o = model_state_bytes(1_000_000_000, precision="fp32", optimizer="adamw")
    assert (w, g, o) == (4 * 10**9, 4 * 10**9, 8 * 10**9)


def test_optimizer_table() -> None:
    assert OPTIMIZER_BYTES["adamw"] == OPTIMIZER_BYTES["adam"] == 12
    assert OPTIMIZER_BYTES["lion"] == 8 and OPTIMIZER_BYTES["adamw-8bit"] == 6
    assert OPTIMIZER_BYTES["sgd"] == 8 and OPTIMIZER_BYTES["adafactor"] == 4


def test_model_state_splits_over_tp_pp() -> None:
    full = sum(model_state_bytes(64_000_000_000))
    split = sum(model_state_bytes(64_000_000_000, tp=8, pp=4))
    assert split * 32 == full


# ---------------------------------------------------------------------------------------------
# Korthikanti et al. 2022, Table 2, for GPT-3 175B: a=96, h=12288, s=2048, L=96, t=8, b=1.
# ---------------------------------------------------------------------------------------------
S, H, A, T, L = 2048, 12288, 96, 8, 96
SBH = S * 1 * H


def _layer(**kw) -> int:
    return activation_bytes_per_layer(S, 1, H, A, **kw)


def test_korthikanti_175b_formulas() -> None:
    assert 5 * A * S / H == 80  # attention-score term dominates the 34 for GPT-3
    assert _layer(tp=1) == SBH * (34 + 5 * A * S / H) == SBH * 114
    assert _layer(tp=T) == SBH * (10 + 24 / T + 5 * A * S / (H * T)) == SBH * 23
    assert _layer(tp=T, sequence_parallel=True) == SBH * (34 / T + 5 * A * S / (H * T)) == SBH * 14.25
    assert _layer(tp=T, recompute="selective") == SBH * (10 + 24 / T) == SBH * 13
    assert _layer(tp=T, sequence_parallel=True, recompute="selective") == SBH * 34 / T == SBH * 4.25
    assert _layer(tp=T, recompute="full") == 2 * SBH
    assert _layer(tp=T, sequence_parallel=True, recompute="full") == 2 * SBH / T
    # With t = 1 sequence parallelism changes nothing.
    assert _layer(tp=1, sequence_parallel=True) == _layer(tp=1)


def test_korthikanti_5x_claim() -> None:
    # "reduce activation memory by 5x": TP-only baseline vs TP + SP + selective recompute.
    ratio = _layer(tp=T) / _layer(tp=T, sequence_parallel=True, recompute="selective")
    assert ratio == pytest.approx(23 / 4.25)
    assert 5 <= ratio < 6


def test_korthikanti_175b_whole_model() -> None:
    gpt3 = PRESETS["gpt3-175b"]
    setup = TrainingSetup(arch=gpt3, seq_len=S, micro_batch=1, tp=T, sequence_parallel=True,
                          recompute="selective")
    m = per_gpu_memory(setup)
    layers_only = L * SBH * 34 / T  # sbhL*34/t, ~10.3 GB
    assert m.activations >= layers_only
    # The embedding/output terms of Sec. 4.3 are small (the paper calls them negligible).
    assert m.activations <= 1.02 * layers_only
    # 1F1B pipeline: first stage holds p micro-batches of L/p layers = the same L layer-activations.
    piped = per_gpu_memory(TrainingSetup(arch=gpt3, seq_len=S, micro_batch=1, tp=T, pp=16,
                                         sequence_parallel=True, recompute="selective"))
    assert piped.activations == pytest.approx(layers_only, rel=0.01)


def test_full_recompute_is_smallest_and_includes_working_set() -> None:
    arch = PRESETS["llama-2-7b"]
    acts = {mode: per_gpu_memory(TrainingSetup(arch=arch, seq_len=4096, micro_batch=1, tp=2,
                                               sequence_parallel=True, recompute=mode)).activations
            for mode in RECOMPUTE_MODES}
    assert acts["full"] < acts["selective"] < acts["none"]
    # the recomputed layer is live during its backward, without the a*s*s scores FlashAttention never stores
    one_layer = activation_bytes_per_layer(4096, 1, 4096, 32, tp=2, sequence_parallel=True, recompute="selective")
    with_scores = activation_bytes_per_layer(4096, 1, 4096, 32, tp=2, sequence_parallel=True)
    assert one_layer < acts["full"] < with_scores


def test_fp32_doubles_activations() -> None:
    arch = PRESETS["llama-2-7b"]
    bf = per_gpu_memory(TrainingSetup(arch=arch, seq_len=2048, micro_batch=1, recompute="selective"))
    fp = per_gpu_memory(TrainingSetup(arch=arch, seq_len=2048, micro_batch=1, recompute="selective",
                                      precision="fp32"))
    assert 1.9 < fp.activations / bf.activations <= 2.0


# ---------------------------------------------------------------------------------------------
# LoRA / QLoRA
# ---------------------------------------------------------------------------------------------


def test_lora_trainable_count_matches_peft() -> None:
    # PEFT reports 19,988,480 trainable params for Llama-2-7B, r=8, all q,k,v,o,gate,up,down.
    assert lora_trainable_parameters(PRESETS["llama-2-7b"], 8) == 19_988_480


def test_lora_much_smaller_than_full() -> None:
    arch = PRESETS["llama-2-70b"]
    base = {"arch": arch, "seq_len": 4096, "micro_batch": 1, "tp": 8, "sequence_parallel": True,
            "recompute": "selective"}
    full = per_gpu_memory(TrainingSetup(**base))
    lora = per_gpu_memory(TrainingSetup(**base, lora_rank=16))
    qlora = per_gpu_memory(TrainingSetup(**base, lora_rank=16, qlora=True))
    assert lora.model_states < 0.2 * full.model_states
    assert lora.gradients < 0.01 * full.gradients
    assert lora.optimizer_states < 0.01 * full.optimizer_states
    assert qlora.weights < 0.3 * lora.weights  # ~4.13 bits vs 16 bits for the block weights
    # the layers' activations as for full fine-tuning (stated assumption); the loss is PyTorch's (PEFT on
    # Transformers), not the paper's one fp32 tensor of the full (zero-paper) setup
    loss_gap = Fraction((loss.PLAIN - loss.LOSS_SAVED) * 4096 * arch.vocab, 8)
    assert lora.activations - full.activations == loss_gap
    assert qlora.total < lora.total < full.total


# ---------------------------------------------------------------------------------------------
# Architectures
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_counts_within_2_percent(name: str) -> None:
    arch = PRESETS[name]
    assert arch.counted_parameters == pytest.approx(arch.parameters, rel=0.02)
    assert name in arch.source


def test_llama_counts_are_exact() -> None:
    # The formula reproduces the released checkpoints' tensor sizes exactly.
    assert PRESETS["llama-2-7b"].counted_parameters == 6_738_415_616
    assert PRESETS["llama-2-70b"].counted_parameters == 68_976_648_192
    assert PRESETS["llama-3-8b"].counted_parameters == 8_030_261_248
    assert parameters_of(32, 4096, 32, 32, 32000, 11008) == 6_738_415_616


def test_published_shapes() -> None:
    g = PRESETS["gpt3-175b"]
    assert (g.layers, g.hidden, g.heads, g.vocab) == (96, 12288, 96, 50257)
    t = PRESETS["megatron-1t"]
    assert (t.layers, t.hidden, t.heads) == (128, 25600, 160)
    assert PRESETS["llama-2-7b"].parameters == 6_740_000_000
    assert PRESETS["llama-2-70b"].kv_heads == 8 and PRESETS["llama-3-8b"].kv_heads == 8


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=100_000_000, max_value=2_000_000_000_000))
def test_derive_architecture_within_10_percent(n: int) -> None:
    arch = derive_architecture(n)
    assert arch.parameters == n
    assert abs(arch.counted_parameters - n) <= 0.10 * n
    assert "derived" in arch.source
    assert arch.hidden % 128 == 0 and arch.heads * 128 == arch.hidden
    assert arch.ffn_hidden % 256 == 0 and arch.heads % arch.kv_heads == 0
    assert arch.kv_heads == (8 if n > 30e9 else arch.heads)


def test_derive_reproduces_llama_shapes() -> None:
    a = derive_architecture(6_740_000_000)
    assert (a.layers, a.hidden, a.heads, a.ffn_hidden) == (32, 4096, 32, 11008)
    b = derive_architecture(13_000_000_000)
    assert (b.layers, b.hidden, b.ffn_hidden) == (40, 5120, 13824)


def test_derive_rejects_tiny_models() -> None:
    with pytest.raises(SizingError, match="explicit shape"):
        derive_architecture(1_000_000)


def test_architecture_precedence() -> None:
    assert architecture_for(7_000_000_000, "llama-2-70b") is PRESETS["llama-2-70b"]  # preset > derived
    assert "derived" in architecture_for(7_000_000_000).source
    over = architecture_for(None, "llama-2-7b", layers=16)  # shape > preset
    assert over.layers == 16 and over.hidden == 4096
    assert over.parameters == over.counted_parameters
    explicit = architecture_for(1, "llama-2-70b", layers=2, hidden=256, heads=2, kv_heads=2, vocab=1000,
                                ffn_hidden=512)  # complete shape > preset > parameters
    assert explicit.parameters == parameters_of(2, 256, 2, 2, 1000, 512)
    minimal = architecture_for(None, "llama-2-70b", layers=32, hidden=4096, heads=32, kv_heads=None)
    assert (minimal.kv_heads, minimal.ffn_hidden, minimal.vocab) == (32, 11008, 32000)
    assert minimal.parameters == PRESETS["llama-2-7b"].counted_parameters
    with pytest.raises(SizingError, match="llama-2-7b"):
        architecture_for(None, "llama-9")
    with pytest.raises(SizingError):
        architecture_for(None, None)
    with pytest.raises(SizingError, match="allowed"):
        architecture_for(None, "llama-2-7b", depth=3)


# ---------------------------------------------------------------------------------------------
# Properties and validation
# ---------------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    name=st.sampled_from(sorted(PRESETS)),
    dp1=st.integers(1, 512),
    extra=st.integers(0, 512),
    seq=st.sampled_from([512, 2048, 4096]),
    mb=st.integers(1, 4),
    tp=st.sampled_from([1, 2, 4]),
    lora=st.sampled_from([None, 8]),
)
def test_zero3_more_dp_never_increases_memory(name, dp1, extra, seq, mb, tp, lora) -> None:
    arch = PRESETS[name]
    common = {"arch": arch, "seq_len": seq, "micro_batch": mb, "zero_stage": 3, "tp": tp, "lora_rank": lora}
    a = per_gpu_memory(TrainingSetup(**common, dp=dp1))
    b = per_gpu_memory(TrainingSetup(**common, dp=dp1 + extra))
    assert b.total <= a.total
    assert b.weights <= a.weights and b.optimizer_states <= a.optimizer_states


def test_breakdown_shape() -> None:
    m = per_gpu_memory(TrainingSetup(arch=PRESETS["llama-3-8b"], seq_len=8192, micro_batch=1, zero_stage=1,
                                     dp=8, recompute="selective"))
    assert isinstance(m, MemoryBreakdown)
    d = m.to_dict()
    assert list(d) == ["weights", "gradients", "optimizer_states", "activations", "reserve", "total"]
    assert all(isinstance(v, int) for v in d.values())
    assert d["total"] == sum(v for k, v in d.items() if k != "total")
    assert m.reserve >= 2 * 2**30
    assert any("Korthikanti" in n for n in m.notes) and any("reserve" in n for n in m.notes)
    explicit = per_gpu_memory(TrainingSetup(arch=PRESETS["llama-3-8b"], seq_len=8192, micro_batch=1,
                                            reserve_bytes=0))
    assert explicit.reserve == 0


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"tp": 3}, r"tp=3 does not split the 32 attention heads"),
        ({"pp": 33}, r"pp=33 is more pipeline stages than the model.s 32 layers"),
        ({"zero_stage": 4}, r"zero_stage must be 0, 1, 2 or 3"),
        ({"optimizer": "rmsprop"}, r"allowed: adamw, adam, sgd"),
        ({"precision": "fp4"}, r"allowed: bf16, fp16, fp32, fp8"),
        ({"recompute": "some"}, r"allowed: none, selective, selective-op, full"),
        ({"seq_len": 0}, r"seq_len must be a positive integer"),
        ({"dp": -2}, r"dp must be a positive integer"),
        ({"qlora": True}, r"set lora_rank"),
        ({"lora_rank": 0}, r"lora_rank must be a positive integer"),
    ],
)
def test_validation_errors(kwargs, pattern) -> None:
    base = {"arch": PRESETS["llama-2-7b"], "seq_len": 4096, "micro_batch": 1}
    base.update(kwargs)
    with pytest.raises(SizingError, match=pattern):
        per_gpu_memory(TrainingSetup(**base))


def test_kv_heads_replicate_when_tp_exceeds_them() -> None:
    """tp=16 over 8 KV heads runs (Megatron-LM replicates each KV head on 2 ranks); the copies cost memory."""
    arch = PRESETS["llama-3-8b"]
    m = per_gpu_memory(TrainingSetup(arch=arch, seq_len=4096, micro_batch=1, tp=16, zero_stage=0))
    extra = 2 * arch.hidden * arch.d_head * (16 - 8) * arch.layers
    assert m.weights == -(-2 * (arch.parameters + extra) // 16)
    assert any("replicates them" in n for n in m.notes)
    # one KV head at tp=4 (the refused-but-ran layout of issue 24): accepted
    one_kv = architecture_for(layers=24, hidden=6144, heads=48, kv_heads=1)
    per_gpu_memory(TrainingSetup(arch=one_kv, seq_len=4096, micro_batch=1, tp=4))


def test_kv_heads_neither_dividing_nor_multiple_are_refused() -> None:
    six = architecture_for(layers=24, hidden=6144, heads=48, kv_heads=6)
    with pytest.raises(SizingError, match=r"6 KV heads.*replicates KV heads"):
        per_gpu_memory(TrainingSetup(arch=six, seq_len=4096, micro_batch=1, tp=4))


def test_sizing_error_is_value_error() -> None:
    assert issubclass(SizingError, ValueError)
    with pytest.raises(ValueError):
        Architecture(layers=2, hidden=100, heads=3, kv_heads=3, vocab=10, ffn_hidden=10,
                     parameters=1, source="bad")


# ---------------------------------------------------------------------------------------------
# Compute, time, checkpoints
# ---------------------------------------------------------------------------------------------


def test_training_flops_6nd() -> None:
    # GPT-3 175B on 300B tokens: Brown et al. 2020 report 3.14e23 FLOPs.
    assert training_flops(175_000_000_000, 300_000_000_000) == pytest.approx(3.14e23, rel=0.01)
    assert training_flops(70_000_000_000, 2_000_000_000_000) == 6 * 70e9 * 2e12


def test_training_hours() -> None:
    # 6*1e9*1e12 = 6e21 FLOPs on 100 GPUs x 1000 TFLOP/s x 0.5 = 5e16 FLOP/s -> 1.2e5 s.
    hours = training_hours(1_000_000_000, 10**12, gpus=100, peak_tflops=1000, mfu=0.5)
    assert hours == pytest.approx(1.2e5 / 3600)
    full = training_hours(1_000_000_000, 10**12, gpus=100, peak_tflops=1000, mfu=0.5, recompute="full")
    assert full == pytest.approx(hours * 8 / 6)
    assert training_hours(10**9, 10**12, 100, 1000, 0.5, recompute="selective") == pytest.approx(hours)
    with pytest.raises(SizingError, match="mfu"):
        training_hours(10**9, 10**12, 100, 1000, 1.5)


def test_training_hours_matches_llama2_70b_budget() -> None:
    # Llama 2 reports 1,720,320 A100 GPU-hours for 70B on 2T tokens; with 6ND and a 312 TFLOP/s
    # peak that implies ~43% utilisation, squarely in the range large runs report.
    gpu_hours = training_hours(69_000_000_000, 2 * 10**12, gpus=1, peak_tflops=312, mfu=0.43)
    assert gpu_hours == pytest.approx(1_720_320, rel=0.02)


def test_young_daly_interval() -> None:
    assert young_daly_interval(300, 86_400) == pytest.approx(7200.0)  # sqrt(2*300*86400)
    assert young_daly_interval(60, 3600) == pytest.approx(math.sqrt(2 * 60 * 3600))
    assert young_daly_interval(100, 10) == 100  # clamped to the write time
    with pytest.raises(SizingError):
        young_daly_interval(0, 100)


def test_checkpoint_size() -> None:
    assert checkpoint_size_bytes(70_000_000_000, "adamw") == 70_000_000_000 * 14
    assert checkpoint_size_bytes(70_000_000_000, "adamw", "fp32") == 70_000_000_000 * 12
    assert checkpoint_size_bytes(7_000_000_000, "adamw-8bit") == 7_000_000_000 * 8
    assert checkpoint_size_bytes(70_000_000_000, "adamw", lora_trainable=1_000_000) == 14_000_000


def test_checkpoint_plan() -> None:
    plan = checkpoint_plan(70_000_000_000, "adamw", "bf16", write_gbps=100, nodes=16,
                           node_mtbf_hours=5000, spot=False, spot_interruptions_per_node_day=0.5)
    assert isinstance(plan, CheckpointModel)
    assert plan.size_bytes == 980_000_000_000
    assert plan.write_seconds == pytest.approx(980e9 / 12.5e9)  # 78.4 s
    assert plan.mtbf_hours == pytest.approx(5000 / 16)  # spot rate ignored when spot=False
    assert plan.interval_seconds == pytest.approx(math.sqrt(2 * 78.4 * 312.5 * 3600))
    spot = checkpoint_plan(70_000_000_000, "adamw", "bf16", write_gbps=100, nodes=16,
                           node_mtbf_hours=5000, spot=True, spot_interruptions_per_node_day=0.5)
    assert spot.mtbf_hours == pytest.approx(1 / (16 / 5000 + 16 * 0.5 / 24))
    assert spot.interval_seconds < plan.interval_seconds
    assert len(plan.notes) >= 4
