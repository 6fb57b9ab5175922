"""The hardware an estimate is compared with: the GPU (``--gpu``), the node (``--instance-type``), and what CPU
offload costs per optimizer step on that node (PCIe traffic and the optimizer step on its CPUs).

Apart from :mod:`generator.estimate` because it is the part that reads the catalog: the sizing arithmetic needs
none of it. The offload step is the planner's (``offload_term`` in :mod:`generator.plan.run_hours`): the same
functions of :mod:`generator.sizing.offload`, at the same vCPU assumption when the node's are not known.
"""

from __future__ import annotations

from typing import Any

import generator.estimate.events as ev
from generator import sizing
from generator.catalog import Catalog, GpuModel, InstanceType
from generator.errors import did_you_mean
from generator.estimate.events import EstimateError
from generator.sizing.offload import DEFAULT_VCPUS_PER_GPU

# The node assumed without --instance-type, for the host memory of the offloaded states: trainstack's multi-node
# types carry 8 GPUs (generator/plan/rejections.py, NotMultiNode). The CPU step's time does not depend on it: at
# DEFAULT_VCPUS_PER_GPU per GPU each GPU's shard has its own threads.
ASSUMED_GPUS_PER_NODE = 8


def load(catalog: Catalog | None) -> Catalog:
    """``catalog``, or the packaged one (read only when the estimate needs a GPU or an instance type)."""
    if catalog is not None:
        return catalog
    from generator.catalog import load_catalog

    return load_catalog()


def gpu_model(name: str, catalog: Catalog) -> tuple[GpuModel, bool]:
    """The GPU named by ``--gpu`` and whether Alibaba Cloud offers it (False: an NVIDIA part known only from its
    published figures)."""
    found = catalog.gpu(name)
    unavailable = catalog.unavailable_accelerator(name) if found is None else None
    if unavailable is not None and unavailable.vendor == "nvidia":
        # an NVIDIA part no Alibaba product offers (H100, H800, H200): its published figures, so a run read about
        # can be compared with a plan here; a CUDA spec would run on it unchanged (unlike an Ascend NPU)
        # Hopper's dense FP8 peak is twice its BF16 (NV-H100: 3,958 FP8 TFLOPS with sparsity, 989 BF16 dense)
        figures = GpuModel(
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
        return figures, False
    if unavailable is not None:
        from generator.catalog.unavailable import unavailable_text

        message, hint = unavailable_text(unavailable, catalog)
        raise EstimateError.of(ev.AcceleratorNotOffered(unavailable.name, message, hint))
    if found is None:
        words = [w for g in catalog.gpus for w in (g.name, *g.aliases)]
        raise EstimateError.of(ev.UnknownGpu(name, did_you_mean(name, words), catalog.gpu_names()))
    return found, True


def instance_type(name: str, gpu: str | None, catalog: Catalog) -> InstanceType:
    """The ECS instance type or Lingjun machine type named by ``--instance-type``; ``gpu`` (``--gpu``), when given,
    must be its GPU."""
    found = catalog.instance(name)
    if found is None:
        words = [t.name for t in catalog.instance_types] + [t.name for t in catalog.lingjun_types]
        raise EstimateError.of(ev.UnknownInstanceType(name, did_you_mean(name, words)))
    if gpu is not None:
        named = catalog.gpu(gpu)
        if named is None or named.name != found.gpu:
            raise EstimateError.of(ev.GpuNotOnInstanceType(gpu, found.name, found.gpu))
    return found


def offload_step(
    setup: sizing.TrainingSetup,
    memory: sizing.MemoryBreakdown,
    node: InstanceType | None,
    gpu: str | None,
    warnings: list[dict[str, Any]],
) -> dict[str, Any]:
    """What CPU offload costs per optimizer step on one GPU's node: the PCIe time of its traffic (the GPU's link,
    Gen4 for a GPU not listed or not given) and the optimizer step on the node's CPUs (DeepSpeed's CPU-Adam, or
    PyTorch's CPU Adam under FSDP, at the throughput Ren et al. 2021 measured per vCPU), neither overlapped, as
    the planner counts them. Without ``node`` (or a type without stated vCPUs) the host's vCPUs are assumed, and
    ``warnings`` gets the :class:`~generator.estimate.events.HostCpuAssumed` note that says so."""
    arch = setup.arch
    framework = sizing.resolve_framework(setup.framework, setup.zero_stage)
    shard = (
        arch.parameters / (setup.tp * setup.pp) / (setup.dp * setup.cp)
    )  # Psi/d: the optimizer shard per GPU
    gpus_per_node = node.gpus if node is not None else ASSUMED_GPUS_PER_NODE
    stated = node.vcpu if node is not None else 0
    vcpus = stated or DEFAULT_VCPUS_PER_GPU * gpus_per_node
    if not stated:
        note = ev.HostCpuAssumed(DEFAULT_VCPUS_PER_GPU, node.name if node is not None else "")
        warnings.append(note.to_dict())
    host_node = memory.host * gpus_per_node
    out: dict[str, Any] = {
        "host_bytes_per_gpu": memory.host,
        "pcie_bytes_per_step": memory.pcie_bytes,
        "pcie_gbytes_per_second": sizing.PCIE_GBYTES.get(gpu or "", sizing.DEFAULT_PCIE_GBYTES),
        "pcie_efficiency": sizing.PCIE_EFFICIENCY,
        "pcie_seconds": sizing.pcie_seconds(memory.pcie_bytes, gpu or ""),
        "cpu_optimizer": "DeepSpeed CPU-Adam" if framework == "deepspeed" else "PyTorch CPU Adam",
        "cpu_step_seconds": sizing.cpu_optimizer_seconds(framework, shard, gpus_per_node, stated),
        "vcpus": vcpus,
        "vcpus_basis": "instance_type" if stated else "assumed",
        "gpus_per_node": gpus_per_node,
        "instance_type": node.name if node is not None else None,
        "host_bytes_per_node": host_node,
        "host_fits": _host_fits(node, memory.host, host_node, warnings),
    }
    return out


def step_compute_seconds(
    setup: sizing.TrainingSetup, peak_tflops: float, efficiency: float
) -> tuple[float, int]:
    """One optimizer step's compute on the GPUs, as the planner times it before offload and the network: dp x
    micro-batch x m sequences of executed FLOPs at the fitted efficiency, m the planner's default without a global
    batch (:func:`generator.sizing.microbatches`); and m."""
    m = sizing.microbatches(None, setup.dp, setup.micro_batch, setup.pp)
    step_tokens = setup.dp * setup.micro_batch * m * setup.seq_len
    executed = sizing.executed_flops(setup.arch, setup.seq_len, step_tokens, setup.recompute)
    gpus = setup.tp * setup.pp * setup.cp * setup.dp
    return executed / (gpus * peak_tflops * 1e12 * efficiency), m


def paged_step(
    memory: sizing.MemoryBreakdown, node: InstanceType | None, warnings: list[dict[str, Any]]
) -> dict[str, Any]:
    """A paged optimizer's moments in full training (generator/sizing/paged.py): the bytes the driver may page to
    the host, and whether the node's host memory holds its GPUs' share, as for CPU offload's states (the
    :class:`~generator.estimate.events.HostMemoryShort` note when it does not). Their PCIe time needs the GPU's
    usable memory: :func:`paged_traffic` adds it."""
    gpus_per_node = node.gpus if node is not None else ASSUMED_GPUS_PER_NODE
    host_node = memory.paged * gpus_per_node
    out: dict[str, Any] = {
        "paged_bytes_per_gpu": memory.paged,
        "gpus_per_node": gpus_per_node,
        "instance_type": node.name if node is not None else None,
        "host_bytes_per_node": host_node,
        "host_fits": _host_fits(node, memory.paged, host_node, warnings),
    }
    return out


def _host_fits(
    node: InstanceType | None, per_gpu: int, host_node: int, warnings: list[dict[str, Any]]
) -> bool | None:
    """Whether the node's host memory holds its GPUs' share of ``per_gpu`` host bytes (None without a node), with
    the :class:`~generator.estimate.events.HostMemoryShort` note when it does not."""
    if node is None:
        return None
    fits = sizing.host_fits(per_gpu, node.gpus, node.memory_gib)
    if not fits:
        short = ev.HostMemoryShort(node.name, host_node, node.memory_gib, float(sizing.HOST_USABLE_SHARE))
        warnings.append(short.to_dict())
    return fits


def paged_traffic(paged: dict[str, Any], memory: sizing.MemoryBreakdown, usable: int, gpu: str) -> None:
    """Adds to the paged block whether the moments are evicted (they do not fit beside the resident total in the
    usable memory) and, if so, the PCIe bytes and seconds of reading and writing all of them every optimizer step
    (:func:`generator.sizing.paged_pcie_bytes`, timed as offload's traffic)."""
    pcie = sizing.paged_pcie_bytes(memory.total, memory.paged, usable)
    paged["evicted"] = pcie > 0
    paged["pcie_bytes_per_step"] = pcie
    paged["pcie_gbytes_per_second"] = sizing.PCIE_GBYTES.get(gpu, sizing.DEFAULT_PCIE_GBYTES)
    paged["pcie_efficiency"] = sizing.PCIE_EFFICIENCY
    paged["pcie_seconds"] = sizing.pcie_seconds(pcie, gpu)
