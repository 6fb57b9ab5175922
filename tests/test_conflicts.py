"""The training-setup rules with one home (generator/spec/conflicts.py): a spec and `trainstack estimate` given the
same bad combination get the same code and the same message, the spec at its field with file and line, the
estimate at its flag, both exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from generator import sizing
from generator.cli import main
from generator.errors import SpecErrors
from generator.estimate import EstimateError, estimate
from generator.plan.pipeline import load
from generator.spec import codes, conflicts
from generator.spec.conflicts import training_conflicts

# (spec model fields, estimate flags, the code both report)
CASES = [
    (
        "  finetune: {method: qlora, lora_rank: 16}\n  precision: fp8\n",
        {"qlora": True, "lora_rank": 16, "precision": "fp8"},
        codes.QLORA_FP8.code,
    ),
    (
        "  finetune: {method: qlora, lora_rank: 16}\n  precision: fp32\n",
        {"qlora": True, "lora_rank": 16, "precision": "fp32"},
        codes.QLORA_FP32.code,
    ),
    ("  finetune: {paged_optimizer: true}\n", {"paged_optimizer": True}, codes.PAGED_OPTIMIZER_MEGATRON.code),
    (
        (
            "  finetune: {paged_optimizer: true}\nparallelism:\n  framework: deepspeed\n  zero_stage: 2\n"
            "  offload: optimizer\n"
        ),
        {"paged_optimizer": True, "framework": "deepspeed", "zero": 2, "offload": "optimizer", "gpus": 8},
        codes.PAGED_OPTIMIZER_OFFLOAD.code,
    ),
    (
        "  optimizer: adamw-bf16\n  precision: fp16\n",
        {"optimizer": "adamw-bf16", "precision": "fp16"},
        codes.PURE_BF16_PRECISION.code,
    ),
]

SPEC = """name: conflict
region: cn-wulanchabu
model:
  preset: llama-2-7b
{model}compute:
  gpu: A100-80G
  nodes: 1
"""


def _one(code: str) -> conflicts.Conflict:
    found = [c for c in training_conflicts(*ARGS[code]) if c.code == code]
    assert len(found) == 1
    return found[0]


ARGS = {
    codes.QLORA_FP8.code: ("qlora", "fp8", "adamw", False),
    codes.QLORA_FP32.code: ("qlora", "fp32", "adamw", False),
    codes.PAGED_OPTIMIZER_MEGATRON.code: ("full", "bf16", "adamw", True),
    codes.PAGED_OPTIMIZER_OFFLOAD.code: ("full", "bf16", "adamw", True, "deepspeed", 2, "optimizer"),
    codes.PURE_BF16_PRECISION.code: ("full", "fp16", "adamw-bf16", False),
}


@pytest.mark.parametrize(("model", "flags", "code"), CASES, ids=[c[2] for c in CASES])
def test_the_spec_and_the_estimate_report_the_same_code_and_message(
    tmp_path: Path, model: str, flags: dict, code: str
) -> None:
    conflict = _one(code)
    path = tmp_path / "conflict.yaml"
    path.write_text(SPEC.format(model=model))
    with pytest.raises(SpecErrors) as spec_err:
        load(path)
    problems = [p for p in spec_err.value.problems if p.code == code]
    assert len(problems) == 1, [p.code for p in spec_err.value.problems]
    problem = problems[0]
    assert problem.path == conflict.field and problem.fields == conflict.fields
    assert tuple(dict(problem.fields)) == codes.code_of(problem).fields  # the fields docs/codes.md lists
    assert (problem.message, problem.hint) == (conflict.message, conflict.spec_hint)
    assert problem.file.endswith("conflict.yaml") and problem.line > 0
    with pytest.raises(EstimateError) as est_err:
        estimate(params=7_000_000_000, **flags)
    assert est_err.value.code == code and est_err.value.exit_code == 2
    assert conflict.message in str(est_err.value) and str(est_err.value).startswith(conflict.flag)


def test_the_cli_exits_2_with_the_shared_message() -> None:
    result = CliRunner().invoke(
        main, ["estimate", "--params", "7B", "--optimizer", "adamw-bf16", "--precision", "fp16"]
    )
    assert result.exit_code == 2
    assert _one(codes.PURE_BF16_PRECISION.code).message in result.output


def test_good_combinations_pass_and_the_bf16_precisions_match_the_sizing_model() -> None:
    assert conflicts.BF16_WEIGHT_PRECISIONS == sizing.precision.SIXTEEN_BIT_STATES
    assert conflicts.PURE_BF16_OPTIMIZERS == tuple(sorted(sizing.precision.PURE_16BIT_OPTIMIZERS))
    for method in ("full", "lora", "qlora"):
        assert training_conflicts(method, "bf16", "adamw", method != "full") == []
    assert training_conflicts("full", "fp8", "adamw-bf16", False) == []  # fp8 keeps bf16 weights

    # a paged optimizer in full training runs under FSDP and DeepSpeed (bitsandbytes), not under Megatron-LM
    for framework, zero in (("fsdp", 3), ("deepspeed", 2), ("auto", 2), ("zero-paper", 1)):
        assert training_conflicts("full", "bf16", "adamw", True, framework, zero) == []


def test_the_paged_rule_resolves_auto_as_the_sizing_model_does() -> None:
    for framework in sizing.FRAMEWORK_CHOICES:
        for zero in range(4):
            found = {c.code for c in training_conflicts("full", "bf16", "adamw", True, framework, zero)}
            megatron = sizing.resolve_framework(framework, zero) == "megatron"
            assert (codes.PAGED_OPTIMIZER_MEGATRON.code in found) == megatron, (framework, zero)


def test_the_sizing_guard_refuses_what_the_paged_rule_refuses_with_its_message() -> None:
    # one rule: sizing's guard for callers of the sizing API asks spec/conflicts
    for framework in ("megatron", "fsdp", "deepspeed"):
        for offload in ("none", "optimizer"):
            for lora in (False, True):
                found = conflicts.paged_conflicts("lora" if lora else "full", True, framework, 2, offload)
                if not found:
                    sizing.check_paged(framework, 2, offload, lora)
                    continue
                with pytest.raises(sizing.SizingError) as refused:
                    sizing.check_paged(framework, 2, offload, lora)
                assert str(refused.value).startswith(found[0].message), (framework, offload, lora)
