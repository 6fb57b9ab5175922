"""Derived registrations (generator/preview/memo.py, ``derive``): a resource after the first of its type is recorded
from the SDK's own input translation without Pulumi's registration, and the graph is the one a run registering
everything gives, byte for byte: on every example, on resizes, renames, per-node and instance-type changes, with
options, Outputs made by ``apply`` and reads of a derived resource's outputs; the off switch registers everything."""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest

from generator.preview import cache, memo, mockrun
from tests.test_incremental import (
    EXAMPLES,
    NODE_EXAMPLES,
    ROOT,
    VARIANTS,
    _cluster_specs,
    _render,
)


def _bytes(graph: mockrun.Graph) -> str:
    """Everything a graph declares, in its order (dict order included: what preview, lint and diff print)."""
    return json.dumps({k: v for k, v in cache._to_json(graph).items() if k != "keys"})


def _both(folder: Path, project: str, stack: str, config: dict[str, str] | None = None) -> tuple[Any, Any]:
    derived = mockrun.run_program(folder, project=project, stack=stack, config=config, derive=True)
    full = mockrun.run_program(folder, project=project, stack=stack, config=config, derive=False)
    return derived, full


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_derived_equals_a_full_run(example: Path, tmp_path: Path) -> None:
    folder, plan = _render(example, tmp_path / "stack")
    derived, full = _both(folder, plan.name, plan.stack, {"alicloud:region": plan.region})
    assert _bytes(derived) == _bytes(full)
    assert full.derived == 0
    repeated = len(full.resources) - len({r.type for r in full.resources})
    assert (
        derived.derived == repeated
    )  # every resource but the first of its type (the examples' options are plain)


@pytest.mark.parametrize("variant", (*VARIANTS, "instance-type"))
@pytest.mark.parametrize("example", sorted(NODE_EXAMPLES))
def test_a_changed_cluster_derived_equals_a_full_run(example: str, variant: str, tmp_path: Path) -> None:
    _, head = _cluster_specs(tmp_path, example, variant)
    folder, plan = _render(head, tmp_path / "head")
    derived, full = _both(folder, plan.name, plan.stack, {"alicloud:region": plan.region})
    assert _bytes(derived) == _bytes(full)
    assert derived.derived > 0


PROGRAM = """
import pulumi
import pulumi_alicloud as alicloud

vpc = alicloud.vpc.Network("vpc", cidr_block="10.0.0.0/16")
switches = [alicloud.vpc.Switch(f"sw-{i}", vpc_id=vpc.id, cidr_block=CIDR, zone_id="z", tags={"i": str(i)},
                                opts=OPTS) for i in range(3)]
pulumi.export("ids", [s.id for s in switches])
pulumi.export("urns", [s.urn for s in switches])
"""


def _program(tmp_path: Path, cidr: str = 'f"10.0.{i}.0/24"', opts: str = "None", tail: str = "") -> Path:
    (tmp_path / "__main__.py").write_text(PROGRAM.replace("CIDR", cidr).replace("OPTS", opts) + tail)
    return tmp_path


@pytest.mark.parametrize(
    "opts",
    [
        "None",
        "pulumi.ResourceOptions(protect=True, retain_on_delete=True)",
        "pulumi.ResourceOptions(delete_before_replace=True, ignore_changes=['tags'])",
    ],
)
def test_derived_resources_keep_their_options_urns_and_ids(opts: str, tmp_path: Path) -> None:
    derived, full = _both(_program(tmp_path, opts=opts), "p", "dev")
    assert _bytes(derived) == _bytes(full)
    assert derived.derived == 2
    assert (
        derived.outputs["urns"][2]
        == "urn:pulumi:dev::p::pulumi:pulumi:Stack$alicloud:vpc/switch:Switch::sw-2"
    )


def test_an_input_made_by_apply_is_awaited(tmp_path: Path) -> None:
    derived, full = _both(
        _program(tmp_path, cidr='vpc.cidr_block.apply(lambda c: c.replace("/16", f"/2{i}"))'), "p", "dev"
    )
    assert _bytes(derived) == _bytes(full)
    assert derived.derived == 2 and derived.by_name("sw-2").get("cidr_block") == "10.0.0.0/22"


def test_a_parent_registers_for_real(tmp_path: Path) -> None:
    derived, full = _both(_program(tmp_path, opts="pulumi.ResourceOptions(parent=vpc)"), "p", "dev")
    assert _bytes(derived) == _bytes(full)
    assert derived.derived == 0  # the runtime names a child's URN after its parent: not derived


@pytest.mark.parametrize(
    "tail",
    [
        'pulumi.export("last_cidr", switches[-1].cidr_block)\n',
        'alicloud.vpc.RouteTable("rt", vpc_id=vpc.id, description=switches[-1].cidr_block)\n',
    ],
)
def test_reading_a_derived_output_registers_that_type(tail: str, tmp_path: Path) -> None:
    derived, full = _both(_program(tmp_path, tail=tail), "p", "dev")
    assert _bytes(derived) == _bytes(full)
    assert derived.derived == 0  # the switches were registered once a property of one was read
    assert derived.outputs.get("last_cidr", "10.0.2.0/24") == "10.0.2.0/24"


def test_an_input_the_sdk_rejects_fails_a_derived_run_as_a_full_one(tmp_path: Path) -> None:
    folder = _program(tmp_path, cidr="object() if i == 2 else '10.0.0.0/24'")
    for derive in (True, False):
        with pytest.raises(mockrun.ProgramError):
            mockrun.run_program(folder, project="p", stack="dev", derive=derive)


def test_a_failed_run_leaves_no_future_to_log_its_error_later(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The error is the ProgramError's: no "Future exception was never retrieved" from a finaliser at a later
    garbage collection (which, inside another ast.parse, made CPython 3.11 fail with an AST SystemError)."""
    import gc

    folder = _program(tmp_path, cidr="object() if i == 2 else '10.0.0.0/24'")
    for derive in (True, False):
        with pytest.raises(mockrun.ProgramError):
            mockrun.run_program(folder, project="p", stack="dev", derive=derive)
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


class _ClassHook:
    """An object whose ``__class__`` warns when read, as torch's deprecated module shims do."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        warnings.warn("read __class__", FutureWarning, stacklevel=2)
        return _ClassHook


def test_the_failed_run_walk_reads_no_attribute_of_what_the_heap_holds(tmp_path: Path) -> None:
    folder = _program(tmp_path, cidr="object() if i == 2 else '10.0.0.0/24'")
    held = _ClassHook()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(mockrun.ProgramError):
            mockrun.run_program(folder, project="p", stack="dev")
    assert held is not None


def test_the_off_switch_registers_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _program(tmp_path)
    assert mockrun.run_program(folder, project="p", stack="dev").derived == 2
    monkeypatch.setenv(memo.DERIVE_ENV, "off")
    off = mockrun.run_program(folder, project="p", stack="dev")
    assert off.derived == 0
    assert _bytes(off) == _bytes(mockrun.run_program(folder, project="p", stack="dev", derive=True))


def _in_key_order(value: Any) -> bool:
    if isinstance(value, dict):
        return list(value) == sorted(value) and all(_in_key_order(v) for v in value.values())
    if isinstance(value, list):
        return all(_in_key_order(v) for v in value)
    return True


@pytest.mark.parametrize("derive", [True, False])
def test_recorded_inputs_are_in_key_order(derive: bool) -> None:
    graph = mockrun.run_program(
        ROOT / "stacks" / "pretrain-70b",
        project="pretrain-70b",
        stack="dev",
        config={"alicloud:region": "cn-wulanchabu"},
        derive=derive,
    )
    assert all(_in_key_order(dict(r.inputs)) for r in graph.resources)
