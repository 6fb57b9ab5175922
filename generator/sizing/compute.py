"""Training compute and time: 6·N·D FLOPs, the recompute overhead, and wall-clock hours at a utilisation.

[Kaplan], [Chinchilla], [PaLM], [SP] and [Llama3] are listed in :mod:`generator.sizing`.
"""

from __future__ import annotations

from generator.sizing.common import SizingError, _positive_int, _positive_number

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


# FP8 (Transformer Engine) runs the GEMMs at up to twice the BF16 tensor peak, but attention, norms, the casts and
# their scaling overhead stay where they were: published end-to-end speedups over BF16 are about 1.25-1.37x (TorchAO
# MXFP8 Llama 4 Scout +30%, PyTorch blog 2025; Llama-3-70B continued pre-training on H100 with Megatron-LM,
# Fujii et al. 2024, arXiv:2411.08719; NVIDIA NeMo, "Faster Training Throughput in FP8 Precision"; a 13B GPT on
# H100 with Megatron-LM and Transformer Engine, 0.34 -> 0.24 s per step, 1.42x, NVIDIA/Megatron-LM issue #396,
# where NVIDIA answers that the 2x holds for the GEMMs alone). trainstack assumes 1.3x: the MFU against the FP8 peak
# is the GPU's BF16 MFU x 1.3 x bf16_peak / fp8_peak. An assumption within those reports, not fitted.
FP8_SPEEDUP = 1.3


def precision_peak(
    bf16_tflops: float, fp8_tflops: float | None, mfu: float, precision: str
) -> tuple[float, float]:
    """(peak TFLOPS, MFU against that peak) for the run's precision: the FP8 peak at the MFU that gives
    :data:`FP8_SPEEDUP` over BF16 for ``fp8``, else the 16-bit peak at the GPU's MFU."""
    if precision != "fp8":
        return bf16_tflops, mfu
    if not fp8_tflops:
        raise SizingError("precision fp8 needs a GPU with FP8 tensor cores (Ada, Hopper or Blackwell).")
    return fp8_tflops, min(1.0, mfu * FP8_SPEEDUP * bf16_tflops / fp8_tflops)
