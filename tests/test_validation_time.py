"""Time validation rows (benchmarks/validation_time.py) hold within their tolerances, and the table in
docs/sizing.md is exactly what benchmarks/validate_sizing.py generates from every validation_*.py module."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KEYS = {"quantity", "published", "trainstack", "unit", "tolerance", "source"}


@pytest.mark.parametrize("row", _module("validation_time").rows(), ids=lambda r: r["quantity"])
def test_every_time_row_is_within_its_tolerance(row: dict) -> None:
    assert KEYS <= set(row) and "http" in row["source"]
    assert 0 < row["tolerance"] <= 0.5
    assert abs(row["trainstack"] / row["published"] - 1) <= row["tolerance"], row


def test_the_rows_cover_the_published_runs_the_issue_names() -> None:
    text = " ".join(r["quantity"] + r["source"] for r in _module("validation_time").rows())
    for needle in ("llama-2-70b", "Table 2", "gpt3-175b", "megatron-1t", "2104.04473", "GPT-3 175B training FLOPs",
                   "BLOOM"):
        assert needle in text, needle


def test_the_docs_table_is_what_the_script_generates() -> None:
    script = _module("validate_sizing")
    table = script.markdown_table(script.all_rows())  # every validation_*.py module that exists
    docs = (ROOT / "docs" / "sizing.md").read_text(encoding="utf-8")
    assert script.docs_section(docs) == table, "run: python benchmarks/validate_sizing.py --write-docs"
    assert all(script.within(r) for r in script.all_rows())
