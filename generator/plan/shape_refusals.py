"""What the model's shape refuses (:mod:`generator.plan.shape`): a fixed tensor, expert, context, pipeline or
offload setting that cannot split the model whatever the instance type, and a shape the sizing model cannot resolve.

Each is an event with a code (``TSHnnn``) and typed fields, the words rendered from them here only, in the manner
of :mod:`generator.plan.refusals`; ``docs/codes.md`` lists them (``tests/test_codes.py`` checks the table).
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.plan.refusal import Refusal


def _degrees(ok: tuple[int, ...]) -> str:
    return ", ".join(map(str, ok))


@dataclass(frozen=True, slots=True)
class ShapeUnresolved(Refusal):
    code = "TSH001"
    summary = "the sizing model cannot resolve the model's shape (preset, parameters, architecture or moe)"
    field: tuple[str, ...]  # model.moe, model.preset or model: the part of the spec the shape came from
    message: str  # the sizing model's own sentence

    def where(self) -> tuple[str | int, ...]:
        return self.field

    def text(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class TensorSplitsNoHeads(Refusal):
    code = "TSH002"
    path = ("parallelism", "tensor")
    summary = (
        "a fixed tensor degree that does not divide the attention heads, or the KV heads (nor is a multiple)"
    )
    tensor: int
    heads: int
    kv_heads: int
    ok: tuple[int, ...]

    def text(self) -> str:
        kv = f"{self.kv_heads} KV head{'s' if self.kv_heads != 1 else ''}"
        return (
            f"tensor parallelism {self.tensor} does not split the model's {self.heads} attention heads and {kv} "
            "(it must divide the heads, and divide the KV heads or be a multiple of them)"
        )

    def hint(self) -> str:
        return f"use tensor: auto, or one of {_degrees(self.ok)}"


@dataclass(frozen=True, slots=True)
class ExpertWithoutMoe(Refusal):
    code = "TSH003"
    path = ("parallelism", "expert")
    summary = "expert parallelism on a dense model"
    expert: int

    def text(self) -> str:
        return f"expert parallelism {self.expert} needs a mixture-of-experts model"

    def hint(self) -> str:
        return "use expert: auto"


@dataclass(frozen=True, slots=True)
class ExpertNotDividing(Refusal):
    code = "TSH004"
    path = ("parallelism", "expert")
    summary = "a fixed expert degree that does not divide the model's experts"
    expert: int
    experts: int

    def text(self) -> str:
        return f"expert parallelism {self.expert} does not divide the model's {self.experts} experts"

    def hint(self) -> str:
        return "use expert: auto, or a degree that divides the experts"


@dataclass(frozen=True, slots=True)
class OffloadRefused(Refusal):
    code = "TSH005"
    path = ("parallelism", "offload")
    summary = "CPU offload with a framework, ZeRO stage or method that does not offload that way"
    offload: str
    message: str  # the sizing model's own sentence (sizing.check_offload)

    def text(self) -> str:
        return self.message.rstrip(".")

    def hint(self) -> str:
        return "use offload: none, or the framework and zero_stage the message names"


@dataclass(frozen=True, slots=True)
class ContextChunks(Refusal):
    code = "TSH006"
    path = ("parallelism", "context")
    summary = "a fixed context degree whose 2 x cp chunks do not divide the sequence"
    context: int
    sequence_length: int
    ok: tuple[int, ...]

    def text(self) -> str:
        return (
            f"context parallelism {self.context} splits each sequence into 2 x {self.context} chunks "
            f"(Megatron-Core balances the causal mask that way), which {self.sequence_length} tokens do not give"
        )

    def hint(self) -> str:
        return f"use context: auto, or one of {_degrees(self.ok)}"


@dataclass(frozen=True, slots=True)
class ContextForAdapters(Refusal):
    code = "TSH007"
    path = ("parallelism", "context")
    summary = "context parallelism with LoRA or QLoRA (modelled for full training only)"
    context: int

    def text(self) -> str:
        return (
            f"context parallelism {self.context} is modelled for full training (Megatron-Core); LoRA/QLoRA "
            "trainers do not run it"
        )

    def hint(self) -> str:
        return "use context: auto or 1"


@dataclass(frozen=True, slots=True)
class VirtualStagesUneven(Refusal):
    code = "TSH008"
    path = ("parallelism", "virtual_stages")
    summary = "interleaved stages whose pipeline degree times virtual stages does not divide the layers"
    virtual_stages: int
    pipeline: int
    layers: int
    ok: tuple[int, ...]

    def text(self) -> str:
        return (
            f"{self.virtual_stages} interleaved stages per GPU need a pipeline whose degree times "
            f"{self.virtual_stages} divides the model's {self.layers} layers; pipeline is {self.pipeline}"
        )

    def hint(self) -> str:
        return f"use pipeline: auto, or one of {_degrees(self.ok) or 'none'}, or virtual_stages: 1"


@dataclass(frozen=True, slots=True)
class PipelineOverLayers(Refusal):
    code = "TSH009"
    path = ("parallelism", "pipeline")
    summary = "more pipeline stages than the model has layers"
    pipeline: int
    layers: int

    def text(self) -> str:
        return f"pipeline parallelism {self.pipeline} is more stages than the model's {self.layers} layers"

    def hint(self) -> str:
        return f"use pipeline: auto, or at most {self.layers}"


@dataclass(frozen=True, slots=True)
class PipelineUneven(Refusal):
    code = "TSH010"
    path = ("parallelism", "pipeline")
    summary = "a pipeline degree whose first and last stages cannot take the layers the middle ones leave"
    pipeline: int
    layers: int
    stage_layers: int  # layers of each middle stage (sizing.stage_layers)
    ok: tuple[int, ...]

    def text(self) -> str:
        m, left = self.stage_layers, self.layers - (self.pipeline - 2) * self.stage_layers
        return (
            f"pipeline parallelism {self.pipeline} cannot split the model's {self.layers} layers: "
            f"{self.pipeline - 2} middle stages of {m} layers leave {left} for the first and last stages, which "
            f"must hold 2 to {2 * m}"
        )

    def hint(self) -> str:
        return f"use pipeline: auto, or one of {_degrees(self.ok)}"


def codes() -> list[type[Refusal]]:
    """Every shape refusal class, by code (docs/codes.md's table)."""
    found = {
        v for v in globals().values() if isinstance(v, type) and issubclass(v, Refusal) and v is not Refusal
    }
    return sorted(found, key=lambda c: c.code)
