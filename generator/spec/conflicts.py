"""The training-setup combinations that cannot run (QLoRA with fp8 or fp32, a paged optimizer in full training under
Megatron-LM or with CPU offload, a pure-bf16 optimizer under a precision without bf16 weights): the one home of each
rule, its code and its message.

The spec check (:mod:`generator.plan.check`) and ``trainstack estimate`` (:mod:`generator.estimate`) both call
:func:`training_conflicts`, so the same bad input gets the same code and message from both; each adds the hint in
its own words (the spec's fields, or the command line's flags). Standard library only, like
:mod:`generator.spec.defaults`, so the estimate imports no pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from generator.errors import Problem
from generator.spec import codes, defaults

# Precisions whose stored weights and gradients are bf16 (fp8 keeps bf16 weights: Transformer Engine casts each GEMM's
# inputs). The same tuple as generator.sizing.precision.SIXTEEN_BIT_STATES, which tests/test_conflicts.py checks.
BF16_WEIGHT_PRECISIONS: Final = ("bf16", "fp8")
PURE_BF16_OPTIMIZERS: Final = ("adamw-bf16",)


@dataclass(frozen=True, slots=True)
class Conflict:
    """One refused combination: ``code`` (stable, ``TSS3..`` in :mod:`generator.spec.codes`, for tests and scripts),
    the spec field it is reported at, the estimate flag it is reported at, the shared message, a hint for each
    audience, and the values that conflict (the code's fields)."""

    code: str
    field: tuple[str, ...]
    flag: str
    message: str
    spec_hint: str
    flag_hint: str
    fields: tuple[tuple[str, object], ...] = ()

    def problem(self) -> Problem:
        """The spec check's problem: the field, the message, the spec's hint, the code and its fields."""
        return Problem(self.field, self.message, self.spec_hint, code=self.code, fields=self.fields)


def training_conflicts(
    method: str,
    precision: str,
    optimizer: str,
    paged_optimizer: bool,
    framework: str = defaults.FRAMEWORK,
    zero_stage: int = defaults.ZERO_STAGE,
    offload: str = defaults.OFFLOAD,
) -> list[Conflict]:
    """Every refused combination of the fine-tuning method (``full``, ``lora``, ``qlora``), the precision, the
    optimizer, the paged optimizer, the framework (``auto`` as generator.sizing.resolve_framework resolves it at
    ``zero_stage``) and the CPU offload, in a fixed order."""
    found: list[Conflict] = []
    if method == "qlora" and precision == "fp8":
        # QLoRA (Dettmers et al. 2023, arXiv 2305.14314, Sec. 3): the frozen base is stored in 4-bit NormalFloat and
        # dequantized to bf16 for each GEMM; there is no FP8 copy for Transformer Engine to use.
        found.append(
            Conflict(
                codes.QLORA_FP8.code,
                ("model", "precision"),
                "--precision",
                "QLoRA keeps its frozen base in 4-bit NF4 and computes in bf16, not FP8",
                "use model.precision: bf16 with finetune.method: qlora",
                "use --precision bf16 with --qlora",
                (("method", method), ("precision", precision)),
            )
        )
    if method == "qlora" and precision == "fp32":
        found.append(
            Conflict(
                codes.QLORA_FP32.code,
                ("model", "precision"),
                "--precision",
                "QLoRA trains adapters in bf16 over a 4-bit base; fp32 makes no sense here",
                "use model.precision: bf16",
                "use --precision bf16",
                (("method", method), ("precision", precision)),
            )
        )
    found += paged_conflicts(method, paged_optimizer, framework, zero_stage, offload)
    if optimizer in PURE_BF16_OPTIMIZERS and precision not in BF16_WEIGHT_PRECISIONS:
        found.append(
            Conflict(
                codes.PURE_BF16_PRECISION.code,
                ("model", "optimizer"),
                "--optimizer",
                f"{optimizer} keeps bf16 weights and moments with no fp32 master copy; it needs "
                f"precision bf16 (or fp8, whose stored weights are bf16), not {precision}",
                "use model.precision: bf16, or model.optimizer: adamw",
                "use --precision bf16, or --optimizer adamw",
                (("optimizer", optimizer), ("precision", precision)),
            )
        )
    return found


def paged_conflicts(
    method: str,
    paged_optimizer: bool,
    framework: str,
    zero_stage: int = defaults.ZERO_STAGE,
    offload: str = defaults.OFFLOAD,
) -> list[Conflict]:
    """A paged (bitsandbytes) optimizer in full training where none runs: under Megatron-LM, which builds its own
    optimizer, or with CPU offload, which steps the optimizer on the CPU (generator/sizing/paged.py). LoRA/QLoRA
    trainers (PEFT) run it whatever the framework field says."""
    if not paged_optimizer or method != "full":
        return []
    # generator.sizing.resolve_framework's rule for auto (tests/test_conflicts.py checks they agree)
    megatron = framework == "megatron" or (framework == "auto" and zero_stage <= 1)
    if megatron:
        return [
            Conflict(
                codes.PAGED_OPTIMIZER_MEGATRON.code,
                ("model", "finetune", "paged_optimizer"),
                "--paged-optimizer",
                "a paged optimizer is a bitsandbytes optimizer; Megatron-LM builds its own (FusedAdam in its "
                f"distributed optimizer) and takes none (framework {framework}, ZeRO stage {zero_stage})",
                "set parallelism.framework: fsdp or deepspeed, or remove paged_optimizer",
                "add --framework fsdp or deepspeed (with --zero 2 or 3 under auto), or drop --paged-optimizer",
                (("method", method), ("framework", framework), ("zero_stage", zero_stage)),
            )
        ]
    if offload != "none":
        return [
            Conflict(
                codes.PAGED_OPTIMIZER_OFFLOAD.code,
                ("model", "finetune", "paged_optimizer"),
                "--paged-optimizer",
                f"offload {offload} keeps the optimizer states on the host and steps them on the CPU; a paged "
                "optimizer pages GPU-resident states: use one of the two",
                "remove paged_optimizer, or set parallelism.offload: none",
                "drop --paged-optimizer, or --offload none",
                (("paged_optimizer", paged_optimizer), ("offload", offload)),
            )
        ]
    return []
