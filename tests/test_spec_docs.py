"""docs/spec.md, the examples and the JSON Schema stay in step with the spec models (generator/spec/model.py).

* every field of :class:`generator.spec.model.Spec`, walked recursively, appears in docs/spec.md as ```dotted.path```
  (items of a list of mappings as ``waivers[].rule``), so adding a field without documenting it fails;
* every field row of the reference tables names a field that exists, and its Default column agrees with the model;
* the complete spec examples in docs/spec.md and every examples/*.yaml load and pass the catalog checks;
* ``json_schema()`` is a valid JSON Schema (checked with ``jsonschema`` when it is installed, structurally
  otherwise) and the examples validate against it.
"""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from generator.spec.loader import load_file, load_text, parse_yaml
from generator.spec.model import Spec, json_schema

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "spec.md"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


# --------------------------------------------------------------------------------------------------- model walk


def _models_in(annotation: object) -> tuple[type[BaseModel] | None, bool]:
    """The pydantic model inside an annotation (Optional[M], tuple[M, ...], Annotated[...]) and whether it is
    reached through a list/tuple."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    origin = typing.get_origin(annotation)
    is_seq = origin in (tuple, list, set, frozenset)
    for arg in typing.get_args(annotation):
        if arg is Ellipsis:
            continue
        model, inner_seq = _models_in(arg)
        if model is not None:
            return model, is_seq or inner_seq
    return None, False


def field_paths(model: type[BaseModel] = Spec, prefix: str = "") -> dict[str, object]:
    """Every field path of the model tree -> its pydantic FieldInfo."""
    out: dict[str, object] = {}
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        out[path] = info
        sub, is_seq = _models_in(info.annotation)
        if sub is not None:
            out.update(field_paths(sub, f"{path}[]." if is_seq else f"{path}."))
    return out


def is_block(info: object) -> bool:
    return _models_in(info.annotation)[0] is not None  # type: ignore[attr-defined]


def test_walk_finds_nested_fields() -> None:
    paths = field_paths()
    for expected in ("name", "model.architecture.layers", "model.finetune.lora_rank", "storage.dataset.source",
                     "waivers[].rule", "spot.price_ratio", "tags"):
        assert expected in paths
    assert len(paths) > 80


# --------------------------------------------------------------------------------------------------- the document


@pytest.fixture(scope="module")
def doc() -> str:
    assert DOC.is_file(), "docs/spec.md is missing"
    return DOC.read_text(encoding="utf-8")


def table_rows(text: str) -> list[tuple[str, list[str]]]:
    """Rows of the reference tables (first cell a backticked field path): (path, all cells). A field may have a
    row in its parent's table and one in its own section (``tags``); every row is checked."""
    rows: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        m = re.match(r"^\|\s*`([A-Za-z_][A-Za-z0-9_.\[\]]*)`\s*\|", line)
        if not m:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5:
            continue  # not a field table (e.g. the domain-rules table)
        rows.append((m.group(1), cells))
    return rows


def test_every_field_is_documented(doc: str) -> None:
    missing = [p for p in field_paths() if f"`{p}`" not in doc]
    assert not missing, ("fields of generator/spec/model.py not documented in docs/spec.md (add a table row with the "
                         f"path in backticks): {', '.join(missing)}")


def test_every_field_has_a_table_row(doc: str) -> None:
    rows = {path for path, _ in table_rows(doc)}
    missing = [p for p in field_paths() if p not in rows]
    assert not missing, f"fields without a row in a docs/spec.md field table: {', '.join(missing)}"


def test_documented_fields_exist(doc: str) -> None:
    paths = field_paths()
    stale = [p for p, _ in table_rows(doc) if p not in paths]
    assert not stale, f"docs/spec.md documents fields that generator/spec/model.py does not have: {', '.join(stale)}"


def _plain(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def test_documented_defaults_match_the_model(doc: str) -> None:
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    paths = field_paths()
    wrong = []
    for path, cells in table_rows(doc):
        info = paths.get(path)
        if info is None:
            continue  # reported by test_documented_fields_exist
        cell = cells[2]
        if info.is_required():  # type: ignore[attr-defined]
            if cell != "required":
                wrong.append(f"{path}: required field, Default column says {cell!r}")
            continue
        if cell == "required":
            wrong.append(f"{path}: documented as required but the model has a default")
            continue
        if is_block(info):
            continue  # a nested mapping; its own fields carry the defaults
        m = re.fullmatch(r"`([^`]*)`", cell)
        if not m:
            wrong.append(f"{path}: Default column should be `yaml-value` or required, got {cell!r}")
            continue
        documented = yaml.load(m.group(1))
        actual = _plain(info.get_default(call_default_factory=True))  # type: ignore[attr-defined]
        if documented != actual or isinstance(documented, bool) != isinstance(actual, bool):
            wrong.append(f"{path}: docs say {m.group(1)}, the model's default is {actual!r}")
    assert not wrong, "docs/spec.md defaults out of step:\n" + "\n".join(wrong)


def test_doc_has_a_section_per_block(doc: str) -> None:
    headings = {h.strip().lower() for h in re.findall(r"^#{2,3} (.+)$", doc, flags=re.MULTILINE)}
    for block in ("top level", "model", "model.architecture", "model.finetune", "parallelism", "compute", "network",
                  "storage", "storage.dataset", "checkpoints", "spot", "budget", "tags", "waivers", "units",
                  "domain rules trainstack enforces"):
        assert block in headings, f"docs/spec.md has no '{block}' section"


def _doc_specs(doc: str) -> list[str]:
    """YAML blocks of docs/spec.md that are whole specs (they have a top-level region)."""
    blocks = re.findall(r"```yaml\n(.*?)```", doc, flags=re.DOTALL)
    return [b for b in blocks if re.search(r"^region:", b, flags=re.MULTILINE)]


def test_doc_examples_are_valid_specs(doc: str) -> None:
    from generator.catalog import load_catalog
    from generator.plan import check as validate

    specs = _doc_specs(doc)
    assert specs, "docs/spec.md should open with a complete example spec"
    catalog = load_catalog()
    for text in specs:
        located = load_text(text, "docs/spec.md")
        problems = validate.check(located.spec, catalog)
        assert not problems, [p.message for p in problems]


def test_doc_mentions_the_error_format_and_schema(doc: str) -> None:
    assert "FILE:LINE:COL: field.path: message" in doc
    assert "trainstack schema" in doc
    assert "# yaml-language-server: $schema=" in doc
    assert re.search(r"exit code is \*\*2\*\*", doc)


# --------------------------------------------------------------------------------------------------- examples


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_loads(path: Path) -> None:
    located = load_file(path)
    assert located.spec.name


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_passes_catalog_checks(path: Path) -> None:
    from generator.catalog import load_catalog
    from generator.plan import check as validate

    located = load_file(path)
    assert validate.check(located.spec, load_catalog()) == []


def test_there_are_examples() -> None:
    assert EXAMPLES, "examples/*.yaml is empty"


# --------------------------------------------------------------------------------------------------- JSON Schema


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        for v in node.values():
            found += _refs(v)
        return found
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_schema_structure() -> None:
    """Checks that hold without the jsonschema package."""
    schema = json_schema()
    json.loads(json.dumps(schema))  # plain JSON: no tuples, sets or objects
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object"
    assert schema.get("additionalProperties") is False
    assert set(schema["properties"]) == set(Spec.model_fields)
    assert set(schema.get("required", [])) == {n for n, f in Spec.model_fields.items() if f.is_required()}
    defs = schema.get("$defs", {})
    for ref in _refs(schema):
        assert ref.startswith("#/$defs/"), ref
        assert ref[len("#/$defs/"):] in defs, f"dangling $ref {ref}"
    for name, sub in defs.items():
        if sub.get("type") == "object":
            assert sub.get("additionalProperties") is False, f"{name} should forbid unknown keys"


def test_schema_is_valid_json_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json_schema()
    jsonschema.validators.validator_for(schema).check_schema(schema)


def _validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json_schema()
    return jsonschema.validators.validator_for(schema)(schema)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_matches_schema(path: Path) -> None:
    validator = _validator()
    data, _ = parse_yaml(path.read_text(encoding="utf-8"), str(path))
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]
    assert not errors, errors


def test_doc_examples_match_schema(doc: str) -> None:
    validator = _validator()
    for text in _doc_specs(doc):
        data, _ = parse_yaml(text, "docs/spec.md")
        errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]
        assert not errors, errors


def test_schema_rejects_what_the_loader_rejects() -> None:
    """A few clear mistakes: the editor must flag them as trainstack does."""
    validator = _validator()
    bad = [
        {"name": "ab", "region": "cn-hangzhou", "model": {"parameters": "7B"}, "compute": {"nodez": 2}},
        {"name": "abc", "region": "cn-hangzhou", "model": {"parameters": "7B"}, "spot": {"strategy": "cheap"}},
        {"name": "abc", "model": {"parameters": "7B"}},
        {"name": "abc", "region": "cn-hangzhou", "model": {"parameters": "7B"}, "storage": {"capacity": "12T"}},
    ]
    for data in bad:
        assert list(validator.iter_errors(data)), data



def test_doc_lists_every_preset_sizing_accepts(doc: str) -> None:
    """model.preset's row lists exactly sizing.PRESETS, in order (review P3-15)."""
    from generator.sizing import PRESETS

    row = next(line for line in doc.splitlines() if line.startswith("| `model.preset` |"))
    allowed = row.split("|")[2]
    assert re.findall(r"`([^`]+)`", allowed) == list(PRESETS)


def test_trainstack_schema_gives_presets_as_an_enum() -> None:
    from generator import api
    from generator.sizing import PRESETS

    preset = api.schema()["$defs"]["ModelSpec"]["properties"]["preset"]
    assert {"type": "string", "enum": list(PRESETS)} in preset["anyOf"] and {"type": "null"} in preset["anyOf"]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(api.schema())
    validator = jsonschema.Draft202012Validator(api.schema())
    assert not list(validator.iter_errors({"name": "demo", "region": "cn-hangzhou", "model": {"preset": "llama-3-405b"}}))
    assert list(validator.iter_errors({"name": "demo", "region": "cn-hangzhou", "model": {"preset": "llama-9"}}))
