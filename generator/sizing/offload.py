"""CPU offload of model states (``parallelism.offload``): what stays on the GPU, what the host must hold, and the
bytes that cross each GPU's PCIe link per optimizer step.

Two frameworks implement it, and trainstack sizes it as they do:

* DeepSpeed ZeRO-Offload (``offload_optimizer``, ZeRO stage 1-3) and ZeRO-Infinity to CPU (``offload_param``, stage
  3 only): DeepSpeed's estimators, ``estimate_zero2_model_states_mem_needs(cpu_offload=True)`` (GPU 2 B/param, the
  16-bit weights) and ``estimate_zero3_model_states_mem_needs(cpu_offload=..., cpu_offload_params=...)`` (GPU
  4 x largest layer, plus the 2 B/param partition when only the optimizer is offloaded), with host memory scaled by
  their ``additional_buffer_factor=1.5`` (deepspeed/runtime/zero/stage_1_and_2.py and stage3.py;
  https://deepspeed.readthedocs.io/en/latest/memory.html; Ren et al. 2021, ZeRO-Offload, arXiv:2101.06840;
  Rajbhandari et al. 2021, ZeRO-Infinity, arXiv:2104.07857).
* PyTorch FSDP ``CPUOffload(offload_params=True)``: the sharded parameters and their gradients live on the CPU and
  the optimizer steps there, so FSDP has ``optimizer+params`` only (https://pytorch.org/docs/stable/fsdp.html,
  CPUOffload). The GPU keeps the gathered 16-bit units.

Megatron-LM is refused: trainstack does not model its optimizer offload. PCIe bandwidth per GPU comes from
:data:`PCIE_GBYTES` (NVIDIA's data sheets: x16 link per GPU), at :data:`PCIE_EFFICIENCY` of the link. The optimizer
step on the CPU (:func:`cpu_optimizer_seconds`) runs at the Adam throughput Ren et al. 2021 measured per vCPU.
"""

from __future__ import annotations

from fractions import Fraction

from generator.sizing.common import SizingError, _ceil, _gb

OFFLOAD_MODES: tuple[str, ...] = ("none", "optimizer", "optimizer+params")

# GB/s per direction of each GPU's host link (x16): PCIe Gen3 16, Gen4 32, Gen5 64 (NVIDIA data sheets: V100
# "PCIe Gen3 32 GB/s" bidirectional, A100 "PCIe Gen4 64 GB/s", A10 and L20 PCIe Gen4 x16, H100/H800/H200/H20
# "PCIe Gen5 128 GB/s"; Alibaba's ebmgn9g page: Blackwell 48 GB "PCIe Gen5"). A GPU not listed gets Gen4.
PCIE_GBYTES = {
    "V100-16G": 16,
    "V100-32G": 16,
    "A100-40G": 32,
    "A100-80G": 32,
    "A10": 32,
    "L20": 32,
    "H20": 64,
    "H100": 64,
    "H800": 64,
    "H200": 64,
    "B-48G": 64,
    "B-PRO-72G": 64,
}
DEFAULT_PCIE_GBYTES = 32
# Share of the link a pinned-memory copy reaches (assumption; cudaMemcpy of pinned buffers reaches ~80-90%).
PCIE_EFFICIENCY = 0.8
# DeepSpeed's estimators multiply host memory by this (additional_buffer_factor): pinned staging buffers.
HOST_BUFFER_FACTOR = Fraction(3, 2)
# Share of a node's host memory the offloaded states may take: the OS, data loaders, page cache and checkpoint
# staging need the rest (assumption).
HOST_USABLE_SHARE = Fraction(4, 5)


# The CPU optimizer step. Ren et al. 2021 (ZeRO-Offload, arXiv:2101.06840, Sec. 6, the Adam latency table) time one
# Adam step of 10 billion fp32 parameters on a DGX-2's host (2 x 24-core Xeon Platinum 8168, 96 hardware threads):
# DeepSpeed's CPU-Adam 2.57 s, PyTorch's CPU Adam (PT-CPU) 14.76 s. As parameters per second per hardware thread
# (an Alibaba vCPU is one): CPU-Adam 10e9 / 2.57 / 96 = 40.5 M, PT-CPU 10e9 / 14.76 / 96 = 7.06 M. DeepSpeed steps
# with CPU-Adam (DeepSpeedCPUAdam); FSDP's CPUOffload steps the user's torch optimizer on the CPU, so PT-CPU.
# Uncertain: the table's figures were read from the paper, not re-checked against a stored copy on 2026-12-02, and a
# newer CPU (AVX-512, DDR5) steps faster per thread, so this is an upper bound of the time.
PAPER_ADAM_PARAMS = 10_000_000_000
PAPER_HOST_THREADS = 96
PAPER_ADAM_SECONDS = {"deepspeed": 2.57, "fsdp": 14.76}  # CPU-Adam, PT-CPU
# vCPUs per GPU when the catalog does not state the type's vCPUs: the paper's DGX-2, 96 threads for 16 GPUs
# (an assumption).
DEFAULT_VCPUS_PER_GPU = 6


def cpu_adam_params_per_second(framework: str, vcpus: int) -> float:
    """Parameters per second one node's ``vcpus`` step with Adam on the CPU, as ``framework`` runs it (DeepSpeed's
    CPU-Adam, or PyTorch's CPU Adam under FSDP), scaled from the paper's 96-thread host."""
    return PAPER_ADAM_PARAMS / PAPER_ADAM_SECONDS[framework] / PAPER_HOST_THREADS * vcpus


def cpu_optimizer_seconds(framework: str, params_per_gpu: float, gpus_per_node: int, vcpus: int) -> float:
    """Seconds of one optimizer step on a node's CPUs: its GPUs' optimizer shards (``params_per_gpu`` each, Psi/d)
    stepped by the node's ``vcpus`` (0: not stated, :data:`DEFAULT_VCPUS_PER_GPU` per GPU assumed). Not overlapped
    with the GPU's work: DeepSpeed steps after the backward pass and uploads the weights before the next forward;
    its one-step delayed parameter update (Ren et al. 2021, Sec. 4.3) is optional and not assumed."""
    threads = vcpus or DEFAULT_VCPUS_PER_GPU * gpus_per_node
    return params_per_gpu * gpus_per_node / cpu_adam_params_per_second(framework, threads)


def check_offload(offload: str, framework: str, zero_stage: int, lora: bool, moe: bool) -> None:
    """Raise SizingError naming what to change when ``framework`` (resolved) cannot offload that way."""
    if offload not in OFFLOAD_MODES:
        raise SizingError(f"unknown offload {offload!r}; allowed: {', '.join(OFFLOAD_MODES)}.")
    if offload == "none":
        return
    if lora:
        raise SizingError(
            "CPU offload is modelled for full training; LoRA/QLoRA keep their small optimizer state on "
            "the GPU (or use the paged optimizer): use offload none."
        )
    if moe:
        raise SizingError(
            "CPU offload is not modelled for mixture-of-experts models (their expert states shard over "
            "the expert data-parallel group): use offload none."
        )
    if framework not in ("deepspeed", "fsdp"):
        raise SizingError(
            f"offload {offload} runs on DeepSpeed (ZeRO-Offload, ZeRO-Infinity) or FSDP (CPUOffload), "
            f"not {framework}: trainstack does not model Megatron-LM's optimizer offload; set framework "
            "deepspeed (or fsdp for optimizer+params) with zero_stage 1-3."
        )
    if framework == "deepspeed" and zero_stage == 0:
        raise SizingError("DeepSpeed offloads ZeRO partitions: offload needs zero_stage 1, 2 or 3.")
    if framework == "deepspeed" and offload == "optimizer+params" and zero_stage != 3:
        raise SizingError(
            "DeepSpeed offloads parameters (offload_param) only under ZeRO-3: use zero_stage 3, or "
            "offload optimizer."
        )
    if framework == "fsdp" and offload == "optimizer":
        raise SizingError(
            "FSDP's CPUOffload moves the parameters with their gradients and optimizer states; it has no "
            "optimizer-only offload: use offload optimizer+params, or framework deepspeed."
        )


def _deepspeed_offload(
    offload: str, psi: Fraction, shard: Fraction, pb: int, k: int, zero_stage: int, largest_module: Fraction
) -> tuple[int, int, int, Fraction, Fraction, str]:
    """DeepSpeed's offload: ZeRO-Offload below stage 3 (the optimizer only), ZeRO-3's offload_optimizer and
    offload_param. (weights, gradients, optimizer states on the GPU, host bytes, PCIe bytes, how)."""
    if offload == "optimizer" and zero_stage < 3:
        w, g, o = _ceil(pb * psi), 0, 0
        host = (k + 4) * shard  # fp32 gradient partition + master weights + moments
        pcie = 2 * pb * shard  # 16-bit gradient partition down, updated 16-bit weights up
        how = (
            f"DeepSpeed ZeRO-Offload (offload_optimizer, stage {zero_stage}): GPU keeps the 16-bit weights "
            f"{pb}*Psi; the host the fp32 gradients, master weights and moments ({k + 4}*Psi/d)"
        )
        return w, g, o, host, pcie, how
    gathered = 2 * pb * largest_module  # the largest layer's 16-bit params and grads, gathered whole
    params_off = offload == "optimizer+params"
    w = _ceil(gathered + (0 if params_off else pb * shard))
    g, o = 0, 0
    host = (k + 4 + (pb if params_off else 0)) * shard
    pcie = (3 if params_off else 2) * pb * shard
    how = (
        "DeepSpeed ZeRO-3 "
        + (
            "offload_param + offload_optimizer (ZeRO-Infinity to CPU): GPU keeps only the "
            "largest layer gathered (4 x largest layer)"
            if params_off
            else "offload_optimizer: GPU keeps the 16-bit parameter partition and the largest layer gathered"
        )
        + f"; host {k + 4 + (pb if params_off else 0)}*Psi/d"
    )
    return w, g, o, host, pcie, how


def _fsdp_offload(
    shard: Fraction,
    pb: int,
    k: int,
    zero_stage: int,
    layer_params: Fraction,
    live_units: int,
    root: tuple[Fraction, Fraction],
    grad_units: int,
) -> tuple[int, int, int, Fraction, Fraction, str]:
    """FSDP CPUOffload(offload_params=True). (weights, gradients, optimizer states on the GPU, host bytes, PCIe
    bytes, how). The gathered units, the live gradients and the root unit are those of
    :func:`generator.sizing.frameworks.fsdp_root_unit` and ``FSDP_LIVE_GRAD_UNITS``: offload moves the shards."""
    w = _ceil(live_units * pb * layer_params + pb * root[0])
    g = _ceil(grad_units * pb * layer_params + pb * root[1])
    o = 0
    host = (k + 4) * shard  # the fp32 FlatParameter shard (K's master copy), its fp32 gradient, the moments
    fetches = 2 if zero_stage == 3 else 1  # FULL_SHARD gathers again for backward
    pcie = (4 * fetches + 4) * shard  # fp32 shards up per gather, fp32 gradient shard down
    how = (
        f"FSDP CPUOffload(offload_params=True): GPU keeps {live_units} gathered 16-bit units, {grad_units} units' "
        f"gradients and the root unit ({float(root[0]):,.0f} params, its output layer's gradient); the host the fp32 "
        f"parameter and gradient shards and the moments ({k + 4}*Psi/d)"
    )
    return w, g, o, host, pcie, how


def offload_states(
    framework: str,
    offload: str,
    *,
    psi: Fraction,
    pb: int,
    k: int,
    zero_stage: int,
    dp: int,
    layer_params: Fraction,
    largest_module: Fraction,
    live_units: int,
    notes: list[str],
    root: tuple[Fraction, Fraction] = (Fraction(0), Fraction(0)),
    grad_units: int = 1,
) -> tuple[int, int, int, int, int]:
    """(weights, gradients, optimizer states on the GPU, host bytes, PCIe bytes per step) per GPU.

    ``psi`` is this GPU's parameters before ZeRO sharding, ``dp`` the ranks ZeRO shards over, ``k`` the optimizer's
    bytes per parameter (fp32 master + moments), ``layer_params``/``largest_module`` per GPU as the frameworks'
    gather terms count them, ``root`` and ``grad_units`` FSDP's root unit and live gradient units (FSDP only)."""
    shard = psi / dp
    if framework == "deepspeed":
        w, g, o, host, pcie, how = _deepspeed_offload(offload, psi, shard, pb, k, zero_stage, largest_module)
    else:
        w, g, o, host, pcie, how = _fsdp_offload(
            shard, pb, k, zero_stage, layer_params, live_units, root, grad_units
        )
    host_bytes = _ceil(host * (HOST_BUFFER_FACTOR if framework == "deepspeed" else 1))
    notes.append(
        f"offload {offload}: {how}; host memory per GPU = {_gb(host_bytes)}"
        + (" (x1.5, DeepSpeed's additional_buffer_factor)" if framework == "deepspeed" else "")
        + f"; PCIe per step per GPU = {_gb(pcie)} [docs/sizing.md, 'CPU offload']"
    )
    return w, g, o, host_bytes, _ceil(pcie)


def pcie_seconds(pcie_bytes: int, gpu: str) -> float:
    """Seconds one GPU's offload traffic takes on its PCIe link (both directions counted on one, an upper bound)."""
    return pcie_bytes / (PCIE_GBYTES.get(gpu, DEFAULT_PCIE_GBYTES) * 1e9 * PCIE_EFFICIENCY)


def host_fits(host_bytes_per_gpu: int, gpus_per_node: int, host_memory_gib: float) -> bool:
    """Whether a node's host memory holds its GPUs' offloaded states within HOST_USABLE_SHARE of it."""
    return host_bytes_per_gpu * gpus_per_node <= HOST_USABLE_SHARE * host_memory_gib * 2**30
