"""The network in the time model: the data-parallel gradient exchange (and ZeRO-3's gathers) against the nodes'
NIC bandwidth, so instance types that tie on price are ranked by their network-aware time, not by name."""

from __future__ import annotations

import pytest

from generator import sizing
from generator.catalog import load_catalog
from generator.plan.planner import make_plan
from generator.spec.model import Spec


def test_exposed_exchange_by_hand() -> None:
    """70B over tp*pp=1, dp=64 on 8 nodes, ZeRO-3: 3 x 63/64 x 2 B x 69e9 per GPU, 8 GPUs on a 32 Gbit/s NIC,
    against a 610 s step whose whole length overlaps it."""
    comm = 3 * 63 / 64 * 2 * 69e9 * 8 / (32e9 / 8)
    r = sizing.data_parallel_ratio(69e9, 64, 3, 8, 8, 32.0, 610.0)
    assert r == pytest.approx((comm - 610.0) / 610.0)
    assert sizing.data_parallel_ratio(69e9, 64, 3, 8, 8, 170.0, 610.0) == 0.0  # hidden behind the step
    assert sizing.data_parallel_ratio(69e9, 8, 3, 8, 1, 32.0, 610.0) == 0.0  # one node: NVLink
    # ZeRO-1 overlaps only the backward pass (2/3 of the step) and moves 2 passes
    r1 = sizing.data_parallel_ratio(69e9, 64, 1, 8, 8, 32.0, 610.0)
    assert r1 == pytest.approx((2 * 63 / 64 * 2 * 69e9 * 8 / 4e9 - 610.0 * 2 / 3) / 610.0)


def test_h20_types_at_one_price_rank_by_their_network() -> None:
    """Issue 24: three 8 x H20 types at one (estimated) price with 32, 100 and 170 Gbit/s; a network-bound ZeRO-3
    job used to tie and take the name order, which picked the slowest."""
    doc = {
        "name": "h20-zero3",
        "region": "cn-shanghai",
        "model": {"preset": "llama-2-70b", "tokens": "100B", "global_batch_tokens": "4Mi"},
        "parallelism": {
            "zero_stage": 3,
            "framework": "deepspeed",
            "tensor": 1,
            "pipeline": 1,
            "recompute": "full",
        },
        "compute": {"gpu": "H20", "nodes": 8},
    }
    plan = make_plan(Spec.model_validate(doc), load_catalog())
    by_name = {c.instance_type: c for c in plan.candidates if c.nodes}
    slow = by_name["ecs.gn8v-8x.16xlarge"]  # 32 Gbit/s
    assert plan.compute.instance_type != slow.instance_type
    assert slow.run_hours > by_name["ecs.ebmgn8v.48xlarge"].run_hours  # 170 Gbit/s
    assert "costs" in slow.verdict or "slower" in slow.verdict
    assert not any(
        "gradient exchange" in n for n in plan.schedule.notes
    )  # the chosen type hides it in the step
