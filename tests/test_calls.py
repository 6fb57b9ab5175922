"""Row calls answered whole (generator/preview/calls.py): a run whose node rows are answered at the row function's
call gives the graph a full run gives, byte for byte, on every example and on resizes, renames, disk, type, spot and
node-init.sh changes; the answers really happen; what the key cannot cover (an impure function, a rebound or
mutated value it reads, a read output, the off switch) runs the call."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from generator.preview import cache, calls, memo, mockrun
from tests import test_rows
from tests.test_incremental import EXAMPLES, ROOT, _bytes, _full, _render, _reusable, _run, _spec, _twice

COMMON = {"compute.nodes": 16, "compute.max_nodes": 64, "model.global_batch_tokens": None}
# the constructor-level changes, and node-init.sh edited in the rendered folder
CHANGES: dict[str, dict[str, Any]] = {**test_rows.CHANGES, "node-init": {}}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_answered_at_the_call_equals_a_full_run(example: Path, tmp_path: Path) -> None:
    folder, plan = _render(example, tmp_path / "stack")
    base = _run(folder, plan)
    again = _run(folder, plan, _reusable(base))
    assert _bytes(again) == _bytes(_full(folder, plan))
    nodes = len(base.of_type("alicloud:ecs/instance:Instance"))
    if nodes > 2:
        assert again.called == nodes - 2  # the first registers, the second builds the template
    else:
        assert again.called == 0


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_cluster_answered_at_the_call_equals_a_full_run(change: str, tmp_path: Path) -> None:
    base_spec = _spec(tmp_path, ROOT / "examples" / "pretrain-70b.yaml", COMMON, "base")
    head_spec = _spec(tmp_path, base_spec, CHANGES[change], change)
    base_dir, base_plan = _render(base_spec, tmp_path / "base")
    head_dir, head_plan = _render(head_spec, tmp_path / "head")
    if change == "node-init":
        script = head_dir / "node-init.sh"
        script.write_text(script.read_text() + "# changed\n")
    base = _run(base_dir, base_plan)
    head = _run(head_dir, head_plan, _reusable(base))
    assert _bytes(head) == _bytes(_full(head_dir, head_plan))
    shared = min(len(base.of_type("Instance")), len(head.of_type("Instance")))
    if change in ("grow", "shrink"):
        assert head.called == shared - 2
    if change in ("rename", "type", "disk", "node-init"):
        assert head.called == 0  # what every row's call reads changed


def test_the_off_switch_runs_every_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder, plan = _render(
        _spec(tmp_path, ROOT / "examples" / "pretrain-70b.yaml", COMMON, "b"), tmp_path / "s"
    )
    base = _run(folder, plan)
    monkeypatch.setenv(calls.ENV, "off")
    again = _run(folder, plan, _reusable(base))
    assert _bytes(again) == _bytes(_full(folder, plan))
    assert again.called == 0 and again.constructed > 0  # the constructors are still answered
    assert not any(k.startswith(calls.CALL_PREFIX) for k in again.keys)


PROGRAM = """
import json
import pulumi
import pulumi_alicloud as alicloud

vpc = alicloud.vpc.Network("vpc", cidr_block="10.0.0.0/16")
TAGS = {{"a": "b"}}
MADE = []


def label(i):
    return json.dumps({{"i": i}})


def switch(i, zone="z"):
    return alicloud.vpc.Switch(f"sw-{{i}}", vpc_id=vpc.id, cidr_block=f"10.0.{{i}}.0/24", zone_id=zone,
                               description=label(i), tags={{**TAGS, "i": str(i)}}){body}


{loop}
pulumi.export("ids", [s.id for s in switches])
{tail}
"""
LOOP = "switches = [switch(i) for i in range(6)]"


def _program(tmp: Path, body: str = "", loop: str = LOOP, tail: str = "") -> Path:
    (tmp / "__main__.py").write_text(PROGRAM.format(body=body, loop=loop, tail=tail))
    return tmp


def test_a_pure_row_function_is_answered_at_the_call(tmp_path: Path) -> None:
    base, again, full = _twice(_program(tmp_path))
    assert _bytes(again) == _bytes(full)
    assert again.called == 6 - 2
    assert sum(k.startswith(calls.CALL_PREFIX) for k in base.keys) == 6 - 1  # all but the first registered
    assert again.outputs["ids"] == [f"sw-{i}-id" for i in range(6)]


@pytest.mark.parametrize(
    "body",
    [
        "\n\n\ndef switch2(i):\n    MADE.append(i)\n    return alicloud.vpc.Switch(f'x-{i}', vpc_id=vpc.id)",
        "\n\n\ndef switch2(i):\n    TAGS['x'] = i\n    return alicloud.vpc.Switch(f'x-{i}', vpc_id=vpc.id)",
        "\n\n\ndef switch2(i):\n    pulumi.export('i', i)\n    return alicloud.vpc.Switch(f'x-{i}', vpc_id=vpc.id)",
        "\n\n\ndef switch2(i):\n    alicloud.vpc.get_switches()\n    return alicloud.vpc.Switch(f'x-{i}', vpc_id=vpc.id)",
        "\n\n\ndef switch2(i):\n    for _ in range(2):\n        pass\n    return alicloud.vpc.Switch(f'x-{i}', vpc_id=vpc.id)",
        "\n\n\ndef switch2(i):\n    global MADE\n    return alicloud.vpc.Switch(f'x-{i}', vpc_id=vpc.id)",
        "\n\n\ndef switch2(i):\n    made = MADE\n    made += [i]\n    return alicloud.vpc.Switch(f'x-{i}', vpc_id=vpc.id)",
        "\n\n\ndef switch2(i, *rest):\n    return alicloud.vpc.Switch(f'x-{i}', vpc_id=vpc.id)",
        "\n\n\ndef switch2(i):\n    return alicloud.vpc.Switch(f'x-{i}', vpc_id=open('f').name)",
    ],
    ids=["append", "store", "export", "invoke", "loop", "global", "augmented", "varargs", "unknown-call"],
)
def test_an_impure_function_is_not_keyed(body: str, tmp_path: Path) -> None:
    source = PROGRAM.format(body=body, loop=LOOP, tail="")
    _, rows = calls.compile_main(source, str(tmp_path / "__main__.py"))
    assert sorted(rows) == ["switch"]  # the pure one (label is pure but builds nothing)
    assert "label" in rows["switch"].codes and "json" in rows["switch"].modules


def test_a_value_changed_between_calls_changes_the_key(tmp_path: Path) -> None:
    loop = "switches = []\nfor i in range(6):\n    TAGS['n'] = str(i % 2)\n    switches.append(switch(i))"
    _, again, full = _twice(_program(tmp_path, loop=loop))
    assert _bytes(again) == _bytes(full)
    assert again.called == 6 - 2  # each call's TAGS as it was at that call


def test_a_table_changed_between_calls_changes_the_key(tmp_path: Path) -> None:
    """A module dict of many entries (the deployment sets) is checked by its keys and values' identity per call."""
    loop = (
        "TAGS.update({f't{j}': str(j) for j in range(10)})\nswitches = []\nfor i in range(6):\n"
        "    TAGS['t3'] = 'x' * (i % 2)\n    if i == 4:\n        TAGS['t99'] = 'new'\n    switches.append(switch(i))"
    )
    _, again, full = _twice(_program(tmp_path, loop=loop))
    assert _bytes(again) == _bytes(full)
    assert again.called == 6 - 2
    tags = [r.inputs["tags"] for r in full.of_type("Switch")]
    assert [t["t3"] for t in tags] == ["", "x", "", "x", "", "x"] and "t99" in tags[4]


def test_a_rebound_function_is_not_answered(tmp_path: Path) -> None:
    loop = (
        "switches = [switch(i) for i in range(3)]\nlabel = str\nswitches += [switch(i) for i in range(3, 6)]"
    )
    _, again, full = _twice(_program(tmp_path, loop=loop))
    assert _bytes(again) == _bytes(full)
    assert again.called == 3 - 2  # after the rebinding, the function read is not the one analysed


def test_the_same_row_twice_is_answered_once(tmp_path: Path) -> None:
    loop = "switches = [switch(i) for i in (0, 1, 2, 3, 3)]"
    folder = _program(tmp_path, loop=loop)
    salt = memo.salt(cache.environment(), "p", "dev")
    outcomes = []
    for reuse in (False, True):
        try:
            base = mockrun.run_program(folder, project="p", stack="dev", memo_salt=salt)
            got = mockrun.run_program(
                folder, project="p", stack="dev", memo_salt=salt, reuse=_reusable(base) if reuse else None
            )
            outcomes.append(_bytes(got))
        except mockrun.ProgramError as e:
            outcomes.append(type(e).__name__)
    assert outcomes[0] == outcomes[1]


def test_reading_an_answered_output_runs_the_calls(tmp_path: Path) -> None:
    _, again, full = _twice(_program(tmp_path, tail='pulumi.export("last", switches[-1].cidr_block)'))
    assert _bytes(again) == _bytes(full) and again.outputs["last"] == "10.0.5.0/24"
    assert again.called == 0


def test_a_failing_call_fails_alike(tmp_path: Path) -> None:
    salt = memo.salt(cache.environment(), "p", "dev")
    folder = _program(tmp_path)
    source = (folder / "__main__.py").read_text()
    check = "    if i > 5:\n        raise ValueError(f'row {i} is too big')\n    return alicloud.vpc.Switch("
    (folder / "__main__.py").write_text(source.replace("    return alicloud.vpc.Switch(", check))
    base = mockrun.run_program(folder, project="p", stack="dev", memo_salt=salt)
    (folder / "__main__.py").write_text((folder / "__main__.py").read_text().replace("range(6)", "range(7)"))
    errors = []
    for reuse in (None, _reusable(base)):
        with pytest.raises(mockrun.ProgramError) as caught:
            mockrun.run_program(folder, project="p", stack="dev", memo_salt=salt, reuse=reuse)
        errors.append(str(caught.value))
    assert errors[0] == errors[1]


def test_the_rendered_program_keeps_its_lines_and_its_text(tmp_path: Path) -> None:
    folder, _ = _render(_spec(tmp_path, ROOT / "examples" / "pretrain-70b.yaml", COMMON, "b"), tmp_path / "s")
    source = (folder / "__main__.py").read_text()
    code, rows = calls.compile_main(source, "__main__.py")
    assert sorted(rows) == ["node_instance"]
    plain = compile(source, "__main__.py", "exec", dont_inherit=True)
    assert (
        code.co_code == plain.co_code and code.co_names == plain.co_names
    )  # only the function's code differs
    tree = ast.parse(source)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)].count("node_instance") == 1


def test_an_exported_list_of_resolved_outputs_is_what_output_all_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tail = 'pulumi.export("mixed", [s.id for s in switches] + [vpc.cidr_block, "plain"])'
    _, again, full = _twice(_program(tmp_path, tail=tail))
    monkeypatch.setattr(mockrun, "_known_list", lambda value, output: None)
    _, slow, slow_full = _twice(_program(tmp_path, tail=tail))
    assert again.outputs == slow.outputs == full.outputs == slow_full.outputs
    assert again.outputs["ids"] == [f"sw-{i}-id" for i in range(6)]


def test_exported_plain_data_is_what_output_from_input_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tail = (
        'pulumi.export("ips", [f"10.0.0.{i}" for i in range(40)])\n'
        'pulumi.export("nested", {"a": [1, 2.5, True, None, ("t", 3)], "b": {"c": ""}, "d": []})\n'
        'pulumi.export("none", None)\n'
        'pulumi.export("empty", {})\n'
        'pulumi.export("mixed", ["plain", vpc.id])\n'
    )
    _, again, full = _twice(_program(tmp_path, tail=tail))
    monkeypatch.setattr(mockrun, "_plain_data", lambda value: False)
    _, slow, _ = _twice(_program(tmp_path, tail=tail))
    for graph in (again, full):
        assert list(graph.outputs) == list(slow.outputs)
        for key, value in slow.outputs.items():  # the same types and order too
            assert graph.outputs[key] == value and repr(graph.outputs[key]) == repr(value)
    assert slow.outputs["nested"]["a"][4] == ("t", 3) and slow.outputs["mixed"] == ["plain", "vpc-id"]


def test_values_read_changed_in_place_between_calls_change_the_key(tmp_path: Path) -> None:
    """A list or dict read is checked by its items' identity, a dict of dicts digested at every call, a function
    read by its code: a change made between two calls, in place, is seen (a base run without the changes first)."""
    body = (
        "\n\n\ndef switch3(i):\n    return alicloud.vpc.Switch(f'y-{i}', vpc_id=vpc.id, zone_id=ZONES[0], "
        "description=NESTED['a']['b'] + label(i) + list(ORDER)[-1])"
    )
    head = "ZONES = ['z0']\nNESTED = {'a': {'b': 'x'}}\nORDER = {'k': 'v', 'j': 'w'}\nswitches = []\nfor i in range(8):\n"
    changes = (
        "    if i >= 3:\n        ZONES[0] = f'z{i % 2}'\n        NESTED['a']['b'] = str(i % 3)\n"
        "        first = next(iter(ORDER))\n        ORDER[first] = ORDER.pop(first)\n"  # the same dict, reordered
        "    if i == 6:\n        label.__code__ = (lambda i: 'other').__code__\n"
    )
    calls_ = "    switches.append(switch(i))\n    switch3(i)\n"
    folder = _program(tmp_path, body=body, loop=head + calls_)
    salt = memo.salt(cache.environment(), "p", "dev")
    base = mockrun.run_program(folder, project="p", stack="dev", memo_salt=salt)
    (folder / "__main__.py").write_text(PROGRAM.format(body=body, loop=head + changes + calls_, tail=""))
    again = mockrun.run_program(folder, project="p", stack="dev", memo_salt=salt, reuse=_reusable(base))
    full = mockrun.run_program(folder, project="p", stack="dev", derive=False)
    assert _bytes(again) == _bytes(full)
    assert again.called > 0  # the calls before the changes were answered
    made = [r.inputs for r in full.of_type("Switch") if r.name.startswith("y-")]
    assert {m["zoneId"] for m in made} == {"z0", "z1"} and {m["description"][-1] for m in made} == {"j", "k"}
