"""The training-setup combinations that cannot run (QLoRA with fp8 or fp32, a paged optimizer in full training, a
pure-bf16 optimizer under a precision without bf16 weights): the one home of each rule, its code and its message.

The spec check (:mod:`generator.plan.check`) and ``trainstack estimate`` (:mod:`generator.estimate`) both call
:func:`training_conflicts`, so the same bad input gets the same code and message from both; each adds the hint in
its own words (the spec's fields, or the command line's flags). Standard library only, like
:mod:`generator.spec.defaults`, so the estimate imports no pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from generator.errors import Problem
from generator.spec import codes

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


def training_conflicts(method: str, precision: str, optimizer: str, paged_optimizer: bool) -> list[Conflict]:
    """Every refused combination of the fine-tuning method (``full``, ``lora``, ``qlora``), the precision, the
    optimizer and the paged optimizer, in a fixed order."""
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
    if paged_optimizer and method == "full":
        found.append(
            Conflict(
                codes.PAGED_OPTIMIZER_FULL.code,
                ("model", "finetune", "paged_optimizer"),
                "--paged-optimizer",
                "a paged optimizer pages LoRA/QLoRA adapter optimizer states (bitsandbytes paged "
                "optimizers); full training keeps its optimizer states on the GPUs",
                "set finetune.method: lora or qlora, or remove paged_optimizer",
                "add --lora-rank (e.g. 16), or drop --paged-optimizer for full training",
                (("method", method), ("paged_optimizer", paged_optimizer)),
            )
        )
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
