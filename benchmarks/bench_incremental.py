"""Benchmark: cold preview, the runtime settings, and incremental diffs, side by side with the floor harness.

Run from the repository root:

    python benchmarks/bench_incremental.py                          # 1,024 -> 1,032 nodes, 3 paired rounds
    python benchmarks/bench_incremental.py --settings               # also each runtime setting turned off alone
    python benchmarks/bench_incremental.py --nodes 4096 --runs 1
    python benchmarks/bench_incremental.py --nodes 10000 --runs 1 --no-harness --skip diff-cold

The spec is examples/pretrain-70b.yaml (ECS, eRDMA, CPFS, OSS checkpoints) with ``compute.nodes`` set, no global
batch (so any node count is a valid data-parallel degree), Llama-2-13B (a cluster of 10,000 nodes of a 70B model
never finishes under the planner's failure model), no spot and a one-year budget: BASE has N nodes, HEAD N + ADD.
Every measurement is a fresh subprocess; within one round the variants run in order, and the order alternates from
round to round (paired runs: each variant sees the same machine load, which cancels in the ratios):

* ``harness``: ``benchmarks/bare_harness.py`` on BASE's rendered folder: Pulumi's mock runtime as its unit-testing
  guide sets it up, nothing else (the floor).
* ``cold``: ``trainstack preview BASE`` with an empty cache folder: what a fresh CI runner meets. ``--settings``
  adds ``cold`` with one runtime setting turned off (``registered``: every resource registered through the runtime,
  none derived from the SDK's input translation; ``untuned-gc``: CPython's collector; ``stack-traces``: a stack
  trace per registration; ``threaded-monitor``: monitor calls in a worker thread; ``teardown``: interpreter teardown;
  ``whole-sdk``: whole SDK packages) and with all of them off (``pulumi``: Pulumi's own defaults).
* ``preview-head``: ``trainstack preview HEAD`` with a cache that holds only BASE's graph (copied in before each run;
  primed by ``preview BASE`` with ``TRAINSTACK_SIDE_CACHE=off``, since a preview also leaves the spec's side entry).
* ``diff``: ``trainstack diff BASE HEAD`` with that cache: a pull request adding ADD nodes, BASE cached.
* ``diff-side``: the same diff with a cache that holds BASE's graph and its side entry (primed by ``diff - BASE``,
  as the run that made BASE leaves it): BASE is not planned, rendered or run (generator/preview/side_cache.py).
* ``diff-cold``: the same diff with an empty cache (BASE runs, then HEAD reuses BASE's registrations).

Children run with compiled bytecode in the benchmark's temporary folder (``PYTHONPYCACHEPREFIX``; an installed
package has its bytecode, and without it every process compiles trainstack's modules from source, about 0.2 s at
1,024 nodes); the first, unmeasured runs (BASE's preview, the harness) compile it, and the templates' compiled code
(generator/render/bytecode.py, kept under the same prefix; about 0.1 s a process), which trainstack's first render
writes after an install.

Reported: min and median wall time, min CPU time (user + system), median peak resident memory (``ru_maxrss``) and the
ratios the targets name (cold / harness; diff / cold). Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent


def _yaml() -> YAML:
    return YAML(typ="safe", pure=True)


def _dump(data: object) -> str:
    import io

    out = io.StringIO()
    _yaml().dump(data, out)
    return out.getvalue()
sys.path.insert(0, str(ROOT))

from generator import api
from generator.render import stackdir

BASE_SPEC = ROOT / "examples" / "pretrain-70b.yaml"
SETTINGS = {
    "registered": {"TRAINSTACK_MOCK_DERIVE": "off"},
    "untuned-gc": {"TRAINSTACK_MOCK_GC": "default"},
    "stack-traces": {"TRAINSTACK_MOCK_STACK_TRACES": "on"},
    "threaded-monitor": {"TRAINSTACK_MOCK_INLINE": "off"},
    "teardown": {"TRAINSTACK_FAST_EXIT": "off"},
    "whole-sdk": {"TRAINSTACK_LEAN_SDK": "off"},
}


def write_spec(folder: Path, nodes: int, name: str) -> Path:
    data = _yaml().load(BASE_SPEC.read_text())
    data["model"]["preset"] = "llama-2-13b"
    data["model"]["global_batch_tokens"] = None
    data["compute"].update({"nodes": nodes, "max_nodes": max(nodes, 512)})
    data["spot"]["enabled"] = False
    data["budget"]["max_days"] = 365
    spec = folder / f"{name}.yaml"
    spec.write_text(_dump(data))
    return spec


def measure(cmd: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MiB) of one child process; a failing child aborts the benchmark."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if code not in ok or (code != 0 and err.strip()):  # diff exits 2 for "changes" and for bad input, which says so
        raise SystemExit(f"{' '.join(cmd)} exited {code}:\n{err}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024  # Linux reports KiB


def bench(
    nodes: int, add: int, runs: int, settings: bool, harness: bool, tmp: Path, skip: frozenset[str] = frozenset()
) -> dict:
    base, head = write_spec(tmp, nodes, f"base-{nodes}"), write_spec(tmp, nodes + add, f"head-{nodes + add}")
    plan = api.plan(base)
    folder = tmp / f"stack-{nodes}"
    stackdir.write(api.render_files(plan, base.name), folder, durable=False)
    # compiled bytecode, as an installed package has it (pip compiles at install), kept in the benchmark's own
    # folder: the source tree gets no __pycache__, and no child compiles trainstack's ~200 modules from source
    env = {**os.environ, "TRAINSTACK_GRAPH_CACHE": "on", "PYTHONPYCACHEPREFIX": str(tmp / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for name in (
        "TRAINSTACK_INCREMENTAL",
        "TRAINSTACK_ROW_CALLS",
        "TRAINSTACK_FAST_EXIT",
        "TRAINSTACK_SIDE_CACHE",
        "TRAINSTACK_TEMPLATE_BYTECODE",
        *(k for s in SETTINGS.values() for k in s),
    ):
        env.pop(name, None)
    cli = [sys.executable, "-m", "generator.cli"]
    primed = tmp / "primed"  # a cache holding BASE's graph only
    # also compiles the bytecode (modules and templates); a preview now also leaves BASE's side entry, which
    # `diff-side` measures: this cache is to hold BASE's graph only
    measure([*cli, "preview", str(base)], {**env, "XDG_CACHE_HOME": str(primed), "TRAINSTACK_SIDE_CACHE": "off"})
    sided = tmp / "sided"  # a cache holding BASE's graph and side entry (`diff - BASE` made it)
    measure([*cli, "diff", "-", str(base)], {**env, "XDG_CACHE_HOME": str(sided)}, (0, 2))
    primes = {"primed": primed, "sided": sided}

    def fresh(kind: str) -> str:
        target = Path(tempfile.mkdtemp(prefix=f"cache-{kind}-", dir=tmp))
        if kind in primes:
            shutil.rmtree(target)
            shutil.copytree(primes[kind], target)
        return str(target)

    variants: dict[str, tuple[list[str], dict[str, str], str, tuple[int, ...]]] = {}
    if harness:
        variants["harness"] = (
            [sys.executable, str(ROOT / "benchmarks" / "bare_harness.py"), str(folder)],
            env,
            "empty",
            (0,),
        )
    if harness:  # its bytecode too (the whole SDK packages it imports)
        measure(variants["harness"][0], {**env, "XDG_CACHE_HOME": fresh("empty")})
    variants["cold"] = ([*cli, "preview", str(base)], env, "empty", (0,))
    if settings:
        for name, extra in SETTINGS.items():
            variants[f"cold/{name}"] = ([*cli, "preview", str(base)], {**env, **extra}, "empty", (0,))
        everything = {k: v for s in SETTINGS.values() for k, v in s.items()}
        variants["cold/pulumi"] = ([*cli, "preview", str(base)], {**env, **everything}, "empty", (0,))
    variants["preview-head"] = ([*cli, "preview", str(head)], env, "primed", (0,))
    variants["diff"] = ([*cli, "diff", str(base), str(head)], env, "primed", (0, 2))
    variants["diff-side"] = ([*cli, "diff", str(base), str(head)], env, "sided", (0, 2))
    variants["diff-cold"] = ([*cli, "diff", str(base), str(head)], env, "empty", (0, 2))
    variants = {name: v for name, v in variants.items() if name not in skip or name == "cold"}
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in variants}
    names = list(variants)
    for run in range(runs):
        for name in names if run % 2 == 0 else names[::-1]:
            cmd, child_env, cache_kind, ok = variants[name]
            cache_home = fresh(cache_kind)
            samples[name].append(measure(cmd, {**child_env, "XDG_CACHE_HOME": cache_home}, ok))
            shutil.rmtree(cache_home, ignore_errors=True)
    result: dict = {"nodes": nodes, "head_nodes": nodes + add, "runs": runs, "variants": {}}
    for name, got in samples.items():
        times, cpu = [t for t, _, _ in got], [c for _, c, _ in got]
        result["variants"][name] = {
            "min_s": round(min(times), 2),
            "median_s": round(statistics.median(times), 2),
            "cpu_min_s": round(min(cpu), 2),
            "peak_mib": int(statistics.median(m for _, _, m in got)),
            "all_s": [round(t, 2) for t in times],
        }
    v = result["variants"]
    ratios = {}
    for name in v:
        if harness and name != "harness":
            ratios[f"{name} / harness"] = (
                round(v[name]["min_s"] / v["harness"]["min_s"], 2),
                round(v[name]["cpu_min_s"] / v["harness"]["cpu_min_s"], 2),
            )
        if name != "cold":
            ratios[f"{name} / cold"] = (
                round(v[name]["min_s"] / v["cold"]["min_s"], 2),
                round(v[name]["cpu_min_s"] / v["cold"]["cpu_min_s"], 2),
            )
    result["ratios"] = ratios  # (wall, CPU)
    return result


def print_result(r: dict) -> None:
    print(f"{r['nodes']} -> {r['head_nodes']} nodes, {r['runs']} paired round(s)")
    for name, v in r["variants"].items():
        print(
            f"  {name:<18} min {v['min_s']:>7.2f} s  median {v['median_s']:>7.2f} s  CPU {v['cpu_min_s']:>7.2f} s"
            f"  peak {v['peak_mib']:>6} MiB"
        )
    for name, (wall, cpu) in r["ratios"].items():
        print(f"  {name:<30} {wall:.2f}x wall, {cpu:.2f}x CPU")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1024, help="BASE's node count (default 1024)")
    parser.add_argument("--add", type=int, default=8, help="nodes HEAD adds (default 8)")
    parser.add_argument("--runs", type=int, default=3, help="paired rounds (default 3)")
    parser.add_argument(
        "--settings", action="store_true", help="also time cold previews with each setting off"
    )
    parser.add_argument("--no-harness", action="store_true", help="skip the bare mock harness")
    parser.add_argument("--skip", nargs="*", default=[], metavar="VARIANT",
                        help="variants not to run (e.g. diff-cold; cold always runs: the ratios need it)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.nodes < 1 or args.add < 1:
        parser.error("--runs, --nodes and --add must be at least 1")
    with tempfile.TemporaryDirectory(prefix="trainstack-incremental-") as tmp:
        result = bench(
            args.nodes, args.add, args.runs, args.settings, not args.no_harness, Path(tmp), frozenset(args.skip)
        )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_result(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
