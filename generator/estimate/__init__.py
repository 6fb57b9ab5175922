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

from generator import sizing
from generator.catalog import Catalog, GpuModel
from generator.errors import EXIT_USAGE, TrainstackError, did_you_mean
from generator.estimate.text import estimate_text
from generator.plan.fit import data_parallel, replica_gpus
from generator.present.cost_report import cost_report, cost_text
from generator.spec import defaults
from generator.spec.conflicts import training_conflicts

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


class EstimateError(TrainstackError):
    """A command-line combination the estimate cannot use; the message says what to change (exit 2)."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = (
            code  # a shared rule's code (generator/spec/conflicts.py); "" for the estimate's own checks
        )


# --------------------------------------------------------------------------------------------------------
# estimate


def data_parallel_degree(gpus: int | None, tp: int, pp: int, cp: int = 1) -> int:
    """dp = gpus / (tp * pp * cp); without ``gpus`` one model replica (dp = 1).

    Every GPU holds one tensor-parallel shard of one pipeline stage of one context-parallel share of one replica,
    so the total must be a whole multiple of tp * pp * cp; anything else leaves GPUs idle, which the user almost
    surely did not mean. The degree itself is :func:`generator.plan.fit.data_parallel`, as the planner counts it.
    """
    for flag, value in (("--tp", tp), ("--pp", pp), ("--cp", cp)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise EstimateError(f"{flag} must be a whole number >= 1, got {value!r}.")
    if gpus is None:
        return 1
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise EstimateError(f"--gpus must be a whole number >= 1, got {gpus!r}.")
    per_replica = replica_gpus(tp, pp, cp)
    dp = data_parallel(gpus, tp, pp, cp)
    if not dp:
        lower = gpus // per_replica * per_replica
        near = " or ".join(str(n) for n in (lower, lower + per_replica) if n >= per_replica)
        what = f"tp x pp = {tp} x {pp}" if cp == 1 else f"tp x pp x cp = {tp} x {pp} x {cp}"
        raise EstimateError(
            f"--gpus {gpus} is not a multiple of {what} = {per_replica}: the data-parallel degree "
            f"gpus/({'tp*pp' if cp == 1 else 'tp*pp*cp'}) must be a whole number; use --gpus {near}, or change "
            f"--tp/--pp{'/--cp' if cp > 1 else ''}."
        )
    return dp


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
    ``catalog`` is only read when ``gpu`` is given. Raises :class:`EstimateError` with a sentence for any
    input the sizing model cannot use.
    """
    if params is None and preset is None and layers is None and hidden is None and heads is None:
        raise EstimateError(
            "say how large the model is: --params (e.g. 70B), --preset (e.g. llama-2-70b), or a "
            "shape with --layers, --hidden and --heads."
        )
    if params is None and preset is None and not (layers and hidden and heads):
        raise EstimateError(
            "a partial shape needs a model to start from: add --params or --preset, or give all "
            "of --layers, --hidden and --heads."
        )
    if qlora and lora_rank is None:
        raise EstimateError(
            "--qlora trains LoRA adapters over a 4-bit base and needs their rank: add --lora-rank (e.g. 16)."
        )
    method = "qlora" if qlora else "lora" if lora_rank is not None else "full"
    for conflict in training_conflicts(method, precision, optimizer, paged_optimizer):
        raise EstimateError(f"{conflict.flag}: {conflict.message}: {conflict.flag_hint}.", conflict.code)
    if isinstance(headroom, bool) or not isinstance(headroom, (int, float)) or not 0 <= headroom <= 0.5:
        raise EstimateError(
            f"--headroom is the share of GPU memory to keep free, from 0 to 0.5; got {headroom!r}."
        )
    for flag, value in (
        ("--seq-len", seq_len),
        ("--micro-batch", micro_batch),
        ("--tokens", tokens),
        ("--lora-rank", lora_rank),
    ):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise EstimateError(f"{flag} must be a whole number >= 1, got {value!r}.")
    full_shape = layers is not None and hidden is not None and heads is not None
    if params is not None and (preset is not None or full_shape):
        # as in a spec (model.parameters with model.preset or model.architecture is an error): one size only
        raise EstimateError(
            f"give the model's size one way: --params, or --preset, or --layers/--hidden/--heads; "
            f"the {'shape' if full_shape else 'preset'} fixes the parameter count, so drop --params."
        )
    dp = data_parallel_degree(gpus, tp, pp, cp)
    warnings: list[str] = []
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
    moe_given = [
        f
        for f, v in (
            ("--top-k", top_k),
            ("--expert-ffn-hidden", expert_ffn_hidden),
            ("--capacity-factor", capacity_factor),
        )
        if v is not None
    ]
    moe_given += [f for f, v in (("--shared-experts", shared_experts), ("--dense-layers", dense_layers)) if v]
    if experts is None and moe_given:
        raise EstimateError(
            f"{', '.join(moe_given)} describe{'s' if len(moe_given) == 1 else ''} mixture-of-experts "
            "layers: add --experts (with --top-k and --expert-ffn-hidden), or use a MoE --preset."
        )
    if experts is not None and (top_k is None or expert_ffn_hidden is None):
        raise EstimateError(
            "--experts needs --top-k (experts per token) and --expert-ffn-hidden (one expert's MLP "
            "width), as model.moe does."
        )
    try:
        moe = (
            None
            if experts is None
            else sizing.MoE(
                experts=experts,
                top_k=top_k or 0,
                expert_ffn_hidden=expert_ffn_hidden or 0,
                shared_experts=shared_experts,
                dense_layers=dense_layers,
                capacity_factor=capacity_factor,
            )
        )
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
        raise EstimateError(str(e)) from None
    if arch.layers % pp:
        m = sizing.stage_layers(arch.layers, pp)
        ends = arch.layers - (pp - 2) * m
        warnings.append(
            f"pp={pp} does not divide the {arch.layers} layers: {pp - 2} middle stages of {m} layers and "
            f"{ends // 2} + {ends - ends // 2} on the first and last (Megatron-LM --decoder-first/last-"
            "pipeline-num-layers); memory is sized for the largest stage"
        )
    if zero and dp == 1:
        warnings.append(
            f"ZeRO-{zero} shards over the data-parallel group; with dp = 1 it saves nothing (give --gpus)"
        )

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
        # CPU offload: host memory per GPU for the offloaded states and their PCIe bytes per optimizer step
        "offload": None
        if offload == "none"
        else {"host_bytes_per_gpu": memory.host, "pcie_bytes_per_step": memory.pcie_bytes},
        "model_states": _model_states(arch, setup, memory),
        "notes": list(memory.notes),
        "warnings": warnings,
    }
    gpu_model: GpuModel | None = None
    if gpu is not None:
        gpu_model = _gpu(gpu, catalog)
        if precision == "fp8" and not gpu_model.fp8_tflops:
            raise EstimateError(
                f"--precision fp8 needs a GPU with FP8 tensor cores, and {gpu_model.name} (--gpu) has "
                "none (FP8 training needs NVIDIA Ada, Hopper or Blackwell): use --precision bf16, or "
                "a GPU with FP8 such as H20, L20 or H100"
            )
        # the efficiency fitted to published runs at this model's width (generator/sizing/mfu.py), on executed FLOPs
        peak, rated_mfu = sizing.precision_peak(
            gpu_model.bf16_tflops,
            gpu_model.fp8_tflops,
            sizing.compute_efficiency(arch.hidden, gpu_model.mfu),
            precision,
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
        if gpu_model.notes.startswith("NOT OFFERED"):
            warnings.append(
                f"{gpu_model.name} is not offered by Alibaba Cloud (trainstack catalog --gpu "
                f"{gpu_model.name} says why and which GPUs are nearest): its published memory and BF16 "
                f"peak are used for comparison only, at the efficiency fitted to published runs"
            )
        if precision == "bf16" and not gpu_model.bf16:
            warnings.append(
                f"{gpu_model.name} has no bf16 support (Volta tensor cores do fp16 and fp32 only): a bf16 "
                f"run cannot train on it, and a spec with precision bf16 and this GPU is refused; use "
                f"--precision fp16 (the same bytes per value, with loss scaling), or a GPU with bf16; the "
                f"peak used for its hours is its fp16 tensor peak"
            )
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
                raise EstimateError(f"{gpu_model.name}: {e}") from None
            result["gpu_hours"] = gpu_hours
            result["hours"] = gpu_hours / (replica_gpus(tp, pp, cp) * dp)
        if lora_rank is not None:
            warnings.append(
                "6ND counts weight gradients for every parameter; LoRA skips them for the frozen base, "
                "so its compute is nearer 4ND (the figure is an upper bound)"
            )
    return result


def _gpu(name: str, catalog: Catalog | None) -> GpuModel:
    if catalog is None:
        from generator.catalog import load_catalog

        catalog = load_catalog()
    found = catalog.gpu(name)
    unavailable = catalog.unavailable_accelerator(name) if found is None else None
    if unavailable is not None and unavailable.vendor == "nvidia":
        # an NVIDIA part no Alibaba product offers (H100, H800, H200): its published figures, so a run read about
        # can be compared with a plan here; a CUDA spec would run on it unchanged (unlike an Ascend NPU)
        # Hopper's dense FP8 peak is twice its BF16 (NV-H100: 3,958 FP8 TFLOPS with sparsity, 989 BF16 dense)
        return GpuModel(
            unavailable.name,
            unavailable.aliases,
            unavailable.vendor,
            unavailable.memory_gib,
            unavailable.bf16_tflops,
            True,
            sizing.DEFAULT_MFU,
            "nvlink",
            unavailable.source,
            f"NOT OFFERED by Alibaba Cloud: {unavailable.alibaba}",
            2 * unavailable.bf16_tflops,
        )
    if unavailable is not None:
        from generator.catalog.unavailable import unavailable_text

        message, hint = unavailable_text(unavailable, catalog)
        raise EstimateError(
            f"{message}.\n{hint}; give one of them to --gpu; every source: trainstack catalog --gpu "
            f"{unavailable.name}"
        )
    if found is None:
        words = [w for g in catalog.gpus for w in (g.name, *g.aliases)]
        close = did_you_mean(name, words)
        raise EstimateError(
            f"unknown GPU '{name}' for --gpu; {close + ' ' if close else ''}"
            f"The catalog knows: {', '.join(catalog.gpu_names())}."
        )
    return found


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
