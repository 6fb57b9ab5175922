"""Planner decisions on small specs (pure: no mock runtime)."""

from __future__ import annotations

import pytest

from generator.catalog import load_catalog
from generator.plan import refusals, rejections, unfit_refusals, warns
from generator.plan.planner import PlanningError, make_plan
from generator.spec.model import Spec


def plan(**overrides):
    doc = {"name": "unit-run", "region": "cn-wulanchabu", "model": {"parameters": "13B", "sequence_length": 4096}}
    for key, value in overrides.items():
        doc[key] = value
    return make_plan(Spec.model_validate(doc), load_catalog())


def test_every_decision_has_a_reason():
    p = plan()
    assert p.decisions and all(d.reason and d.choice for d in p.decisions)
    assert {"zone", "instance type", "nodes", "parallelism", "rdma", "shared storage"} <= {d.topic for d in p.decisions}


def test_same_spec_same_plan():
    assert plan().to_json() == plan().to_json()


def test_budget_per_hour_picks_the_best_plan_within_it():
    model = {"parameters": "13B", "sequence_length": 4096, "tokens": "20B"}
    free = plan(model=model, compute={"nodes": 2})
    cheaper = [c for c in free.candidates if c.nodes and c.cost_per_hour < free.cost.compute_on_demand_per_hour]
    assert cheaper, "the example needs a runner-up that is cheaper per hour but costlier per run"
    cap = free.cost.compute_on_demand_per_hour - 0.01
    capped = plan(model=model, compute={"nodes": 2}, budget={"per_hour": cap})
    assert capped.cost.compute_on_demand_per_hour <= cap
    assert capped.compute.instance_type != free.compute.instance_type
    assert any(d.topic == "budget" for d in capped.decisions)


def test_budget_nothing_fits_says_what_the_cheapest_costs():
    with pytest.raises(PlanningError) as e:
        plan(budget={"per_hour": 1})
    (problem,) = e.value.problems
    assert problem.dotted == "budget.per_hour" and problem.code == refusals.CheapestOverHourly.code
    fields = dict(problem.fields)
    assert fields["budget"] == 1 and fields["cny_per_hour"] > 1 and "spot" in fields["spot_lever"]


def test_total_budget_needs_tokens():
    with pytest.raises(PlanningError) as e:
        plan(budget={"total": 1000})
    assert "model.tokens" in e.value.problems[0].hint


def test_rdma_false_means_tcp_with_a_warning():
    p = plan(compute={"nodes": 2, "instance_types": ["ecs.ebmgn7ex.32xlarge"]}, network={"rdma": False})
    assert p.compute.rdma == "none" and p.compute.eri_per_node == 0
    assert warns.RdmaOff(2) in p.warnings


def test_multi_node_needs_8_gpu_rdma_nodes():
    p = plan(compute={"nodes": 4})
    assert p.compute.gpus_per_node == 8 and p.compute.rdma in ("erdma", "roce")


def test_auto_storage_with_an_off_step_capacity_is_refused():
    with pytest.raises(PlanningError) as e:
        plan(storage={"capacity": "1000GiB", "dataset": {"source": "oss://data-bucket/x/", "size": "2TiB"}})
    assert e.value.problems[0].dotted == "storage.capacity" and "1200 GiB" in e.value.problems[0].message


def test_impossible_model_says_what_would_fit():
    with pytest.raises(PlanningError) as e:
        plan(model={"parameters": "1T"}, compute={"nodes": 1})
    (problem,) = e.value.problems
    # ZeRO-3 cannot fit 1T parameters' 16 bytes each into 8 GPUs: only more nodes help, so only that is said
    assert problem.code == unfit_refusals.NoTypeFitsNodes.code and problem.dotted == "compute.nodes"
    assert dict(problem.fields)["memory_savings"] == ()
    with pytest.raises(PlanningError) as e:
        plan(model={"parameters": "50B"}, compute={"nodes": 1, "gpus_per_node": 8}, parallelism={"zero_stage": 0})
    assert "parallelism.zero_stage" in dict(e.value.problems[0].fields)["memory_savings"]


def test_tb_scale_dataset_gets_cpfs_and_a_data_flow():
    p = plan(compute={"nodes": 2}, storage={"dataset": {"source": "oss://data-bucket/x/", "size": "10TiB"}})
    assert p.storage.kind == "cpfs" and p.storage.capacity_gib % 1200 == 0 and p.storage.capacity_gib >= 3600
    assert p.storage.dataset is not None and p.storage.dataset.flow_throughput_mbps < p.storage.throughput_mbps


def test_low_latency_sets_hold_at_most_20_nodes():
    p = plan(compute={"nodes": 45, "instance_types": ["ecs.ebmgn7ex.32xlarge"]})
    sizes = [len(d.ranks) for d in p.compute.deployment_sets]
    assert sum(sizes) == 45 and max(sizes) <= 20 and len({d.zone for d in p.compute.deployment_sets}) == 1


def test_resizing_the_cluster_never_changes_the_file_system():
    """Class is immutable and CPFS cannot shrink: a node-count edit must not replace the dataset's file system."""
    storage = {"dataset": {"source": "oss://data-bucket/x/", "size": "20TiB"}}
    sizes = {(p.storage.kind, p.storage.capacity_gib, p.storage.storage_type)
             for p in (plan(compute={"nodes": n, "instance_types": ["ecs.ebmgn7ex.32xlarge"]}, storage=storage)
                       for n in (2, 8, 64, 200))}
    assert len(sizes) == 1


def test_gpu_auto_leaves_out_gpus_without_bf16_with_a_reason():
    # review P1-3: V100 (no bf16) came out as a fitting runner-up of a bf16 run
    model = {"preset": "llama-2-7b", "tokens": "1B", "finetune": {"method": "lora"}}
    p = plan(region="cn-hangzhou", model=model, compute={"nodes": 1})
    v100 = [c for c in p.candidates if c.instance_type.startswith(("ecs.gn6", "ecs.ebmgn6"))]
    assert v100 and all(not c.nodes and c.reason is not None and (c.reason.code, c.reason.kind) == ("TSR003", "bf16")
                        for c in v100)
    assert all(c.reason is not None and c.reason.fields()["gpu"].startswith("V100") for c in v100)
    assert "V100" not in p.compute.gpu
    # the bf16 exclusions come after the types rejected for the run itself
    kinds = [c.reason.kind for c in p.candidates if c.reason is not None]
    assert kinds == sorted(kinds, key=lambda k: k == "bf16")
    fp16 = plan(region="cn-hangzhou", model={**model, "precision": "fp16"}, compute={"nodes": 1})
    assert not any(c.reason is not None and c.reason.kind == "bf16" for c in fp16.candidates)


def test_a_run_that_never_finishes_is_an_error_naming_the_spot_fields():
    # review P2-6: 64 all-spot nodes at 5 reclaims a node-day planned a 1e9 h (sentinel) run for 48 trillion CNY
    doc = {"model": {"preset": "llama-2-70b", "tokens": "300B"}, "compute": {"gpu": "A100-80G", "nodes": 64},
           "storage": {"shared": "none"}}
    with pytest.raises(PlanningError) as e:
        plan(**doc, spot={"enabled": True, "on_demand_base": 0, "interruptions_per_node_day": 5})
    (problem,) = e.value.problems
    assert problem.code == unfit_refusals.NeverFinishesOnSpot.code
    assert problem.dotted == "spot.interruptions_per_node_day"
    fields = dict(problem.fields)
    assert fields["mixed_spot"] and fields["spot_nodes"] == 64  # the hint names spot.on_demand_base
    assert "1,000,000,000" not in problem.message + problem.hint
    # at the rate the hint names, the run plans, with figures that add up
    rate = fields["finishing_rate"]
    assert rate is not None
    ok = plan(**doc, spot={"enabled": True, "on_demand_base": 0, "interruptions_per_node_day": rate})
    s = ok.schedule
    assert s.wall_hours < 10 * s.compute_hours
    assert s.expected_rework_hours < s.wall_hours


def test_spot_rationale_with_no_on_demand_base_says_rank_0_can_be_reclaimed():
    # review P2-7: "ranks none stay on demand so the job's rendezvous (rank 0) survives reclaims"
    doc = {"model": {"parameters": "13B", "tokens": "20B"}, "compute": {"nodes": 2}}
    p = plan(**doc, spot={"enabled": True, "on_demand_base": 0})
    reason = next(d.reason for d in p.decisions if d.topic == "spot")
    assert "survives reclaims" not in reason and "rank 0" in reason and "can be reclaimed" in reason
    assert warns.SpotRankZero() in p.warnings
    p = plan(**doc, spot={"enabled": True})
    reason = next(d.reason for d in p.decisions if d.topic == "spot")
    assert "rank 0 stays on demand so the job's rendezvous (rank 0) survives reclaims" in reason
    assert warns.SpotRankZero() not in p.warnings


def _reason(problem, name):
    """The rejection of type ``name`` a no-type-fits problem carries (plan.json's reason: code, kind, fields)."""
    return next(r for r in dict(problem.fields)["rejected"] if r["instance_type"] == name)


def _rejected(p, name):
    return next(c.verdict for c in p.candidates if c.instance_type == name)


def test_rejections_name_the_constraint_that_binds():
    # review P2-8: only n = max_nodes was checked, so divisibility at 1000 nodes hid the memory limit
    with pytest.raises(PlanningError) as e:
        plan(zones=["cn-wulanchabu-c"], model={"preset": "llama-3-405b", "tokens": "100B", "sequence_length": 8192,
                                               "global_batch_tokens": "16Mi"},
             parallelism={"tensor": 8, "pipeline": 16}, compute={"max_nodes": 1000, "gpu": "A100-80G"})
    why = _reason(e.value.problems[0], "ecs.ebmgn7ex.32xlarge")
    # Megatron's fp32 gradient buffer (ZeRO-1, framework auto) does not fit 80 GiB; Llama 3 ran FSDP-style sharding
    assert why["code"] == rejections.OutOfMemory.code  # memory binds, not the batch's divisibility at 1000 nodes
    assert (why["fields"]["nodes"], why["fields"]["tp"], why["fields"]["pp"]) == (992, 8, 16)
    assert round(why["fields"]["need_bytes"] / 2**30, 2) == 87.5
    # a type without RDMA is kept to one node: that, not divisibility, is why tp x pp = 32 cannot run on it
    p = plan(zones=["cn-wulanchabu-c"], model={"architecture": {"layers": 32, "hidden": 8192, "heads": 64,
                                                                "kv_heads": 8}, "tokens": "10B"},
             parallelism={"tensor": 8, "pipeline": 4}, compute={"gpu": "A100-80G"}, storage={"shared": "none"})
    assert _rejected(p, "ecs.gn7e-c16g1.32xlarge") == (
        "tp=8 x pp=4 = 32 GPUs per model replica needs 4 node(s); it trains on one node only: no eRDMA or RoCE for "
        "multi-node training")
    # the deadline: the nodes it needs against compute.max_nodes, or no count at all, never both at once
    p = plan(model={"preset": "llama-2-70b", "tokens": "300B", "global_batch_tokens": "4Mi"},
             compute={"gpu": "A100-80G", "max_nodes": 16}, budget={"max_days": 200})
    assert p.compute.nodes <= 16
    with pytest.raises(PlanningError) as e:
        plan(model={"preset": "llama-2-70b", "tokens": "300B", "global_batch_tokens": "4Mi"},
             compute={"gpu": "A100-80G", "max_nodes": 16}, budget={"max_days": 60})
    (problem,) = e.value.problems
    assert problem.code == unfit_refusals.NoTypeMeetsDeadline.code and dict(problem.fields)["max_nodes"] == 16
    reasons = [r for r in dict(problem.fields)["rejected"] if r["kind"] == "deadline"]
    assert reasons and {r["code"] for r in reasons} == {rejections.DeadlineNodes.code}  # a count, not "never"
    assert min(r["fields"]["nodes"] for r in reasons) == 32
    # the layout that needs the fewest nodes: tp 4 x pp 4, since the GPUs of a narrower tensor split run faster
    # (generator/sizing/mfu.py, the per-GPU width) than tp 8's lose to pp 4's bubble
    assert (32, 4, 4, 16) in {(f["nodes"], f["tp"], f["pp"], f["max_nodes"]) for f in (r["fields"] for r in reasons)}
    assert plan(model={"preset": "llama-2-70b", "tokens": "300B", "global_batch_tokens": "4Mi"},
                compute={"gpu": "A100-80G", "max_nodes": 32}, budget={"max_days": 60}).compute.nodes <= 32


def test_deadline_failures_get_deadline_hints_not_memory_hints():
    # review P2-9: every 8-GPU type fits memory but misses 0.5 days; "recompute: full" would only slow it down
    with pytest.raises(PlanningError) as e:
        plan(region="cn-hangzhou", model={"preset": "llama-2-7b", "tokens": "2B", "global_batch_tokens": "1Mi"},
             parallelism={"zero_stage": 3}, compute={"gpu": "A100-80G"}, storage={"shared": "none"},
             budget={"max_days": 0.5})
    (problem,) = e.value.problems
    assert problem.code == unfit_refusals.NoTypeMeetsDeadline.code and problem.dotted == "budget.max_days"
    fields = dict(problem.fields)
    # every type that fits memory misses the deadline: the hint gives the deadline's fixes (tests/test_unfit.py)
    assert fields["max_days"] == 0.5 and "deadline" in {r["kind"] for r in fields["rejected"]}


def test_budget_hints_do_not_say_enable_spot_when_spot_is_on():
    doc = {"zones": ["cn-wulanchabu-c"], "model": {"preset": "llama-2-13b", "tokens": "200B",
                                                   "global_batch_tokens": "4Mi"},
           "compute": {"gpu": "A100-80G"}, "storage": {"shared": "none"}}
    for spot, says in (({"enabled": True, "on_demand_base": 1}, None),
                       ({"enabled": True, "on_demand_base": 4}, "spot.on_demand_base: 1, now 4"),
                       ({"enabled": False}, "enable spot")):
        for budget in ({"total": 500_000}, {"per_hour": 10}):
            with pytest.raises(PlanningError) as e:
                plan(**doc, spot=spot, budget=budget)
            hint = e.value.problems[0].hint
            assert ("enable spot" in hint) == (says == "enable spot"), hint
            if says:
                assert says in hint, hint
