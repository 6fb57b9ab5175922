"""Benchmark: a command whose program run is answered by the graph cache, against the same command run cold.

Run from the repository root:

    python benchmarks/bench_cache.py                                  # validate examples/foundation-1t.yaml
    python benchmarks/bench_cache.py --command preview --runs 5 examples/pretrain-70b.yaml

Each run is a fresh ``python -m generator.cli COMMAND SPEC`` subprocess with its own empty cache folder
(``XDG_CACHE_HOME`` in a temporary folder): one cold run fills it, then ``--runs`` warm runs read it. The spec and
its files do not change between runs, so every warm run is a cache hit (generator/preview/cache.py). Reported: the
cold time and the min and median warm time. Not a test: nothing is asserted. Numbers are in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(command: str, spec: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "generator.cli", command, spec], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{command} {spec} exited {proc.returncode}:\n{proc.stderr or proc.stdout}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", nargs="?", default="examples/foundation-1t.yaml")
    parser.add_argument("--command", default="validate", choices=["validate", "lint", "preview"])
    parser.add_argument("--runs", type=int, default=3, help="warm runs (default 3)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="trainstack-cache-bench-") as tmp:
        env = {**os.environ, "XDG_CACHE_HOME": tmp, "TRAINSTACK_GRAPH_CACHE": "on"}
        cold = run(args.command, args.spec, env)
        warm = [run(args.command, args.spec, env) for _ in range(args.runs)]
    print(f"{args.command} {args.spec}: cold {cold:.2f} s; warm (cache hit) min {min(warm):.2f} s, "
          f"median {statistics.median(warm):.2f} s over {len(warm)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
