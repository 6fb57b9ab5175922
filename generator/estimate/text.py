"""The estimate as a page a person reads (``trainstack estimate`` without ``--json``).

Apart from :mod:`generator.estimate`, which computes the JSON-ready result, because the prose around the figures
(the model, the layout, the memory table, how the model states relate to the ZeRO paper, the fit, the compute)
is as long as the arithmetic; this module only reads that result dict, never the sizing model.
"""

from __future__ import annotations

from typing import Any

from generator.spec.units import human_count

GB = 10**9
GiB = 2**30

# The ZeRO paper's worked example (Rajbhandari et al. 2020, Sec. 5 and Figure 1): 7.5B parameters,
# N_d = 64, mixed-precision Adam; P_os+g+p is 16 * 7.5e9 / 64 = 1.875 GB, printed as "1.9GB".
_ZERO_PAPER_EXAMPLE = (7_500_000_000, 64)


def _gb(n: float) -> str:
    return f"{n / GB:,.2f} GB"


def estimate_text(result: dict[str, Any]) -> str:
    """The estimate as a page a person reads: model, layout, memory table, how it relates to the ZeRO
    paper, fit on the GPU, compute, and the formulas with numbers plugged in."""
    a, s = result["architecture"], result["setup"]
    lines = [*_model_lines(a), _layout_line(a, s), "", *_memory_lines(result["per_gpu_bytes"]), ""]
    lines += _zero_paper_text(result)
    if result["offload"]:
        lines += _offload_text(result)
    if result["paged_optimizer"]:
        lines += _paged_text(result["paged_optimizer"])
    if "fits" in result:
        lines += _fit_lines(result)
    if "training_flops" in result:
        lines += _compute_lines(result)
    lines.append("Formulas (docs/sizing.md)")
    lines += [f"  - {n}" for n in result["notes"]]
    if result["warnings"]:
        lines += ["", "Notes"] + [f"  ! {w['text']}" for w in result["warnings"]]
    return "\n".join(lines) + "\n"


def _model_lines(a: dict[str, Any]) -> list[str]:
    """The model: its shape, where it came from, the parameters the shape counts, and its experts."""
    lines = [
        (
            f"Model   {human_count(a['parameters'])} parameters: {a['layers']} layers, hidden {a['hidden']}, "
            f"{a['heads']} heads ({a['kv_heads']} KV), ffn {a['ffn_hidden']}, vocab {a['vocab']}, "
            f"{'GELU 2-matrix' if a['mlp_matrices'] == 2 else 'SwiGLU 3-matrix'} MLP, "
            f"{'tied' if a['tied_embeddings'] else 'untied'} embeddings"
        ),
        f"        {a['source']}",
        (
            f"        the shape counts {a['counted_parameters']:,} parameters "
            f"({human_count(a['counted_parameters'])}; sizing uses {a['parameters']:,})"
        ),
    ]
    if a["moe"]:
        lines.append(
            f"        mixture of experts: {a['moe']['experts']} experts, top-{a['moe']['top_k']} of width "
            f"{a['moe']['expert_ffn_hidden']}"
            + (f", {a['moe']['shared_experts']} shared" if a["moe"]["shared_experts"] else "")
            + (f", {a['moe']['dense_layers']} dense layers first" if a["moe"]["dense_layers"] else "")
            + f"; {human_count(a['active_parameters'])} active per token ({a['active_parameters']:,}), "
            f"{human_count(a['expert_parameters'])} in routed experts"
        )
    return lines


def _layout_line(a: dict[str, Any], s: dict[str, Any]) -> str:
    """The parallel layout and the training, on one line."""
    return (
        f"Layout  {s['gpus']} GPU(s) = tp {s['tp']} x pp {s['pp']}"
        + (f" x cp {s['cp']}" if s["cp"] > 1 else "")
        + f" x dp {s['dp']}"
        + (f" (ep {s['ep']})" if a["moe"] else "")
        + f", ZeRO-{s['zero_stage']} "
        f"({s['framework'] if s['finetune'] == 'full' else 'adapters as PEFT holds them'}), "
        f"{s['precision']}, {s['optimizer']}, seq {s['seq_len']}, micro-batch {s['micro_batch']}, "
        f"recompute {s['recompute']}"
        + (", sequence parallel" if s["sequence_parallel"] else "")
        + (f", {s['finetune']} r={s['lora_rank']}" if s["finetune"] != "full" else "")
        + (", paged optimizer" if s["paged_optimizer"] else "")
        + (f", offload {s['offload']}" if s["offload"] != "none" else "")
    )


def _memory_lines(m: dict[str, Any]) -> list[str]:
    """The worst GPU's memory, term by term, in bytes, GB and GiB."""
    from generator.present.text import table  # text helpers only; keeps this module's import graph tiny

    terms = (
        ("weights", "weights"),
        ("gradients", "gradients"),
        ("optimizer states", "optimizer_states"),
        ("activations", "activations"),
        ("runtime reserve", "reserve"),
        ("total", "total"),
    )
    rows = [[label, f"{m[key]:,}", f"{m[key] / GB:,.2f}", f"{m[key] / GiB:,.2f}"] for label, key in terms]
    return ["Memory per GPU (worst GPU)", table(["term", "bytes", "GB", "GiB"], rows, right=(1, 2, 3))]


def _fit_lines(result: dict[str, Any]) -> list[str]:
    """Whether the memory fits the GPU with the headroom kept free, and when it does not, what to try."""
    g, m, s = result["gpu"], result["per_gpu_bytes"], result["setup"]
    need, have, room = m["total"] / GiB, g["memory_bytes"] / GiB, g["headroom_bytes"] / GiB
    keep = f"{s['headroom']:.0%} headroom"
    usable = g["usable_bytes"] / GiB
    if result["fits"]:
        return [
            (
                f"Fits on one {g['name']}: needs {need:,.1f} GiB of {have:g} GiB ({usable:,.1f} GiB usable "
                f"with the {keep}), {room:,.1f} GiB to spare."
            ),
            "",
        ]
    if room >= 0:
        return [
            (
                f"Does NOT fit on one {g['name']} with the {keep}: needs {need:,.1f} GiB of its {have:g} "
                f"GiB, more than the {usable:,.1f} GiB usable (--headroom 0 to allow it)."
            ),
            "",
        ]
    return [
        f"Does NOT fit on one {g['name']}: needs {need:,.1f} GiB, {-room:,.1f} GiB more than its {have:g} GiB.",
        "  to fit, try: " + "; or ".join(result["to_fit"]),
        "",
    ]


def _compute_lines(result: dict[str, Any]) -> list[str]:
    """The training's FLOPs (6ND, model, executed) and, on a GPU, the GPU-hours and wall-clock hours."""
    a, s = result["architecture"], result["setup"]
    recompute = {
        "full": "one more forward for full recompute (x8/6)",
        "selective": "the attention core's forward again for selective recompute",
        "selective-op": "the unsaved matmuls' forward again for op-level selective recompute",
        "none": "no recompute",
    }[s["recompute"]]
    lines = [
        (
            f"Compute  6 x N x D = 6 x {a['active_parameters']:,}{' active' if a['moe'] else ''} x "
            f"{result['tokens']:,} tokens = {result['training_flops']:.3g} FLOPs   [Kaplan et al. 2020]"
        ),
        (
            f"         with attention and logits {result['model_flops']:.3g} model FLOPs [PaLM App. B]; "
            f"executed {result['executed_flops']:.3g} FLOPs with {recompute}"
        ),
    ]
    if "gpu_hours" in result:
        g = result["gpu"]
        lines.append(
            f"         {result['executed_flops']:.3g} executed FLOPs / ({g['peak_tflops']:g} TFLOP/s x "
            f"{g['mfu']:.0%} fitted efficiency on {g['name']}) = {result['gpu_hours']:,.0f} GPU-hours = "
            f"{result['hours']:,.1f} h on {s['gpus']} GPU(s)"
        )
    else:
        lines.append(
            "         give --gpu to turn this into GPU-hours at the efficiency fitted to published runs"
        )
    return lines + [""]


def _offload_text(result: dict[str, Any]) -> list[str]:
    """CPU offload: host memory, PCIe bytes, and the step's PCIe and CPU time with the vCPUs it assumes."""
    o, s = result["offload"], result["setup"]
    n = o["gpus_per_node"]
    node = f"one {o['instance_type']} node of {n} GPUs" if o["instance_type"] else f"an assumed {n}-GPU node"
    vcpus = "the type's" if o["vcpus_basis"] == "instance_type" else "assumed, see Notes"
    lines = [
        (
            f"Offload  {s['offload']}: host memory {o['host_bytes_per_gpu'] / GiB:,.1f} GiB per GPU "
            f"({o['host_bytes_per_node'] / GiB:,.0f} GiB for {node}; the planner keeps it within 80% "
            f"of the instance type's memory); {o['pcie_bytes_per_step'] / GB:,.2f} GB per GPU per step over "
            "PCIe"
        ),
        (
            f"         per optimizer step: PCIe {o['pcie_seconds']:,.2f} s ({o['pcie_gbytes_per_second']} GB/s per "
            f"direction at {o['pcie_efficiency']:.0%}), the optimizer on the CPU {o['cpu_step_seconds']:,.2f} s ({o['cpu_optimizer']} on "
            f"{o['vcpus']} vCPUs, {vcpus}; Ren et al. 2021), not overlapped"
        ),
    ]
    if "share_of_compute" in o:
        lines.append(
            f"         = {o['share_of_compute']:.0%} of the step's compute ({o['step_compute_seconds']:,.2f} s for "
            f"m = {o['microbatches']} micro-batches per pipeline, the planner's default without a global batch); "
            "the GPU-hours below leave it out, as they leave out the bubble and the network"
        )
    return lines + [""]


def _paged_text(p: dict[str, Any]) -> list[str]:
    """A paged optimizer in full training: the moments off the resident total, the host memory they take, and
    (with a GPU) whether they are evicted and what paging them costs per step."""
    n = p["gpus_per_node"]
    node = f"one {p['instance_type']} node of {n} GPUs" if p["instance_type"] else f"an assumed {n}-GPU node"
    lines = [
        (
            f"Paged    optimizer moments {p['paged_bytes_per_gpu'] / GiB:,.1f} GiB per GPU, not in the total above "
            f"(host memory {p['host_bytes_per_node'] / GiB:,.0f} GiB for {node}; the planner keeps it within 80% "
            "of the instance type's memory)"
        )
    ]
    if "evicted" in p and not p["evicted"]:
        lines.append("         they fit the GPU beside the total: never evicted, no PCIe time")
    elif "evicted" in p:
        lines.append(
            f"         evicted: each step pages {p['pcie_bytes_per_step'] / GB:,.2f} GB in and out over PCIe, "
            f"{p['pcie_seconds']:,.2f} s ({p['pcie_gbytes_per_second']} GB/s per direction at "
            f"{p['pcie_efficiency']:.0%}), {p['share_of_compute']:.0%} of the step's compute, not overlapped"
        )
    return lines + [""]


def _zero_paper_text(result: dict[str, Any]) -> list[str]:
    """How our model-state bytes relate to the ZeRO paper (Rajbhandari et al. 2020, Sec. 5)."""
    ms, s, a, m = result["model_states"], result["setup"], result["architecture"], result["per_gpu_bytes"]
    if "zero_paper" not in ms and a.get("moe"):
        return [
            (
                f"Model states (weights + gradients + optimizer) {_gb(ms['total'])}: the non-expert part sharded over "
                f"dp = {s['dp']}, the routed experts over ep = {s['ep']} and their states over the dp/ep expert "
                "data-parallel ranks (Megatron-Core MoE), each under the framework's accounting (formulas below)."
            ),
            "",
        ]
    if "zero_paper" not in ms:
        return [
            (
                f"Model states (weights + gradients + optimizer) {_gb(ms['total'])}: LoRA/QLoRA keeps no "
                "gradients or optimizer states for the frozen base, so the ZeRO paper's formula does not apply; "
                "the adapters are held as PEFT-based trainers hold them (formulas below)."
            ),
            "",
        ]
    lines = [
        f"Model states (weights + gradients + optimizer) = {_gb(ms['total'])} per GPU:",
        (
            f"  ZeRO paper, stage {s['zero_stage']}: {ms['formula']} = {ms['zero_paper'] / GB:,.3f} GB"
            "   [Rajbhandari et al. 2020, Sec. 5]"
        ),
    ]
    if (
        (a["parameters"], s["dp"]) == _ZERO_PAPER_EXAMPLE
        and s["zero_stage"] == 3
        and s["tp"] * s["pp"] == 1
        and ms["zero_paper"] == 1_875_000_000
    ):
        lines.append(
            "  This is the paper's own example (7.5B parameters, N_d = 64, Adam): 16 x 7.5e9 / 64 = 1.875 GB, "
            "which its Figure 1 prints rounded as 1.9 GB."
        )
    if ms.get("zero3_gather_working_set"):
        lines.append(
            f"  + ZeRO-3 gather working set {_gb(ms['zero3_gather_working_set'])}: the current and the "
            "prefetched layer are all-gathered in full while in use. The paper's formula leaves this out; "
            "we add it (an assumption, docs/sizing.md section 2)."
        )
    elif ms["framework"] != "zero-paper":
        lines.append(
            f"  framework {ms['framework']}: {_gb(ms['total'])}, {ms['beyond_zero_paper'] / GB:+,.3f} GB "
            "against the paper (what the framework keeps beyond it, term by term in the formulas below; "
            "--framework zero-paper gives the paper's accounting)"
        )
    lines += _paged_aside(result)
    lines.append(
        f"  Activations ({_gb(m['activations'])}) and the runtime reserve ({_gb(m['reserve'])}) come on top: "
        "the paper's figure counts model states only."
    )
    return lines + [""]


def _paged_aside(result: dict[str, Any]) -> list[str]:
    """A paged optimizer's moments, left out of the model states the paper is compared with."""
    if not result.get("paged_optimizer"):
        return []
    paged = result["paged_optimizer"]["paged_bytes_per_gpu"]
    return [
        (
            f"  The paged optimizer's moments ({_gb(paged)}) are not resident and not in these model states: the "
            "paper's figure counts them on the GPU."
        )
    ]
