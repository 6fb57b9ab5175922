"""Memory terms that follow a published figure, checked against that figure: FlashAttention under full recompute
stores no attention scores (its memory is linear in the sequence), the MoE token-imbalance headroom is Switch
Transformer's capacity factor 1.25 over the mean and follows Megatron-Core's capacity formula, and the runtime
reserve's NCCL term is NCCL_BUFFSIZE x channels x ring peers per communicator."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from generator.estimate import estimate
from generator.sizing import PRESETS, MoE, TrainingSetup, architecture_for, per_gpu_memory
from generator.sizing.moe import DEFAULT_IMBALANCE, routed_mlp_activation_delta
from generator.sizing.reserve import (
    CUDA_CONTEXT_BYTES,
    FRAGMENTATION,
    NCCL_BUFFSIZE,
    NCCL_CHANNELS,
    NCCL_RING_PEERS,
    runtime_reserve,
)


def _acts(arch, seq_len: int, recompute: str, **kw) -> int:
    setup = TrainingSetup(arch=arch, seq_len=seq_len, micro_batch=1, tp=8, sequence_parallel=True,
                          recompute=recompute, **kw)
    return per_gpu_memory(setup).activations


@pytest.mark.parametrize("preset", ["llama-2-7b", "llama-3-405b"])
def test_full_recompute_memory_is_linear_in_the_sequence(preset: str) -> None:
    """Dao et al. 2022, FlashAttention (arXiv:2205.14135), Sec. 3.1: O(N) extra memory, the a x s x s scores are
    never stored. So under full recompute (what Megatron-LM, DeepSpeed and FSDP trainers run with FlashAttention)
    doubling the sequence doubles the activations exactly; with materialised scores (recompute=none) it is more."""
    arch = PRESETS[preset]
    full_4k, full_8k = _acts(arch, 4096, "full"), _acts(arch, 8192, "full")
    assert abs(full_8k - 2 * full_4k) <= 2  # two ceilings
    none_4k, none_8k = _acts(arch, 4096, "none"), _acts(arch, 8192, "none")
    assert none_8k > 2.1 * none_4k


def test_full_recompute_working_set_is_one_selective_layer() -> None:
    """The layer being recomputed holds Korthikanti et al.'s selective activations (34 s b h / t with SP, Table 2)
    beside the stored layer inputs (2 s b h / t each): no 5 a s^2 b / t scores. It appears in the layers' backward,
    after the loss (output inputs 4 s b h / t and the paper's fp32 logits 4 s b V / t) is freed: the larger counts."""
    arch = PRESETS["llama-2-7b"]
    s, h, t, L = 4096, arch.hidden, 8, arch.layers
    full, selective = _acts(arch, s, "full"), _acts(arch, s, "selective")
    sbh = s * h
    output = Fraction(4 * sbh, t) + Fraction(4 * s * arch.vocab, t)
    working = Fraction((34 - 2) * sbh, t)
    # both carry the same embedding term; selective adds the output, full the larger of it and its working set
    stored_full = L * Fraction(2 * sbh, t) + max(output, working)
    stored_selective = L * Fraction(34 * sbh, t) + output
    assert abs((selective - full) - (stored_selective - stored_full)) <= 2


def test_dropless_imbalance_headroom_is_switch_transformers_1_25() -> None:
    """Fedus et al. 2021, Switch Transformer (arXiv:2101.03961), Sec. 2.2 and Table 1: capacity factor 1.0-1.25;
    a dropless router (Megatron-Core's default) is sized at 1.25, the same as capacity_factor=1.25."""
    dropless = MoE(experts=8, top_k=2, expert_ffn_hidden=14336)
    assert dropless.imbalance == DEFAULT_IMBALANCE == Fraction(5, 4)
    capped = MoE(experts=8, top_k=2, expert_ffn_hidden=14336, capacity_factor=1.25)
    for sp in (False, True):
        assert routed_mlp_activation_delta(4096, 2, sp, 3, dropless) == routed_mlp_activation_delta(
            4096, 2, sp, 3, capped
        )


def test_imbalance_buffers_follow_megatron_cores_capacity_formula() -> None:
    """Megatron-Core MoE README: capacity = num_tokens_per_rank x topk x capacity_factor / num_experts, so an
    expert rank's routed buffers grow linearly in the factor: going from 1.0 to 1.25 adds a quarter of top_k token
    copies of (input 2 + intermediates 2 x mlp_matrices x f_e / h) bytes per s b h, split over tp."""
    h, t, f_e = 4096, 2, 14336
    even = MoE(experts=8, top_k=2, expert_ffn_hidden=f_e, capacity_factor=1.0)
    padded = MoE(experts=8, top_k=2, expert_ffn_hidden=f_e, capacity_factor=1.25)
    extra = routed_mlp_activation_delta(h, t, True, 3, padded) - routed_mlp_activation_delta(h, t, True, 3, even)
    assert extra == Fraction(1, 4) * 2 * (2 + Fraction(2 * 3 * f_e, h)) / t


def test_the_imbalance_headroom_is_in_the_full_recompute_working_set() -> None:
    """Under full recompute the recomputed MoE layer's routed buffers are live, with their headroom."""
    tight = architecture_for(
        preset="mixtral-8x7b", moe=MoE(experts=8, top_k=2, expert_ffn_hidden=14336, capacity_factor=1.0)
    )
    kw = {"dp": 8, "ep": 8}
    assert _acts(tight, 4096, "full", **kw) < _acts(PRESETS["mixtral-8x7b"], 4096, "full", **kw)


def test_reserve_terms_and_their_sources() -> None:
    """NCCL_BUFFSIZE 4 MiB (NCCL docs, environment variables), 16 channels, 2 ring peers, one communicator per
    parallel dimension of degree > 1 plus data parallel; fragmentation 5% of the tensors; context 0.75 GiB."""
    assert NCCL_BUFFSIZE == 4 * 2**20 and NCCL_CHANNELS == 16 and NCCL_RING_PEERS == 2
    tensors = 60 * 2**30
    per_comm = NCCL_CHANNELS * NCCL_RING_PEERS * NCCL_BUFFSIZE
    frag = -(-FRAGMENTATION.numerator * tensors // FRAGMENTATION.denominator)
    dp_only = runtime_reserve(tensors, tp=1, pp=1, cp=1, ep=1, notes=[])
    assert dp_only == CUDA_CONTEXT_BYTES + per_comm + frag
    four_d = runtime_reserve(tensors, tp=8, pp=16, cp=16, ep=1, notes=[])
    assert four_d - dp_only == 3 * per_comm


def test_fragmentation_is_charged_on_what_the_allocator_frees_not_the_optimizer_states() -> None:
    """The optimizer states are allocated once and never freed, so they leave no free block to fragment: the 5% is
    on weights, gradients and activations (docs/sizing.md section 5, "What fragments"). Hugging Face's Llama 2 70B
    FSDP fine-tune on 16 A100 80GB (seq 2048, batch 1, gradient checkpointing) with FSDP's root unit and in-flight
    reduce-scatter counted sits above the default 95% with its AdamW moments resident and within 98%; the run
    paged them (bitsandbytes paged_adamw_32bit), and sized with the paged optimizer it fits the 95%."""
    setup = TrainingSetup(arch=PRESETS["llama-2-70b"], seq_len=2048, micro_batch=1, zero_stage=3, dp=16,
                          framework="fsdp", recompute="full")
    m = per_gpu_memory(setup)
    fragmenting = m.weights + m.gradients + m.activations
    assert m.reserve == runtime_reserve(fragmenting, tp=1, pp=1, cp=1, ep=1, notes=[])
    assert m.optimizer_states > fragmenting  # two thirds of the tensors, now outside the 5%
    paged = per_gpu_memory(replace(setup, paged_optimizer=True))
    assert paged.paged == m.optimizer_states * 8 // 12  # K = 12: 4 fp32 master (FSDP's flat parameter) + 8 moments
    assert paged.total <= 0.95 * 80 * 2**30 < m.total <= 0.98 * 80 * 2**30


def test_the_hf_70b_fsdp_run_fits_with_its_paged_moments_in_the_hosts_memory() -> None:
    """The same run through the estimate: resident total within the usable 95%, the paged moments (34.5 GB per GPU)
    in an A100 80GB node's host memory, and evicted (they do not fit beside the resident total), so each step reads
    and writes them over PCIe Gen4 at 80% of 32 GB/s."""
    hf = {"preset": "llama-2-70b", "gpus": 16, "zero": 3, "framework": "fsdp", "seq_len": 2048, "micro_batch": 1,
          "recompute": "full", "gpu": "A100-80G", "instance_type": "ecs.gn7e-c16g1.32xlarge"}
    r = estimate(**hf, paged_optimizer=True)
    paged = r["paged_optimizer"]
    assert r["fits"] is True and paged["host_fits"] is True and paged["evicted"] is True
    assert paged["pcie_bytes_per_step"] == 2 * paged["paged_bytes_per_gpu"] == 69_000_000_000
    assert paged["pcie_seconds"] == pytest.approx(69e9 / (32e9 * 0.8))
    assert estimate(**hf)["fits"] is False


@pytest.mark.parametrize(
    ("framework", "zero", "tp", "per_logit"),
    [("fsdp", 3, 1, 12), ("fsdp", 3, 2, 16), ("megatron", 1, 2, 6), ("deepspeed", 2, 1, 12), ("deepspeed", 2, 2, 6),
     ("zero-paper", 1, 1, 4)],
)
def test_the_loss_holds_the_frameworks_bytes_per_logit(framework: str, zero: int, tp: int, per_logit: int) -> None:
    """docs/sizing.md section 3c, from the frameworks' code: PyTorch's cross_entropy on fp32-upcast logits peaks at
    three fp32 N x V tensors (torchtitan, the Hugging Face Trainer), loss_parallel at four, Megatron's in-place
    vocab-parallel loss at its fp32 softmax plus the bf16 gradient, the paper at one fp32 tensor. Without recompute
    there is no working set, so the activations differ from the paper's by exactly the loss."""
    arch = PRESETS["llama-3-8b"]
    s, b = 8192, 2

    def acts(fw: str) -> int:
        return per_gpu_memory(TrainingSetup(arch=arch, seq_len=s, micro_batch=b, tp=tp, zero_stage=zero, dp=8,
                                            framework=fw, recompute="selective")).activations

    assert acts(framework) - acts("zero-paper") == Fraction((per_logit - 4) * s * b * arch.vocab, tp)
