"""Mixture-of-experts sizing: the presets' published total and active counts, FLOPs from active parameters,
experts sharded over expert parallelism (Megatron-Core MoE README), the routed activations, and the checks."""

from __future__ import annotations

import pytest

from generator.plan import shape_refusals, warns
from generator.sizing import (
    PRESETS,
    MoE,
    SizingError,
    TrainingSetup,
    architecture_for,
    executed_flops,
    flops_per_token,
    name_looks_moe,
    per_gpu_memory,
)

# (preset, published total, published active): the model cards / papers cited in the presets' sources
PUBLISHED = [
    ("mixtral-8x7b", 46.7e9, 12.9e9),
    ("mixtral-8x22b", 141e9, 39e9),
    ("qwen3-30b-a3b", 30.5e9, 3.3e9),
    ("qwen3-235b-a22b", 235e9, 22e9),
    ("deepseek-v3", 671e9, 37e9),
]


@pytest.mark.parametrize(("name", "total", "active"), PUBLISHED)
def test_presets_count_their_published_total_and_active_parameters(
    name: str, total: float, active: float
) -> None:
    a = PRESETS[name]
    assert a.moe is not None
    assert a.parameters == int(total) and a.active_parameters == int(active)
    # the shape itself reproduces the published counts (DeepSeek-V3's latent attention counted as plain: 5%)
    assert a.counted_parameters == pytest.approx(total, rel=0.01)
    shape = architecture_for(
        layers=a.layers,
        hidden=a.hidden,
        heads=a.heads,
        kv_heads=a.kv_heads,
        vocab=a.vocab,
        ffn_hidden=a.ffn_hidden,
        head_dim=a.head_dim,
        moe=a.moe,
    )
    assert shape.active_parameters == pytest.approx(active, rel=0.05)
    assert 0 < a.expert_parameters < a.parameters


def test_mixtral_counts_by_hand() -> None:
    """Mixtral 8x7B: per layer attention 2*4096^2 + 2*4096*1024, 8 SwiGLU experts 3*4096*14336 and a 4096x8
    router, two norms; untied 32000-token embeddings; top-2 active."""
    attn = 2 * 4096 * 4096 + 2 * 4096 * 1024
    expert = 3 * 4096 * 14336
    layer = attn + 8 * expert + 4096 * 8 + 2 * 4096
    total = 32 * layer + 2 * 32000 * 4096 + 4096
    a = architecture_for(
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        vocab=32000,
        moe=MoE(experts=8, top_k=2, expert_ffn_hidden=14336),
    )
    assert a.parameters == total
    assert a.active_parameters == total - 32 * 6 * expert
    assert a.expert_parameters == 32 * 8 * expert


def test_flops_follow_active_parameters() -> None:
    """DeepSeek-V3: 6 x 37B active (less embeddings) per token, not 6 x 671B."""
    a = PRESETS["deepseek-v3"]
    f = flops_per_token(a, 4096)
    embedding = 2 * a.vocab * a.hidden
    assert f.dense == 6.0 * (37e9 - embedding)
    assert f.total < 6 * 671e9 / 10


def test_capacity_factor_pads_executed_flops() -> None:
    base = PRESETS["mixtral-8x7b"]
    padded = architecture_for(
        preset="mixtral-8x7b", moe=MoE(experts=8, top_k=2, expert_ffn_hidden=14336, capacity_factor=1.25)
    )
    dropless = architecture_for(preset="mixtral-8x7b", moe=base.moe)
    routed = 6.0 * 32 * 2 * 3 * 4096 * 14336
    assert executed_flops(padded, 4096, 1000, "none") == pytest.approx(
        executed_flops(dropless, 4096, 1000, "none") + 0.25 * routed * 1000
    )


def _mem(arch, **kw):
    base = {"arch": arch, "seq_len": 4096, "micro_batch": 1, "zero_stage": 1, "framework": "zero-paper"}
    base.update(kw)
    return per_gpu_memory(TrainingSetup(**base))


def test_experts_shard_over_ep_and_their_states_over_dp_over_ep() -> None:
    """zero-paper, ZeRO-1: weights 2 x (dense/(tp pp) + experts/(tp pp ep)); optimizer states K x dense/(tp pp)/dp
    + K x experts/(tp pp ep)/(dp/ep) (the expert data-parallel group)."""
    a = PRESETS["mixtral-8x7b"]
    e, d = a.expert_parameters, a.parameters - a.expert_parameters
    m = _mem(a, tp=2, pp=4, dp=8, ep=8)
    assert m.weights == -(-2 * d // 8) + -(-2 * e // 64)
    assert m.optimizer_states == -(-12 * d // 64) + -(-12 * e // 64)
    assert _mem(a, tp=2, pp=4, dp=8, ep=1).weights > m.weights * 4


def test_deepseek_v3_published_layout_fits_80_gb() -> None:
    """DeepSeek-V3 report Sec. 3.2: 2048 H800 (80 GB), pp=16, ep=64 over 8 nodes, ZeRO-1 data parallelism, no tp.
    Its Sec. 3.3 recomputes every RMSNorm and the MLA up-projections and caches the MoE inputs in FP8: of
    trainstack's modes that is recompute full (selective keeps 16-bit MLP activations it never stored)."""
    m = _mem(PRESETS["deepseek-v3"], pp=16, dp=128, ep=64, framework="megatron", recompute="full")
    assert m.total < 76 * 2**30
    # the same model planned as dense 671B on the same GPUs (what trainstack did before MoE) did not fit
    dense = architecture_for(layers=61, hidden=7168, heads=128, vocab=129280, ffn_hidden=18432 * 20)
    assert _mem(dense, pp=16, dp=128, framework="megatron").total > 80 * 2**30


def test_routed_activations_exceed_a_dense_mlp_of_the_same_width() -> None:
    a = PRESETS["mixtral-8x7b"]
    dense = architecture_for(layers=32, hidden=4096, heads=32, kv_heads=8, vocab=32000, ffn_hidden=14336)
    moe = _mem(a, tp=1, dp=8, ep=8, recompute="selective").activations
    assert moe > _mem(dense, tp=1, dp=8, recompute="selective").activations
    # the imbalance reserve: a tighter capacity factor stores less
    tight = architecture_for(
        preset="mixtral-8x7b", moe=MoE(experts=8, top_k=2, expert_ffn_hidden=14336, capacity_factor=1.0)
    )
    assert _mem(tight, tp=1, dp=8, ep=8, recompute="selective").activations < moe


@pytest.mark.parametrize(
    ("kw", "pattern"),
    [
        (
            {"arch": PRESETS["llama-2-7b"], "ep": 2, "dp": 2},
            r"expert parallelism needs a mixture-of-experts model",
        ),
        ({"arch": PRESETS["mixtral-8x7b"], "ep": 3, "dp": 3}, r"ep=3 does not divide the 8 experts"),
        (
            {"arch": PRESETS["mixtral-8x7b"], "ep": 8, "dp": 4},
            r"ep=8 does not divide the data-parallel degree 4",
        ),
    ],
)
def test_expert_parallel_checks(kw, pattern) -> None:
    with pytest.raises(SizingError, match=pattern):
        _mem(**kw)


def test_moe_needs_a_shape_and_valid_routing() -> None:
    with pytest.raises(SizingError, match="needs the model's shape"):
        architecture_for(parameters=int(47e9), moe=MoE(experts=8, top_k=2, expert_ffn_hidden=14336))
    with pytest.raises(SizingError, match="top_k"):
        MoE(experts=8, top_k=9, expert_ffn_hidden=1024)
    with pytest.raises(SizingError, match="dense_layers"):
        architecture_for(
            layers=4, hidden=1024, heads=8, moe=MoE(experts=8, top_k=2, expert_ffn_hidden=512, dense_layers=4)
        )


def test_known_moe_names() -> None:
    assert name_looks_moe("my-DeepSeek-V3-finetune") == "deepseek-v3"
    assert name_looks_moe(None, "modelscope://Qwen/Qwen3-30B-A3B") == "qwen3-30b-a3b"
    assert name_looks_moe("llama-3-70b") is None


# ---------------------------------------------------------------------------------------------------------------
# trainstack estimate and plan


def _cli(*args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from generator.cli import main

    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def test_estimate_json_has_active_parameters_and_ep() -> None:
    import json

    code, out = _cli(
        "estimate",
        "--preset",
        "deepseek-v3",
        "--gpus",
        "2048",
        "--pp",
        "16",
        "--ep",
        "64",
        "--recompute",
        "full",
        "--tokens",
        "14.8T",
        "--json",
    )
    assert code == 0, out
    d = json.loads(out)
    assert d["architecture"]["active_parameters"] == 37_000_000_000 and d["setup"]["ep"] == 64
    assert d["architecture"]["moe"]["experts"] == 256 and d["architecture"]["moe"]["shared_experts"] == 1
    assert d["training_flops"] == 6.0 * 37e9 * 14.8e12
    assert d["per_gpu_bytes"]["total"] < 40e9


def test_estimate_flags_make_an_explicit_moe_shape() -> None:
    import json

    code, out = _cli(
        "estimate",
        "--layers",
        "32",
        "--hidden",
        "4096",
        "--heads",
        "32",
        "--kv-heads",
        "8",
        "--experts",
        "8",
        "--top-k",
        "2",
        "--expert-ffn-hidden",
        "14336",
        "--gpus",
        "8",
        "--ep",
        "8",
        "--json",
    )
    assert code == 0, out
    a = json.loads(out)["architecture"]
    assert a["parameters"] == PRESETS["mixtral-8x7b"].counted_parameters
    assert a["active_parameters"] == pytest.approx(12.9e9, rel=0.03)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--params", "7B", "--experts", "8"), "--experts needs --top-k"),
        (("--params", "7B", "--top-k", "2"), "add --experts"),
        (
            ("--params", "47B", "--experts", "8", "--top-k", "2", "--expert-ffn-hidden", "14336"),
            "needs the model's shape",
        ),
        (
            ("--preset", "mixtral-8x7b", "--gpus", "4", "--ep", "8"),
            "ep=8 does not divide the data-parallel degree 4",
        ),
        (("--preset", "llama-2-7b", "--gpus", "2", "--ep", "2"), "needs a mixture-of-experts model"),
    ],
)
def test_estimate_moe_errors_exit_2(args: tuple[str, ...], words: str) -> None:
    code, out = _cli("estimate", *args)
    assert code == 2 and words in out, out


def _plan(model: dict, **kw):
    from generator.catalog import load_catalog
    from generator.plan.planner import make_plan
    from generator.spec.model import Spec

    doc = {"name": kw.pop("name", "moe-run"), "region": "cn-wulanchabu", "model": model, **kw}
    return make_plan(Spec.model_validate(doc), load_catalog())


def test_a_30b_a3b_finetune_plans_on_one_node_from_its_active_parameters() -> None:
    """Issue 24: a Qwen3-30B-A3B fine-tune was planned as a dense 30B on 28 nodes; with its experts it needs one."""
    p = _plan({"preset": "qwen3-30b-a3b", "tokens": "10B"})
    assert p.compute.nodes == 1 and p.compute.ep > 1 and p.compute.ep * p.compute.tp <= 8
    assert p.model.active_parameters == 3_300_000_000 and p.model.moe is not None
    assert p.model.moe.experts == 128 and p.model.moe.expert_parameters > 28e9
    assert p.sizing.training_flops == pytest.approx(
        flops_per_token(PRESETS["qwen3-30b-a3b"], 4096).total * 10e9
    )
    assert any(d.topic == "mixture of experts" and "3.3B of 30.5B" in d.reason for d in p.decisions)
    dense = _plan({"parameters": "30.5B", "tokens": "10B"})
    assert p.schedule.compute_hours < dense.schedule.compute_hours / 4


def test_plan_json_carries_ep_and_active_parameters() -> None:
    import json

    d = json.loads(_plan({"preset": "mixtral-8x7b", "tokens": "20B"}).to_json())
    assert d["compute"]["ep"] >= 2 and d["model"]["active_parameters"] == 12_900_000_000
    assert d["model"]["moe"]["top_k"] == 2


def test_fixed_expert_degree_is_kept_and_checked() -> None:
    from generator.plan.planner import PlanningError

    p = _plan({"preset": "mixtral-8x7b"}, parallelism={"expert": 4, "tensor": 2})
    assert p.compute.ep == 4 and p.compute.dp % 4 == 0
    with pytest.raises(PlanningError) as e:
        _plan({"preset": "mixtral-8x7b"}, parallelism={"expert": 3})
    assert [(p.code, p.dotted, dict(p.fields)) for p in e.value.problems] == [
        (shape_refusals.ExpertNotDividing.code, "parallelism.expert", {"expert": 3, "experts": 8})]
    with pytest.raises(PlanningError) as e:
        _plan({"preset": "llama-2-7b"}, parallelism={"expert": 2})
    assert [(p.code, p.dotted, dict(p.fields)) for p in e.value.problems] == [
        (shape_refusals.ExpertWithoutMoe.code, "parallelism.expert", {"expert": 2})]


def test_a_moe_name_with_only_a_parameter_count_warns() -> None:
    p = _plan({"parameters": "671B"}, name="deepseek-v3-repro", compute={"max_nodes": 512})
    assert warns.MoeSizedDense("deepseek-v3") in p.warnings
    assert not [w for w in _plan({"parameters": "70B"}, name="llama-run").warnings if isinstance(w, warns.MoeSizedDense)]


def test_expert_all_to_all_across_nodes_lowers_the_mfu() -> None:
    """ep x tp beyond one node: the all-to-all goes through the NICs, charged as an MFU factor."""
    inside = _plan(
        {"preset": "mixtral-8x7b", "tokens": "100B"},
        parallelism={"expert": 8, "tensor": 1},
        compute={"nodes": 4},
    )
    across = _plan(
        {"preset": "mixtral-8x7b", "tokens": "100B"},
        parallelism={"expert": 8, "tensor": 2},
        compute={"nodes": 4},
    )
    assert inside.schedule.mfu > across.schedule.mfu
    assert any("all-to-all" in n for n in across.schedule.notes)


def test_the_plan_report_shows_experts_and_ep() -> None:
    from generator.present.markdown import plan_markdown
    from generator.present.text import plan_text

    p = _plan({"preset": "mixtral-8x7b", "tokens": "20B"})
    text = plan_text(p)
    assert "mixture of experts: 8 experts top-2, 12.9B active per token" in text
    assert f"ep={p.compute.ep}" in text
    assert "12.9B active" in plan_markdown(p)


def test_the_launch_environment_carries_ep_for_a_moe_plan() -> None:
    from generator.render.files import launch_env

    p = _plan({"preset": "mixtral-8x7b", "tokens": "20B"}, parallelism={"virtual_stages": 2, "pipeline": 2})
    moe = dict(launch_env(p))
    dense = dict(launch_env(_plan({"preset": "llama-2-7b", "tokens": "20B"})))
    assert moe["EP_SIZE"] == str(p.compute.ep) and int(moe["EP_SIZE"]) >= 2 and moe["VPP_SIZE"] == "2"
    assert "EP_SIZE" not in dense and "VPP_SIZE" not in dense
