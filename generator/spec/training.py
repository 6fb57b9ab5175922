"""The spec's model and parallelism sections: what is trained (``model``: size, shape, precision, optimizer, tokens,
fine-tuning, base weights) and how it is split over the GPUs (``parallelism``).

One of the modules :mod:`generator.spec.model` gathers into the spec (``model.moe`` is in
:mod:`generator.spec.moe`); the planner and the sizing model read these fields.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from generator.spec import defaults
from generator.spec import weights as weights_source
from generator.spec.fieldtypes import AutoInt, BatchTokens, ParameterCount, Strict, TokenCount, shown
from generator.spec.moe import MoESpec
from generator.spec.tags import spec_error


class ArchitectureSpec(Strict):
    """An explicit transformer shape (wins over ``preset`` and ``parameters``)."""

    layers: Annotated[int, Field(gt=0, le=1000)]
    hidden: Annotated[int, Field(gt=0, le=1_000_000)]
    heads: Annotated[int, Field(gt=0, le=10_000)]
    kv_heads: Annotated[int, Field(gt=0, le=10_000)] | None = None
    vocab: Annotated[int, Field(gt=0, le=10_000_000)] = 32000
    ffn_hidden: Annotated[int, Field(gt=0, le=10_000_000)] | None = None
    tied_embeddings: bool = False
    mlp_matrices: Literal[2, 3] = 3
    head_dim: Annotated[int, Field(gt=0, le=100_000)] | None = (
        None  # width of a head when not hidden/heads (Qwen3)
    )

    @model_validator(mode="after")
    def _divides(self) -> ArchitectureSpec:
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        return self


class FinetuneSpec(Strict):
    method: Literal["full", "lora", "qlora"] = "full"
    lora_rank: Annotated[int, Field(gt=0, le=4096)] = 16
    # bitsandbytes paged states; in full training refused under Megatron-LM or with offload (spec/conflicts.py)
    paged_optimizer: bool = False


class ModelSpec(Strict):
    parameters: ParameterCount | None = None
    preset: str | None = None
    architecture: ArchitectureSpec | None = None
    moe: MoESpec | None = None  # mixture of experts (generator/spec/moe.py)
    precision: Literal["bf16", "fp16", "fp32", "fp8"] = defaults.PRECISION
    optimizer: Literal["adamw", "adam", "sgd", "adafactor", "lion", "adamw-8bit", "adamw-bf16"] = (
        defaults.OPTIMIZER
    )
    sequence_length: Annotated[int, Field(gt=0, le=10_000_000)] = defaults.SEQUENCE_LENGTH
    micro_batch_size: Annotated[int, Field(gt=0, le=4096)] = defaults.MICRO_BATCH_SIZE
    global_batch_tokens: BatchTokens | None = None
    tokens: TokenCount | None = None
    finetune: FinetuneSpec = FinetuneSpec()
    # base weights to start from: modelscope://ORG/NAME[@REVISION] or oss://BUCKET/PREFIX/ (generator/spec/weights.py)
    weights: (
        Annotated[str, Field(pattern=weights_source.WEIGHTS_RE, max_length=weights_source.MAX_WEIGHTS_CHARS)]
        | None
    ) = None

    @field_validator("weights", mode="before")
    @classmethod
    def _weights(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        try:
            return weights_source.parse(v).uri
        except weights_source.WeightsError as e:
            raise spec_error(e.message, e.hint) from None

    @model_validator(mode="after")
    def _needs_a_size(self) -> ModelSpec:
        if self.parameters is None and self.preset is None and self.architecture is None:
            raise ValueError(
                "say how large the model is: give parameters (e.g. 70B), a preset or an architecture"
            )
        if self.parameters is not None and (self.preset is not None or self.architecture is not None):
            raise ValueError(
                "give the model's size one way: parameters, or a preset, or an architecture "
                "(the parameter count is derived from a preset or an architecture)"
            )
        return self


class ParallelismSpec(Strict):
    tensor: AutoInt = "auto"
    pipeline: AutoInt = "auto"
    data: AutoInt = "auto"
    expert: AutoInt = "auto"  # expert-parallel degree (MoE models; 1 for dense)
    context: AutoInt = "auto"  # context-parallel degree: the sequence split over cp ranks (long context)
    virtual_stages: Annotated[int, Field(ge=1, le=64)] = 1  # interleaved 1F1B chunks per pipeline stage
    framework: Literal["auto", "megatron", "deepspeed", "fsdp", "zero-paper"] = defaults.FRAMEWORK
    zero_stage: Annotated[int, Field(ge=0, le=3)] = defaults.ZERO_STAGE
    sequence_parallel: bool = defaults.SEQUENCE_PARALLEL
    recompute: Literal["none", "selective", "selective-op", "full"] = defaults.RECOMPUTE
    offload: Literal["none", "optimizer", "optimizer+params"] = (
        defaults.OFFLOAD
    )  # CPU offload (DeepSpeed, FSDP)
    memory_headroom: Annotated[float, Field(ge=0, le=0.5)] = defaults.MEMORY_HEADROOM

    @field_validator("memory_headroom", mode="before")
    @classmethod
    def _a_share(cls, v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0.5 < v <= 100:
            raise spec_error(
                f"{shown(v)} is not a share of the GPU's memory (at most 0.5)",
                "write a fraction: 0.05 keeps 5% of each GPU's memory free",
            )
        return v

    @field_validator("offload")
    @classmethod
    def _framework_that_offloads(cls, v: str, info: ValidationInfo) -> str:
        if v != "none" and info.data.get("framework") in ("megatron", "zero-paper"):
            raise spec_error(
                f"offload {v} runs on DeepSpeed (ZeRO-Offload, ZeRO-Infinity) or FSDP (CPUOffload); "
                f"trainstack does not model it for framework {info.data.get('framework')}",
                "use framework: deepspeed (zero_stage 1-3; optimizer+params needs 3) or fsdp "
                "(optimizer+params), or offload: none",
            )
        return v

    @field_validator("zero_stage")
    @classmethod
    def _stage_the_framework_runs(cls, v: int, info: ValidationInfo) -> int:
        if v >= 2 and info.data.get("framework") == "megatron":
            raise spec_error(
                f"framework megatron runs ZeRO stage 0 or 1 (its distributed optimizer shards the "
                f"optimizer states only), not {v}",
                "use zero_stage: 1, or framework: deepspeed or fsdp for stages 2 and 3",
            )
        return v
