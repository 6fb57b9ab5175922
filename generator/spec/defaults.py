"""The spec's defaults that ``trainstack estimate`` shares: the one home of each value, read by the spec model
(:mod:`generator.spec.model`) for its fields and by the estimate (:mod:`generator.plan.estimate`, and its CLI
flags) without importing pydantic, so an estimate and a spec that leave the same fields out agree."""

from __future__ import annotations

SEQUENCE_LENGTH = 4096  # model.sequence_length
MICRO_BATCH_SIZE = 1  # model.micro_batch_size
PRECISION = "bf16"  # model.precision
OPTIMIZER = "adamw"  # model.optimizer
FRAMEWORK = "auto"  # parallelism.framework
ZERO_STAGE = 1  # parallelism.zero_stage
SEQUENCE_PARALLEL = True  # parallelism.sequence_parallel
RECOMPUTE = "selective"  # parallelism.recompute
OFFLOAD = "none"  # parallelism.offload
MEMORY_HEADROOM = 0.05  # parallelism.memory_headroom
