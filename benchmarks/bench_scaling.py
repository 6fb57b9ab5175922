"""Benchmark: how offline preview scales with the cluster, and how it compares with a bare Pulumi mock harness.

Run from the repository root:

    python benchmarks/bench_scaling.py                          # 8 64 512 1024 4096 nodes, 3 paired runs each
    python benchmarks/bench_scaling.py --nodes 1024 --runs 5 --modes tuned default off
    python benchmarks/bench_scaling.py --nodes 64 4096 --runs 1 --json

For each node count it writes examples/pretrain-70b.yaml with ``compute.nodes`` set to that count (ECS, eRDMA, CPFS,
OSS checkpoints, spot: the example with the most per-node resources), renders it into a temporary folder, then
times, as fresh subprocesses and in alternating order (paired runs: both see the same machine load):

* ``preview/MODE``: ``python -m generator.cli preview SPEC`` with the graph cache off (``TRAINSTACK_GRAPH_CACHE=off``)
  and the collector in MODE (``TRAINSTACK_MOCK_GC``: tuned, the default; off; default = CPython's settings). This
  is the whole command: start-up, imports, planning, rendering, the mock run, printing.
* ``harness``: ``python benchmarks/bare_harness.py FOLDER``, the same rendered program under a bare mock runtime.

Each measurement is wall-clock time, the child's CPU time (user + system, steadier than wall time on a shared
machine) and its peak resident memory (``ru_maxrss``), all from ``wait4``. User data
per node is computed for every node from the rendered node-init.sh exactly as the program does (rank, name and spot
filled in, gzip level 9, mtime 0): the bytes ECS counts (before base64) and the base64 length the API carries.
Reported: min and median wall time, min CPU time, median peak memory, the ratios to the harness, and the min/max user-data bytes over the nodes. Not a test:
nothing is asserted. Numbers are recorded in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator import api
from generator.preview import lean
from generator.render import stackdir, userdata

BASE_SPEC = ROOT / "examples" / "pretrain-70b.yaml"
NODES_LINE = "  nodes: auto               # sized from memory and the deadline below\n"


def write_spec(folder: Path, nodes: int) -> Path:
    text = BASE_SPEC.read_text()
    if NODES_LINE not in text:
        raise SystemExit(f"{BASE_SPEC} no longer has the line {NODES_LINE.strip()!r}; update bench_scaling.py")
    spec = folder / f"scale-{nodes}.yaml"
    text = text.replace(NODES_LINE, f"  nodes: {nodes}\n  max_nodes: {max(nodes, 512)}\n")
    # Thousands of spot nodes at the default 0.1 reclaims per node-day never finish (a planning error): assume rarer
    # reclaims, as tests/test_userdata.py does, so the spot/on-demand split still reaches every node's user data.
    protection = "  protection_hours: 1\n"
    if protection not in text:
        raise SystemExit(f"{BASE_SPEC} no longer has the line {protection.strip()!r}; update bench_scaling.py")
    spec.write_text(text.replace(protection, protection + "  interruptions_per_node_day: 0.001\n"))
    return spec


def user_data_bytes(plan, script: str) -> tuple[int, int, int, int]:
    """(min, max) bytes before base64 and (min, max) base64 length of every node's user data."""
    raw, b64 = [], []
    for r in plan.compute.ranks:
        filled = (script.replace("__TRAINSTACK_NODE_RANK__", str(r.rank)).replace("__TRAINSTACK_NODE_NAME__", r.name)
                  .replace("__TRAINSTACK_NODE_SPOT__", "true" if r.spot else "false"))
        raw.append(len(userdata.ecs_user_data_bytes(filled)))
        b64.append(len(userdata.ecs_user_data(filled)))
    return min(raw), max(raw), min(b64), max(b64)


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MiB) of one child process; a failing child aborts the benchmark."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{err}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024  # Linux reports KiB


def bench(nodes: int, runs: int, modes: list[str], harness: bool, tmp: Path) -> dict:
    spec = write_spec(tmp, nodes)
    plan = api.plan(spec)
    files = api.render_files(plan, spec.name)
    folder = tmp / f"stack-{nodes}"
    stackdir.write(files, folder, durable=False)
    raw_min, raw_max, b64_min, b64_max = user_data_bytes(plan, files["node-init.sh"])
    env = {**os.environ, "TRAINSTACK_GRAPH_CACHE": "off", "PYTHONDONTWRITEBYTECODE": "1"}
    variants = {f"preview/{m}": ([sys.executable, "-m", "generator.cli", "preview", str(spec)], {**env, lean.GC_ENV: m})
                for m in modes}
    if harness:
        variants["harness"] = ([sys.executable, str(ROOT / "benchmarks" / "bare_harness.py"), str(folder)], env)
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in variants}
    names = list(variants)
    for run in range(runs):
        for name in (names if run % 2 == 0 else names[::-1]):  # alternate the order: paired runs
            cmd, child_env = variants[name]
            samples[name].append(measure(cmd, child_env))
    result = {"nodes": nodes, "node_init_bytes": len(files["node-init.sh"].encode()),
              "user_data_bytes": [raw_min, raw_max], "user_data_base64": [b64_min, b64_max],
              "user_data_limit": userdata.limit(plan), "runs": runs, "variants": {}}
    for name, got in samples.items():
        times, cpu = [t for t, _, _ in got], [c for _, c, _ in got]
        result["variants"][name] = {"min_s": round(min(times), 2), "median_s": round(statistics.median(times), 2),
                                    "cpu_min_s": round(min(cpu), 2),
                                    "peak_mib": int(statistics.median(m for _, _, m in got)),
                                    "all_s": [round(t, 2) for t in times]}
    if harness:
        base, base_cpu = result["variants"]["harness"]["min_s"], result["variants"]["harness"]["cpu_min_s"]
        for name, v in result["variants"].items():
            v["vs_harness"] = round(v["min_s"] / base, 2)
            v["cpu_vs_harness"] = round(v["cpu_min_s"] / base_cpu, 2)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[8, 64, 512, 1024, 4096])
    parser.add_argument("--runs", type=int, default=3, help="paired runs per node count (default 3)")
    parser.add_argument("--modes", nargs="+", default=["tuned", "default"], choices=list(lean.GC_MODES),
                        help="collector modes of the preview to time (default: tuned default)")
    parser.add_argument("--no-harness", action="store_true", help="skip the bare mock harness")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    rows = []
    with tempfile.TemporaryDirectory(prefix="trainstack-scaling-") as tmp:
        for nodes in args.nodes:
            rows.append(bench(nodes, args.runs, args.modes, not args.no_harness, Path(tmp)))
            if not args.json:
                print_row(rows[-1])
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


def print_row(r: dict) -> None:
    ud = r["user_data_bytes"]
    print(f"{r['nodes']:>5} nodes  node-init.sh {r['node_init_bytes']} B  user data/node {ud[0]}-{ud[1]} B gzip "
          f"({r['user_data_base64'][0]}-{r['user_data_base64'][1]} B base64, limit {r['user_data_limit']})")
    for name, v in r["variants"].items():
        ratio = (f"  {v['vs_harness']:.2f}x harness (CPU {v['cpu_vs_harness']:.2f}x)" if "vs_harness" in v else "")
        print(f"       {name:<16} min {v['min_s']:>7.2f} s  median {v['median_s']:>7.2f} s  "
              f"CPU {v['cpu_min_s']:>7.2f} s  peak {v['peak_mib']:>6} MiB{ratio}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
