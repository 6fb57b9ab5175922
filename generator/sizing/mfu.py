"""The expected MFU of a layout, calibrated on published runs.

Owns the compute efficiency a GPU reaches at the width its share of the model runs at and FP8's speed-up over it
(four global parameters, fitted by benchmarks/calibrate_mfu.py to the published runs of
benchmarks/published_runs.csv and kept in ``data/mfu_fit.json`` with the fit's residuals), and the conversion to MFU
in the papers' sense.

Two FLOP counts, as [PaLM] App. B separates them:

* model FLOPs (:func:`generator.sizing.schedule.flops_per_token`): 6·N + attention + logits, no recompute; what a
  published MFU is measured against, and what trainstack divides by the MFU;
* executed FLOPs (:func:`generator.sizing.schedule.executed_flops`): what the GPUs run, recompute and capacity
  padding included.

The fitted efficiency is a utilisation of *executed* FLOPs with the pipeline bubble taken out (bubble-free): the
fit divides each run's end-to-end figure by its bubble, and the schedule adds the bubble back once
(:func:`generator.sizing.schedule.schedule`), so the bubble is never counted twice. The MFU of a layout is then
efficiency x model/executed FLOPs x the network's factors (:func:`generator.sizing.schedule.layout_mfu`).

The efficiency depends on the tensor-parallel degree through the width one GPU sees, h / tp^tp_exponent
(:class:`MfuParameters`; docs/sizing.md, section 7): fitted without the A100 FSDP runs (tp = 1), it predicts them
within 20% (``leave_group_out`` in ``data/mfu_fit.json``), where the width h alone left them 0.70-0.84x. The fit has
no network parameter: the planner's data-parallel exchange is fully hidden on every published run, and the residuals
change by under 5% per doubling of tp, dp or pp (``network_check``). The network enters through the planner's
charges only; the calibration charges the expert all-to-all of its cross-node MoE runs as the planner does, which
those runs need. Nor has it a term for the attention kernel (``kernel_check``: a factor on unfused runs fits at 1.0)
or for tensor-parallel communication (``tp_check``: charged beside the width term, it raises the rms).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FIT_PATH = Path(__file__).resolve().parent / "data" / "mfu_fit.json"
# The catalog MFU (generator/catalog/data/v1/gpus.csv) of the NVLink parts the published runs used (A100, H100,
# H800; H20 is rated the same): a GPU rated lower (PCIe cards, V100) keeps its ratio to this as a factor on the
# fitted efficiency. No published run on those parts is in the table: an assumption.
REFERENCE_GPU_MFU = 0.40


@dataclass(frozen=True, slots=True)
class MfuParameters:
    """The fitted global parameters: efficiency = peak_efficiency x w / (w + half_width) for the width one GPU sees,
    w = h / tp^tp_exponent (the GEMMs' share of the work grows with the width against the elementwise work, norms
    and softmax, that grows with h^0 per parameter; [PTD-P] Table 1: 44% of peak at h=2304 to 52% at h=25600)."""

    peak_efficiency: float
    half_width: float
    # FP8 (Transformer Engine, torchtitan Float8) runs the linear layers' GEMMs in FP8 and leaves the attention core
    # (FlashAttention / cuDNN, QK^T and AV) in BF16: this is the GEMMs' speed-up, fitted on the same-recipe
    # BF16/FP8 pairs of the table (1.0: FP8 gains nothing)
    fp8_gemm_speedup: float = 1.0
    # the width one GPU sees under tensor parallelism of degree t is h / t^tp_exponent: Megatron's tensor
    # parallelism cuts one dimension of every linear layer's GEMM by t ("smaller and less performant matrix
    # multiplications", Korthikanti et al. 2022, arXiv 2205.05198, Sec. 1) and, without sequence parallelism, leaves
    # the layer norms and dropouts "replicated across the tensor parallel group" (Sec. 4.2.2); 0 if the GEMMs kept
    # their speed and nothing were replicated, 1 if a GPU at tp = t ran as a model t times narrower. Fitted.
    tp_exponent: float = 0.0


@lru_cache(maxsize=1)
def fitted() -> MfuParameters:
    """The parameters benchmarks/calibrate_mfu.py fitted (``data/mfu_fit.json``)."""
    data = json.loads(FIT_PATH.read_text(encoding="utf-8"))["parameters"]
    return MfuParameters(
        float(data["peak_efficiency"]),
        float(data["half_width"]),
        float(data["fp8_gemm_speedup"]),
        float(data["tp_exponent"]),
    )


def fp8_speedup(attention_share: float, params: MfuParameters | None = None) -> float:
    """FP8's end-to-end speed-up over BF16 for a step whose executed FLOPs are ``attention_share`` attention core
    (:func:`generator.sizing.schedule.attention_share`): the rest, the linear layers' GEMMs, runs
    ``fp8_gemm_speedup`` faster, the attention core at its BF16 speed (BF16 time split by FLOPs, Amdahl)."""
    k = (params or fitted()).fp8_gemm_speedup
    share = min(1.0, max(0.0, attention_share))
    return 1.0 / (share + (1.0 - share) / k)


def compute_efficiency(
    hidden: int,
    gpu_mfu: float = REFERENCE_GPU_MFU,
    params: MfuParameters | None = None,
    *,
    tp: int,
) -> float:
    """Executed FLOPs per peak FLOP a GPU reaches on a model of width ``hidden`` split over ``tp`` tensor-parallel
    ranks (at the width one GPU sees, hidden / tp^tp_exponent), bubble and network aside; ``gpu_mfu`` the catalog's MFU for the
    GPU (scaled against :data:`REFERENCE_GPU_MFU`). ``tp`` has no default: a caller that drops it would size every
    layout as tp = 1, the fastest."""
    p = params or fitted()
    width = hidden / max(1, tp) ** p.tp_exponent
    return min(1.0, p.peak_efficiency * width / (width + p.half_width) * gpu_mfu / REFERENCE_GPU_MFU)
