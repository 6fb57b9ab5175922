"""A search that ends with nothing to plan refuses with a code and fields (generator/plan/unfit_refusals.py): the
bad-spec corpus's cases of it (their words are the snapshots of tests/test_bad_input.py), and the hint's choice of
fixes read from the event's own parts, not from its words."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.plan import rejections, unfit_refusals
from generator.plan.fit import PlanningError
from generator.plan.pipeline import plan_file

CORPUS = Path(__file__).resolve().parent / "bad_specs"


def _refusal(name: str) -> tuple[str, tuple[str | int, ...], dict[str, object]]:
    with pytest.raises(PlanningError) as e:
        plan_file(CORPUS / f"{name}.yaml")
    [p] = e.value.problems
    assert p.line > 0 and p.message and p.hint
    return p.code, p.path, dict(p.fields)


def test_a_model_no_node_holds_names_compute_nodes_and_no_memory_saving() -> None:
    code, path, fields = _refusal("model_1t_one_node")
    assert (code, path) == (unfit_refusals.NoTypeFitsNodes.code, ("compute", "nodes"))
    assert fields["fixed_nodes"] and fields["parameters"] == 1_008_000_000_000
    assert fields["memory_savings"] == ()  # ZeRO-3 cannot fit 1T parameters into 8 GPUs: only more nodes help
    rejected = fields["rejected"]
    assert isinstance(rejected, tuple) and rejected
    assert {r["code"] for r in rejected} == {rejections.OutOfMemory.code}
    assert all(r["fields"]["nodes"] == 1 for r in rejected)


def test_a_spot_run_that_never_finishes_names_the_rate_at_which_it_would() -> None:
    code, path, fields = _refusal("spot_never_finishes")
    assert (code, path) == (unfit_refusals.NeverFinishesOnSpot.code, ("spot", "interruptions_per_node_day"))
    assert (fields["nodes"], fields["spot_nodes"], fields["spot_interruptions_per_node_day"]) == (64, 64, 5.0)
    assert fields["finishing_rate"] == 0.25 and fields["mixed_spot"] and fields["on_demand_base"] == 0
    assert fields["oss_only"] and fields["fixed_interval_seconds"] is None


def test_a_fixed_interval_that_never_finishes_names_the_interval() -> None:
    code, path, fields = _refusal("interval_never_finishes")
    assert (code, path) == (unfit_refusals.NeverFinishesAtInterval.code, ("checkpoints", "interval"))
    assert fields["interval_seconds"] == 30 * 86400 and fields["interval_hours"] == 720.0
    assert fields["spot_nodes"] == 0 and fields["node_mtbf_hours"] == 6300.0


def _unfit(*why: rejections.Rejection, **settings: object) -> unfit_refusals.NothingFits:
    base: dict[str, object] = {"machine": "instance type", "parameters": 7 * 10**9, "fixed_nodes": False,
                               "max_nodes": 16, "max_days": 0.5, "gpu": "A100-80G", "spot": True,
                               "memory_savings": ("parallelism.recompute",), "megatron": False,
                               "type_filter": False, "fixed_degrees": False}
    rejected = tuple((f"ecs.t{i}", w) for i, w in enumerate(why))
    return unfit_refusals.NoTypeFits(rejected=rejected, **{**base, **settings})  # type: ignore[arg-type]


def test_the_fixes_follow_the_constraints_that_bound() -> None:
    late = rejections.DeadlineNodes(10**12, 0.5, 32, 8, 1, 16, 8, None)
    oom = rejections.OutOfMemory(2.0**40, 16, 8, 1, "A100-80G", 80.0, 76 * 2**30, 0.05, 8, None)
    deadline, memory = _unfit(late), _unfit(oom)
    # more memory does not meet a deadline: a deadline failure gets the deadline's fixes, never the memory ones
    assert deadline.fixes() == deadline.deadline_fixes() and not set(deadline.fixes()) & set(memory.memory_fixes())
    assert memory.fixes() == memory.memory_fixes()
    assert _unfit(late, oom).fixes() == deadline.fixes()
    # the deadline's first fix is the nodes it needs, and only when compute.max_nodes is what binds
    assert deadline.deadline_fixes()[0] not in _unfit(late, fixed_nodes=True).fixes()
    assert len(_unfit(oom, memory_savings=()).memory_fixes()) < len(memory.memory_fixes())
    # a spec filter, or fixed degrees with a memory or layout failure, adds its own fix; no constraint, a default
    assert len(_unfit(oom, type_filter=True).fixes()) == len(memory.fixes()) + 1
    assert len(_unfit(oom, fixed_degrees=True).fixes()) == len(memory.fixes()) + 1
    assert len(_unfit(rejections.NotOffered("cn-x"), gpu="auto").fixes()) == 1
