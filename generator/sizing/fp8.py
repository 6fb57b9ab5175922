"""FP8 training's memory terms (``model.precision: fp8``), as Transformer Engine runs it: the FP8 weight cache and
the GEMM inputs stored in FP8 for the backward pass. Model states stay as in bf16 (:mod:`generator.sizing.precision`);
docs/sizing.md, "FP8", has the sources."""

from __future__ import annotations

import math
from fractions import Fraction

from generator.sizing.common import _gb
from generator.sizing.precision import FP8_WEIGHT_CACHE_BYTES


def weight_cache(local_weights: Fraction, zero_stage: int, notes: list[str]) -> int:
    """FP8 copies of the blocks' GEMM weights that Transformer Engine keeps for a step: :data:`FP8_WEIGHT_CACHE_BYTES`
    per local weight (the cast and its transpose). Embeddings and the output layer stay bf16. Under ZeRO-3 / FSDP the
    cast is made from the gathered unit and freed with it (not counted)."""
    if zero_stage >= 3:
        notes.append(
            "fp8: Transformer Engine casts each gathered ZeRO-3/FSDP unit to FP8 and frees it with the unit "
            "(no persistent FP8 weight copy counted)"
        )
        return 0
    cache = math.ceil(FP8_WEIGHT_CACHE_BYTES * local_weights)
    notes.append(
        f"fp8: FP8 weight cache (the cast and its transpose, {FP8_WEIGHT_CACHE_BYTES} bytes per local GEMM "
        f"weight, kept for the step's micro-batches; Transformer Engine) = {FP8_WEIGHT_CACHE_BYTES} x "
        f"{float(local_weights):,.0f} = {_gb(cache)}, counted with the weights; parameters, "
        "gradients and optimizer states stay bf16/fp32 as in bf16 training"
    )
    return cache


def activation_saving(t: int, sp: bool, recompute: str) -> Fraction:
    """s*b*h units per layer that FP8 saves: Transformer Engine stores the inputs of the four GEMMs of a block
    (QKV 2sbh, attention projection 2sbh, fc1 2sbh, fc2 8sbh in [SP]'s 34sbh count) in FP8 for the backward pass,
    half their 16-bit bytes. Without sequence parallelism the QKV and fc1 inputs are replicated over tp; with full
    recompute only the block input is stored, which is not a GEMM input; op-level selective recompute saves matmul
    outputs (BF16), not GEMM inputs, so it is counted as BF16."""
    if recompute in ("full", "selective-op"):
        return Fraction(0)
    replicated = Fraction(2 + 2, 2) / (t if sp or t == 1 else 1)
    return replicated + Fraction(2 + 8, 2 * t)
