"""The schedule (generator/sizing/schedule.py, generator/plan/run_hours.py): FLOPs with attention and logits,
layout MFU, the pipeline bubble, checkpoint writes, rework and restores, the fastest checkpoint tier, and the plan's
``schedule``, deadline warning and launch environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generator import sizing
from generator.catalog import load_catalog
from generator.plan import warns
from generator.plan.pipeline import load, plan_located
from generator.plan.planner import make_plan
from generator.render import userdata
from generator.render.files import launch_env, render
from generator.sizing.schedule import NEVER_HOURS, TP_ACROSS_NODES_FACTOR, TP_OVER_PCIE_FACTOR

CATALOG = load_catalog()
TIER = sizing.Tier("OSS", 10.0, 10.0)


def test_attention_is_16_to_27_percent_of_an_8b_model_at_8k_context() -> None:
    f = sizing.flops_per_token(sizing.PRESETS["llama-3-8b"], 8192)
    assert 0.16 <= f.attention / f.total <= 0.27
    g = sizing.flops_per_token(sizing.PRESETS["gpt3-175b"], 2048)  # tied embeddings: 6N + attention
    assert g.dense + g.logits == pytest.approx(6 * 175e9, rel=1e-9)


def test_the_pipeline_bubble_follows_pp_and_the_micro_batches() -> None:
    mfu = sizing.layout_mfu(0.4, 8, 8, "nvlink", 16)
    flat = sizing.schedule(1e23, 1024, 312, mfu, 1, 8, 0, TIER, 0.0)
    deep = sizing.schedule(1e23, 1024, 312, mfu, 16, 8, 0, TIER, 0.0)
    assert flat.pipeline_bubble_hours == 0 and deep.pipeline_bubble_hours == pytest.approx(flat.compute_hours * 15 / 8)
    assert deep.bubble_fraction == pytest.approx(15 / 23) and deep.wall_hours > flat.wall_hours
    assert sizing.microbatches(4096, 16, 1, 16) == 256 and sizing.microbatches(None, 4, 1, 4) == 16


def test_pcie_tensor_parallelism_and_tp_across_nodes_lower_the_mfu() -> None:
    assert sizing.layout_mfu(0.3, 1, 8, "pcie", 1).mfu == 0.3
    assert sizing.layout_mfu(0.3, 8, 8, "pcie", 1).mfu == pytest.approx(0.3 * TP_OVER_PCIE_FACTOR)
    assert sizing.layout_mfu(0.4, 16, 8, "nvlink", 2).mfu == pytest.approx(0.4 * TP_ACROSS_NODES_FACTOR)
    # TCP is no factor on the MFU: it lowers the bandwidth the network charges see (tests/test_network_time.py)
    assert sizing.layout_mfu(0.4, 8, 8, "nvlink", 2).mfu == 0.4
    assert sizing.layout_mfu(0.4, 8, 8, "nvlink", 2, (("exchange", 0.25),)).mfu == pytest.approx(0.4 / 1.25)


def test_mfu_is_on_model_flops_and_recompute_lowers_it() -> None:
    """Model FLOPs (what a paper's MFU counts) apart from executed FLOPs (recompute counted as work): the same
    efficiency gives an MFU 3/4 as high under full recompute, and the compute hours follow the executed work."""
    arch = sizing.PRESETS["llama-2-70b"]
    model = sizing.model_flops(arch, 4096, 10**12)
    assert model == pytest.approx(sizing.flops_per_token(arch, 4096).total * 10**12)
    full = sizing.executed_flops(arch, 4096, 10**12, "full")
    assert full == pytest.approx(model * 8 / 6)
    eff = sizing.compute_efficiency(arch.hidden, tp=8)
    mfu = sizing.layout_mfu(eff * model / full, 8, 8, "nvlink", 1)
    s = sizing.schedule(model, 512, 312, mfu, 1, 8, 0, TIER, 0.0)
    assert mfu.mfu == pytest.approx(eff * 3 / 4)
    assert s.compute_hours == pytest.approx(full / (512 * 312e12 * eff) / 3600)


def test_checkpoint_writes_rework_and_restores_add_up_to_the_wall_time() -> None:
    mfu = sizing.layout_mfu(0.4, 8, 8, "nvlink", 256)
    s = sizing.schedule(1e24, 2048, 312, mfu, 1, 8, 14 * 10**12, TIER, 256 / 2000)
    assert s.write_seconds == pytest.approx(14e12 / (10e9 / 8)) and s.restore_seconds == s.write_seconds
    assert s.checkpoint_write_hours == pytest.approx(s.compute_hours / s.interval_hours * s.write_seconds / 3600)
    total = s.compute_hours + s.pipeline_bubble_hours + s.checkpoint_write_hours + s.expected_rework_hours \
        + s.restore_hours
    assert s.wall_hours == pytest.approx(total)
    never = sizing.schedule(1e24, 2048, 312, mfu, 1, 8, 14 * 10**12, TIER, 10.0)  # interruptions outpace progress
    assert never.wall_hours == NEVER_HOURS
    assert s.finishes and not never.finishes


def test_foundation_1t_writes_checkpoints_to_cpfs_and_counts_every_overhead() -> None:
    plan = plan_located(load("examples/foundation-1t.yaml"))
    k, s = plan.checkpoints, plan.schedule
    assert s is not None and k.tier == "cpfs" and k.directory == "/mnt/shared/checkpoints/"
    assert k.write_seconds < 15 * 60 and k.restore_seconds < 15 * 60  # 12.8 TiB at CPFS's 32 GB/s, not OSS's 10 Gbit/s
    assert s.wall_hours == pytest.approx(s.compute_hours + s.pipeline_bubble_hours + s.checkpoint_write_hours
                                         + s.expected_rework_hours + s.restore_hours, abs=0.05)
    assert s.wall_hours <= 90 * 24 and plan.cost.run_total == pytest.approx(
        plan.cost.total_per_hour * s.wall_hours, rel=1e-3)
    # docs/sizing.md section 8 quotes these figures: keep them the tool's (review P3-16)
    doc = (Path(__file__).resolve().parents[1] / "docs" / "sizing.md").read_text()
    assert f"on CPFS {s.wall_hours / 24:.1f}" in doc and f"takes {round(k.write_seconds / 60)} minutes to CPFS" in doc
    data = json.loads(plan.to_json())["schedule"]
    assert {"compute_hours", "pipeline_bubble_hours", "checkpoint_write_hours", "expected_rework_hours",
            "restore_hours", "wall_hours"} <= set(data)
    env = dict(launch_env(plan))
    assert env["TRAINSTACK_CHECKPOINT_DIR"] == "/mnt/shared/checkpoints/"
    assert env["TRAINSTACK_CHECKPOINT_OSS"] == f"oss://{k.bucket}/{k.prefix}"
    files = render(plan)
    # rank 0 copies the checkpoints to OSS with the role's STS credentials (docs/bootstrap.md), not ossutil's
    # EcsRamRole mode, which cannot read the metadata service in hardened mode
    assert "exec setsid /usr/local/bin/trainstack-ckpt-sync" in files["node-init.sh"]
    assert "--mode EcsRamRole" not in files["node-init.sh"] and "ossutil sync" not in files["node-init.sh"]
    assert len(userdata.ecs_user_data_bytes(files["node-init.sh"])) <= 16 * 1024  # the ECS user data limit


def test_foundation_1t_on_oss_alone_misses_the_deadline_and_says_so() -> None:
    spec = load("examples/foundation-1t.yaml").spec
    data = spec.model_dump(mode="json", exclude_none=True)
    data["storage"] = {"shared": "none"}
    data["compute"]["nodes"] = 256
    data["compute"].pop("max_nodes", None)
    data["budget"]["max_days"] = 60  # 256 nodes writing their checkpoints to OSS take ~81 days
    plan = make_plan(type(spec).model_validate(data), CATALOG)
    assert plan.checkpoints.tier == "oss" and plan.checkpoints.restore_seconds > 1800
    assert plan.schedule is not None and plan.schedule.wall_hours > 60 * 24
    (missed,) = [w for w in plan.warnings if isinstance(w, warns.DeadlineMissed)]
    assert missed.wall_hours == pytest.approx(plan.schedule.wall_hours, abs=0.01) and missed.nodes == 256
    assert missed.checkpoint_write_hours > 0 and missed.bare_hours < missed.wall_hours and missed.fixed_nodes
