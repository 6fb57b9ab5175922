"""A price borrowed from another GPU's rate (H20, L20, Blackwell: the A100-80G's per-GPU rate scaled) never decides
between GPU families: when a type of another GPU priced on its own fits, borrowed ones rank after it, and the
decisions say so."""

from __future__ import annotations

from generator.catalog import load_catalog
from generator.plan.planner import make_plan
from generator.spec.model import Spec

CATALOG = load_catalog()


def _plan(region: str, **model: object):
    doc = {
        "name": "price-run",
        "region": region,
        "model": {"preset": "llama-2-70b", "tokens": "300B", **model},
    }
    return make_plan(Spec.model_validate(doc), CATALOG)


def test_list_priced_gpu_ranks_before_estimated_ones_of_other_families() -> None:
    checked = 0
    for region in ("cn-wulanchabu", "cn-shanghai", "cn-beijing"):
        plan = _plan(region)
        fitting = [c for c in plan.candidates if c.nodes]
        types = {c.instance_type: CATALOG.instance(c.instance_type) for c in fitting}
        chosen = types[plan.compute.instance_type]
        own = {t.gpu for t in types.values() if t.price_borrowed_from is None}
        borrowed = [
            c
            for c in fitting
            if types[c.instance_type].price_borrowed_from is not None
            and types[c.instance_type].gpu != chosen.gpu
        ]
        if own and borrowed:
            checked += 1
            assert chosen.price_borrowed_from is None
            assert all("does not decide between GPU families" in c.verdict for c in borrowed)
            why = next(d.reason for d in plan.decisions if d.topic == "instance type")
            assert "which do not decide between GPU families" in why
    assert checked, "no region offers both own-priced and borrowed-price GPU families to compare"


def test_borrowed_prices_are_read_from_the_catalog() -> None:
    assert CATALOG.instance("ecs.gn8v-8x.48xlarge").price_borrowed_from == "A100-80G"  # H20
    assert (
        CATALOG.instance("ecs.ebmgn7ex.32xlarge").price_borrowed_from is None
    )  # A100 priced as its ECS sibling
    assert CATALOG.instance("ecs.gn7e-c16g1.32xlarge").price_borrowed_from is None  # a list price


def test_h100_h800_h200_get_a_sourced_answer_and_compare_in_estimate() -> None:
    """They are not offered by Alibaba Cloud (no source names them for ECS or Lingjun): `catalog --gpu` answers like
    for Ascend, and `estimate --gpu` sizes with their published figures, marked for comparison only."""
    from click.testing import CliRunner

    from generator.cli import main

    for name, memory in (("H100", 80), ("H800", 80), ("H200", 141)):
        a = CATALOG.unavailable_accelerator(name)
        assert a is not None and a.memory_gib == memory and a.bf16_tflops == 989
        r = CliRunner().invoke(
            main, ["estimate", "--preset", "llama-2-7b", "--gpu", name, "--tokens", "1B", "--json"]
        )
        assert r.exit_code == 0, r.output
        import json

        d = json.loads(r.output)
        assert d["gpu"]["peak_tflops"] == 989 and d["gpu"]["memory_bytes"] == memory * 2**30
        assert any(w["code"] == "TSE103" for w in d["warnings"])  # GpuNotOffered
    r = CliRunner().invoke(main, ["estimate", "--params", "7B", "--gpu", "h800-sxm"])
    assert r.exit_code == 0 and "comparison only" in r.output
