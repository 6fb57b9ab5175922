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


def training_hours(parameters: int, tokens: int, gpus: int, peak_tflops: float, mfu: float,
                   recompute: str = "none") -> float:
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
