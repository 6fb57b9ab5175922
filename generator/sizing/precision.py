"""Bytes per parameter: the weight precisions and the optimizers' state (K of [ZeRO]).

Shared by the memory model and the checkpoint size; [ZeRO] and [8bit] are listed in :mod:`generator.sizing`.
"""

from __future__ import annotations

from generator.sizing.common import SizingError

# Optimizer bytes per parameter under 16-bit mixed precision, INCLUDING the 4-byte fp32
# master copy of the weights ([ZeRO] Sec. 3.1 calls this K; K = 12 for mixed-precision Adam:
# fp32 weights + fp32 momentum + fp32 variance).
OPTIMIZER_BYTES: dict[str, int] = {
    "adamw": 12,  # 4 master + 4 m + 4 v                                    [ZeRO]
    "adam": 12,  # same as AdamW (weight decay adds no state)
    "sgd": 8,  # 4 master + 4 momentum buffer: we assume SGD *with* momentum, the usual
    # choice for training; plain SGD (no momentum) would be 4.
    "adafactor": 4,  # 4 master; factored second moment is O(rows+cols) per matrix (~0) and
    # no first moment (beta1=None, Shazeer & Stern 2018 default).
    "lion": 8,  # 4 master + 4 momentum (Chen et al. 2023 keep one moment)
    "adamw-8bit": 6,  # 4 master + 1 m + 1 v; block-wise constants (1 fp32 / 2048 values) ~0  [8bit]
    "adamw-bf16": 4,  # pure bf16: no fp32 master (the bf16 weights are stepped), bf16 m and v (2 + 2); Megatron-Core
    # --use-precision-aware-optimizer --main-params-dtype bf16 --exp-avg(-sq)-dtype bf16, or
    # torchao / Kahan-summation AdamW in bf16 (Zamirai et al. 2020, arXiv:2010.06192)
}
# Optimizers whose state holds no fp32 master copy: their K is the moments only, whatever the framework
PURE_16BIT_OPTIMIZERS: frozenset[str] = frozenset({"adamw-bf16"})
_MASTER_BYTES = 4  # fp32 master copy held by the optimizer under mixed precision

# fp8 is Transformer Engine's FP8 training (Micikevicius et al. 2022, "FP8 Formats for Deep Learning",
# arXiv:2209.05433; NVIDIA Transformer Engine docs, "Using FP8 with Transformer Engine"): the GEMMs run in FP8, but the
# parameters, gradients and optimizer states stay in bf16/fp32 as in bf16 training, so fp8 keeps bf16's 2 bytes here.
# What FP8 adds and saves is in :data:`FP8_WEIGHT_CACHE_BYTES` and memory._activations.
PRECISION_BYTES: dict[str, int] = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 2}
# TE casts each weight to FP8 once per step and keeps the cast (and on Hopper its transpose, since the FP8 GEMMs
# take only the TN layout) for every micro-batch of the step: 1 + 1 bytes per local weight parameter
# (transformer_engine.pytorch Linear, ``is_first_microbatch`` weight caching; Megatron-LM without --fp8-param-gather).
FP8_WEIGHT_CACHE_BYTES = 2
SIXTEEN_BIT_STATES = ("bf16", "fp8")  # precisions whose stored weights and gradients are bf16


def _check_optimizer(optimizer: str) -> None:
    if optimizer not in OPTIMIZER_BYTES:
        raise SizingError(f"unknown optimizer {optimizer!r}; allowed: {', '.join(OPTIMIZER_BYTES)}.")


def _check_precision(precision: str) -> None:
    if precision not in PRECISION_BYTES:
        raise SizingError(f"unknown precision {precision!r}; allowed: {', '.join(PRECISION_BYTES)}.")


def optimizer_bytes_per_param(optimizer: str, precision: str) -> int:
    """K of [ZeRO]: optimizer-held bytes per trainable parameter.

    bf16/fp16 (mixed precision): ``OPTIMIZER_BYTES`` (moments + fp32 master weights).
    fp32: the weights already are fp32, so there is no separate master copy and
    K = moments only (8 for Adam).
    """
    _check_optimizer(optimizer)
    _check_precision(precision)
    if optimizer in PURE_16BIT_OPTIMIZERS and precision not in SIXTEEN_BIT_STATES:
        raise SizingError(
            f"optimizer {optimizer} keeps bf16 weights and moments with no fp32 master copy: it needs "
            f"precision bf16 (or fp8, whose stored weights are bf16), not {precision}."
        )
    k = OPTIMIZER_BYTES[optimizer]
    return k - _MASTER_BYTES if precision == "fp32" else k
