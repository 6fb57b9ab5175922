"""Training memory, compute and checkpoint sizing ("sizing") for dense and mixture-of-experts decoder LLMs.

Everything here is pure arithmetic: no I/O, no clock, no pulumi.  The formulas
come from the papers cited inline; docs/sizing.md has the worked examples.

References (short names used in comments):

* [ZeRO]   Rajbhandari, Rasley, Ruwase, He. "ZeRO: Memory Optimizations Toward
           Training Trillion Parameter Models", SC 2020 (arXiv:1910.02054), Sec. 3.1, 5.
* [SP]     Korthikanti, Casper, Lym, McAfee, Andersch, Shoeybi, Catanzaro.
           "Reducing Activation Recomputation in Large Transformer Models",
           MLSys 2023 (arXiv:2205.05198), Sec. 4 and Table 2.
* [PTD-P]  Narayanan et al. "Efficient Large-Scale Language Model Training on GPU
           Clusters Using Megatron-LM", SC 2021 (arXiv:2104.04473), Table 1.
* [Kaplan] Kaplan et al. "Scaling Laws for Neural Language Models", 2020, Sec. 2.1 (C ~= 6ND).
* [Chinchilla] Hoffmann et al. "Training Compute-Optimal Large Language Models", 2022.
* [PaLM]   Chowdhery et al. "PaLM", 2022, Appendix B (MFU vs HFU).
* [LoRA]   Hu et al. "LoRA: Low-Rank Adaptation of Large Language Models", 2021.
* [QLoRA]  Dettmers et al. "QLoRA: Efficient Finetuning of Quantized LLMs", 2023, Sec. 3.
* [8bit]   Dettmers et al. "8-bit Optimizers via Block-wise Quantization", ICLR 2022.
* [Young]  Young, "A first order approximation to the optimum checkpoint interval", CACM 1974.
* [Daly]   Daly, "A higher order estimate of the optimum checkpoint interval for
           restart dumps", FGCS 2006.
* [Llama3] Dubey et al. "The Llama 3 Herd of Models", 2024, Sec. 3.3.

Units: bytes are exact integers; "GB" in notes means 1e9 bytes (as in [ZeRO]),
"GiB" means 2**30 bytes.

The package re-exports the public names of its modules, so ``from generator import sizing`` then
``sizing.per_gpu_memory(...)`` is the way in:

* :mod:`~generator.sizing.common`: the error type, units, exact rounding and argument checks;
* :mod:`~generator.sizing.architecture`: the model's shape and its parameter counting;
* :mod:`~generator.sizing.presets`: the published shapes a ``preset`` names;
* :mod:`~generator.sizing.shapes`: the shape for what a spec gives (explicit, preset with overrides, or derived
  from a parameter count);
* :mod:`~generator.sizing.moe`: mixture-of-experts layers: expert counts, active parameters, routed activations
  and the all-to-all traffic of expert parallelism;
* :mod:`~generator.sizing.precision`: bytes per parameter (weight precision, optimizer state K);
* :mod:`~generator.sizing.fp8`: FP8 training's weight cache and FP8-stored GEMM inputs (Transformer Engine);
* :mod:`~generator.sizing.memory`: per-GPU memory (ZeRO, LoRA/QLoRA, runtime reserve);
* :mod:`~generator.sizing.lora`: LoRA/QLoRA model states (frozen base, adapters as PEFT holds them);
* :mod:`~generator.sizing.paged`: a paged (bitsandbytes) optimizer in full training: the moments paged to the host;
* :mod:`~generator.sizing.offload`: CPU offload (DeepSpeed ZeRO-Offload/Infinity, FSDP CPUOffload): GPU and host
  memory, PCIe bytes;
* :mod:`~generator.sizing.reserve`: the runtime reserve (CUDA context, NCCL buffers, allocator fragmentation);
* :mod:`~generator.sizing.activations`: activations per pipeline stage (Korthikanti et al., context parallelism);
* :mod:`~generator.sizing.loss`: the loss's bytes per logit at its peak, as each framework's cross-entropy runs;
* :mod:`~generator.sizing.frameworks`: model states as Megatron-LM, DeepSpeed and FSDP allocate them;
* :mod:`~generator.sizing.compute`: 6·N·D FLOPs and training hours;
* :mod:`~generator.sizing.checkpoint`: checkpoint size, cluster MTBF and the Young/Daly interval;
* :mod:`~generator.sizing.schedule`: model FLOPs with attention and logits, layout MFU, the pipeline bubble and
  the wall-clock schedule with checkpoint writes, rework and restores;
* :mod:`~generator.sizing.mfu`: the compute efficiency fitted to published runs (benchmarks/calibrate_mfu.py).
"""

from __future__ import annotations

from generator.sizing.activations import (
    RECOMPUTE_MODES,
    activation_bytes_per_layer,
    pipeline_splits,
    stage_layers,
)
from generator.sizing.architecture import Architecture, parameters_of
from generator.sizing.checkpoint import (
    DEFAULT_NODE_MTBF_HOURS,
    CheckpointModel,
    checkpoint_plan,
    checkpoint_size_bytes,
    young_daly_interval,
)
from generator.sizing.common import SizingError
from generator.sizing.compute import (
    DEFAULT_MFU,
    RECOMPUTE_FLOP_FACTOR,
    precision_peak,
    training_flops,
    training_hours,
)
from generator.sizing.frameworks import FRAMEWORK_CHOICES, FRAMEWORKS, check_framework, resolve_framework
from generator.sizing.lora import lora_trainable_parameters
from generator.sizing.memory import (
    MemoryBreakdown,
    TrainingSetup,
    model_state_bytes,
    per_gpu_memory,
    tp_splits_heads,
    validate_setup,
)
from generator.sizing.mfu import MfuParameters, compute_efficiency, fp8_speedup
from generator.sizing.moe import (
    DEFAULT_IMBALANCE,
    KNOWN_MOE_NAMES,
    MoE,
    alltoall_bytes_per_token,
    name_looks_moe,
)
from generator.sizing.offload import (
    DEFAULT_PCIE_GBYTES,
    HOST_USABLE_SHARE,
    OFFLOAD_MODES,
    PCIE_EFFICIENCY,
    PCIE_GBYTES,
    check_offload,
    cpu_optimizer_seconds,
    host_fits,
    pcie_seconds,
)
from generator.sizing.paged import check_paged, moment_bytes, paged_pcie_bytes
from generator.sizing.precision import OPTIMIZER_BYTES, PRECISION_BYTES, optimizer_bytes_per_param
from generator.sizing.presets import PRESETS
from generator.sizing.reserve import runtime_reserve
from generator.sizing.schedule import (
    RELAUNCH_HOURS,
    TCP_BANDWIDTH_FACTOR,
    FlopsPerToken,
    LayoutMfu,
    Schedule,
    Tier,
    alltoall_ratio,
    attention_share,
    data_parallel_ratio,
    executed_flops,
    flops_per_token,
    layout_mfu,
    microbatches,
    model_flops,
    schedule,
)
from generator.sizing.shapes import architecture_for, derive_architecture

__all__ = [
    "DEFAULT_IMBALANCE",
    "DEFAULT_MFU",
    "DEFAULT_NODE_MTBF_HOURS",
    "DEFAULT_PCIE_GBYTES",
    "FRAMEWORKS",
    "FRAMEWORK_CHOICES",
    "HOST_USABLE_SHARE",
    "KNOWN_MOE_NAMES",
    "OFFLOAD_MODES",
    "OPTIMIZER_BYTES",
    "PCIE_EFFICIENCY",
    "PCIE_GBYTES",
    "PRECISION_BYTES",
    "PRESETS",
    "RECOMPUTE_FLOP_FACTOR",
    "RECOMPUTE_MODES",
    "RELAUNCH_HOURS",
    "TCP_BANDWIDTH_FACTOR",
    "Architecture",
    "CheckpointModel",
    "FlopsPerToken",
    "LayoutMfu",
    "MemoryBreakdown",
    "MfuParameters",
    "MoE",
    "Schedule",
    "SizingError",
    "Tier",
    "TrainingSetup",
    "activation_bytes_per_layer",
    "alltoall_bytes_per_token",
    "alltoall_ratio",
    "architecture_for",
    "attention_share",
    "check_framework",
    "check_offload",
    "check_paged",
    "checkpoint_plan",
    "checkpoint_size_bytes",
    "compute_efficiency",
    "cpu_optimizer_seconds",
    "data_parallel_ratio",
    "derive_architecture",
    "executed_flops",
    "flops_per_token",
    "fp8_speedup",
    "host_fits",
    "layout_mfu",
    "lora_trainable_parameters",
    "microbatches",
    "model_flops",
    "model_state_bytes",
    "moment_bytes",
    "name_looks_moe",
    "optimizer_bytes_per_param",
    "paged_pcie_bytes",
    "parameters_of",
    "pcie_seconds",
    "per_gpu_memory",
    "pipeline_splits",
    "precision_peak",
    "resolve_framework",
    "runtime_reserve",
    "schedule",
    "stage_layers",
    "tp_splits_heads",
    "training_flops",
    "training_hours",
    "validate_setup",
    "young_daly_interval",
]
