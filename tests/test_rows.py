"""Constructor-level answers (generator/preview/rows.py): a run whose node rows are answered before the SDK's
constructor runs gives the graph a full run gives, byte for byte; the answers really happen; what a hit could change
(a logged deprecation, options, a read output) goes through the constructor."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_incremental import EXAMPLES, ROOT, _bytes, _full, _render, _reusable, _run, _spec, _twice

CHANGES = {
    "grow": {"compute.nodes": 20},
    "shrink": {"compute.nodes": 9},
    "rename": {"name": "renamed-run"},
    "disk": {"compute.system_disk_gib": 300},
    "type": {"compute.instance_types": ["ecs.ebmgn8v.48xlarge"]},
    "spot": {"spot.enabled": False},
}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_answered_at_the_constructor_equals_a_full_run(example: Path, tmp_path: Path) -> None:
    folder, plan = _render(example, tmp_path / "stack")
    base = _run(folder, plan)
    again = _run(folder, plan, _reusable(base))
    assert _bytes(again) == _bytes(_full(folder, plan))
    repeated = len(base.resources) - 2 * len({r.type for r in base.resources})
    if repeated > 0 and example.stem in ("pretrain-70b", "foundation-1t"):
        assert again.constructed > 0  # node rows answered before the SDK built their arguments


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_cluster_answered_at_the_constructor_equals_a_full_run(change: str, tmp_path: Path) -> None:
    common = {"compute.nodes": 16, "compute.max_nodes": 64, "model.global_batch_tokens": None}
    base_spec = _spec(tmp_path, ROOT / "examples" / "pretrain-70b.yaml", common, "base")
    head_spec = _spec(tmp_path, base_spec, CHANGES[change], change)
    base_dir, base_plan = _render(base_spec, tmp_path / "base")
    head_dir, head_plan = _render(head_spec, tmp_path / "head")
    base = _run(base_dir, base_plan)
    head = _run(head_dir, head_plan, _reusable(base))
    assert _bytes(head) == _bytes(_full(head_dir, head_plan))
    if change in ("grow", "shrink"):
        assert head.constructed >= 9 - 2  # the rows both sides share, but the first two of each type
    if change in ("rename", "type", "disk"):
        shared = {u for u, k in head.keys.items() if u.startswith("row::") and base.keys.get(u) == k}
        assert not any("instance:Instance" in u for u in shared)  # every node's constructor call changed


PROGRAM = """
import pulumi
import pulumi_alicloud as alicloud

vpc = alicloud.vpc.Network("vpc", cidr_block="10.0.0.0/16")
switches = [alicloud.vpc.Switch(f"sw-{{i}}", vpc_id=vpc.id, cidr_block=f"10.0.{{i}}.0/24", zone_id="z"{extra})
            for i in range({count})]
pulumi.export("ids", [s.id for s in switches])
{tail}
"""


def _program(tmp: Path, count: int = 6, extra: str = "", tail: str = "") -> Path:
    (tmp / "__main__.py").write_text(PROGRAM.format(count=count, extra=extra, tail=tail))
    return tmp


def test_plain_rows_are_answered_at_the_constructor(tmp_path: Path) -> None:
    base, again, full = _twice(_program(tmp_path))
    assert _bytes(again) == _bytes(full)
    assert (
        again.constructed == 6 - 2
    )  # the first registers, the second is the template, the rest are answered
    assert sum(k.startswith("row::") for k in base.keys) == 5


def test_options_are_constructed(tmp_path: Path) -> None:
    _, again, full = _twice(_program(tmp_path, extra=", opts=pulumi.ResourceOptions(protect=True)"))
    assert _bytes(again) == _bytes(full) and again.constructed == 0


def test_a_logged_deprecation_is_constructed(tmp_path: Path) -> None:
    """A constructor that logs (a deprecated argument) is never answered: its warning is part of the graph."""
    folder = _program(tmp_path, tail='pulumi.log.warn("a warning")')
    _, again, full = _twice(folder)
    assert _bytes(again) == _bytes(full)
    (folder / "__main__.py").write_text(
        (folder / "__main__.py")
        .read_text()
        .replace('zone_id="z"', 'zone_id="z", name=f"sw-{i}"')  # name: deprecated in the SDK, logs a warning
    )
    _, again, full = _twice(folder)
    assert _bytes(again) == _bytes(full)  # warnings included
    if any("deprecated" in w for w in full.warnings):
        assert again.constructed == 0


def test_reading_an_answered_output_constructs_that_type(tmp_path: Path) -> None:
    _, again, full = _twice(_program(tmp_path, tail='pulumi.export("last", switches[-1].cidr_block)'))
    assert _bytes(again) == _bytes(full) and again.outputs["last"] == "10.0.5.0/24"
    assert again.constructed == 0


def test_the_constructors_are_restored_after_a_run(tmp_path: Path) -> None:
    import pulumi_alicloud as alicloud

    before = alicloud.vpc.Switch.__init__
    _twice(_program(tmp_path))
    assert alicloud.vpc.Switch.__init__ is before
