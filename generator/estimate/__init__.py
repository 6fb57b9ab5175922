"""Quick answers without a spec file: per-GPU memory for a model and layout (``trainstack estimate``), and
what a planned run costs, line by line with the price data behind each line (``trainstack cost``, in
:mod:`generator.present.cost_report`, re-exported here).

Everything here is a pure function returning plain dicts (JSON-ready: ints, floats, strings, lists), plus
text renderers for people. The arithmetic lives in :mod:`generator.sizing` (docs/sizing.md); this module
only resolves the inputs the way the planner does, checks the combinations a user can get wrong on a
command line, and explains the result. Nothing here imports pulumi or pydantic, so the commands start fast.
"""

from __future__ import annotations

from typing import Any

import generator.estimate.events as ev
from generator import sizing
from generator.catalog import Catalog, GpuModel, InstanceType
from generator.estimate import hardware
from generator.estimate.events import EstimateError
from generator.estimate.inputs import (
    check_model_size,
    check_sized_once,
    check_training_flags,
    data_parallel_degree,
    moe_from_flags,
)
from generator.estimate.text import estimate_text
from generator.plan.fit import replica_gpus
from generator.present.cost_report import cost_report, cost_text
from generator.spec import defaults

__all__ = [
    "DEFAULT_SEQ_LEN",
    "EstimateError",
    "cost_report",
    "cost_text",
    "data_parallel_degree",
    "estimate",
    "estimate_text",
]

GiB = 2**30

# The spec's defaults, from their one home (generator/spec/defaults.py, which the spec model reads too), so
# `estimate` and a spec with the same fields left out agree.
DEFAULT_SEQ_LEN = defaults.SEQUENCE_LENGTH
DEFAULT_ZERO_STAGE = defaults.ZERO_STAGE
DEFAULT_RECOMPUTE = defaults.RECOMPUTE
DEFAULT_FRAMEWORK = defaults.FRAMEWORK
DEFAULT_HEADROOM = defaults.MEMORY_HEADROOM


def estimate(
    *,
    params: int | None = None,
    preset: str | None = None,
    layers: int | None = None,
    hidden: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    vocab: int | None = None,
    ffn_hidden: int | None = None,
    mlp_matrices: int | None = None,
    tied_embeddings: bool | None = None,
    head_dim: int | None = None,
    experts: int | None = None,
    top_k: int | None = None,
    expert_ffn_hidden: int | None = None,
    shared_experts: int = 0,
    dense_layers: int = 0,
    capacity_factor: float | None = None,
    ep: int = 1,
    vpp: int = 1,
    cp: int = 1,
    seq_len: int = DEFAULT_SEQ_LEN,
    micro_batch: int = defaults.MICRO_BATCH_SIZE,
    precision: str = defaults.PRECISION,
    optimizer: str = defaults.OPTIMIZER,
    zero: int = DEFAULT_ZERO_STAGE,
    gpus: int | None = None,
    tp: int = 1,
    pp: int = 1,
    recompute: str = DEFAULT_RECOMPUTE,
    sp: bool = defaults.SEQUENCE_PARALLEL,
    lora_rank: int | None = None,
    qlora: bool = False,
    paged_optimizer: bool = False,
    offload: str = defaults.OFFLOAD,
    framework: str = DEFAULT_FRAMEWORK,
    headroom: float = DEFAULT_HEADROOM,
    gpu: str | None = None,
    tokens: int | None = None,
    catalog: Catalog | None = None,
    instance_type: str | None = None,
) -> dict[str, Any]:
    """Per-GPU training memory for a model and parallel layout, as a JSON-ready dict.

    The model is resolved like a spec's ``model`` section (explicit shape > preset > derived from
    ``params``; see ``sizing.architecture_for``) and sized with ``sizing.per_gpu_memory`` exactly as the
    planner sizes a candidate layout, so ``estimate`` and ``trainstack plan`` agree for the same inputs.
    ``sp`` only takes effect with tp > 1 (as in the planner): sequence parallelism splits along the
    tensor-parallel group.

    ``gpu`` (a catalog name or alias) adds ``fits`` and a ``gpu`` block; ``tokens`` adds
    ``training_flops`` (6ND) and, with a GPU, ``gpu_hours`` and wall-clock ``hours`` at the catalog's MFU.
    ``framework`` picks whose accounting of the model states to use (``auto``: megatron for ZeRO 0/1, deepspeed
    for 2/3; ``zero-paper`` reproduces the ZeRO paper), and ``headroom`` is the share of the GPU's memory a fit
    must leave free, as ``parallelism.memory_headroom`` in a spec.
    ``experts``, ``top_k``, ``expert_ffn_hidden``, ``shared_experts``, ``dense_layers`` and ``capacity_factor``
    make the model a mixture of experts (as ``model.moe``), ``ep`` its expert-parallel degree (it must divide dp);
    ``vpp`` interleaved pipeline stages per GPU (as ``parallelism.virtual_stages``); ``cp`` the context-parallel
    degree (as ``parallelism.context``): each sequence split over cp ranks, dp = gpus / (tp x pp x cp).
    ``instance_type`` (an ECS type or a Lingjun machine type) is the node: its GPU (``gpu`` may be left out, or
    must be the same) and, under CPU offload, its vCPUs for the optimizer step and its host memory for the offloaded
    states; without it the step assumes the planner's vCPUs per GPU and ``warnings`` says so (TSE106).
    ``catalog`` is only read when ``gpu`` or ``instance_type`` is given. Raises :class:`EstimateError` with the
    refusal's code and fields (:mod:`generator.estimate.events`) for any input the sizing model cannot use;
    ``warnings`` holds the notes as ``{"code", "fields", "text"}``.
    """
    check_model_size(params, preset, layers, hidden, heads)
    counts = {
        "--seq-len": seq_len,
        "--micro-batch": micro_batch,
        "--tokens": tokens,
        "--lora-rank": lora_rank,
    }
    check_training_flags(lora_rank, qlora, precision, optimizer, paged_optimizer, headroom, counts)
    check_sized_once(params, preset, layers, hidden, heads)
    dp = data_parallel_degree(gpus, tp, pp, cp)
    warnings: list[dict[str, Any]] = []
    shape = {
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "vocab": vocab,
        "ffn_hidden": ffn_hidden,
        "mlp_matrices": mlp_matrices,
        "tied_embeddings": tied_embeddings,
        "head_dim": head_dim,
    }
    moe = moe_from_flags(experts, top_k, expert_ffn_hidden, shared_experts, dense_layers, capacity_factor)
    try:
        arch = sizing.architecture_for(params, preset, moe, **shape)
        setup = sizing.TrainingSetup(
            arch=arch,
            seq_len=seq_len,
            micro_batch=micro_batch,
            precision=precision,
            optimizer=optimizer,
            zero_stage=zero,
            tp=tp,
            pp=pp,
            dp=dp,
            sequence_parallel=sp and tp > 1,
            recompute=recompute,
            lora_rank=lora_rank,
            qlora=qlora,
            framework=framework,
            paged_optimizer=paged_optimizer,
            ep=ep,
            vpp=vpp,
            offload=offload,
            cp=cp,
        )
        memory = sizing.per_gpu_memory(setup)
        resolved = sizing.resolve_framework(framework, zero)
    except sizing.SizingError as e:
        raise EstimateError.of(ev.SizingFailed(str(e))) from None
    if arch.layers % pp:
        m = sizing.stage_layers(arch.layers, pp)
        ends = arch.layers - (pp - 2) * m
        warnings.append(ev.UnevenPipeline(pp, arch.layers, m, ends // 2, ends - ends // 2).to_dict())
    if zero and dp == 1:
        warnings.append(ev.ZeroWithoutDataParallel(zero).to_dict())
    node: InstanceType | None = None
    if instance_type is not None:
        catalog = hardware.load(catalog)
        node = hardware.instance_type(instance_type, gpu, catalog)
        gpu = gpu if gpu is not None else node.gpu

    gpu_model: GpuModel | None = None
    offered = True
    if gpu is not None:
        gpu_model, offered = hardware.gpu_model(gpu, hardware.load(catalog))
        if precision == "fp8" and not gpu_model.fp8_tflops:
            raise EstimateError.of(ev.NoFp8(gpu_model.name))
    gpu_name = gpu_model.name if gpu_model is not None else None
    result: dict[str, Any] = {
        "architecture": {
            "parameters": arch.parameters,
            "layers": arch.layers,
            "hidden": arch.hidden,
            "heads": arch.heads,
            "kv_heads": arch.kv_heads,
            "vocab": arch.vocab,
            "ffn_hidden": arch.ffn_hidden,
            "tied_embeddings": arch.tied_embeddings,
            "mlp_matrices": arch.mlp_matrices,
            "source": arch.source,
            "counted_parameters": arch.counted_parameters,
            "active_parameters": arch.active_parameters,
            "head_dim": arch.d_head,
            "expert_parameters": arch.expert_parameters,
            "moe": None
            if arch.moe is None
            else {
                "experts": arch.moe.experts,
                "top_k": arch.moe.top_k,
                "expert_ffn_hidden": arch.moe.expert_ffn_hidden,
                "shared_experts": arch.moe.shared_experts,
                "dense_layers": arch.moe.dense_layers,
                "capacity_factor": arch.moe.capacity_factor,
            },
        },
        "setup": {
            "gpus": tp * pp * cp * dp,
            "tp": tp,
            "pp": pp,
            "dp": dp,
            "ep": ep,
            "vpp": vpp,
            "cp": cp,
            "zero_stage": zero,
            "precision": precision,
            "optimizer": optimizer,
            "seq_len": seq_len,
            "micro_batch": micro_batch,
            "sequence_parallel": setup.sequence_parallel,
            "recompute": recompute,
            "finetune": "qlora" if qlora else "lora" if lora_rank is not None else "full",
            "lora_rank": lora_rank,
            "paged_optimizer": paged_optimizer,
            "framework": resolved,
            "headroom": headroom,
            "offload": offload,
        },
        "per_gpu_bytes": memory.to_dict(),
        # CPU offload: host memory per GPU for the offloaded states, their PCIe bytes and the CPU's optimizer step
        "offload": None
        if offload == "none"
        else hardware.offload_step(setup, memory, node, gpu_name, warnings),
        "model_states": _model_states(arch, setup, memory),
        "notes": list(memory.notes),
        "warnings": warnings,
    }
    if gpu_model is not None:
        # the efficiency fitted to published runs at this model's width (generator/sizing/mfu.py), on executed FLOPs
        peak, rated_mfu = sizing.precision_peak(
            gpu_model.bf16_tflops,
            gpu_model.fp8_tflops,
            sizing.compute_efficiency(arch.hidden, gpu_model.mfu),
            precision,
            sizing.attention_share(arch, seq_len, recompute),
        )
        capacity = int(gpu_model.memory_gib * GiB)  # the planner's conversion of the catalog figure
        usable = int(capacity * (1 - headroom))  # the planner's usable_bytes
        result["fits"] = memory.total <= usable
        result["gpu"] = {
            "name": gpu_model.name,
            "memory_bytes": capacity,
            "headroom_bytes": capacity - memory.total,
            "usable_bytes": usable,
            "peak_tflops": peak,
            "mfu": round(rated_mfu, 4),
        }
        if not result["fits"]:
            result["to_fit"] = _ways_to_fit(setup)
        if not offered:
            warnings.append(ev.GpuNotOffered(gpu_model.name).to_dict())
        if precision == "bf16" and not gpu_model.bf16:
            warnings.append(ev.NoBf16(gpu_model.name).to_dict())
        if result["offload"] is not None:
            step_s, m = hardware.step_compute_seconds(setup, peak, rated_mfu)
            o = result["offload"]
            o["step_compute_seconds"], o["microbatches"] = step_s, m
            o["share_of_compute"] = (o["pcie_seconds"] + o["cpu_step_seconds"]) / step_s
    if tokens is not None:
        result["tokens"] = tokens
        result["training_flops"] = sizing.training_flops(arch.active_parameters, tokens)  # 6 x N_active x D
        # what the GPUs execute: model FLOPs with attention and logits, plus what recompute adds
        # (generator/sizing/schedule.py); the GPU-hours rest on this figure, not on 6ND
        result["model_flops"] = sizing.flops_per_token(arch, seq_len).total * tokens
        result["executed_flops"] = sizing.executed_flops(arch, seq_len, tokens, recompute)
        if gpu_model is not None:
            try:
                # executed FLOPs at the fitted efficiency (= model FLOPs at the MFU), as the planner's schedule counts
                # them before the bubble and the network
                gpu_hours = result["executed_flops"] / (peak * 1e12 * rated_mfu) / 3600
            except sizing.SizingError as e:  # a catalog row with no usable peak or MFU
                raise EstimateError.of(ev.GpuRowUnusable(gpu_model.name, str(e))) from None
            result["gpu_hours"] = gpu_hours
            result["hours"] = gpu_hours / (replica_gpus(tp, pp, cp) * dp)
        if lora_rank is not None:
            warnings.append(ev.LoraComputeUpperBound().to_dict())
    return result


def _model_states(
    arch: sizing.Architecture, setup: sizing.TrainingSetup, memory: sizing.MemoryBreakdown
) -> dict[str, Any]:
    """Weights + gradients + optimizer states, next to the ZeRO paper's figure for the same layout.

    Under ``zero-paper`` the difference is our ZeRO-3 gather working set (docs/sizing.md, section 2); under a
    framework it is what that framework keeps beyond the paper (fp32 main gradients, gradient partitions, the
    largest layer gathered whole). For LoRA/QLoRA the paper's formula does not apply (frozen base without
    gradients or optimizer states), so only the total is given.
    """
    total = memory.model_states
    framework = sizing.resolve_framework(setup.framework, setup.zero_stage)
    out: dict[str, Any] = {"total": total, "framework": framework}
    if (
        setup.lora_rank is not None or arch.moe is not None
    ):  # the paper's formula has no adapters and no experts
        return out
    stage = sizing.stage_layers(arch.layers, setup.pp)
    # the paper's Psi for this GPU: the largest stage's share of the parameters (uneven pipelines), split over tp
    params = (
        arch.parameters
        if arch.layers % setup.pp == 0
        else -(-arch.parameters * stage * setup.pp // arch.layers)
    )
    w, g, o = sizing.model_state_bytes(
        params,
        precision=setup.precision,
        optimizer=setup.optimizer,
        zero_stage=setup.zero_stage,
        dp=setup.dp,
        tp=setup.tp,
        pp=setup.pp,
    )
    out["zero_paper"] = w + g + o
    out["beyond_zero_paper"] = total - (w + g + o)
    if framework == "zero-paper":
        out["zero3_gather_working_set"] = total - (w + g + o)
    out["formula"] = _zero_formula(setup)
    return out


def _zero_formula(setup: sizing.TrainingSetup) -> str:
    """The ZeRO paper's model-state formula for this stage, with the byte counts of this precision."""
    w = sizing.PRECISION_BYTES[setup.precision]
    k = sizing.optimizer_bytes_per_param(setup.optimizer, setup.precision)
    psi = "Psi" if setup.tp * setup.pp == 1 else "Psi/(tp*pp)"
    return {
        0: f"({w}+{w}+{k}) x {psi}",
        1: f"({w}+{w}) x {psi} + {k} x {psi}/dp",
        2: f"{w} x {psi} + ({w}+{k}) x {psi}/dp",
        3: f"({w}+{w}+{k}) x {psi}/dp",
    }[setup.zero_stage]


def _ways_to_fit(setup: sizing.TrainingSetup) -> list[str]:
    """Levers that shrink per-GPU memory, in the order a practitioner would usually try them."""
    ways = []
    if setup.zero_stage < 3:
        ways.append("--zero 3 (shard weights, gradients and optimizer states over the data-parallel GPUs)")
    if setup.zero_stage >= 1:
        ways.append("more --gpus (ZeRO shards over more data-parallel ranks)")
    if setup.recompute != "full":
        ways.append("--recompute full (keep only each layer's input)")
    if setup.tp < 8:
        ways.append("a larger --tp (at most the GPUs in one node)")
    ways.append("a larger --pp (splits the layers across stages)")
    if setup.micro_batch > 1:
        ways.append("a smaller --micro-batch")
    if setup.lora_rank is None:
        ways.append("--lora-rank 16 (LoRA) or --qlora for fine-tuning")
    elif not setup.paged_optimizer:
        ways.append("--paged-optimizer (the adapters' optimizer states spill to CPU RAM)")
    return ways
