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
from generator.catalog import GpuModel, InstanceType
from generator.estimate import hardware
from generator.estimate.events import EstimateError
from generator.estimate.inputs import Options, checked_dp, data_parallel_degree, moe_from_flags
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
# `estimate` and a spec with the same fields left out agree; Options takes the others from there as well.
DEFAULT_SEQ_LEN = defaults.SEQUENCE_LENGTH


def estimate(**options: Any) -> dict[str, Any]:
    """Per-GPU training memory for a model and parallel layout, as a JSON-ready dict.

    ``options`` are :class:`~generator.estimate.inputs.Options`' fields, by name (what each means is said there). The
    model is resolved like a spec's ``model`` section (explicit shape > preset > derived from ``params``; see
    ``sizing.architecture_for``) and sized with ``sizing.per_gpu_memory`` exactly as the planner sizes a candidate
    layout, so ``estimate`` and ``trainstack plan`` agree for the same inputs. Raises :class:`EstimateError` with the
    refusal's code and fields (:mod:`generator.estimate.events`) for any input the sizing model cannot use;
    ``warnings`` holds the notes as ``{"code", "fields", "text"}``.
    """
    o = Options(**options)
    dp = checked_dp(o)
    arch, setup, memory = _sized(o, dp)
    warnings = _layout_warnings(arch, o.pp, o.zero, dp)
    node, gpu_model, offered = _hardware(o)
    gpu_name = gpu_model.name if gpu_model is not None else None
    result: dict[str, Any] = {
        "architecture": _architecture(arch),
        "setup": _setup(o, setup, dp),
        "per_gpu_bytes": memory.to_dict(),
        # CPU offload: host memory per GPU for the offloaded states, their PCIe bytes and the CPU's optimizer step
        "offload": None
        if o.offload == "none"
        else hardware.offload_step(setup, memory, node, gpu_name, warnings),
        # a paged optimizer in full training: its moments, pageable to the host (generator/sizing/paged.py)
        "paged_optimizer": hardware.paged_step(memory, node, warnings) if memory.paged else None,
        "model_states": _model_states(arch, setup, memory),
        "notes": list(memory.notes),
        "warnings": warnings,
    }
    rate = None
    if gpu_model is not None:
        rate = _rate(gpu_model, arch, o)
        result.update(_fit(gpu_model, setup, memory, o.headroom, rate))
        warnings += _gpu_warnings(gpu_model, offered, o.precision)
        if result["offload"] is not None:
            _offload_share(result["offload"], setup, rate)
        if result["paged_optimizer"] is not None:
            _paged_share(result, memory, setup, rate)
    if o.tokens is not None:
        result.update(_compute(o, arch, dp, o.tokens, gpu_name, rate))
        if o.lora_rank is not None:
            warnings.append(ev.LoraComputeUpperBound().to_dict())
    return result


def _sized(o: Options, dp: int) -> tuple[sizing.Architecture, sizing.TrainingSetup, sizing.MemoryBreakdown]:
    """The model, the layout and the per-GPU memory, as the planner sizes them; the sizing model's own refusals
    (a shape or a layout it cannot use) become :class:`~generator.estimate.events.SizingFailed`."""
    moe = moe_from_flags(
        o.experts, o.top_k, o.expert_ffn_hidden, o.shared_experts, o.dense_layers, o.capacity_factor
    )
    try:
        arch = sizing.architecture_for(o.params, o.preset, moe, **o.shape)
        setup = sizing.TrainingSetup(
            arch=arch,
            seq_len=o.seq_len,
            micro_batch=o.micro_batch,
            precision=o.precision,
            optimizer=o.optimizer,
            zero_stage=o.zero,
            tp=o.tp,
            pp=o.pp,
            dp=dp,
            sequence_parallel=o.sp and o.tp > 1,
            recompute=o.recompute,
            lora_rank=o.lora_rank,
            qlora=o.qlora,
            framework=o.framework,
            paged_optimizer=o.paged_optimizer,
            ep=o.ep,
            vpp=o.vpp,
            offload=o.offload,
            cp=o.cp,
        )
        return arch, setup, sizing.per_gpu_memory(setup)
    except sizing.SizingError as e:
        raise EstimateError.of(ev.SizingFailed(str(e))) from None


def _layout_warnings(arch: sizing.Architecture, pp: int, zero: int, dp: int) -> list[dict[str, Any]]:
    """The notes on a layout that sizes but is not what the user likely meant: an uneven pipeline, ZeRO with dp 1."""
    warnings = []
    if arch.layers % pp:
        m = sizing.stage_layers(arch.layers, pp)
        ends = arch.layers - (pp - 2) * m
        warnings.append(ev.UnevenPipeline(pp, arch.layers, m, ends // 2, ends - ends // 2).to_dict())
    if zero and dp == 1:
        warnings.append(ev.ZeroWithoutDataParallel(zero).to_dict())
    return warnings


def _hardware(o: Options) -> tuple[InstanceType | None, GpuModel | None, bool]:
    """The node and the GPU from the catalog (the node's GPU when only the node is given), and whether an Alibaba
    Cloud product offers that GPU; refuses fp8 on a GPU without it."""
    gpu, catalog = o.gpu, o.catalog
    node: InstanceType | None = None
    if o.instance_type is not None:
        catalog = hardware.load(catalog)
        node = hardware.instance_type(o.instance_type, gpu, catalog)
        gpu = gpu if gpu is not None else node.gpu
    if gpu is None:
        return node, None, True
    gpu_model, offered = hardware.gpu_model(gpu, hardware.load(catalog))
    if o.precision == "fp8" and not gpu_model.fp8_tflops:
        raise EstimateError.of(ev.NoFp8(gpu_model.name))
    return node, gpu_model, offered


def _architecture(arch: sizing.Architecture) -> dict[str, Any]:
    """The model as resolved: its shape, where it came from, and its parameters (counted, active, in experts)."""
    return {
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
    }


def _setup(o: Options, setup: sizing.TrainingSetup, dp: int) -> dict[str, Any]:
    """The layout and the training as sized, with the framework ``auto`` resolved to."""
    return {
        "gpus": o.tp * o.pp * o.cp * dp,
        "tp": o.tp,
        "pp": o.pp,
        "dp": dp,
        "ep": o.ep,
        "vpp": o.vpp,
        "cp": o.cp,
        "zero_stage": o.zero,
        "precision": o.precision,
        "optimizer": o.optimizer,
        "seq_len": o.seq_len,
        "micro_batch": o.micro_batch,
        "sequence_parallel": setup.sequence_parallel,
        "recompute": o.recompute,
        "finetune": "qlora" if o.qlora else "lora" if o.lora_rank is not None else "full",
        "lora_rank": o.lora_rank,
        "paged_optimizer": o.paged_optimizer,
        "framework": sizing.resolve_framework(o.framework, o.zero),
        "headroom": o.headroom,
        "offload": o.offload,
    }


def _rate(gpu_model: GpuModel, arch: sizing.Architecture, o: Options) -> tuple[float, float]:
    """The GPU's peak TFLOP/s at this precision and the efficiency fitted to published runs at this model's width
    and tensor-parallel degree (generator/sizing/mfu.py), on executed FLOPs."""
    return sizing.precision_peak(
        gpu_model.bf16_tflops,
        gpu_model.fp8_tflops,
        sizing.compute_efficiency(arch.hidden, gpu_model.mfu, tp=o.tp),
        o.precision,
        sizing.attention_share(arch, o.seq_len, o.recompute),
    )


def _fit(
    gpu_model: GpuModel,
    setup: sizing.TrainingSetup,
    memory: sizing.MemoryBreakdown,
    headroom: float,
    rate: tuple[float, float],
) -> dict[str, Any]:
    """Whether the worst GPU's memory fits the GPU with the headroom kept free, the GPU's figures, and when it does
    not fit, the levers that shrink it."""
    peak, rated_mfu = rate
    capacity = int(gpu_model.memory_gib * GiB)  # the planner's conversion of the catalog figure
    usable = int(capacity * (1 - headroom))  # the planner's usable_bytes
    out: dict[str, Any] = {
        "fits": memory.total <= usable,
        "gpu": {
            "name": gpu_model.name,
            "memory_bytes": capacity,
            "headroom_bytes": capacity - memory.total,
            "usable_bytes": usable,
            "peak_tflops": peak,
            "mfu": round(rated_mfu, 4),
        },
    }
    if not out["fits"]:
        out["to_fit"] = _ways_to_fit(setup)
    return out


def _gpu_warnings(gpu_model: GpuModel, offered: bool, precision: str) -> list[dict[str, Any]]:
    """The notes on the GPU: no Alibaba Cloud product offers it, or it lacks bf16 for a bf16 run."""
    warnings = []
    if not offered:
        warnings.append(ev.GpuNotOffered(gpu_model.name).to_dict())
    if precision == "bf16" and not gpu_model.bf16:
        warnings.append(ev.NoBf16(gpu_model.name).to_dict())
    return warnings


def _offload_share(offload: dict[str, Any], setup: sizing.TrainingSetup, rate: tuple[float, float]) -> None:
    """Adds to the offload block the step's compute on the GPU and the share the PCIe and CPU time add to it."""
    step_s, m = hardware.step_compute_seconds(setup, *rate)
    offload["step_compute_seconds"], offload["microbatches"] = step_s, m
    offload["share_of_compute"] = (offload["pcie_seconds"] + offload["cpu_step_seconds"]) / step_s


def _paged_share(
    result: dict[str, Any],
    memory: sizing.MemoryBreakdown,
    setup: sizing.TrainingSetup,
    rate: tuple[float, float],
) -> None:
    """Adds to the paged block its PCIe traffic at the GPU's usable memory and the share of the step's compute it
    adds (none when the moments stay resident)."""
    paged, gpu = result["paged_optimizer"], result["gpu"]
    hardware.paged_traffic(paged, memory, gpu["usable_bytes"], gpu["name"])
    step_s, m = hardware.step_compute_seconds(setup, *rate)
    paged["step_compute_seconds"], paged["microbatches"] = step_s, m
    paged["share_of_compute"] = paged["pcie_seconds"] / step_s


def _compute(
    o: Options,
    arch: sizing.Architecture,
    dp: int,
    tokens: int,
    gpu_name: str | None,
    rate: tuple[float, float] | None,
) -> dict[str, Any]:
    """The training's FLOPs for ``tokens`` (6ND, the model FLOPs, the executed FLOPs) and, on a GPU, its GPU-hours
    and wall-clock hours."""
    out: dict[str, Any] = {
        "tokens": tokens,
        "training_flops": sizing.training_flops(arch.active_parameters, tokens),  # 6 x N_active x D
        # what the GPUs execute: model FLOPs with attention and logits, plus what recompute adds
        # (generator/sizing/schedule.py); the GPU-hours rest on this figure, not on 6ND
        "model_flops": sizing.flops_per_token(arch, o.seq_len).total * tokens,
        "executed_flops": sizing.executed_flops(arch, o.seq_len, tokens, o.recompute),
    }
    if gpu_name is not None and rate is not None:
        peak, rated_mfu = rate
        try:
            # executed FLOPs at the fitted efficiency (= model FLOPs at the MFU), as the planner's schedule counts
            # them before the bubble and the network
            gpu_hours = out["executed_flops"] / (peak * 1e12 * rated_mfu) / 3600
        except sizing.SizingError as e:  # a catalog row with no usable peak or MFU
            raise EstimateError.of(ev.GpuRowUnusable(gpu_name, str(e))) from None
        out["gpu_hours"] = gpu_hours
        out["hours"] = gpu_hours / (replica_gpus(o.tp, o.pp, o.cp) * dp)
    return out


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
    full_megatron = sizing.resolve_framework(setup.framework, setup.zero_stage) == "megatron"
    if (
        setup.lora_rank is None
        and not setup.paged_optimizer
        and setup.offload == "none"
        and not full_megatron
    ):
        ways.append("--paged-optimizer (bitsandbytes pages the optimizer's moments to CPU RAM)")
    if setup.lora_rank is None:
        ways.append("--lora-rank 16 (LoRA) or --qlora for fine-tuning")
    elif not setup.paged_optimizer:
        ways.append("--paged-optimizer (the adapters' optimizer states spill to CPU RAM)")
    return ways
