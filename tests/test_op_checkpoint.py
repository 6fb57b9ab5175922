"""``recompute: selective-op``, torchtitan's op-level selective activation checkpointing: what a layer keeps follows
the policy (every block keeps its input, the outputs of every second matmul, of the attention and of the
reduce-scatters), the executed FLOPs add the recomputed matmuls' forward, and the mode is in the spec, the schema
and ``trainstack estimate``."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner

from generator import sizing
from generator.cli import main
from generator.sizing import PRESETS, TrainingSetup, architecture_for, per_gpu_memory
from generator.sizing.op_checkpoint import recompute_flops_per_token, saved_attention, saved_coefficient
from generator.spec.model import json_schema

SELECTIVE = Fraction(34)


def test_a_llama_layer_keeps_wq_wv_w1_w2_attention_and_its_input() -> None:
    """Llama 2 70B, t = 1: block input 2h + W_q 2h + W_v 2gd + attention 2h + log-sum-exp 4a + W_1 2f + W_2 2h."""
    a = PRESETS["llama-2-70b"]
    h, g, d, f, heads = a.hidden, a.kv_heads, a.d_head, a.ffn_hidden, a.heads
    per_token = 8 * h + 2 * g * d + 2 * f + 4 * heads
    assert per_token == 125_184
    assert saved_coefficient(a, 1, False, SELECTIVE) == Fraction(per_token, h)


def test_a_gelu_mlp_keeps_only_its_first_matmul() -> None:
    """fc1 is the block's 5th matmul (kept), fc2 the 6th (recomputed)."""
    swiglu = architecture_for(layers=24, hidden=2048, heads=16, vocab=50000, ffn_hidden=8192)
    gelu = architecture_for(layers=24, hidden=2048, heads=16, vocab=50000, ffn_hidden=8192, mlp_matrices=2)
    assert saved_coefficient(swiglu, 1, False, SELECTIVE) - saved_coefficient(gelu, 1, False, SELECTIVE) == 2


def test_tensor_parallel_keeps_the_partial_sum_and_the_reduce_scatters() -> None:
    """With SP the block input and the two reduce-scatter outputs are split over t; W_2's partial sum is not; the
    KV heads are replicated when t exceeds them (Llama 2 70B: 8 KV heads at t = 16 keep one head per rank)."""
    a = PRESETS["llama-2-70b"]
    h, d, f, heads = a.hidden, a.d_head, a.ffn_hidden, a.heads
    for t, kv_heads in ((8, 1), (16, 1), (2, 4)):
        want = Fraction(2, t) + Fraction(4 * heads * d + 4 * heads + 2 * f, h * t) + Fraction(2 * kv_heads * d, h)
        want += 2 + Fraction(4, t)
        assert saved_coefficient(a, t, True, SELECTIVE) == want


def _setup(recompute: str, arch: sizing.Architecture | None = None, micro_batch: int = 1) -> TrainingSetup:
    return TrainingSetup(arch=arch or PRESETS["llama-2-70b"], seq_len=4096, micro_batch=micro_batch, zero_stage=3,
                         dp=64, framework="fsdp", recompute=recompute)


def test_activations_are_the_kept_tensors_plus_one_layers_working_set() -> None:
    """80 layers x the kept bytes, plus one layer's selective activations less what it kept (live while that
    layer's backward recomputes it, after the loss is freed: the larger of the two counts); the same embedding
    and output terms as selective (FSDP: PyTorch's cross-entropy, 12 bytes per logit at its peak)."""
    a = PRESETS["llama-2-70b"]
    op, selective = per_gpu_memory(_setup("selective-op")).activations, per_gpu_memory(_setup("selective")).activations
    sbh = 4096 * a.hidden
    kept = saved_coefficient(a, 1, False, SELECTIVE)
    output = 4 * sbh + 12 * 4096 * a.vocab
    working = sbh * (SELECTIVE - kept)
    expected_gap = a.layers * sbh * (SELECTIVE - kept) - (max(output, working) - output)
    assert abs((selective - op) - expected_gap) <= 2
    assert per_gpu_memory(_setup("full")).activations < op < selective


def test_torchtitans_70b_fits_at_batch_1_and_not_at_batch_2() -> None:
    """torchtitan docs/performance.md at 157a12c: 70B on 64 A100 80GB with op-level selective ran at local batch 1
    and ran out of memory at 2 (footnote 1). The usable memory is 95% of 80 GiB."""
    usable = 0.95 * 80 * 2**30
    assert per_gpu_memory(_setup("selective-op")).total <= usable
    assert per_gpu_memory(_setup("selective-op", micro_batch=2)).total > usable
    assert per_gpu_memory(_setup("selective")).total > usable


def test_executed_flops_add_the_recomputed_matmuls() -> None:
    """W_k 2hgd + W_o 2adh + W_3 2hf per layer per token, on top of the model FLOPs; the attention core is kept."""
    a = PRESETS["llama-2-70b"]
    h, g, d, f = a.hidden, a.kv_heads, a.d_head, a.ffn_hidden
    recomputed = a.layers * 2.0 * h * (g * d + a.heads * d + f)
    assert recompute_flops_per_token(a) == recomputed
    extra = sizing.executed_flops(a, 4096, 1000, "selective-op") - sizing.model_flops(a, 4096, 1000)
    assert extra == pytest.approx(recomputed * 1000, rel=1e-12)
    model = sizing.model_flops(a, 4096, 1)
    assert sizing.attention_share(a, 4096, "selective-op") == pytest.approx(
        sizing.flops_per_token(a, 4096).attention / (model + recomputed), rel=1e-12
    )


def test_a_moe_model_keeps_its_mlp_as_under_selective() -> None:
    """Only the attention half ([SP]'s 11 + one norm input 2 = 13) follows the op policy; the routed MLP is kept
    as under selective and not recomputed."""
    a = PRESETS["mixtral-8x7b"]
    assert saved_coefficient(a, 1, False, SELECTIVE) == SELECTIVE - 13 + saved_attention(a, 1, False)
    assert recompute_flops_per_token(a) == a.layers * 2.0 * a.hidden * (a.kv_heads + a.heads) * a.d_head


def test_the_mode_is_in_the_schema_and_the_estimate_command() -> None:
    recompute = json_schema()["$defs"]["ParallelismSpec"]["properties"]["recompute"]
    assert "selective-op" in recompute["enum"]
    runner = CliRunner()
    assert "selective-op" in runner.invoke(main, ["estimate", "--help"]).output
    out = runner.invoke(main, ["estimate", "--preset", "llama-2-70b", "--gpus", "64", "--zero", "3", "--framework",
                              "fsdp", "--seq-len", "4096", "--recompute", "selective-op", "--gpu", "A100-80G",
                              "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["fits"] is True and result["setup"]["recompute"] == "selective-op"
