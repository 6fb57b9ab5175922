"""Incremental mock runs (generator/preview/memo.py): a graph built by reusing an earlier run's registrations is the
graph a full run gives, byte for byte, on every example and on resizes, renames and instance-type changes; the
reuse really happens; a read of a reused output falls back to registering; the cache and diff use it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from generator import api
from generator.preview import cache, memo, mockrun, rows
from generator.render import stackdir

ROOT = Path(__file__).resolve().parent.parent


def _yaml() -> YAML:
    return YAML(typ="safe", pure=True)


def _dump(data: object) -> str:
    import io

    out = io.StringIO()
    _yaml().dump(data, out)
    return out.getvalue()
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def _spec(tmp: Path, example: Path, change: dict[str, Any], label: str) -> Path:
    data = _yaml().load(example.read_text())
    for dotted, value in change.items():
        node = data
        *path, last = dotted.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    out = tmp / f"{example.stem}-{label}.yaml"
    out.write_text(_dump(data))
    return out


def _render(spec: Path, dest: Path) -> tuple[Path, Any]:
    plan = api.plan(spec)
    stackdir.write(api.render_files(plan, spec.name), dest, durable=False)
    return dest, plan


def _run(folder: Path, plan: Any, reuse: dict[str, mockrun.Resource] | None = None) -> mockrun.Graph:
    return mockrun.run_program(
        folder,
        project=plan.name,
        stack=plan.stack,
        config={"alicloud:region": plan.region},
        memo_salt=memo.salt(cache.environment(), plan.name, plan.stack),
        reuse=reuse,
    )


def _bytes(graph: mockrun.Graph) -> str:
    """Everything a graph declares, in its order (what preview, lint and diff read)."""
    return json.dumps({k: v for k, v in cache._to_json(graph).items() if k != "keys"}, sort_keys=True)


def _reusable(graph: mockrun.Graph) -> dict[str, mockrun.Resource]:
    return dict(cache.known_keys(graph))


def _twice(folder: Path) -> tuple[mockrun.Graph, mockrun.Graph, mockrun.Graph]:
    """A small program (project p, stack dev) run cold, again reusing the first run, and fully registered."""
    salt = memo.salt(cache.environment(), "p", "dev")
    base = mockrun.run_program(folder, project="p", stack="dev", memo_salt=salt)
    again = mockrun.run_program(folder, project="p", stack="dev", memo_salt=salt, reuse=_reusable(base))
    full = mockrun.run_program(folder, project="p", stack="dev", derive=False)
    return base, again, full


def _full(folder: Path, plan: Any) -> mockrun.Graph:
    """Every registration through Pulumi's runtime: no reuse, nothing derived."""
    return mockrun.run_program(
        folder, project=plan.name, stack=plan.stack, config={"alicloud:region": plan.region}, derive=False
    )


NODE_EXAMPLES = {"pretrain-70b": (16, 20, 9), "foundation-1t": (256, 272, 240)}  # base, grown, shrunk nodes
VARIANTS = ("same", "grow", "shrink", "rename", "disk")
# another instance type each example's plan accepts (both run on ECS: a type change re-creates every node)
OTHER_TYPE = {"pretrain-70b": "ecs.ebmgn8v.48xlarge", "foundation-1t": "ecs.sccgn7ex.32xlarge"}


def _variant(variant: str, counts: tuple[int, int, int]) -> dict[str, Any]:
    return {
        "same": {},
        "grow": {"compute.nodes": counts[1]},
        "shrink": {"compute.nodes": counts[2]},
        "rename": {"name": "renamed-run"},
        "disk": {"compute.system_disk_gib": 300},
    }[variant]


def _cluster_specs(tmp: Path, example: str, variant: str) -> tuple[Path, Path]:
    """BASE (the example at its pinned node count) and HEAD (BASE with the variant's change; "instance-type": the
    other type, "node-init": no spec change, the caller edits the script)."""
    counts = NODE_EXAMPLES[example]
    pinned = {"compute.nodes": counts[0], "compute.max_nodes": 300, "model.global_batch_tokens": None}
    base = _spec(tmp, ROOT / "examples" / f"{example}.yaml", pinned, "base")
    change = (
        {"compute.instance_types": [OTHER_TYPE[example]]}
        if variant == "instance-type"
        else {}
        if variant == "node-init"
        else _variant(variant, counts)
    )
    return base, _spec(tmp, base, change, variant)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_reusing_itself_equals_a_full_run(example: Path, tmp_path: Path) -> None:
    folder, plan = _render(example, tmp_path / "stack")
    base = _run(folder, plan)
    again = _run(folder, plan, _reusable(base))
    assert _bytes(again) == _bytes(base) == _bytes(_full(folder, plan))
    repeated = len(base.resources) - len({r.type for r in base.resources})
    assert (
        0 < again.reused <= repeated
    )  # never the first of a type; the others when their inputs have a digest


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("example", sorted(NODE_EXAMPLES))
def test_a_changed_cluster_built_from_its_base_equals_a_full_run(
    example: str, variant: str, tmp_path: Path
) -> None:
    source = ROOT / "examples" / f"{example}.yaml"
    counts = NODE_EXAMPLES[example]
    base_spec = _spec(
        tmp_path,
        source,
        {"compute.nodes": counts[0], "compute.max_nodes": 300, "model.global_batch_tokens": None},
        "base",
    )
    head_spec = _spec(tmp_path, base_spec, _variant(variant, counts), variant)
    base_dir, base_plan = _render(base_spec, tmp_path / "base")
    head_dir, head_plan = _render(head_spec, tmp_path / "head")
    base = _run(base_dir, base_plan)
    incremental = _run(head_dir, head_plan, _reusable(base))
    full = _full(head_dir, head_plan)
    assert _bytes(incremental) == _bytes(full)
    if variant == "rename":
        assert incremental.reused == 0  # another project: nothing can be reused
    elif variant == "disk":
        nodes = len(full.of_type("ecs/instance:Instance") or full.of_type("eflo/node:Node"))
        assert incremental.reused < len(full.resources) - nodes + 1  # every node's inputs changed
    else:
        same = {  # resources registered or constructed exactly as in the base
            urn.removeprefix(rows.ROW_PREFIX) for urn, k in incremental.keys.items() if base.keys.get(urn) == k
        }
        types = {r.type for r in full.resources}
        assert incremental.reused > 0
        assert incremental.reused >= len(same) - len(types)  # all of them but the first of each type


def test_instance_type_change_equals_a_full_run(tmp_path: Path) -> None:
    source = ROOT / "examples" / "pretrain-70b.yaml"
    common = {"compute.nodes": 12, "compute.max_nodes": 64, "model.global_batch_tokens": None}
    base_spec = _spec(tmp_path, source, common | {"compute.instance_types": ["ecs.ebmgn7ex.32xlarge"]}, "7ex")
    head_spec = _spec(tmp_path, source, common | {"compute.instance_types": ["ecs.ebmgn8v.48xlarge"]}, "8v")
    base_dir, base_plan = _render(base_spec, tmp_path / "base")
    head_dir, head_plan = _render(head_spec, tmp_path / "head")
    assert "ecs.ebmgn8v.48xlarge" in (head_dir / "__main__.py").read_text()
    base = _run(base_dir, base_plan)
    incremental = _run(head_dir, head_plan, _reusable(base))
    assert _bytes(incremental) == _bytes(_full(head_dir, head_plan))
    assert not any(
        r.type == "alicloud:ecs/instance:Instance"
        for r in base.resources
        if base.keys.get(r.urn_key) in set(incremental.keys.values())
    )  # no node reused


PROGRAM = """
import pulumi
import pulumi_alicloud as alicloud

vpc = alicloud.vpc.Network("vpc", cidr_block="10.0.0.0/16")
switches = [alicloud.vpc.Switch(f"sw-{i}", vpc_id=vpc.id, cidr_block=f"10.0.{i}.0/24", zone_id="z") for i in range(3)]
pulumi.export("ids", [s.id for s in switches])
pulumi.export("last_cidr", switches[-1].cidr_block)  # a property of a repeated resource: not only its id
"""


def test_reading_a_reused_output_registers_that_type_and_still_equals_a_full_run(tmp_path: Path) -> None:
    (tmp_path / "__main__.py").write_text(PROGRAM)
    salt = memo.salt(cache.environment(), "p", "dev")
    base = mockrun.run_program(tmp_path, project="p", stack="dev", memo_salt=salt)
    again = mockrun.run_program(tmp_path, project="p", stack="dev", memo_salt=salt, reuse=_reusable(base))
    full = mockrun.run_program(tmp_path, project="p", stack="dev", derive=False)
    assert _bytes(again) == _bytes(full)
    assert again.outputs["last_cidr"] == "10.0.2.0/24"
    assert again.reused == 0  # the switches were registered again once their output was read


def test_undigestable_inputs_are_registered(tmp_path: Path) -> None:
    (tmp_path / "__main__.py").write_text(
        PROGRAM.replace('cidr_block=f"10.0.{i}.0/24"', "cidr_block=vpc.cidr_block.apply(lambda c: c)")
    )
    salt = memo.salt(cache.environment(), "p", "dev")
    base = mockrun.run_program(tmp_path, project="p", stack="dev", memo_salt=salt)
    assert not any(k.startswith("alicloud:vpc/switch") for k in base.keys)  # an apply's value has no origin
    again = mockrun.run_program(tmp_path, project="p", stack="dev", memo_salt=salt, reuse=_reusable(base))
    assert _bytes(again) == _bytes(mockrun.run_program(tmp_path, project="p", stack="dev", derive=False))


def test_the_cache_reuses_the_newest_graph_of_the_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TRAINSTACK_GRAPH_CACHE", "on")
    source = ROOT / "examples" / "pretrain-70b.yaml"
    common = {"compute.max_nodes": 64, "model.global_batch_tokens": None}
    base_dir, plan = _render(_spec(tmp_path, source, common | {"compute.nodes": 10}, "10"), tmp_path / "a")
    head_dir, head_plan = _render(
        _spec(tmp_path, source, common | {"compute.nodes": 13}, "13"), tmp_path / "b"
    )
    config = {"alicloud:region": plan.region}
    base = cache.run_program(base_dir, project=plan.name, stack=plan.stack, config=config)
    assert base.reused == 0
    head = cache.run_program(head_dir, project=head_plan.name, stack=head_plan.stack, config=config)
    assert (
        head.reused >= 2 * 10 - 2
    )  # the 10 nodes both sides share (instance, role), but the first of each type
    assert _bytes(head) == _bytes(_full(head_dir, head_plan))
    monkeypatch.setenv("TRAINSTACK_INCREMENTAL", "off")
    (head_dir / "README.md").write_text("changed\n")  # another entry, so the program runs again
    off = cache.run_program(head_dir, project=head_plan.name, stack=head_plan.stack, config=config)
    assert off.reused == 0 and _bytes(off) == _bytes(head)


def test_diff_with_a_cached_base_equals_the_uncached_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from generator.preview.diff import diff_sides, format_json

    source = ROOT / "examples" / "pretrain-70b.yaml"
    common = {"compute.max_nodes": 64, "model.global_batch_tokens": None}
    base = _spec(tmp_path, source, common | {"compute.nodes": 16}, "16")
    head = _spec(tmp_path, source, common | {"compute.nodes": 18}, "18")
    monkeypatch.setenv("TRAINSTACK_GRAPH_CACHE", "off")
    uncached = format_json(diff_sides(str(base), str(head)))
    monkeypatch.setenv("TRAINSTACK_GRAPH_CACHE", "on")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert format_json(diff_sides(str(base), str(head))) == uncached  # cold: HEAD reuses BASE's run
    assert format_json(diff_sides(str(base), str(head))) == uncached  # warm: both from the cache


def test_a_reused_output_feeding_another_resource_repeats_the_run(tmp_path: Path) -> None:
    """A registered resource whose input is a property of a reused one: the read fails that run, the run is repeated
    registering the reused type, and the graph is still a full run's (no error reaches the user)."""
    (tmp_path / "__main__.py").write_text(PROGRAM.replace(
        'pulumi.export("last_cidr", switches[-1].cidr_block)',
        'alicloud.vpc.RouteTable("rt", vpc_id=vpc.id, description=switches[-1].cidr_block)'))
    salt = memo.salt(cache.environment(), "p", "dev")
    base = mockrun.run_program(tmp_path, project="p", stack="dev", memo_salt=salt)
    again = mockrun.run_program(tmp_path, project="p", stack="dev", memo_salt=salt, reuse=_reusable(base))
    full = mockrun.run_program(tmp_path, project="p", stack="dev", derive=False)
    assert _bytes(again) == _bytes(full)
    assert again.by_name("rt").get("description") == "10.0.2.0/24"
    assert again.reused == 0
