"""Benchmark: how long ``planner.make_plan`` takes per spec, over >= 1,000 varied specs generated in memory.

Run from the repository root:

    python benchmarks/bench_plan.py                 # 1,200 specs, seed 0
    python benchmarks/bench_plan.py --count 5000 --seed 7 --json

The specs cover model sizes 1B..1T (log-uniform parameter counts and the presets), sequence lengths
512..32768, every ZeRO stage and recompute mode, spot on/off, every catalog region, ``gpu: auto`` or a GPU
offered there, ``nodes: auto`` or a fixed count, with and without tokens, a deadline and a global batch.
Only specs that pass ``validate.check`` are timed (as in ``trainstack plan``). A PlanningError (nothing fits,
over budget) is a normal answer and is counted; any other exception is a planner bug: it is listed and the
script exits 1. This is a benchmark, not a test: the numbers depend on the machine (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from generator import sizing
from generator.catalog import Catalog, load_catalog
from generator.plan import check as validate
from generator.plan import planner
from generator.spec.model import Spec

SEQ_LENS = (512, 1024, 2048, 4096, 8192, 32768)


def random_spec(rng: random.Random, catalog: Catalog, i: int) -> dict[str, Any]:
    """One spec dict, as a user would write it, drawn from the ranges in the module docstring."""
    # Half the runs go to regions with RDMA-capable 8-GPU types (where multi-node training is possible), as
    # large runs do; the rest are spread over every region, where many large models cannot be planned.
    rdma_regions = [r for r in catalog.regions
                    if any(t.rdma and t.gpus == 8 for t in catalog.types_in_region(r.id))]
    region = rng.choice(rdma_regions if rng.random() < 0.5 else catalog.regions)
    model: dict[str, Any]
    if rng.random() < 0.2:
        model = {"preset": rng.choice(sorted(sizing.PRESETS))}
    else:  # log-uniform over 1B..1T, so every decade gets the same share
        model = {"parameters": int(10 ** rng.uniform(9, 12))}
    model.update(
        sequence_length=rng.choice(SEQ_LENS),
        micro_batch_size=rng.choice((1, 1, 1, 2, 4)),
        precision=rng.choice(("bf16", "bf16", "bf16", "fp16")),
        optimizer=rng.choice(("adamw", "adamw", "adamw-8bit", "adafactor")),
    )
    if rng.random() < 0.6:
        model["tokens"] = rng.choice(("10B", "100B", "300B", "1T", "2T"))
    if rng.random() < 0.3:
        model["global_batch_tokens"] = rng.choice(("1Mi", "4Mi", "8Mi"))
    if rng.random() < 0.1:
        model["finetune"] = {"method": rng.choice(("lora", "qlora")), "lora_rank": rng.choice((8, 16, 64))}
    gpus = sorted({t.gpu for t in catalog.types_in_region(region.id)})
    spot = rng.random() < 0.4
    spec: dict[str, Any] = {
        "name": f"bench-{i:05d}",
        "region": region.id,
        "model": model,
        "parallelism": {
            "zero_stage": rng.randint(0, 3),
            "recompute": rng.choice(("none", "selective", "selective", "full")),
            "sequence_parallel": rng.random() < 0.8,
            "tensor": rng.choice(("auto", "auto", "auto", 8)),
            "pipeline": rng.choice(("auto", "auto", "auto", 1, 4)),
        },
        "compute": {
            "gpu": rng.choice(["auto"] * len(gpus) + gpus),
            "nodes": rng.choice(("auto",) * 9 + (1, 2, 8, 32)),
            "max_nodes": rng.choice((64, 512, 512, 2048)),
            "bare_metal": rng.choice(("any", "any", "prefer", "require", "avoid")),
        },
        "network": {"rdma": rng.choice(("auto", "auto", True))},
        "spot": {"enabled": spot, "on_demand_base": rng.choice((1, 1, 2))},
    }
    if isinstance(spec["compute"]["nodes"], int):
        spec["compute"]["max_nodes"] = max(spec["compute"]["max_nodes"], spec["compute"]["nodes"])
    if rng.random() < 0.3 and "tokens" in model:
        spec["budget"] = {"max_days": rng.choice((14, 30, 90))}
    if region.cpfs and rng.random() < 0.3:
        spec["storage"] = {"dataset": {"source": "oss://bench-corpus/tokenized/",
                                       "size": rng.choice(("500GiB", "5TiB", "100TiB"))}}
    return spec


def generate(count: int, seed: int, catalog: Catalog) -> tuple[list[Spec], int]:
    """``count`` specs that pass validation, and how many drawn ones were rejected on the way."""
    rng = random.Random(seed)
    specs: list[Spec] = []
    rejected = 0
    while len(specs) < count:
        spec = Spec.model_validate(random_spec(rng, catalog, len(specs) + rejected))
        if validate.check(spec, catalog):
            rejected += 1
            continue
        specs.append(spec)
    return specs, rejected


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (no interpolation: every reported value was measured)."""
    k = max(0, math.ceil(q / 100 * len(sorted_values)) - 1)
    return sorted_values[k]


def size_bucket(spec: Spec) -> str:
    n = sizing.architecture_for(spec.model.parameters, spec.model.preset).parameters
    return "1B-10B" if n < 1e10 else "10B-100B" if n < 1e11 else "100B-1T+"


def run(count: int, seed: int) -> dict[str, Any]:
    catalog = load_catalog()
    specs, rejected = generate(count, seed, catalog)
    times: list[float] = []
    by_bucket: dict[str, list[float]] = {}
    by_outcome: dict[str, list[float]] = {"plan": [], "PlanningError": []}
    crashes: list[str] = []
    for spec in specs:
        outcome = "plan"
        start = time.perf_counter()
        try:
            planner.make_plan(spec, catalog)
        except planner.PlanningError:
            outcome = "PlanningError"
        except Exception:  # noqa: BLE001 - a benchmark reports every crash instead of stopping at the first
            outcome = "crash"
            crashes.append(f"{spec.model_dump_json(exclude_defaults=True)}\n{traceback.format_exc(limit=3)}")
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        by_outcome.setdefault(outcome, []).append(elapsed)
        by_bucket.setdefault(size_bucket(spec), []).append(elapsed)
    ordered = sorted(times)
    ms = 1000.0
    return {
        "specs": len(specs), "seed": seed, "rejected_by_validate": rejected,
        "planning_errors": len(by_outcome["PlanningError"]), "other_exceptions": len(crashes),
        "total_s": round(sum(times), 3),
        "mean_ms": round(statistics.fmean(times) * ms, 2), "p50_ms": round(percentile(ordered, 50) * ms, 2),
        "p95_ms": round(percentile(ordered, 95) * ms, 2), "max_ms": round(ordered[-1] * ms, 2),
        "mean_ms_by_size": {k: round(statistics.fmean(v) * ms, 2) for k, v in sorted(by_bucket.items())},
        "mean_ms_by_outcome": {k: round(statistics.fmean(v) * ms, 2) for k, v in by_outcome.items() if v},
        "crashes": crashes[:5],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1200, help="specs to plan (default 1200; at least 1000 "
                        "for the numbers in benchmarks/README.md)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    result = run(args.count, args.seed)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"planned {result['specs']} specs (seed {result['seed']}; {result['rejected_by_validate']} drawn specs "
              f"failed validation and were redrawn) in {result['total_s']:.1f} s")
        print(f"per spec: mean {result['mean_ms']:.1f} ms, p50 {result['p50_ms']:.1f} ms, "
              f"p95 {result['p95_ms']:.1f} ms, max {result['max_ms']:.1f} ms")
        print("mean by outcome: " + ", ".join(f"{k} {v:.1f} ms" for k, v in result["mean_ms_by_outcome"].items()))
        print("mean by model size: " + ", ".join(f"{k} {v:.1f} ms" for k, v in result["mean_ms_by_size"].items()))
        print(f"PlanningError (no plan satisfies the spec; a normal answer): {result['planning_errors']}")
        print(f"other exceptions (planner bugs): {result['other_exceptions']}")
        for crash in result["crashes"]:
            print("\n" + crash)
    return 1 if result["other_exceptions"] else 0


if __name__ == "__main__":
    sys.exit(main())
