"""Training compute and time: 6·N·D FLOPs, the recompute overhead, and wall-clock hours at a utilisation.

[Kaplan], [Chinchilla], [PaLM], [SP] and [Llama3] are listed in :mod:`generator.sizing`.
"""

from __future__ import annotations

from generator.sizing.common import SizingError, _positive_int, _positive_number
from generator.sizing.mfu import fp8_speedup

# Executed FLOPs per parameter per token.  6 = forward 2 + backward 4 ([Kaplan] Sec. 2.1).
# Full recompute runs the forward twice: 8 (+33%).  Selective recompute only recomputes the
# attention core, whose FLOPs 6ND already leaves out; [SP] reports a few percent overhead,
# which we do not model.
RECOMPUTE_FLOP_FACTOR: dict[str, int] = {"none": 6, "selective": 6, "full": 8}

# 38-43% BF16 MFU reported for Llama 3 405B on H100 ([Llama3] Table 4).  Assumption.
DEFAULT_MFU = 0.40


def training_flops(parameters: int, tokens: int) -> float:
    """Model training FLOPs C = 6*N*D ([Kaplan] Sec. 2.1; used by [Chinchilla]).

    Ignores attention-score FLOPs (2*n_layer*n_ctx*d_attn per token forward) and any
    recomputation; :func:`generator.sizing.schedule.flops_per_token` counts attention and logits,
    and the planner's time uses it.
    """
    _positive_int("parameters", parameters)
    _positive_int("tokens", tokens)
    return 6.0 * parameters * tokens


def training_hours(
    parameters: int, tokens: int, gpus: int, peak_tflops: float, mfu: float, recompute: str = "none"
) -> float:
    """Wall-clock hours = executed FLOPs / (gpus * peak * utilisation) / 3600.

    Executed FLOPs = RECOMPUTE_FLOP_FACTOR[recompute] * N * D (8ND with full recompute).
    ``peak_tflops`` is the dense (non-sparse) per-GPU peak for the training precision.
    ``mfu`` is therefore interpreted as the utilisation of *executed* FLOPs (what [PaLM]
    calls HFU).  If you pass a measured MFU in the strict [PaLM] sense (model FLOPs only,
    recompute excluded), use recompute="none" to avoid counting recompute twice.
    """
    _positive_int("gpus", gpus)
    _positive_number("peak_tflops", peak_tflops)
    if isinstance(mfu, bool) or not isinstance(mfu, (int, float)) or not 0 < mfu <= 1:
        raise SizingError(f"mfu must be in (0, 1], got {mfu!r}; typical large-scale values are 0.3-0.5.")
    if recompute not in RECOMPUTE_FLOP_FACTOR:
        raise SizingError(f"unknown recompute {recompute!r}; allowed: {', '.join(RECOMPUTE_FLOP_FACTOR)}.")
    flops = training_flops(parameters, tokens) * RECOMPUTE_FLOP_FACTOR[recompute] / 6
    return flops / (gpus * peak_tflops * 1e12 * mfu) / 3600.0


# FP8 (Transformer Engine) runs the linear layers' GEMMs at up to twice the BF16 tensor peak, but the attention core
# (FlashAttention / cuDNN in BF16), norms, the casts and their scaling stay where they were, so the end-to-end gain is
# far below 2x and falls as attention's share of the step grows (MPT 1B on 8 H100: 1.35x at 512 tokens, 1.05x at 32K;
# mosaicml/llm-foundry scripts/train/benchmarking/README.md at 061f2c7). trainstack applies a GEMM speed-up to the
# non-attention share of the executed FLOPs (generator.sizing.mfu.fp8_speedup), fitted by benchmarks/calibrate_mfu.py
# on the same-recipe BF16/FP8 pairs of benchmarks/published_runs.csv (NVIDIA DGX Cloud Benchmarking's NeMo 24.09
# Llama 3.1 8B / 70B / 405B, 1.34-1.53x; MPT 3B at 8K, 1.15x); torchtitan's Llama 3.1 8B Float8 pairs (1.28-1.29x,
# pytorch/torchtitan docs/performance.md at eaea6f6) are the check (docs/sizing.md, sections 4b and 7). The MFU
# against the FP8 peak is the GPU's BF16 MFU x that speed-up x bf16_peak / fp8_peak.


def precision_peak(
    bf16_tflops: float,
    fp8_tflops: float | None,
    mfu: float,
    precision: str,
    attention_share: float = 0.0,
) -> tuple[float, float]:
    """(peak TFLOPS, MFU against that peak) for the run's precision: the FP8 peak at the MFU that gives
    :func:`generator.sizing.mfu.fp8_speedup` over BF16 for ``fp8`` (``attention_share`` the attention core's share
    of the executed FLOPs, :func:`generator.sizing.schedule.attention_share`), else the 16-bit peak at the GPU's
    MFU."""
    if precision != "fp8":
        return bf16_tflops, mfu
    if not fp8_tflops:
        raise SizingError("precision fp8 needs a GPU with FP8 tensor cores (Ada, Hopper or Blackwell).")
    return fp8_tflops, min(1.0, mfu * fp8_speedup(attention_share) * bf16_tflops / fp8_tflops)
