"""User data (issue #15, 1): a node's user data is the same size whatever the cluster size, gzip-compressed reproducibly
on ECS, and any user data over the documented limit is refused at render time and again by the generated program,
on ECS as on Lingjun. Sizes at up to 4,096 nodes are checked on the rendered files (the program's run at that size is
a benchmark, benchmarks/bench_scaling.py); the programs themselves run at 8 and 64 nodes."""

from __future__ import annotations

import base64
import gzip
import os
import shutil
from pathlib import Path

import pytest

from generator import api
from generator.errors import SpecErrors
from generator.preview.mockrun import ProgramError
from generator.render import userdata

ROOT = Path(__file__).resolve().parents[1]
PRETRAIN = ROOT / "examples" / "pretrain-70b.yaml"
NODES_LINE = "  nodes: auto               # sized from memory and the deadline below\n"
INSTANCE = "alicloud:ecs/instance:Instance"
LINGJUN_SPEC = """\
name: lj-run
region: cn-wulanchabu
model: {preset: llama-2-70b, tokens: 20B}
compute: {platform: lingjun, image_id: i190982651690986913088, nodes: 4}
network: {vpc_cidr: 10.8.0.0/16, admin_cidrs: [192.168.10.0/24]}
"""


def _spec(folder: Path, nodes: int, extra: str = "") -> Path:
    text = PRETRAIN.read_text()
    assert NODES_LINE in text
    spec = folder / f"pretrain-{nodes}.yaml"
    # on the type pretrain-70b's own plan picks: from ~128 nodes the network-aware time prefers RoCE (another MTU)
    chosen = api.plan(PRETRAIN).compute.instance_type
    text = text.replace(NODES_LINE, f"  nodes: {nodes}\n  max_nodes: {max(nodes, 512)}\n  instance_types: [{chosen}]\n")
    if nodes > 512:  # thousands of spot nodes at the default 0.1 reclaims a node-day never finish: an error
        assert "  protection_hours: 1\n" in text
        text = text.replace("  protection_hours: 1\n", "  protection_hours: 1\n  interruptions_per_node_day: 0.001\n")
    spec.write_text(text + extra)
    return spec


@pytest.mark.parametrize("nodes", [8, 64, 512, 4096])
def test_the_bootstrap_and_its_largest_user_data_do_not_grow_with_the_cluster(tmp_path: Path, nodes: int) -> None:
    plan = api.plan(_spec(tmp_path, nodes))
    files = api.render_files(plan, "pretrain.yaml")
    reference = api.render_files(api.plan(_spec(tmp_path, 8)), "pretrain.yaml")["node-init.sh"]
    assert files["node-init.sh"] == reference  # the same script, byte for byte, at any node count
    size, limit = userdata.user_data_size(plan, files["node-init.sh"])
    base, _ = userdata.user_data_size(api.plan(_spec(tmp_path, 8)), reference)
    assert limit == userdata.limit(plan) == 16 * 1024
    assert base <= size <= base + 8  # only the digits of the rank and the name differ
    assert size < limit * 3 // 4  # room for the bootstrap to grow


def test_user_data_per_node_is_the_same_size_at_8_and_64_nodes(tmp_path: Path) -> None:
    sizes = {}
    for nodes in (8, 64):
        graph = api.preview(_spec(tmp_path, nodes)).graph
        sizes[nodes] = {len(r.get("user_data")) for r in graph.of_type(INSTANCE)}
        packed = [base64.b64decode(r.get("user_data")) for r in graph.of_type(INSTANCE)]
        assert all(len(p) <= 16 * 1024 for p in packed)
        assert all(p[:2] == b"\x1f\x8b" and p[4:8] == b"\0\0\0\0" for p in packed)  # gzip, no timestamp
        assert gzip.decompress(packed[0]).decode().startswith("#!/bin/bash\n")
    assert max(sizes[64]) - min(sizes[8]) <= 16  # base64 of gzip: the digits of rank and name, a few bytes


def test_compression_is_reproducible() -> None:
    script = (ROOT / "stacks" / "pretrain-70b" / "node-init.sh").read_text()
    assert userdata.ecs_user_data(script) == userdata.ecs_user_data(script)
    assert gzip.decompress(base64.b64decode(userdata.ecs_user_data(script))).decode() == script


def test_a_multi_node_ecs_cluster_without_a_bucket_is_refused_with_a_location(tmp_path: Path) -> None:
    spec = tmp_path / "nobucket.yaml"
    spec.write_text("name: nobucket\nregion: cn-wulanchabu\nmodel: {parameters: 70B}\ncompute: {nodes: 8}\n"
                    "checkpoints: {enabled: false}\n")
    with pytest.raises(SpecErrors) as err:
        api.plan(spec)
    assert f"{spec}:5:" in str(err.value) and "checkpoints.enabled" in str(err.value)
    assert "user-data limit" in str(err.value)
    spec.write_text(spec.read_text().replace("nodes: 8", "nodes: 1").replace("70B", "7B"))
    api.plan(spec)  # one node: its facts are one member, inside its own user data


def test_render_refuses_user_data_over_the_limit(tmp_path: Path) -> None:
    plan = api.plan(_spec(tmp_path, 8))
    script = api.render_files(plan, "pretrain.yaml")["node-init.sh"]
    noise = base64.b64encode(os.urandom(20_000)).decode()  # does not compress
    with pytest.raises(userdata.UserDataTooLarge, match="over the 16384-byte limit"):
        userdata.check(plan, script + f": '{noise}'\n")
    userdata.check(plan, script)


def test_render_refuses_a_lingjun_bootstrap_over_the_limit(tmp_path: Path) -> None:
    spec = tmp_path / "lj.yaml"
    spec.write_text(LINGJUN_SPEC)
    plan = api.plan(spec)
    script = api.render_files(plan, "lj.yaml")["node-init.sh"]
    wrapped = userdata.wrapped_user_data("lingjun", script)
    assert userdata.user_data_size(plan, script) == (len(wrapped.encode()), 16 * 1024)
    # the wrapper leaves room (the inline sha256 of the PyTorch wheels hardly compress, so this is no ratio)
    assert wrapped.startswith("#!/bin/bash\n") and len(wrapped) < 16 * 1024 * 3 // 4
    with pytest.raises(userdata.UserDataTooLarge, match="Lingjun"):
        userdata.check(plan, script + f": '{base64.b64encode(os.urandom(16 * 1024)).decode()}'\n")


def test_the_program_refuses_user_data_over_the_limit(tmp_path: Path) -> None:
    dest = tmp_path / "stack"
    shutil.copytree(ROOT / "stacks" / "finetune-7b", dest)
    noise = base64.b64encode(os.urandom(20_000)).decode()
    with (dest / "node-init.sh").open("a") as f:
        f.write(f": '{noise}'\n")
    with pytest.raises(ProgramError, match="ECS takes at most 16384"):
        api.preview(dest)


def test_diff_reads_compressed_user_data_and_names_a_change_of_encoding() -> None:
    from generator.preview.diff import values

    script = (ROOT / "stacks" / "pretrain-70b" / "node-init.sh").read_text()
    plain = base64.b64encode(script.encode()).decode()
    packed = userdata.ecs_user_data(script)
    assert values._summarize_user_data(plain, packed) == "boot script: same script, new encoding (plain -> gzip)"
    edited = userdata.ecs_user_data(script.replace("set -euo pipefail", "set -eu"))
    assert values._summarize_user_data(packed, edited) == \
        "boot script: 2 changed lines (set -euo pipefail -> set -eu)"  # two tools (node-init.sh has set -Eeuo)


def test_the_cli_refuses_to_render_oversized_user_data_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from generator.cli import main

    monkeypatch.setattr(userdata, "limit", lambda plan: 4096)
    dest = tmp_path / "out"
    result = CliRunner().invoke(main, ["render", str(_spec(tmp_path, 8)), "-o", str(dest)])
    assert result.exit_code == 1, result.output
    assert "over the 4096-byte limit" in result.output and "Traceback" not in result.output
    assert not dest.exists()
