"""The exact plan JSON (generator/plan/exact_json.py): every plan reads back as the same object, field types included,
on every example and on hypothesis-generated plans; a malformed document is refused with the field it breaks, and
nothing but the plan's own dataclasses and the listed warning and rejection classes is ever built."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from generator import api
from generator.plan import exact_json
from generator.plan.exact_json import PlanReadError
from generator.plan.model import Plan
from tests.test_planner_properties import SETTINGS, plan_or_none, spec_dicts, valid_spec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def _same(plan: Plan) -> None:
    text = exact_json.write(plan)
    back = exact_json.read(text)
    assert back == plan
    assert exact_json.write(back) == text  # int stays int, float stays float: the same bytes again
    assert back.to_json() == plan.to_json()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_reads_back_as_the_same_plan(example: Path) -> None:
    _same(api.plan(example))


@settings(max_examples=40, **SETTINGS)
@given(spec_dicts())
def test_generated_plans_read_back_as_the_same_plan(data: dict[str, Any]) -> None:
    plan = plan_or_none(valid_spec(data))
    if plan is not None:
        _same(plan)


def test_the_examples_cover_warnings_and_rejections() -> None:
    plans = [api.plan(e) for e in EXAMPLES]
    assert any(p.warnings for p in plans) and any(c.reason for p in plans for c in p.candidates)
    assert any(p.dlc for p in plans) and any(p.schedule for p in plans)


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    data = json.loads(exact_json.write(api.plan(ROOT / "examples" / "pretrain-70b.yaml")))
    assert data["plan"]["warnings"] and any(c["reason"] for c in data["plan"]["candidates"])
    return data


def _broken(doc: dict[str, Any], change: Any) -> str:
    copy = json.loads(json.dumps(doc))
    change(copy["plan"])
    return json.dumps(copy)


BREAKS = {
    "str in an int field": (lambda p: p["compute"].update(nodes="16"), "plan.compute.nodes"),
    "bool in an int field": (lambda p: p["compute"].update(nodes=True), "plan.compute.nodes"),
    "float in an int field": (lambda p: p["compute"].update(nodes=16.0), "plan.compute.nodes"),
    "int in a str field": (lambda p: p.update(region=1), "plan.region"),
    "object for a tuple": (lambda p: p.update(zones={"a": 1}), "plan.zones"),
    "short pair": (lambda p: p.update(tags=[["team"]]), "plan.tags[0]"),
    "missing field": (lambda p: p["compute"].pop("tp"), "plan.compute"),
    "extra field": (lambda p: p["compute"].update(extra=1), "plan.compute"),
    "None for a required object": (lambda p: p.update(model=None), "plan.model"),
    "unknown warning code": (lambda p: p["warnings"][0].update(code="TSW999"), "plan.warnings[0]"),
    "a rejection code as a warning": (
        lambda p: p["warnings"][0].update(code=next(c["reason"]["code"] for c in p["candidates"] if c["reason"])),
        "plan.warnings[0]",
    ),
    "a class named by the document": (
        lambda p: p["warnings"].append({"py/object": "os.system", "args": ["true"]}),
        "plan.warnings",
    ),
    "warning fields of another class": (lambda p: p["warnings"][0].update(fields={}), "plan.warnings[0]"),
}


@pytest.mark.parametrize("name", BREAKS)
def test_a_malformed_document_is_refused_naming_the_field(doc: dict[str, Any], name: str) -> None:
    change, where = BREAKS[name]
    with pytest.raises(PlanReadError, match=rf"^{__import__('re').escape(where)}"):
        exact_json.read(_broken(doc, change))


@pytest.mark.parametrize(
    "text",
    [b"", b"\xff\xfe", b"[]", b'{"plan": {}}', b"NaN", b'{"format": "x", "codec": 1, "schema": 2, "plan": {}}'],
)
def test_what_is_not_an_exact_plan_document_is_refused(text: bytes) -> None:
    with pytest.raises(PlanReadError):
        exact_json.read(text)


def test_another_schema_or_codec_is_refused(doc: dict[str, Any]) -> None:
    for field, value in (("schema", doc["schema"] + 1), ("codec", doc["codec"] + 1)):
        with pytest.raises(PlanReadError, match=rf"{field} {value}\b"):
            exact_json.read(json.dumps({**doc, field: value}))


def test_write_refuses_what_would_not_read_back_equal_naming_the_field() -> None:
    plan = api.plan(ROOT / "examples" / "finetune-7b.yaml")
    compute = plan.compute
    rank = dataclasses.replace(compute.ranks[0], rank=0.0)
    for bad, where in (
        (dataclasses.replace(plan, zones=list(plan.zones)), "plan.zones"),  # a list where a tuple is declared
        (dataclasses.replace(plan, compute=dataclasses.replace(compute, nodes=float(compute.nodes))), "plan.compute.nodes"),
        (dataclasses.replace(plan, compute=dataclasses.replace(compute, memory_gib=float("nan"))), "plan.compute.memory_gib"),
        (dataclasses.replace(plan, compute=dataclasses.replace(compute, nodes=True)), "plan.compute.nodes"),
        (dataclasses.replace(plan, compute=dataclasses.replace(compute, ranks=(rank, *compute.ranks[1:]))),
         "plan.compute.ranks[0].rank"),
    ):
        with pytest.raises(ValueError, match=rf"^{__import__('re').escape(where)}: "):
            exact_json.write(bad)
