"""The node count's reason names the constraint that bound it, and the numbers agree (hypothesis over generated
specs, plus the examples): memory means one fewer node-step would not fit; the deadline means the memory minimum is
smaller and one fewer node-step misses budget.max_days; the batch means no count between the floors and the chosen
one divides the global batch."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_planner_properties import CATALOG, SETTINGS, spec_dicts, valid_spec

from generator import sizing
from generator.plan.compute import choose
from generator.plan.fit import PlanningError
from generator.plan.fit import training_setup as _setup
from generator.plan.node_counts import usable_bytes
from generator.plan.pipeline import load
from generator.plan.reasons import nodes_reason
from generator.plan.run_hours import batch_sequences, meets_deadline
from generator.spec.model import Spec


def _check(spec: Spec) -> str | None:
    region = CATALOG.region(spec.region)
    assert region is not None
    try:
        choice = choose(spec, CATALOG, region, [], [])
    except PlanningError:
        return None
    fit = choice.best.fit
    t, n, arch, lora = fit.itype, fit.nodes, choice.arch, choice.lora_rank
    r = nodes_reason(spec, CATALOG, arch, lora, fit)
    counts = [k for k in range(1, n + 1) if (k * t.gpus) % (fit.tp * fit.pp) == 0]
    below = [k for k in counts if k < n]

    def fits(k: int) -> bool:
        try:
            dp = k * t.gpus // (fit.tp * fit.pp)
            usable = usable_bytes(spec, int(t.gpu_memory_gib * 2**30))  # less the headroom, as the planner
            return sizing.per_gpu_memory(_setup(spec, arch, fit.tp, fit.pp, dp, lora)).total <= usable
        except sizing.SizingError:
            return False

    assert r.binding, r
    assert fits(n) and r.memory_floor <= n
    if "spec" in r.binding:
        assert isinstance(spec.compute.nodes, int) and r.text.startswith("as the spec asks")  # wording: the sentence of binding "spec"
        return "spec"
    if "memory" in r.binding:
        assert r.memory_floor == (n if "batch" not in r.binding else r.memory_floor)
        assert "set by memory" in r.text  # wording: the sentence of binding "memory"
        lower = [k for k in counts if k < r.memory_floor]
        assert not lower or not fits(lower[-1])  # one fewer node-step would not hold the training state
    if "deadline" in r.binding:
        assert r.deadline_floor is not None and r.memory_floor < r.deadline_floor <= n
        assert "set by the deadline" in r.text and "memory alone needs only" in r.text  # wording: the sentence of binding "deadline"
        assert meets_deadline(spec, CATALOG, arch, lora, t, r.deadline_floor, fit.tp, fit.pp)
        earlier = [k for k in counts if k < r.deadline_floor]
        assert not earlier or not meets_deadline(spec, CATALOG, arch, lora, t, earlier[-1], fit.tp, fit.pp)
    if "batch" in r.binding:
        batch = batch_sequences(spec)
        assert batch is not None and n > max(r.memory_floor, r.deadline_floor or 0)
        low = max(r.memory_floor, r.deadline_floor or 0)
        for k in (k for k in below if k >= low):  # none of the counts in between splits the batch
            if meets_deadline(spec, CATALOG, arch, lora, t, k, fit.tp, fit.pp) and fits(k):
                assert batch % ((k * t.gpus // (fit.tp * fit.pp)) * spec.model.micro_batch_size) != 0
        assert "rounded up for the global batch" in r.text  # wording: the sentence of binding "batch"
    if "memory" not in r.binding and "data" not in r.binding:
        assert f"memory alone needs only {r.memory_floor} node(s)" in r.text  # wording: the memory floor beside another binding
    return r.binding[0]


@settings(max_examples=40, **SETTINGS)
@given(spec_dicts(nodes=("auto",)))
def test_the_named_binding_constraint_agrees_with_the_numbers(data: dict[str, Any]) -> None:
    spec = valid_spec(data)
    assume(_check(spec) is not None)


def test_pretrain_70b_and_foundation_1t_are_set_by_the_deadline_and_the_batch() -> None:
    # foundation-1t's deadline alone: its 128 nodes (83 of 90 days at tp 8's fitted width) already split the batch
    binds = {"pretrain-70b": ("deadline", "batch"), "foundation-1t": ("deadline",)}
    for name, binding in binds.items():
        spec = load(f"examples/{name}.yaml").spec
        region = CATALOG.region(spec.region)
        assert region is not None
        choice = choose(spec, CATALOG, region, [], [])
        r = nodes_reason(spec, CATALOG, choice.arch, choice.lora_rank, choice.best.fit)
        assert r.binding == binding, (name, r)
        assert "the fewest nodes whose GPUs hold the training state" not in r.text
        _check(spec)


@settings(max_examples=30, **SETTINGS)
@given(spec_dicts(nodes=("auto",)), st.sampled_from([2, 7, 30]), st.sampled_from(["50B", "300B", "2T"]),
       st.sampled_from([None, "1Mi", "4Mi"]))
def test_deadline_and_batch_reasons_agree_with_the_numbers(data: dict[str, Any], days: int, tokens: str,
                                                           batch: str | None) -> None:
    """The same property with a deadline and tokens always set (and often a global batch), so the deadline and
    the batch bind more often than in the general draw."""
    data = {**data, "budget": {"max_days": days}, "model": {**data["model"], "tokens": tokens}}
    if batch is not None:
        data["model"]["global_batch_tokens"] = batch
    data["compute"] = {**data["compute"], "max_nodes": 512}
    spec = valid_spec(data)
    assume(_check(spec) is not None)
