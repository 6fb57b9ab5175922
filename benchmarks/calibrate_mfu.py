"""Fit the compute efficiency of generator/sizing/mfu.py to the published runs of benchmarks/published_runs.csv.

Each row is one published run: its model, GPUs, layout, and one published figure with the URL it comes from:
``mfu`` (model-FLOPs utilisation as the paper states it), ``megatron_tflops`` (TFLOP/s per GPU by [PTD-P]'s
formula 96·B·s·l·h²·(1 + s/6h + V/16lh), which counts the recomputed forward) or ``gpu_hours`` (for the row's
tokens). Every figure is turned into the run's end-to-end MFU on model FLOPs against the BF16 peak.

trainstack's prediction for a row is efficiency(h) x model/executed FLOPs / (1 + bubble) (x FP8_SPEEDUP for an
FP8 run), with efficiency(h) = peak_efficiency x h / (h + half_width): two global parameters, no per-run factor.
They minimise the sum of squared log residuals (for a fixed half_width the best peak_efficiency is closed-form;
half_width by golden-section search). The network terms are left out of the fit: every run here had RDMA at
>= 400 Gbit/s per node, where the planner's exchange charges are ~0.

    python benchmarks/calibrate_mfu.py           # print the rows, the parameters and the residuals
    python benchmarks/calibrate_mfu.py --write   # also write generator/sizing/data/mfu_fit.json
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path

from generator import sizing
from generator.sizing.mfu import FIT_PATH, MfuParameters

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "benchmarks" / "published_runs.csv"
TOKENS = {"deepseek-v3": 14_800_000_000_000}  # the gpu_hours rows' training tokens (the row's source)
# Rows reported but left out of the fit, and why. DeepSeek-V3's DualPipe overlaps its expert all-to-all with compute,
# which trainstack charges unoverlapped (alltoall_ratio: ~1.2x the compute at ep=64 over 8 x 400 Gbit/s), and its
# GEMMs ran in FP8 at a speed-up trainstack only assumes: without the all-to-all trainstack is ~1.56x the published
# MFU, with it ~0.71x. The truth lies between; fitting either would be a per-run fudge.
NOT_FITTED = {"deepseek-v3": "DualPipe overlaps the expert all-to-all trainstack charges unoverlapped; FP8 speed-up "
                             "assumed"}


def runs() -> list[dict]:
    with RUNS.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def architecture(row: dict) -> sizing.Architecture:
    if not row["arch"].startswith("shape:"):
        return sizing.PRESETS[row["arch"]]
    layers, hidden, heads, vocab = (int(x) for x in row["arch"].split(":")[1:])
    # PTD-P Table 1's GPT models: GELU MLP of 4h, tied embeddings (the megatron-1t preset's convention)
    n = sizing.parameters_of(layers, hidden, heads, heads, vocab, 4 * hidden, tied_embeddings=True, mlp_matrices=2)
    return sizing.Architecture(layers=layers, hidden=hidden, heads=heads, kv_heads=heads, vocab=vocab,
                               ffn_hidden=4 * hidden, parameters=n, source=row["run"], tied_embeddings=True,
                               mlp_matrices=2)


def published_mfu(row: dict) -> float:
    """The run's end-to-end MFU on trainstack's model FLOPs against the BF16 peak."""
    arch, s, peak = architecture(row), int(row["seq_len"]), float(row["bf16_tflops"])
    model = sizing.flops_per_token(arch, s).total
    value = float(row["value"])
    if row["figure"] == "mfu":
        return value
    if row["figure"] == "megatron_tflops":
        l, h, v = arch.layers, arch.hidden, arch.vocab
        megatron = 96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))  # per token, recompute counted
        return value * model / megatron / peak
    if row["figure"] == "gpu_hours":
        return model * TOKENS[row["run"]] / (value * 3600 * peak * 1e12)
    raise ValueError(f"{row['run']}: unknown figure {row['figure']!r}")


def bubble(row: dict) -> float:
    """The pipeline bubble as a fraction of compute, (pp-1)/(v m), m micro-batches per pipeline per step."""
    pp, v = int(row["pp"]), int(row["vpp"])
    dp = int(row["gpus"]) // (int(row["tp"]) * pp)
    m = max(1, int(row["global_batch"]) // (dp * int(row["micro_batch"])))
    return (pp - 1) / (v * m)


def predicted_mfu(row: dict, params: MfuParameters | None = None) -> float:
    """trainstack's end-to-end MFU for the run: the efficiency on executed FLOPs x model/executed, the bubble
    added back, FP8 at its assumed speed-up (BF16-peak terms, as :func:`published_mfu`)."""
    arch, s = architecture(row), int(row["seq_len"])
    ratio = sizing.model_flops(arch, s, 10**9) / sizing.executed_flops(arch, s, 10**9, row["recompute"])
    speed = sizing.FP8_SPEEDUP if row["precision"] == "fp8" else 1.0
    return sizing.compute_efficiency(arch.hidden, params=params) * ratio * speed / (1 + bubble(row))


def fit(rows: list[dict] | None = None) -> MfuParameters:
    rows = rows if rows is not None else [r for r in runs() if r["run"] not in NOT_FITTED]
    target = [math.log(published_mfu(r)) for r in rows]

    def best(width: float) -> tuple[float, MfuParameters]:
        unit = MfuParameters(1.0, width)
        logs = [math.log(predicted_mfu(r, unit)) for r in rows]
        scale = sum(t - p for t, p in zip(target, logs, strict=True)) / len(rows)
        return sum((t - p - scale) ** 2 for t, p in zip(target, logs, strict=True)), MfuParameters(math.exp(scale),
                                                                                                   width)

    lo, hi = 0.0, 20000.0
    g = (math.sqrt(5) - 1) / 2
    for _ in range(80):  # golden-section on half_width
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if best(a)[0] < best(b)[0]:
            hi = b
        else:
            lo = a
    p = best((lo + hi) / 2)[1]
    return MfuParameters(round(p.peak_efficiency, 4), round(p.half_width, 0))


def residuals(params: MfuParameters, rows: list[dict] | None = None) -> list[dict]:
    rows = rows if rows is not None else runs()
    out = []
    for r in rows:
        pub, pred = published_mfu(r), predicted_mfu(r, params)
        out.append({"run": r["run"], "published_mfu": round(pub, 4), "trainstack_mfu": round(pred, 4),
                    "ratio": round(pred / pub, 4), "fitted": r["run"] not in NOT_FITTED,
                    **({"why_not_fitted": NOT_FITTED[r["run"]]} if r["run"] in NOT_FITTED else {})})
    return out


def document(params: MfuParameters) -> dict:
    res = residuals(params)
    fitted = [r for r in res if r["fitted"]]
    rms = math.sqrt(sum(math.log(r["ratio"]) ** 2 for r in fitted) / len(fitted))
    return {"comment": "written by benchmarks/calibrate_mfu.py --write from benchmarks/published_runs.csv; "
                       "efficiency = peak_efficiency x h / (h + half_width) of executed FLOPs, bubble-free",
            "parameters": {"peak_efficiency": params.peak_efficiency, "half_width": params.half_width},
            "rms_log_residual": round(rms, 4), "residuals": res}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {FIT_PATH.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    doc = document(fit())
    print(json.dumps(doc["parameters"]), f"rms log residual {doc['rms_log_residual']}")
    for r in doc["residuals"]:
        print(f"{r['run']:24} published {r['published_mfu']:.3f} trainstack {r['trainstack_mfu']:.3f} "
              f"ratio {r['ratio']:.3f}" + ("" if r["fitted"] else f" (not fitted: {r['why_not_fitted']})"))
    if args.write:
        FIT_PATH.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0 if all(abs(r["ratio"] - 1) <= 0.20 for r in doc["residuals"] if r["fitted"]) else 1


if __name__ == "__main__":
    sys.exit(main())
