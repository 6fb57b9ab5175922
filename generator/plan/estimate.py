"""Quick answers without a spec file: per-GPU memory for a model and layout (``trainstack estimate``), and
what a planned run costs, line by line with the price data behind each line (``trainstack cost``).

Everything here is a pure function returning plain dicts (JSON-ready: ints, floats, strings, lists), plus
text renderers for people. The arithmetic lives in :mod:`generator.sizing` (docs/sizing.md); this module
only resolves the inputs the way the planner does, checks the combinations a user can get wrong on a
command line, and explains the result. Nothing here imports pulumi or pydantic, so the commands start fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from generator import sizing
from generator.catalog import Catalog, GpuModel
from generator.errors import EXIT_USAGE, TrainstackError, did_you_mean
from generator.plan.model import Plan
from generator.spec.units import human_bytes, human_count

__all__ = [
    "DEFAULT_SEQ_LEN",
    "EstimateError",
    "cost_report",
    "cost_text",
    "data_parallel_degree",
    "estimate",
    "estimate_text",
]

GB = 10**9
GiB = 2**30

# The spec's defaults (generator/spec/model.py), so `estimate` and a spec with the same fields agree.
DEFAULT_SEQ_LEN = 4096
DEFAULT_ZERO_STAGE = 1
DEFAULT_RECOMPUTE = "selective"
DEFAULT_FRAMEWORK = "auto"
DEFAULT_HEADROOM = 0.05  # parallelism.memory_headroom's default

# The ZeRO paper's worked example (Rajbhandari et al. 2020, Sec. 5 and Figure 1): 7.5B parameters,
# N_d = 64, mixed-precision Adam; P_os+g+p is 16 * 7.5e9 / 64 = 1.875 GB, printed as "1.9GB".
_ZERO_PAPER_EXAMPLE = (7_500_000_000, 64)


class EstimateError(TrainstackError):
    """A command-line combination the estimate cannot use; the message says what to change (exit 2)."""

    exit_code = EXIT_USAGE


# --------------------------------------------------------------------------------------------------------
# estimate


def data_parallel_degree(gpus: int | None, tp: int, pp: int) -> int:
    """dp = gpus / (tp * pp); without ``gpus`` one model replica (dp = 1).

    Every GPU holds one tensor-parallel shard of one pipeline stage of one replica, so the total must be a
    whole multiple of tp * pp; anything else leaves GPUs idle, which the user almost surely did not mean.
    """
    for flag, value in (("--tp", tp), ("--pp", pp)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise EstimateError(f"{flag} must be a whole number >= 1, got {value!r}.")
    if gpus is None:
        return 1
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise EstimateError(f"--gpus must be a whole number >= 1, got {gpus!r}.")
    per_replica = tp * pp
    if gpus % per_replica:
        lower = gpus // per_replica * per_replica
        near = " or ".join(str(n) for n in (lower, lower + per_replica) if n >= per_replica)
        raise EstimateError(
            f"--gpus {gpus} is not a multiple of tp x pp = {tp} x {pp} = {per_replica}: the data-parallel degree "
            f"gpus/(tp*pp) must be a whole number; use --gpus {near}, or change --tp/--pp.")
    return gpus // per_replica


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
    seq_len: int = DEFAULT_SEQ_LEN,
    micro_batch: int = 1,
    precision: str = "bf16",
    optimizer: str = "adamw",
    zero: int = DEFAULT_ZERO_STAGE,
    gpus: int | None = None,
    tp: int = 1,
    pp: int = 1,
    recompute: str = DEFAULT_RECOMPUTE,
    sp: bool = True,
    lora_rank: int | None = None,
    qlora: bool = False,
    paged_optimizer: bool = False,
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
    ``catalog`` is only read when ``gpu`` is given. Raises :class:`EstimateError` with a sentence for any
    input the sizing model cannot use.
    """
    if params is None and preset is None and layers is None and hidden is None and heads is None:
        raise EstimateError("say how large the model is: --params (e.g. 70B), --preset (e.g. llama-2-70b), or a "
                            "shape with --layers, --hidden and --heads.")
    if params is None and preset is None and not (layers and hidden and heads):
        raise EstimateError("a partial shape needs a model to start from: add --params or --preset, or give all "
                            "of --layers, --hidden and --heads.")
    if qlora and lora_rank is None:
        raise EstimateError("--qlora trains LoRA adapters over a 4-bit base and needs their rank: add --lora-rank "
                            "(e.g. 16).")
    if qlora and precision == "fp32":
        raise EstimateError("QLoRA trains adapters in bf16 over a 4-bit base; fp32 makes no sense here: use "
                            "--precision bf16.")
    if paged_optimizer and lora_rank is None:
        raise EstimateError("--paged-optimizer pages the LoRA/QLoRA adapters' optimizer states: add --lora-rank "
                            "(e.g. 16), or drop --paged-optimizer for full training.")
    if isinstance(headroom, bool) or not isinstance(headroom, (int, float)) or not 0 <= headroom <= 0.5:
        raise EstimateError(f"--headroom is the share of GPU memory to keep free, from 0 to 0.5; got {headroom!r}.")
    for flag, value in (("--seq-len", seq_len), ("--micro-batch", micro_batch), ("--tokens", tokens),
                        ("--lora-rank", lora_rank)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise EstimateError(f"{flag} must be a whole number >= 1, got {value!r}.")
    full_shape = layers is not None and hidden is not None and heads is not None
    if params is not None and (preset is not None or full_shape):
        # as in a spec (model.parameters with model.preset or model.architecture is an error): one size only
        raise EstimateError(f"give the model's size one way: --params, or --preset, or --layers/--hidden/--heads; "
                            f"the {'shape' if full_shape else 'preset'} fixes the parameter count, so drop --params.")
    dp = data_parallel_degree(gpus, tp, pp)
    warnings: list[str] = []
    shape = {"layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv_heads, "vocab": vocab,
             "ffn_hidden": ffn_hidden, "mlp_matrices": mlp_matrices, "tied_embeddings": tied_embeddings}
    try:
        arch = sizing.architecture_for(params, preset, **shape)
        setup = sizing.TrainingSetup(
            arch=arch, seq_len=seq_len, micro_batch=micro_batch, precision=precision, optimizer=optimizer,
            zero_stage=zero, tp=tp, pp=pp, dp=dp, sequence_parallel=sp and tp > 1, recompute=recompute,
            lora_rank=lora_rank, qlora=qlora, framework=framework, paged_optimizer=paged_optimizer)
        memory = sizing.per_gpu_memory(setup)
        resolved = sizing.resolve_framework(framework, zero)
    except sizing.SizingError as e:
        raise EstimateError(str(e)) from None
    if arch.layers % pp:
        m = sizing.stage_layers(arch.layers, pp)
        ends = arch.layers - (pp - 2) * m
        warnings.append(f"pp={pp} does not divide the {arch.layers} layers: {pp - 2} middle stages of {m} layers and "
                        f"{ends // 2} + {ends - ends // 2} on the first and last (Megatron-LM --decoder-first/last-"
                        "pipeline-num-layers); memory is sized for the largest stage")
    if zero and dp == 1:
        warnings.append(f"ZeRO-{zero} shards over the data-parallel group; with dp = 1 it saves nothing (give --gpus)")

    result: dict[str, Any] = {
        "architecture": {
            "parameters": arch.parameters, "layers": arch.layers, "hidden": arch.hidden, "heads": arch.heads,
            "kv_heads": arch.kv_heads, "vocab": arch.vocab, "ffn_hidden": arch.ffn_hidden,
            "tied_embeddings": arch.tied_embeddings, "mlp_matrices": arch.mlp_matrices, "source": arch.source,
            "counted_parameters": arch.counted_parameters,
        },
        "setup": {
            "gpus": tp * pp * dp, "tp": tp, "pp": pp, "dp": dp, "zero_stage": zero, "precision": precision,
            "optimizer": optimizer, "seq_len": seq_len, "micro_batch": micro_batch,
            "sequence_parallel": setup.sequence_parallel, "recompute": recompute,
            "finetune": "qlora" if qlora else "lora" if lora_rank is not None else "full",
            "lora_rank": lora_rank, "paged_optimizer": paged_optimizer, "framework": resolved,
            "headroom": headroom,
        },
        "per_gpu_bytes": memory.to_dict(),
        "model_states": _model_states(arch, setup, memory),
        "notes": list(memory.notes),
        "warnings": warnings,
    }
    gpu_model: GpuModel | None = None
    if gpu is not None:
        gpu_model = _gpu(gpu, catalog)
        capacity = int(gpu_model.memory_gib * GiB)  # the planner's conversion of the catalog figure
        usable = int(capacity * (1 - headroom))  # the planner's usable_bytes
        result["fits"] = memory.total <= usable
        result["gpu"] = {"name": gpu_model.name, "memory_bytes": capacity, "headroom_bytes": capacity - memory.total,
                         "usable_bytes": usable, "peak_tflops": gpu_model.bf16_tflops, "mfu": gpu_model.mfu}
        if not result["fits"]:
            result["to_fit"] = _ways_to_fit(setup)
        if precision == "bf16" and not gpu_model.bf16:
            warnings.append(f"{gpu_model.name} has no bf16 support (Volta tensor cores do fp16 and fp32 only): a bf16 "
                            f"run cannot train on it, and a spec with precision bf16 and this GPU is refused; use "
                            f"--precision fp16 (the same bytes per value, with loss scaling), or a GPU with bf16; the "
                            f"peak used for its hours is its fp16 tensor peak")
    if tokens is not None:
        result["tokens"] = tokens
        result["training_flops"] = sizing.training_flops(arch.parameters, tokens)
        # what the GPUs execute: model FLOPs with attention and logits, plus what recompute adds
        # (generator/sizing/schedule.py); the GPU-hours rest on this figure, not on 6ND
        result["model_flops"] = sizing.flops_per_token(arch, seq_len).total * tokens
        result["executed_flops"] = sizing.executed_flops(arch, seq_len, tokens, recompute)
        if gpu_model is not None:
            try:
                # executed FLOPs at the GPU's rated MFU, as the planner's schedule counts them
                gpu_hours = result["executed_flops"] / (gpu_model.bf16_tflops * 1e12 * gpu_model.mfu) / 3600
            except sizing.SizingError as e:  # a catalog row with no usable peak or MFU
                raise EstimateError(f"{gpu_model.name}: {e}") from None
            result["gpu_hours"] = gpu_hours
            result["hours"] = gpu_hours / (tp * pp * dp)
        if lora_rank is not None:
            warnings.append("6ND counts weight gradients for every parameter; LoRA skips them for the frozen base, "
                            "so its compute is nearer 4ND (the figure is an upper bound)")
    return result


def _gpu(name: str, catalog: Catalog | None) -> GpuModel:
    if catalog is None:
        from generator.catalog import load_catalog

        catalog = load_catalog()
    found = catalog.gpu(name)
    unavailable = catalog.unavailable_accelerator(name) if found is None else None
    if unavailable is not None:
        from generator.catalog.unavailable import unavailable_text

        message, hint = unavailable_text(unavailable, catalog)
        raise EstimateError(f"{message}.\n{hint}; give one of them to --gpu; every source: trainstack catalog --gpu "
                            f"{unavailable.name}")
    if found is None:
        words = [w for g in catalog.gpus for w in (g.name, *g.aliases)]
        close = did_you_mean(name, words)
        raise EstimateError(f"unknown GPU '{name}' for --gpu; {close + ' ' if close else ''}"
                            f"The catalog knows: {', '.join(catalog.gpu_names())}.")
    return found


def _model_states(arch: sizing.Architecture, setup: sizing.TrainingSetup,
                  memory: sizing.MemoryBreakdown) -> dict[str, Any]:
    """Weights + gradients + optimizer states, next to the ZeRO paper's figure for the same layout.

    Under ``zero-paper`` the difference is our ZeRO-3 gather working set (docs/sizing.md, section 2); under a
    framework it is what that framework keeps beyond the paper (fp32 main gradients, gradient partitions, the
    largest layer gathered whole). For LoRA/QLoRA the paper's formula does not apply (frozen base without
    gradients or optimizer states), so only the total is given.
    """
    total = memory.model_states
    framework = sizing.resolve_framework(setup.framework, setup.zero_stage)
    out: dict[str, Any] = {"total": total, "framework": framework}
    if setup.lora_rank is not None:
        return out
    stage = sizing.stage_layers(arch.layers, setup.pp)
    # the paper's Psi for this GPU: the largest stage's share of the parameters (uneven pipelines), split over tp
    params = arch.parameters if arch.layers % setup.pp == 0 else -(-arch.parameters * stage * setup.pp // arch.layers)
    w, g, o = sizing.model_state_bytes(params, precision=setup.precision, optimizer=setup.optimizer,
                                       zero_stage=setup.zero_stage, dp=setup.dp, tp=setup.tp, pp=setup.pp)
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


def _gb(n: float) -> str:
    return f"{n / GB:,.2f} GB"


def estimate_text(result: dict[str, Any]) -> str:
    """The estimate as a page a person reads: model, layout, memory table, how it relates to the ZeRO
    paper, fit on the GPU, compute, and the formulas with numbers plugged in."""
    from generator.plan.report import table  # text helpers only; keeps this module's import graph tiny

    a, s, m = result["architecture"], result["setup"], result["per_gpu_bytes"]
    lines = [
        (f"Model   {human_count(a['parameters'])} parameters: {a['layers']} layers, hidden {a['hidden']}, "
         f"{a['heads']} heads ({a['kv_heads']} KV), ffn {a['ffn_hidden']}, vocab {a['vocab']}, "
         f"{'GELU 2-matrix' if a['mlp_matrices'] == 2 else 'SwiGLU 3-matrix'} MLP, "
         f"{'tied' if a['tied_embeddings'] else 'untied'} embeddings"),
        f"        {a['source']}",
        f"        the shape counts {a['counted_parameters']:,} parameters "
        f"({human_count(a['counted_parameters'])}; sizing uses {a['parameters']:,})",
        f"Layout  {s['gpus']} GPU(s) = tp {s['tp']} x pp {s['pp']} x dp {s['dp']}, ZeRO-{s['zero_stage']} "
        f"({s['framework'] if s['finetune'] == 'full' else 'adapters as PEFT holds them'}), "
        f"{s['precision']}, {s['optimizer']}, seq {s['seq_len']}, micro-batch {s['micro_batch']}, "
        f"recompute {s['recompute']}" + (", sequence parallel" if s["sequence_parallel"] else "")
        + (f", {s['finetune']} r={s['lora_rank']}" if s["finetune"] != "full" else "")
        + (", paged optimizer" if s["paged_optimizer"] else ""),
        "",
        "Memory per GPU (worst GPU)",
        table(["term", "bytes", "GB", "GiB"], [
            [label, f"{m[key]:,}", f"{m[key] / GB:,.2f}", f"{m[key] / GiB:,.2f}"]
            for label, key in (("weights", "weights"), ("gradients", "gradients"),
                               ("optimizer states", "optimizer_states"), ("activations", "activations"),
                               ("runtime reserve", "reserve"), ("total", "total"))
        ], right=(1, 2, 3)),
        "",
    ]
    lines += _zero_paper_text(result)
    if "fits" in result:
        g = result["gpu"]
        need, have, room = m["total"] / GiB, g["memory_bytes"] / GiB, g["headroom_bytes"] / GiB
        keep = f"{s['headroom']:.0%} headroom"
        usable = g["usable_bytes"] / GiB
        if result["fits"]:
            lines.append(f"Fits on one {g['name']}: needs {need:,.1f} GiB of {have:g} GiB ({usable:,.1f} GiB usable "
                         f"with the {keep}), {room:,.1f} GiB to spare.")
        elif room >= 0:
            lines.append(f"Does NOT fit on one {g['name']} with the {keep}: needs {need:,.1f} GiB of its {have:g} "
                         f"GiB, more than the {usable:,.1f} GiB usable (--headroom 0 to allow it).")
        else:
            lines.append(f"Does NOT fit on one {g['name']}: needs {need:,.1f} GiB, {-room:,.1f} GiB more than its "
                         f"{have:g} GiB.")
            lines.append("  to fit, try: " + "; or ".join(result["to_fit"]))
        lines.append("")
    if "training_flops" in result:
        lines.append(f"Compute  6 x N x D = 6 x {a['parameters']:,} x {result['tokens']:,} tokens = "
                     f"{result['training_flops']:.3g} FLOPs   [Kaplan et al. 2020]")
        recompute = {"full": "one more forward for full recompute (x8/6)",
                     "selective": "the attention core's forward again for selective recompute",
                     "none": "no recompute"}[s["recompute"]]
        lines.append(f"         with attention and logits {result['model_flops']:.3g} model FLOPs [PaLM App. B]; "
                     f"executed {result['executed_flops']:.3g} FLOPs with {recompute}")
        if "gpu_hours" in result:
            g = result["gpu"]
            lines.append(f"         {result['executed_flops']:.3g} executed FLOPs / ({g['peak_tflops']:g} TFLOP/s x "
                         f"{g['mfu']:.0%} MFU on {g['name']}) = {result['gpu_hours']:,.0f} GPU-hours = "
                         f"{result['hours']:,.1f} h on {s['gpus']} GPU(s)")
        else:
            lines.append("         give --gpu to turn this into GPU-hours at that GPU's assumed MFU")
        lines.append("")
    lines.append("Formulas (docs/sizing.md)")
    lines += [f"  - {n}" for n in result["notes"]]
    if result["warnings"]:
        lines += ["", "Notes"] + [f"  ! {w}" for w in result["warnings"]]
    return "\n".join(lines) + "\n"


def _zero_paper_text(result: dict[str, Any]) -> list[str]:
    """How our model-state bytes relate to the ZeRO paper (Rajbhandari et al. 2020, Sec. 5)."""
    ms, s, a, m = result["model_states"], result["setup"], result["architecture"], result["per_gpu_bytes"]
    if "zero_paper" not in ms:
        return [(f"Model states (weights + gradients + optimizer) {_gb(ms['total'])}: LoRA/QLoRA keeps no "
                 "gradients or optimizer states for the frozen base, so the ZeRO paper's formula does not apply; "
                 "the adapters are held as PEFT-based trainers hold them (formulas below)."),
                ""]
    lines = [f"Model states (weights + gradients + optimizer) = {_gb(ms['total'])} per GPU:",
             (f"  ZeRO paper, stage {s['zero_stage']}: {ms['formula']} = {ms['zero_paper'] / GB:,.3f} GB"
              "   [Rajbhandari et al. 2020, Sec. 5]")]
    if (a["parameters"], s["dp"]) == _ZERO_PAPER_EXAMPLE and s["zero_stage"] == 3 and s["tp"] * s["pp"] == 1 \
            and ms["zero_paper"] == 1_875_000_000:
        lines.append("  This is the paper's own example (7.5B parameters, N_d = 64, Adam): 16 x 7.5e9 / 64 = 1.875 GB, "
                     "which its Figure 1 prints rounded as 1.9 GB.")
    if ms.get("zero3_gather_working_set"):
        lines.append(f"  + ZeRO-3 gather working set {_gb(ms['zero3_gather_working_set'])}: the current and the "
                     "prefetched layer are all-gathered in full while in use. The paper's formula leaves this out; "
                     "we add it (an assumption, docs/sizing.md section 2).")
    elif ms["framework"] != "zero-paper":
        lines.append(f"  framework {ms['framework']}: {_gb(ms['total'])}, {ms['beyond_zero_paper'] / GB:+,.3f} GB "
                     "against the paper (what the framework keeps beyond it, term by term in the formulas below; "
                     "--framework zero-paper gives the paper's accounting)")
    lines.append(f"  Activations ({_gb(m['activations'])}) and the runtime reserve ({_gb(m['reserve'])}) come on top: "
                 "the paper's figure counts model states only.")
    return lines + [""]


# --------------------------------------------------------------------------------------------------------
# cost

# Storage items the planner prices (generator/plan/cost.py, plan_cost): shared file systems by kind and class,
# checkpoints in OSS Standard (every one the run writes stays). Kept in step with the planner by tests/test_estimate.py.
_SHARED_ITEM = {"cpfs": "cpfs-{cls}", "extreme-nas": "nas-extreme-{cls}"}
_OBJECT_ITEM = "oss-standard"


def cost_report(plan: Plan, catalog: Catalog) -> dict[str, Any]:
    """Hourly, daily and whole-run cost of a plan, one line per kind of spending, each with its price data.

    The money figures are the planner's (``plan.cost``), so ``trainstack cost`` and ``trainstack plan``
    never disagree; the catalog is read only to say, for each line, which price it rests on, its date and
    source, and whether the catalog marks it as an estimate. Each line's whole-run figure is the planner's (hourly
    cost x wall-clock hours, a Lingjun subscription's compute at its prepaid amount); ``None`` when the spec gives
    no ``model.tokens``.
    """
    c, compute = plan.cost, plan.compute
    hours = None if c.run_hours is None else c.run_hours + (c.expected_rework_hours or 0.0)
    itype = catalog.instance(compute.instance_type)
    on_demand_nodes, spot_nodes = len(plan.spot.on_demand_ranks), len(plan.spot.spot_ranks)

    def line(key: str, label: str, per_hour: float, quantity: str, price: dict[str, Any] | None) -> dict[str, Any]:
        run = getattr(c, f"{key}_run")  # the planner's figure, from unrounded hours (as the runners-up's)
        return {"item": key, "label": label, "per_hour": per_hour, "per_day": round(per_hour * 24, 2),
                "run": None if hours is None else run, "quantity": quantity, "price": price}

    node_price: dict[str, Any] | None = None
    if itype is not None:
        p = itype.price
        node_price = {"what": itype.name, "value": p.cny_per_hour, "unit": "CNY/node-hour",
                      "estimated": p.estimated, "date": p.date, "region": p.region, "source": p.source}
    spot_price = None
    if plan.spot.enabled and node_price is not None:
        # The spot price is the list price times the spec's assumed price ratio: an assumption, never a quote.
        spot_price = dict(node_price, value=round(node_price["value"] * plan.spot.assumed_price_ratio, 2),
                          estimated=True,
                          source=f"{plan.spot.assumed_price_ratio:.0%} of the list price (spot.price_ratio, an assumption; "
                                 f"GPU spot prices vary by zone and hour) x {node_price['source']}")
    lines = [
        line("compute_on_demand", "compute on demand", c.compute_on_demand_per_hour,
             f"{on_demand_nodes} x {compute.instance_type}"
             + (f", Subscription prepaid {c.subscription_months} month(s)" if c.subscription_months else ""),
             node_price if on_demand_nodes else None),
        line("compute_spot", "compute spot", c.compute_spot_per_hour,
             f"{spot_nodes} x {compute.instance_type}" if plan.spot.enabled else "spot off",
             spot_price if spot_nodes else None),
    ]
    storage = plan.storage
    shared_price = None
    if storage.kind in _SHARED_ITEM:
        item = _SHARED_ITEM[storage.kind].format(cls=storage.storage_type)
        shared_price = _storage_price(catalog, item)
    lines.append(line("shared_storage", "shared storage", c.shared_storage_per_hour,
                      f"{storage.capacity_gib:,} GiB {storage.kind} {storage.storage_type}".strip()
                      if storage.kind != "none" else "none", shared_price))
    ckpt = plan.checkpoints
    lines.append(line("object_storage", "object storage", c.object_storage_per_hour,
                      _object_quantity(plan) if ckpt.enabled else "checkpoints off",
                      _storage_price(catalog, _OBJECT_ITEM) if ckpt.enabled else None))
    # Candidates carry compute cost only (the planner ranks instance types on compute); storage does not
    # depend on the instance type, so the chosen type's compute figures are what the runners-up compare to.
    fitting = [{"instance_type": x.instance_type, "nodes": x.nodes, "gpus": x.gpus, "tp": x.tp, "pp": x.pp,
                "dp": x.dp, "per_gpu_gib": x.per_gpu_gib, "compute_per_hour": x.cost_per_hour,
                "compute_per_day": round(x.cost_per_hour * 24, 2), "compute_run": x.run_cost,
                "run_hours": x.run_hours, "verdict": x.verdict}
               for x in plan.candidates if x.nodes]
    return {
        "name": plan.name, "stack": plan.stack, "region": plan.region, "currency": c.currency,
        "catalog_version": plan.catalog_version,
        "compute": {"instance_type": compute.instance_type, "nodes": compute.nodes, "gpu": compute.gpu,
                    "total_gpus": compute.total_gpus},
        "lines": lines,
        "total": {"per_hour": c.total_per_hour, "per_day": c.total_per_day, "run": c.run_total},
        "paused": None if c.paused is None else {
            "per_hour": c.paused.per_hour, "per_day": c.paused.per_day, "notes": list(c.paused.notes),
            "lines": [{"item": i.item, "label": i.label, "per_hour": i.per_hour, "per_day": i.per_day,
                       "quantity": i.quantity, "basis": i.basis} for i in c.paused.items]},
        "run_hours": c.run_hours, "expected_rework_hours": c.expected_rework_hours,
        "subscription_months": c.subscription_months, "checkpoints_kept": c.checkpoints_kept,
        "object_storage_after_run_per_month": c.object_storage_after_run_per_month,
        "checkpoints_ia_days": plan.checkpoints.transition_ia_days if plan.checkpoints.enabled else None,
        "price_notes": list(c.price_notes),
        "chosen": next((x for x in fitting if x["verdict"] == "chosen"), None),
        "runners_up": [x for x in fitting if x["verdict"] != "chosen"],
        "not_usable": [{"instance_type": x.instance_type, "reason": x.verdict}
                       for x in plan.candidates if not x.nodes],
    }


def _object_quantity(plan: Plan) -> str:
    k, n = plan.checkpoints, plan.cost.checkpoints_kept
    if not n:
        return f"1 checkpoint of {human_bytes(k.size_bytes)} in OSS (grows by one per interval; none expire)"
    return (f"about {n / 2:,.0f} checkpoints of {human_bytes(k.size_bytes)} on average; {n:,} "
            f"({human_bytes(n * k.size_bytes)}) kept at the end")


def _storage_price(catalog: Catalog, item: str) -> dict[str, Any] | None:
    sp = catalog.storage_price(item)
    if sp is None:
        return None
    return {"what": sp.item, "value": sp.price_cny, "unit": sp.unit, "estimated": sp.estimated, "date": sp.date,
            "region": sp.region, "source": sp.source}


def _money(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.2f}"


def _price_line(p: dict[str, Any]) -> str:
    return (f"{p['value']:g} {p['unit']} ({p['what']}), " + ("ESTIMATE" if p["estimated"] else "list price")
            + f", {p['region']}, dated {p['date']}, source: {p['source']}")


def cost_text(report: dict[str, Any]) -> str:
    """The cost report as a page: the cost table, the price data behind each line, and the runners-up."""
    from generator.plan.report import table

    cur, comp = report["currency"], report["compute"]
    lines = [(f"Cost of {report['name']} (stack {report['stack']}) in {report['region']}: {comp['nodes']} x "
              f"{comp['instance_type']} = {comp['total_gpus']} x {comp['gpu']}; {cur}, catalog "
              f"{report['catalog_version']}"), ""]
    paused = report.get("paused")
    if paused is not None:
        lines.append(f"PAUSED (compute.paused): no GPU node runs and nothing trains. While paused: "
                     f"{_money(paused['per_hour'])} {cur}/hour, {_money(paused['per_day'])} {cur}/day")
        lines.append(table(["item", "per hour", "per day", "price", "what"],
                           [[ln["label"], _money(ln["per_hour"]), _money(ln["per_day"]), ln["basis"], ln["quantity"]]
                            for ln in paused["lines"]]
                           + [["total while paused", _money(paused["per_hour"]), _money(paused["per_day"]), "", ""]],
                           right=(1, 2)))
        lines += [f"  {n}" for n in paused["notes"]]
        lines += ["", "Once resumed (the same nodes, the same figures as a running plan):"]
    rows: list[Sequence[Any]] = []
    for ln in report["lines"]:
        p = ln["price"]
        basis = "" if p is None else ("ESTIMATE" if p["estimated"] else "list")
        rows.append([ln["label"], _money(ln["per_hour"]), _money(ln["per_day"]), _money(ln["run"]), basis,
                     ln["quantity"]])
    t = report["total"]
    rows.append(["total", _money(t["per_hour"]), _money(t["per_day"]), _money(t["run"]), "", ""])
    lines.append(table(["item", "per hour", "per day", "whole run", "price", "what"], rows, right=(1, 2, 3)))
    if report["run_hours"] is None:
        lines.append("whole run: n/a (give model.tokens in the spec to estimate the run's length)")
    else:
        hours = report["run_hours"] + (report["expected_rework_hours"] or 0.0)
        lines.append(("whole run once resumed (time paused not counted) = " if paused is not None else "whole run = ")
                     + f"{report['run_hours']:,.1f} h training + {report['expected_rework_hours'] or 0:,.1f} h "
                     f"expected rework and restores after interruptions = {hours:,.1f} h ({hours / 24:,.1f} days)")
        if report.get("subscription_months"):
            lines.append(f"compute: Subscription prepaid for {report['subscription_months']} month(s) "
                         f"({report['subscription_months'] * 730:,} h) whatever the run's length; its whole-run "
                         "figure is the prepaid amount, not per hour x hours")
    if report.get("object_storage_after_run_per_month") is not None:
        lines.append(f"after the run the bucket still holds {report['checkpoints_kept']:,} checkpoints, about "
                     f"{report['object_storage_after_run_per_month']:,.2f} {cur}/month"
                     + (f" once in Infrequent Access (after {report['checkpoints_ia_days']} days)"
                        if report.get("checkpoints_ia_days") else "")
                     + " until you delete them (only noncurrent versions expire)")
    lines += ["", "Price data"]
    for ln in report["lines"]:
        p = ln["price"]
        lines.append(f"  {ln['label']}: " + ("not used" if p is None else _price_line(p)))
    if any(ln["price"] and ln["price"]["estimated"] for ln in report["lines"]):
        lines.append("  ESTIMATE = not a published list price; see generator/catalog/data/v1/README.md for the method.")
    if report["runners_up"]:
        lines += ["", "Runners-up (other instance types that fit; compute cost only, storage is the same for all)"]
        shown = ([report["chosen"]] if report["chosen"] else []) + report["runners_up"]
        lines.append(table(["instance type", "nodes", "GPUs", "tp/pp/dp", f"{cur}/h", f"{cur}/day", "whole run",
                            "verdict"],
                           [[x["instance_type"], x["nodes"], x["gpus"], f"{x['tp']}/{x['pp']}/{x['dp']}",
                             _money(x["compute_per_hour"]), _money(x["compute_per_day"]), _money(x["compute_run"]),
                             x["verdict"]]
                            for x in shown], right=(1, 2, 4, 5, 6)))
    else:
        lines += ["", "Runners-up: none (no other instance type fits this spec)"]
    if report["not_usable"]:
        lines.append(f"{len(report['not_usable'])} other instance type(s) could not be used; "
                     "'trainstack plan' says why.")
    return "\n".join(lines) + "\n"
