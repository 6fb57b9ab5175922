"""Benchmark: wall-clock time of ``trainstack preview examples/<each>.yaml`` as a whole process.

Run from the repository root:

    python benchmarks/bench_preview.py              # every example, 3 runs each
    python benchmarks/bench_preview.py --runs 5 examples/pretrain-70b.yaml

Each run is a fresh ``python -m generator.cli preview SPEC`` subprocess, so the time includes interpreter
start-up, importing pulumi and pulumi_alicloud, planning, rendering into a temporary folder and executing the
program under Pulumi's mock runtime: what a user waits for. The minimum is the best estimate of the cost
on an idle machine; the median shows the typical wait. A run that exits non-zero aborts the benchmark
(a slow failure is not a measurement). Numbers are recorded in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def time_preview(spec: Path, runs: int) -> list[float]:
    """Seconds per run of the preview command on ``spec``, in run order."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "generator.cli", "preview", str(spec.relative_to(ROOT))],
                              cwd=ROOT, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"preview of {spec.name} exited {proc.returncode}:\n{proc.stderr or proc.stdout}")
    return times


def resource_count(spec: Path) -> int:
    """How many resources the preview declares (context for the timings; one extra, untimed run)."""
    proc = subprocess.run([sys.executable, "-m", "generator.cli", "preview", "--json", str(spec.relative_to(ROOT))],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    return len(json.loads(proc.stdout)["resources"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="*", type=Path, help="spec files (default: examples/*.yaml)")
    parser.add_argument("--runs", type=int, default=3, help="runs per spec (default 3)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    specs = [p.resolve() for p in args.specs] or sorted((ROOT / "examples").glob("*.yaml"))
    rows = []
    for spec in specs:
        times = time_preview(spec, args.runs)
        rows.append({"spec": str(spec.relative_to(ROOT)), "resources": resource_count(spec), "runs": args.runs,
                     "min_s": round(min(times), 2), "median_s": round(statistics.median(times), 2),
                     "all_s": [round(t, 2) for t in times]})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(r["spec"]) for r in rows)
    print(f"{'spec':<{width}}  resources  runs   min s  median s")
    for r in rows:
        print(f"{r['spec']:<{width}}  {r['resources']:>9}  {r['runs']:>4}  {r['min_s']:>6.2f}  {r['median_s']:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
