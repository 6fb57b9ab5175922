"""The spec's defaults that ``trainstack estimate`` shares: the one home of each value, read by the spec model
(:mod:`generator.spec.model`) for its fields and by the estimate (:mod:`generator.estimate`, and its CLI
flags) without importing pydantic, so an estimate and a spec that leave the same fields out agree."""

from __future__ import annotations

from typing import Final

SEQUENCE_LENGTH: Final = 4096  # model.sequence_length
MICRO_BATCH_SIZE: Final = 1  # model.micro_batch_size
PRECISION: Final = "bf16"  # model.precision
OPTIMIZER: Final = "adamw"  # model.optimizer
FRAMEWORK: Final = "auto"  # parallelism.framework
ZERO_STAGE: Final = 1  # parallelism.zero_stage
SEQUENCE_PARALLEL: Final = True  # parallelism.sequence_parallel
RECOMPUTE: Final = "selective"  # parallelism.recompute
OFFLOAD: Final = "none"  # parallelism.offload
MEMORY_HEADROOM: Final = 0.05  # parallelism.memory_headroom
