"""Interleaved pipeline stages (parallelism.virtual_stages, estimate --vpp): the bubble each schedule really has,
(pp-1)/(v m) (Narayanan et al. 2021, PTD-P, Sec. 2.2.2), and the first stage's extra activations,
L (1 + (p-1)/(p v)) layer-activations (Korthikanti et al. 2022, Sec. 4.2.3)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from generator import sizing
from generator.catalog import load_catalog
from generator.plan.planner import PlanningError, make_plan
from generator.spec.model import Spec

TIER = sizing.Tier("t", 100.0, 100.0)
MFU = sizing.LayoutMfu(0.4, ())


def test_the_bubble_shrinks_with_the_virtual_stages() -> None:
    plain = sizing.schedule(1e23, 1024, 312, MFU, 8, 32, 0, TIER, 0.0)
    inter = sizing.schedule(1e23, 1024, 312, MFU, 8, 32, 0, TIER, 0.0, virtual_stages=4)
    assert plain.pipeline_bubble_hours == pytest.approx(plain.compute_hours * 7 / 32)
    assert inter.pipeline_bubble_hours == pytest.approx(plain.compute_hours * 7 / (4 * 32))
    assert inter.bubble_fraction == pytest.approx(7 / (4 * 32 + 7))
    assert any("(interleaved)" in n for n in inter.notes)


def test_interleaving_stores_more_activations_on_the_first_stage() -> None:
    arch = sizing.PRESETS["llama-2-70b"]

    def acts(vpp: int) -> sizing.MemoryBreakdown:
        return sizing.per_gpu_memory(
            sizing.TrainingSetup(
                arch=arch,
                seq_len=4096,
                micro_batch=1,
                tp=8,
                pp=4,
                dp=4,
                sequence_parallel=True,
                recompute="selective",
                vpp=vpp,
            )
        )

    one, five = acts(1), acts(5)
    per_layer = Fraction(4096 * 8192 * 34, 8)
    assert five.activations - one.activations == pytest.approx(
        float(20 * 4 * per_layer * Fraction(3, 20)), rel=1e-6
    )
    with pytest.raises(sizing.SizingError, match="pp x vpp dividing the 80 layers"):
        acts(3)


def _plan(**parallelism: object):
    doc = {
        "name": "vpp-run",
        "region": "cn-wulanchabu",
        "model": {"preset": "llama-2-70b", "tokens": "300B", "global_batch_tokens": "4Mi"},
        "parallelism": {"tensor": 8, **parallelism},
        "compute": {"nodes": 16},
    }
    return make_plan(Spec.model_validate(doc), load_catalog())


def test_a_plan_with_virtual_stages_counts_the_smaller_bubble() -> None:
    plain, inter = _plan(pipeline=4), _plan(pipeline=4, virtual_stages=5)
    assert inter.compute.vpp == 5 and plain.compute.vpp == 1
    assert inter.schedule.pipeline_bubble_hours == pytest.approx(
        plain.schedule.pipeline_bubble_hours / 5, rel=0.01
    )
    assert inter.sizing.activations > plain.sizing.activations
    why = next(d.reason for d in inter.decisions if d.topic == "parallelism")
    assert "interleaved pipeline bubble" in why and "v=5" in why


def test_virtual_stages_that_cannot_split_the_layers_are_refused() -> None:
    with pytest.raises(PlanningError, match="virtual_stages") as e:
        _plan(pipeline=4, virtual_stages=3)
    assert "degree times 3 divides the model's 80 layers" in str(e.value)
