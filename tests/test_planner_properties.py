"""Properties every plan must have, checked on random valid specs (hypothesis).

Specs are generated as the dicts a user would write, parsed with ``Spec.model_validate`` and kept only when
``validate.check`` finds nothing wrong (the planner's contract starts after validation). Planning may then
fail with a PlanningError (the model does not fit, the budget is too small...), which is a valid answer; any
other exception is a bug. Example counts are modest so the file runs in well under 30 s on two cores; the
draws are derandomized so CI is stable (set TRAINSTACK_HYPOTHESIS_RANDOM=1 to explore new examples).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from generator import sizing
from generator.catalog import load_catalog
from generator.plan import check as validate
from generator.plan.model import Plan
from generator.plan.planner import PlanningError, make_plan
from generator.spec.model import Spec

CATALOG = load_catalog()
REGIONS = {r.id: r for r in CATALOG.regions}
SETTINGS: dict[str, Any] = {
    "deadline": None, "database": None, "derandomize": not os.environ.get("TRAINSTACK_HYPOTHESIS_RANDOM"),
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
}

# Model sizes people actually train, 1B..1T, plus a few odd counts in between.
SIZES = ["1B", "1.3B", "3B", "7B", "8B", "13B", "30B", "34B", "70B", "175B", "405B", "1T"]


@st.composite
def architectures(draw: st.DrawFn) -> dict[str, Any]:
    """An explicit shape that sizing accepts (hidden divisible by heads, heads by kv_heads)."""
    heads = draw(st.sampled_from([8, 12, 16, 32, 40, 64]))
    head_dim = draw(st.sampled_from([64, 128]))
    kv_heads = draw(st.sampled_from([k for k in (1, 2, 4, 8, heads) if heads % k == 0]))
    return {"layers": draw(st.integers(2, 96)), "hidden": heads * head_dim, "heads": heads, "kv_heads": kv_heads,
            "vocab": draw(st.sampled_from([32000, 50257, 128256]))}


@st.composite
def spec_dicts(draw: st.DrawFn, *, spot: bool | None = None, rdma: tuple[Any, ...] = ("auto", True, False),
               nodes: tuple[Any, ...] = ("auto", "auto", 1, 2, 4, 8, 16)) -> dict[str, Any]:
    """A spec as YAML would give it; most fields keep their defaults most of the time."""
    region = draw(st.sampled_from(sorted(REGIONS)))
    r = REGIONS[region]
    kind = draw(st.sampled_from(["parameters", "parameters", "preset", "architecture"]))
    model: dict[str, Any] = {
        "parameters": {"parameters": draw(st.sampled_from(SIZES))},
        "preset": {"preset": draw(st.sampled_from(sorted(sizing.PRESETS)))},
        "architecture": {"architecture": draw(architectures())},
    }[kind]
    method = draw(st.sampled_from(["full", "full", "full", "lora", "qlora"]))
    model.update(
        precision=draw(st.sampled_from(["bf16", "bf16", "fp16", "fp32"] if method != "qlora" else ["bf16"])),
        optimizer=draw(st.sampled_from(["adamw", "adamw", "adam", "sgd", "adafactor", "lion", "adamw-8bit"])),
        sequence_length=draw(st.sampled_from([512, 1024, 2048, 4096, 8192, 32768])),
        micro_batch_size=draw(st.sampled_from([1, 1, 2, 4])),
        finetune={"method": method, "lora_rank": draw(st.sampled_from([8, 16, 64]))},
    )
    if draw(st.booleans()):
        model["tokens"] = draw(st.sampled_from(["2B", "50B", "300B", "2T"]))
    if draw(st.integers(0, 3)) == 0:
        model["global_batch_tokens"] = draw(st.sampled_from(["1Mi", "4Mi", "16Mi"]))
    parallelism = {
        "tensor": draw(st.sampled_from(["auto", "auto", "auto", 1, 2, 4, 8])),
        "pipeline": draw(st.sampled_from(["auto", "auto", "auto", 1, 2, 4])),
        "zero_stage": draw(st.integers(0, 3)),
        "sequence_parallel": draw(st.booleans()),
        "recompute": draw(st.sampled_from(["none", "selective", "selective", "full"])),
    }
    offered_gpus = sorted({t.gpu for t in CATALOG.types_in_region(region)})
    n = draw(st.sampled_from(nodes))
    compute: dict[str, Any] = {
        "gpu": draw(st.sampled_from(["auto", "auto", *offered_gpus])),
        "nodes": n,
        "max_nodes": max(n if isinstance(n, int) else 1, draw(st.sampled_from([8, 64, 512]))),
        "gpus_per_node": draw(st.sampled_from(["auto", "auto", "auto", 1, 2, 4, 8])),
        "bare_metal": draw(st.sampled_from(["any", "any", "prefer", "require", "avoid"])),
    }
    spot_on = draw(st.booleans()) if spot is None else spot
    storage: dict[str, Any] = {"shared": draw(st.sampled_from(["auto", "auto", "none", "extreme-nas"]
                                                              + (["cpfs"] if r.cpfs else [])))}
    if storage["shared"] in ("auto", "cpfs") and r.cpfs and draw(st.integers(0, 3)) == 0:
        storage["dataset"] = {"source": "oss://prop-corpus/tok/", "size": draw(st.sampled_from(["500GiB", "20TiB"]))}
    spec: dict[str, Any] = {
        "name": "prop-run",
        "region": region,
        "model": model,
        "parallelism": parallelism,
        "compute": compute,
        "network": {"rdma": draw(st.sampled_from(rdma)),
                    "vpc_cidr": draw(st.sampled_from(["10.0.0.0/16", "10.0.0.0/16", "192.168.0.0/24"]))},
        "storage": storage,
        "checkpoints": {"enabled": spot_on or draw(st.sampled_from([True, True, False]))},
        "spot": {"enabled": spot_on, "on_demand_base": draw(st.sampled_from([0, 1, 1, 2, 3]))},
    }
    if draw(st.booleans()):
        spec["zones"] = [draw(st.sampled_from(r.zones))]
    budget = draw(st.sampled_from([{}, {}, {"max_days": 30}, {"max_days": 3}, {"per_hour": 500.0},
                                   {"total": 1_000_000.0}]))
    if budget:
        spec["budget"] = budget
    return spec


def valid_spec(data: dict[str, Any]) -> Spec:
    """The spec, or `assume` it away if the schema or the catalog checks reject it."""
    spec = Spec.model_validate(data)
    assume(not validate.check(spec, CATALOG))
    return spec


def plan_or_none(spec: Spec) -> Plan | None:
    """A plan, or None when the planner explains that nothing satisfies the spec (a legitimate answer)."""
    try:
        return make_plan(spec, CATALOG)
    except PlanningError as e:
        assert e.problems and all(p.message for p in e.problems)
        return None


@settings(max_examples=60, **SETTINGS)
@given(spec_dicts())
def test_plans_fit_and_layouts_are_consistent(data: dict[str, Any]) -> None:
    spec = valid_spec(data)
    plan = plan_or_none(spec)
    assume(plan is not None)
    assert plan is not None
    c, z, m = plan.compute, plan.sizing, plan.model
    assert z.total <= z.gpu_memory and z.headroom == z.gpu_memory - z.total >= 0
    # the fit search keeps parallelism.memory_headroom of every GPU free (docs/sizing.md, "Headroom")
    assert z.min_headroom == z.gpu_memory - int(z.gpu_memory * (1 - spec.parallelism.memory_headroom))
    assert z.headroom >= z.min_headroom
    assert z.total == z.weights + z.gradients + z.optimizer_states + z.activations + z.reserve
    assert c.gpus_per_node % c.tp == 0
    assert m.heads % c.tp == 0 and (m.kv_heads % c.tp == 0 or c.tp % m.kv_heads == 0)  # KV heads replicate
    # uneven pipelines: equal middle stages, shorter first and last ones (sizing.pipeline_splits)
    assert sizing.pipeline_splits(m.layers, c.pp)
    # experts: ep carved from dp, dividing the experts, inside one node's NVLink with tp when auto; dense: ep 1
    assert 0 < m.active_parameters <= m.parameters
    if m.moe is None:
        assert c.ep == 1 and m.active_parameters == m.parameters
    else:
        assert c.dp % c.ep == 0 and m.moe.experts % c.ep == 0 and m.active_parameters < m.parameters
        if spec.parallelism.expert == "auto":
            assert c.ep * c.tp <= 8
    assert c.tp * c.pp * c.dp == c.total_gpus == c.nodes * c.gpus_per_node
    assert len(c.ranks) == c.nodes and [n.rank for n in c.ranks] == list(range(c.nodes))
    if isinstance(spec.compute.nodes, int):
        assert c.nodes == spec.compute.nodes
    else:
        assert c.nodes <= spec.compute.max_nodes
    for name, fixed in (("tp", spec.parallelism.tensor), ("pp", spec.parallelism.pipeline)):
        if isinstance(fixed, int):
            assert getattr(c, name) == fixed
    if spec.model.global_batch_tokens is not None:
        sequences = max(1, spec.model.global_batch_tokens // spec.model.sequence_length)
        assert sequences % (c.dp * spec.model.micro_batch_size) == 0
    if spec.compute.gpu != "auto":
        gpu = CATALOG.gpu(spec.compute.gpu)
        assert gpu is not None and c.gpu == gpu.name
    assert plan.candidates[0].verdict == "chosen" and plan.candidates[0].instance_type == c.instance_type


@settings(max_examples=30, **SETTINGS)
@given(spec_dicts(rdma=("auto", True), nodes=("auto", 2, 4, 16)))
def test_multi_node_plans_use_8_gpu_nodes_with_rdma(data: dict[str, Any]) -> None:
    plan = plan_or_none(valid_spec(data))
    assume(plan is not None and plan.compute.nodes > 1)
    assert plan is not None
    assert plan.compute.gpus_per_node == 8
    assert plan.compute.rdma in ("erdma", "roce")
    assert (plan.compute.eri_per_node > 0) == (plan.compute.rdma == "erdma")
    assert plan.compute.hpc_cluster == (plan.compute.rdma == "roce")


@settings(max_examples=20, **SETTINGS)
@given(spec_dicts())
def test_same_spec_gives_the_identical_plan(data: dict[str, Any]) -> None:
    spec = valid_spec(data)
    first = plan_or_none(spec)
    again = plan_or_none(Spec.model_validate(data))  # a fresh but equal spec object
    assert (first is None) == (again is None)
    if first is not None and again is not None:
        assert first.to_json() == again.to_json()


@settings(max_examples=30, **SETTINGS)
@given(spec_dicts(spot=True), st.integers(1, 4))
def test_spot_plans_keep_rank_0_on_demand(data: dict[str, Any], base: int) -> None:
    data["spot"]["on_demand_base"] = base
    spec = valid_spec(data)
    plan = plan_or_none(spec)
    assume(plan is not None)
    assert plan is not None
    s, ranks = plan.spot, plan.compute.ranks
    assert s.enabled
    assert ranks[0].spot is False and 0 in s.on_demand_ranks
    assert s.on_demand_ranks == tuple(range(min(base, len(ranks))))
    assert s.spot_ranks == tuple(n.rank for n in ranks if n.spot)
    assert sorted(s.on_demand_ranks + s.spot_ranks) == list(range(len(ranks)))
    # The cost splits the same way: spot nodes priced on the spot line, the base on the on-demand line.
    assert (plan.cost.compute_spot_per_hour > 0) == bool(s.spot_ranks)


@settings(max_examples=80, **SETTINGS)
@given(spec_dicts())
def test_planning_raises_only_planning_error(data: dict[str, Any]) -> None:
    spec = valid_spec(data)
    try:
        make_plan(spec, CATALOG)
    except PlanningError as e:
        assert e.problems  # each says what to change
    # Any other exception propagates and fails the test with the spec hypothesis printed.


# ------------------------------------------------------------------------------------------- sizing


@st.composite
def setups(draw: st.DrawFn) -> tuple[sizing.TrainingSetup, int]:
    """A valid TrainingSetup for a random model, and a number of extra data-parallel ranks."""
    if draw(st.booleans()):
        arch = sizing.PRESETS[draw(st.sampled_from(sorted(sizing.PRESETS)))]
    else:
        arch = sizing.derive_architecture(draw(st.integers(10**9, 10**12)))
    tp = draw(st.sampled_from([t for t in (1, 2, 4, 8) if arch.heads % t == 0 and arch.kv_heads % t == 0]))
    pp = draw(st.sampled_from([p for p in (1, 2, 4, 8) if arch.layers % p == 0]))
    lora = draw(st.sampled_from([None, None, 16]))
    optimizer = draw(st.sampled_from(list(sizing.OPTIMIZER_BYTES)))
    setup = sizing.TrainingSetup(
        arch=arch, seq_len=draw(st.sampled_from([1024, 4096, 32768])), micro_batch=draw(st.integers(1, 4)),
        precision="bf16" if optimizer == "adamw-bf16" else draw(st.sampled_from(["bf16", "fp32"])), optimizer=optimizer,
        zero_stage=draw(st.integers(0, 3)), tp=tp, pp=pp, dp=draw(st.integers(1, 512)),
        sequence_parallel=draw(st.booleans()) and tp > 1, recompute=draw(st.sampled_from(sizing.RECOMPUTE_MODES)),
        lora_rank=lora, qlora=lora is not None and draw(st.booleans()))
    return setup, draw(st.integers(1, 4096))


@settings(max_examples=300, **SETTINGS)
@given(setups())
def test_more_data_parallel_gpus_never_raise_per_gpu_memory(case: tuple[sizing.TrainingSetup, int]) -> None:
    """Adding data-parallel ranks shards ZeRO state further and never adds any; the planner's binary search
    over node counts relies on this. Checked for every stage (strictly smaller model states under ZeRO-3)."""
    import dataclasses

    setup, extra = case
    before = sizing.per_gpu_memory(setup)
    after = sizing.per_gpu_memory(dataclasses.replace(setup, dp=setup.dp + extra))
    assert after.total <= before.total
    assert after.model_states <= before.model_states
    assert after.activations == before.activations  # dp does not touch activations
    if setup.zero_stage == 3 and setup.lora_rank is None and setup.dp > 1:
        assert after.gradients + after.optimizer_states < before.gradients + before.optimizer_states


def test_the_examples_satisfy_the_properties_too() -> None:
    """The shipped examples, as a fixed anchor for the random cases above."""
    from pathlib import Path

    from generator import api

    for path in sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.yaml")):
        plan = api.plan(path)
        c = plan.compute
        assert plan.sizing.total <= plan.sizing.gpu_memory
        assert c.tp * c.pp * c.dp == c.total_gpus and c.gpus_per_node % c.tp == 0
        if c.nodes > 1:  # PAI-DLC attaches no RDMA: DLC manages the network between its workers
            assert c.gpus_per_node == 8 and (c.rdma != "none" or c.platform == "pai-dlc")
        if plan.spot.enabled and c.platform == "pai-dlc":  # SpotSpec covers every worker of a DLC job
            assert all(r.spot for r in c.ranks)
        elif plan.spot.enabled:
            assert not c.ranks[0].spot


@pytest.mark.parametrize("rdma", [False])
def test_rdma_false_allows_multi_node_without_rdma(rdma: bool) -> None:
    """docs/spec.md: `network.rdma: false` lifts the RDMA requirement for multi-node plans (NCCL over TCP)."""
    spec = Spec.model_validate({"name": "prop-run", "region": "cn-wulanchabu", "model": {"preset": "llama-2-70b"},
                                "compute": {"nodes": 4, "gpu": "A100-80G"}, "network": {"rdma": rdma}})
    plan = make_plan(spec, CATALOG)
    assert plan.compute.nodes == 4 and plan.compute.gpus_per_node == 8
