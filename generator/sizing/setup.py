"""The training setup every sizing model reads: the model's shape, the sequence and batch, precision and
optimizer, and the parallel layout (tensor, pipeline, data, context, expert, interleaved stages), with the ZeRO
stage, the framework, recompute, LoRA/QLoRA and CPU offload. :func:`generator.sizing.memory.validate_setup`
checks one.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.sizing.architecture import Architecture


@dataclass(frozen=True, slots=True)
class TrainingSetup:
    arch: Architecture
    seq_len: int
    micro_batch: int
    precision: str = "bf16"
    optimizer: str = "adamw"
    zero_stage: int = 0
    tp: int = 1
    pp: int = 1
    dp: int = 1
    sequence_parallel: bool = False
    recompute: str = "none"  # none | selective | full
    lora_rank: int | None = None
    qlora: bool = False
    reserve_bytes: int | None = None  # None -> default runtime reserve
    # Whose accounting of the model states and of the loss's memory (generator.sizing.loss): "zero-paper" (the
    # library default, [ZeRO] Sec. 5), "megatron", "deepspeed", "fsdp", or "auto" (megatron for ZeRO 0/1, deepspeed
    # for 2/3; the spec's and CLI's default).
    framework: str = "zero-paper"
    # optimizer states in paged (CPU-evictable) memory: LoRA/QLoRA's all [QLoRA] Sec. 3, full training's moments
    # (generator.sizing.paged)
    paged_optimizer: bool = False
    ep: int = (
        1  # expert-parallel degree (MoE models): the routed experts are split over ep ranks of the dp group
    )
    vpp: int = 1  # interleaved (virtual) pipeline stages per GPU (Megatron-LM --num-layers-per-virtual-pipeline-stage)
    offload: str = (
        "none"  # CPU offload: none | optimizer | optimizer+params (DeepSpeed ZeRO-Offload/Infinity, FSDP)
    )
    cp: int = (
        1  # context-parallel degree: the sequence split over cp ranks (Megatron-Core --context-parallel-size)
    )
