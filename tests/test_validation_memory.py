"""Every memory and shape validation row (benchmarks/validation_memory.py) holds within its stated tolerance: the
ZeRO paper's Table 1, Megatron-LM's distributed-optimizer table, DeepSpeed's estimators, parameter counts of
published shapes, and published fit facts (QLoRA 65B on one 48 GB GPU, BLOOM's, Llama 3's, DeepSeek-V3's and
Megatron-Core's Mixtral layouts fit; torchtitan's FSDP runs fit and its out-of-memory layouts are refused)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _module():
    spec = importlib.util.spec_from_file_location("validation_memory", ROOT / "benchmarks" / "validation_memory.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["validation_memory"] = module
    spec.loader.exec_module(module)
    return module


VALIDATION = _module()
ROWS = VALIDATION.rows()


def test_rows_have_the_shared_interface() -> None:
    assert len(ROWS) >= 20
    for row in ROWS:
        assert set(row) == {"quantity", "published", "trainstack", "unit", "tolerance", "source"}
        assert isinstance(row["quantity"], str) and isinstance(row["unit"], str) and row["unit"]
        assert isinstance(row["published"], float) and isinstance(row["trainstack"], float)
        assert 0 <= row["tolerance"] < 0.2
        assert "http" in row["source"] and "../shared" not in row["source"]
    assert len({r["quantity"] for r in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r["quantity"][:60] for r in ROWS])
def test_row_within_tolerance(row: dict) -> None:
    p, t = row["published"], row["trainstack"]
    assert VALIDATION.within(row), f"{row['quantity']}: published {p} vs trainstack {t} ({row['unit']})"


def test_rows_cover_the_issue_list() -> None:
    text = " ".join(r["quantity"] for r in ROWS)
    for needle in ("ZeRO", "Megatron distributed optimizer", "DeepSpeed ZeRO-3", "DeepSpeed ZeRO-2", "QLoRA",
                   "Megatron-Turing", "BLOOM", "Llama 3 405B", "Llama 2 7B", "DeepSeek-V3 on 2048 H800",
                   "Mixtral 8x7B on 64", "Mixtral 8x22B on 128", "LLaMa 70B on 64 A100"):
        assert needle in text, needle
