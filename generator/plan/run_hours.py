"""The Schedule part: where checkpoints are written (the fastest tier the plan has), how often the cluster is
interrupted, and the run's hours for a candidate layout: compute, pipeline bubble, checkpoint writes, expected
rework and restores, summed into wall-clock hours (:func:`generator.sizing.schedule`).

The ranking (:mod:`generator.plan.compute`), the deadline (:mod:`generator.plan.layout`), the checkpoint interval
(:mod:`generator.plan.checkpoints`) and the cost all use the same :func:`fit_schedule`, so the plan's numbers agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

from generator import sizing
from generator.catalog import Catalog, InstanceType, Region
from generator.errors import Problem
from generator.plan import search
from generator.plan import unfit_refusals as u
from generator.plan.fit import context_degree, data_parallel, expert_degree, replica_gpus, training_setup
from generator.plan.model import Schedule
from generator.plan.node_counts import usable_bytes
from generator.plan.spot import spot_split
from generator.plan.storage import shared_kind, shared_size
from generator.platforms.base import Capability
from generator.platforms.registry import parts_for, platform_for
from generator.sizing.context import context_ratio
from generator.sizing.offload import DEFAULT_VCPUS_PER_GPU
from generator.spec.model import Spec

NODE_MTBF_HOURS = sizing.DEFAULT_NODE_MTBF_HOURS  # the assumption of generator/sizing/checkpoint.py
# Checkpoints go to the shared file system only when it holds two of them beside the dataset (the one being written
# and the last complete one); otherwise straight to OSS.
CHECKPOINTS_ON_SHARED_FS = 2
TIER_NAMES = {"cpfs": "CPFS", "extreme-nas": "Extreme NAS"}


@dataclass(frozen=True, slots=True)
class TierChoice:
    tier: sizing.Tier
    kind: str  # "cpfs", "extreme-nas" or "oss": where the job writes checkpoints
    why: str


def checkpoint_size(spec: Spec, arch: sizing.Architecture, lora_rank: int | None) -> int:
    lora = sizing.lora_trainable_parameters(arch, lora_rank) if lora_rank is not None else None
    return sizing.checkpoint_size_bytes(arch.parameters, spec.model.optimizer, spec.model.precision, lora)


def checkpoint_tier(
    spec: Spec, catalog: Catalog, region: Region, t: InstanceType, nodes: int, size_bytes: int
) -> TierChoice:
    """The tier checkpoints are written to and restored from, at the rate the whole job reaches it (Gbit/s).

    With a shared file system (CPFS or Extreme NAS) that holds two checkpoints beside the dataset, the job writes
    there at the file system's throughput and a background copy (trainstack-ckpt-sync, the node's RAM role) keeps the OSS bucket
    as the durable copy; otherwise it writes to OSS at the region's per-account limit [DOC-OSS-LIM]. Either way the
    nodes' own network bandwidth bounds it."""
    nic = nodes * t.network_gbps  # 0: not stated (Lingjun types)
    bound = lambda gbps: min(gbps, nic) if nic > 0 else gbps
    oss = sizing.Tier("OSS", bound(region.oss_upload_gbps), bound(region.oss_download_gbps))
    if not platform_for(spec).has(Capability.NODE_BOOTSTRAP):  # PAI-DLC: no trainstack process on the workers
        return TierChoice(
            oss,
            "oss",
            "PAI-DLC workers write to the checkpoint dataset (the bucket, mounted) and "
            "trainstack runs no copy process in DLC containers: written to OSS at the "
            f"{region.id} upload limit of {region.oss_upload_gbps:g} Gbit/s per account "
            "[DOC-OSS-LIM]",
        )
    kind = shared_kind(spec, region, nodes)
    if kind == "none":
        return TierChoice(
            oss,
            "oss",
            f"no shared file system: written to OSS at the {region.id} upload limit of "
            f"{region.oss_upload_gbps:g} Gbit/s per account [DOC-OSS-LIM]",
        )
    cap, _, mbps, source = shared_size(spec, catalog, kind, nodes)
    free = cap * 2**30 - (spec.storage.dataset.size if spec.storage.dataset else 0)
    name = TIER_NAMES[kind]
    if mbps <= 0 or free < CHECKPOINTS_ON_SHARED_FS * size_bytes:
        return TierChoice(
            oss,
            "oss",
            (
                f"the {name} file system has no room for {CHECKPOINTS_ON_SHARED_FS} "
                "checkpoints beside the dataset"
                if mbps > 0
                else f"the catalog states no throughput for {name}"
            )
            + f": written to OSS at the {region.id} upload limit "
            f"of {region.oss_upload_gbps:g} Gbit/s per account [DOC-OSS-LIM]",
        )
    gbps = mbps * 8 / 1000
    source = (
        f"[{source}] (stated for the CPFS POSIX client; through the NFS protocol service the nodes mount, no "
        "rate is stated: an assumption)"
        if kind == "cpfs"
        else f"[{source}]"
    )
    return TierChoice(
        sizing.Tier(name, bound(gbps), bound(gbps)),
        kind,
        f"written to the {name} file system at its {mbps:,} MB/s {source} and copied to OSS in the "
        f"background (trainstack-ckpt-sync with the nodes' RAM role), which stays the durable copy; OSS alone would "
        f"take {region.oss_upload_gbps:g} Gbit/s [DOC-OSS-LIM]",
    )


def interruptions_per_hour(spec: Spec, nodes: int) -> float:
    """Node failures (NODE_MTBF_HOURS per node, an assumption) plus spot reclaims (spot.interruptions_per_node_day
    per spot node, an assumption); any one stops the synchronous job."""
    _, spot_nodes = spot_split(spec, nodes)
    return nodes / NODE_MTBF_HOURS + (
        spot_nodes * spec.spot.interruptions_per_node_day / 24 if spot_nodes else 0.0
    )


def batch_sequences(spec: Spec) -> int | None:
    g = spec.model.global_batch_tokens
    return None if g is None else max(1, g // spec.model.sequence_length)


def rdma_between_nodes(spec: Spec, t: InstanceType) -> bool:
    """Whether the nodes reach each other over RDMA, as :func:`generator.plan.placement.fabric` decides."""
    platform = platform_for(spec)
    if not platform.has(Capability.RDMA):  # DLC's public resources: VPC TCP (generator/platforms/dlc/plan.py)
        return False
    if not platform.has(Capability.RDMA_BY_TYPE):  # Lingjun: every node is on the HPN fabric
        return True
    return spec.network.rdma is not False and (t.rdma or t.scc)


# A node's inter-node bandwidth when the catalog states none (Lingjun machine types): 400 Gbit/s, one 400G NIC,
# the least an HPN node has (an assumption; Alibaba's HPN 7.0 paper, Qian et al. SIGCOMM 2024, gives 8 x 400G).
ASSUMED_NIC_GBPS = 400.0


def internode_gbps(spec: Spec, catalog: Catalog, t: InstanceType, rdma: bool) -> float:
    """Bandwidth a node reaches other nodes with, as its platform states it (0: not stated): an ECS type's by
    :func:`instance_gbps`, a Lingjun type's HPN RDMA rate (``PlanParts.internode_gbps``)."""
    return parts_for(spec).internode_gbps(catalog, t, rdma)


def instance_gbps(t: InstanceType, rdma: bool) -> float:
    """Bandwidth an ECS instance type reaches other nodes with: its eRDMA or RoCE rate over RDMA, else its VPC
    network (0: not stated)."""
    if rdma:
        return float(t.erdma_gbps or t.roce_gbps or t.network_gbps or 0.0)
    return float(t.network_gbps or 0.0)


def fit_schedule(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    nodes: int,
    tp: int,
    pp: int,
) -> sizing.Schedule | None:
    """The schedule of ``nodes`` nodes of ``t`` with tensor degree ``tp`` and pipeline degree ``pp``; None without
    ``model.tokens``."""
    m = spec.model
    if not m.tokens:
        return None
    region = catalog.region(spec.region)
    gpu = catalog.gpu(t.gpu)
    assert region is not None and gpu is not None
    gpus = nodes * t.gpus
    dp = max(1, data_parallel(gpus, tp, pp, context_degree(spec)))
    micro = sizing.microbatches(batch_sequences(spec), dp, m.micro_batch_size, pp)
    model = sizing.model_flops(arch, m.sequence_length, m.tokens)
    executed = sizing.executed_flops(arch, m.sequence_length, m.tokens, spec.parallelism.recompute)
    # the fitted efficiency on executed FLOPs (generator/sizing/mfu.py), and the MFU on model FLOPs it gives
    peak, efficiency = sizing.precision_peak(
        gpu.bf16_tflops,
        gpu.fp8_tflops,
        sizing.compute_efficiency(arch.hidden, gpu.mfu, tp=tp),
        m.precision,
        sizing.attention_share(arch, m.sequence_length, spec.parallelism.recompute),
    )
    base_mfu = efficiency * model / executed
    # one optimizer step: dp x micro-batch x m sequences, at the fitted efficiency
    step_tokens = dp * m.micro_batch_size * micro * m.sequence_length
    step_s = executed / m.tokens * step_tokens / (gpus * peak * 1e12 * efficiency)
    comm = communication_terms(
        spec, catalog, arch, lora_rank, t, Degrees(nodes, tp, pp, dp), peak, base_mfu, step_s
    )
    mfu = sizing.layout_mfu(base_mfu, tp, t.gpus, gpu.interconnect, nodes, comm)
    size, tier, interval = checkpoint_terms(spec, catalog, arch, lora_rank, region, t, nodes)
    return sizing.schedule(
        model,
        gpus,
        peak,
        mfu,
        pp,
        micro,
        size,
        tier,
        interruptions_per_hour(spec, nodes),
        interval,
        virtual_degree(spec, pp),
    )


@dataclass(frozen=True, slots=True)
class Degrees:
    """A candidate layout's node count and its tensor, pipeline and data-parallel degrees."""

    nodes: int
    tp: int
    pp: int
    dp: int


def network_rate(spec: Spec, catalog: Catalog, t: InstanceType) -> tuple[float, str]:
    """The Gbit/s per node the network charges see (the stated inter-node rate, or ASSUMED_NIC_GBPS; over TCP the
    share of the line rate NCCL's socket transport reaches, not the MFU) and the words saying what is assumed."""
    rdma = rdma_between_nodes(spec, t)
    stated = internode_gbps(spec, catalog, t, rdma)
    nic = (stated or ASSUMED_NIC_GBPS) * (1.0 if rdma else sizing.TCP_BANDWIDTH_FACTOR)
    assumed = "" if stated else " (not stated for this type: an assumption)"
    if not rdma:
        assumed += f" over TCP (x{sizing.TCP_BANDWIDTH_FACTOR:g} of the line rate, an assumption)"
    return nic, assumed


def communication_terms(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    d: Degrees,
    peak: float,
    base_mfu: float,
    step_s: float,
) -> tuple[tuple[str, float], ...]:
    """What the layout spends beside compute, as layout-MFU entries (why, share of compute): the expert all-to-all,
    the data-parallel gradient exchange, the context-parallel KV exchange, the CPU offload and a paged optimizer's
    PCIe traffic."""
    m, zero, cp = spec.model, spec.parallelism.zero_stage, context_degree(spec)
    nic, assumed = network_rate(spec, catalog, t)
    ep = expert_degree(arch, spec.parallelism.expert, d.tp, d.dp)
    a2a = sizing.alltoall_ratio(arch, m.sequence_length, ep, d.tp, t.gpus, d.nodes, nic, peak, base_mfu)
    cpx = context_ratio(arch, m.sequence_length, cp, d.tp, t.gpus, d.nodes, nic, peak, base_mfu)
    experts = arch.expert_parameters
    per_gpu = ((arch.parameters - experts) + experts / ep) / (d.tp * d.pp)
    trainable = (
        sizing.lora_trainable_parameters(arch, lora_rank) / (d.tp * d.pp)
        if lora_rank is not None
        else per_gpu
    )
    # the cp ranks of a replica reduce gradients together with the dp ranks (Megatron-Core's dp x cp group)
    dpx = sizing.data_parallel_ratio(trainable, d.dp * cp, zero, t.gpus, d.nodes, nic, step_s, tp=d.tp)
    over = f"over {nic:g} Gbit/s per node{assumed}"
    experts_words = (
        f"expert all-to-all of ep={ep} x tp={d.tp} crosses nodes {over}, {a2a:.0%} of compute, not overlapped"
    )
    gradients_words = (
        f"data-parallel gradient exchange (dp={d.dp}, ZeRO-{zero}) {over} outlasts the "
        f"{'step' if zero >= 3 else 'backward pass'} by {dpx:.0%} of compute"
    )
    context_words = f"context-parallel KV exchange of cp={cp} x tp={d.tp} crosses nodes {over}, {cpx:.0%} of compute, not overlapped"
    return (
        (experts_words, a2a),
        (gradients_words, dpx),
        (context_words, cpx),
        offload_term(spec, arch, lora_rank, t, d.tp, d.pp, d.dp, step_s),
        paged_term(spec, arch, lora_rank, t, d, step_s),
    )


def checkpoint_terms(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    region: Region,
    t: InstanceType,
    nodes: int,
) -> tuple[int, sizing.Tier, int | None]:
    """The checkpoint's size, the tier it is written to and the fixed interval (None: auto, or no checkpoints,
    when an interruption restarts the run and half of it is charged per interruption)."""
    k = spec.checkpoints
    if not k.enabled:
        return 0, sizing.Tier("none", 1.0, 1.0), None
    size = checkpoint_size(spec, arch, lora_rank)
    tier = checkpoint_tier(spec, catalog, region, t, nodes, size).tier
    return size, tier, k.interval if isinstance(k.interval, int) else None


def offload_term(
    spec: Spec,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    tp: int,
    pp: int,
    dp: int,
    step_s: float,
) -> tuple[str, float]:
    """CPU offload per optimizer step over the step's compute time, as a layout-MFU entry: the PCIe traffic and the
    optimizer step on the node's CPUs (DeepSpeed's CPU-Adam, or PyTorch's CPU Adam under FSDP, at the throughput
    Ren et al. 2021 measured per vCPU), neither overlapped (DeepSpeed's CPU step and the upload of the updated
    weights follow the backward pass; its one-step delayed update is optional); ("", 0) without offload
    (docs/sizing.md, 'CPU offload')."""
    if spec.parallelism.offload == "none" or step_s <= 0:
        return "", 0.0
    m = sizing.per_gpu_memory(training_setup(spec, arch, tp, pp, dp, lora_rank))
    pcie = sizing.pcie_seconds(m.pcie_bytes, t.gpu)
    framework = sizing.resolve_framework(spec.parallelism.framework, spec.parallelism.zero_stage)
    shard = arch.parameters / (tp * pp) / (dp * context_degree(spec))  # Psi/d: the optimizer shard per GPU
    cpu = sizing.cpu_optimizer_seconds(framework, shard, t.gpus, t.vcpu)
    threads = (
        f"{t.vcpu} vCPUs"
        if t.vcpu
        else f"{DEFAULT_VCPUS_PER_GPU} vCPUs per GPU assumed (the type's are not stated)"
    )
    adam = "DeepSpeed CPU-Adam" if framework == "deepspeed" else "PyTorch CPU Adam"
    return (
        f"offload {spec.parallelism.offload} moves {m.pcie_bytes / 1e9:,.2f} GB per GPU per step over PCIe "
        f"({sizing.PCIE_GBYTES.get(t.gpu, sizing.DEFAULT_PCIE_GBYTES)} GB/s per direction for {t.gpu} at "
        f"{sizing.PCIE_EFFICIENCY:.0%}, {pcie:,.2f} s) and steps {shard * t.gpus / 1e9:,.2f} B parameters per "
        f"node with {adam} on {threads} ({cpu:,.2f} s, Ren et al. 2021), {(pcie + cpu) / step_s:.0%} of "
        "compute, not overlapped"
    ), (pcie + cpu) / step_s


def paged_term(
    spec: Spec, arch: sizing.Architecture, lora_rank: int | None, t: InstanceType, d: Degrees, step_s: float
) -> tuple[str, float]:
    """A paged optimizer's moments in full training, evicted because they do not fit beside the resident total in
    the usable GPU memory: every optimizer step reads and writes all of them over PCIe, timed like offload's
    traffic and not overlapped; ("", 0) when they stay resident or nothing is paged (docs/sizing.md, 'Paged
    optimizer in full training')."""
    if not spec.model.finetune.paged_optimizer or lora_rank is not None or step_s <= 0:
        return "", 0.0
    m = sizing.per_gpu_memory(training_setup(spec, arch, d.tp, d.pp, d.dp, lora_rank))
    pcie_bytes = sizing.paged_pcie_bytes(m.total, m.paged, usable_bytes(spec, int(t.gpu_memory_gib * 2**30)))
    if not pcie_bytes:
        return "", 0.0
    pcie = sizing.pcie_seconds(pcie_bytes, t.gpu)
    return (
        f"the paged optimizer's moments ({m.paged / 1e9:,.2f} GB per GPU) do not fit beside the resident "
        f"{m.total / 1e9:,.2f} GB: every step pages them in and out over PCIe ({pcie_bytes / 1e9:,.2f} GB, "
        f"{sizing.PCIE_GBYTES.get(t.gpu, sizing.DEFAULT_PCIE_GBYTES)} GB/s per direction for {t.gpu} at "
        f"{sizing.PCIE_EFFICIENCY:.0%}, {pcie:,.2f} s), {pcie / step_s:.0%} of compute, not overlapped"
    ), pcie / step_s


def virtual_degree(spec: Spec, pp: int) -> int:
    """The interleaved (virtual) stages per GPU: ``parallelism.virtual_stages`` with a pipeline, 1 without one."""
    return spec.parallelism.virtual_stages if pp > 1 else 1


def meets_deadline(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    nodes: int,
    tp: int,
    pp: int,
) -> bool:
    """Whether ``nodes`` nodes finish within ``budget.max_days`` with every overhead counted (always without one)."""
    if spec.budget.max_days is None or not spec.model.tokens or isinstance(spec.compute.nodes, int):
        return True
    s = fit_schedule(spec, catalog, arch, lora_rank, t, nodes, tp, pp)
    return s is None or s.wall_hours <= spec.budget.max_days * 24


def plan_schedule(s: sizing.Schedule | None) -> Schedule | None:
    """The plan's Schedule (hours rounded for plan.json) from the chosen fit's."""
    if s is None:
        return None
    return Schedule(
        compute_hours=round(s.compute_hours, 2),
        pipeline_bubble_hours=round(s.pipeline_bubble_hours, 2),
        checkpoint_write_hours=round(s.checkpoint_write_hours, 2),
        expected_rework_hours=round(s.expected_rework_hours, 2),
        restore_hours=round(s.restore_hours, 2),
        wall_hours=round(s.wall_hours, 2),
        mfu=round(s.mfu, 4),
        microbatches=s.microbatches,
        interruptions=round(s.interruptions, 2),
        notes=s.notes,
    )


def deadline_cost(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    nodes: int,
    tp: int,
    pp: int,
) -> float:
    """The wall-clock hours the deadline is checked against at ``nodes`` nodes (0 without model.tokens): they fall
    with more nodes until interruptions, which grow with the node count, outweigh them (unimodal, as
    :func:`generator.plan.search.first_within` needs)."""
    s = fit_schedule(spec, catalog, arch, lora_rank, t, nodes, tp, pp)
    return 0.0 if s is None else s.wall_hours


def first_meeting_deadline(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    options: list[int],
    start: int,
    tp: int,
    pp: int,
) -> int | None:
    """The index of the first of ``options[start:]`` that meets ``budget.max_days`` with every overhead counted
    (``start`` itself without a deadline), or None: the one unimodal search, :func:`search.first_within`."""
    if spec.budget.max_days is None or not spec.model.tokens or isinstance(spec.compute.nodes, int):
        return start if start < len(options) else None
    return search.first_within(
        len(options),
        lambda i: deadline_cost(spec, catalog, arch, lora_rank, t, options[i], tp, pp),
        spec.budget.max_days * 24,
        start,
    )


def deadline_nodes(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    tp: int,
    pp: int,
    upto: int = 1 << 20,
) -> int | None:
    """The fewest nodes (a multiple the layout can split) that meet ``budget.max_days`` with every overhead
    counted: 1 without a deadline, None if no count up to ``upto`` does (more nodes also fail more often)."""
    if spec.budget.max_days is None or not spec.model.tokens or isinstance(spec.compute.nodes, int):
        return 1
    per = replica_gpus(tp, pp, context_degree(spec))
    step = per // math.gcd(per, t.gpus)
    options = list(range(step, upto + 1, step))
    at = first_meeting_deadline(spec, catalog, arch, lora_rank, t, options, 0, tp, pp)
    return None if at is None else options[at]


class Interruptions(TypedDict):
    """The fields every never-finishes refusal starts with (:class:`generator.plan.unfit_refusals.NeverFinishes`)."""

    nodes: int
    instance_type: str
    interruptions_per_hour: float
    node_mtbf_hours: float
    spot_nodes: int
    spot_interruptions_per_node_day: float
    interval_hours: float
    restore_seconds: float
    relaunch_hours: float


def never_finishes(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    nodes: int,
    tp: int,
    pp: int,
    s: sizing.Schedule,
) -> Problem:
    """A run whose interruptions cost more time than it makes between them (``s.finishes`` is False), as the
    refusal of the field to change first (:mod:`generator.plan.unfit_refusals`): the fixed checkpoint interval when
    auto lets it finish, checkpoints when they are off, the spot rate with spot nodes, else the node count. Its
    fixes are values that let the run finish within twice its uninterrupted time."""
    k = spec.checkpoints
    _, spot_nodes = spot_split(spec, nodes)
    facts = Interruptions(
        nodes=nodes,
        instance_type=t.name,
        interruptions_per_hour=interruptions_per_hour(spec, nodes),
        node_mtbf_hours=NODE_MTBF_HOURS,
        spot_nodes=spot_nodes,
        spot_interruptions_per_node_day=spec.spot.interruptions_per_node_day,
        interval_hours=s.interval_hours,
        restore_seconds=s.restore_seconds,
        relaunch_hours=sizing.RELAUNCH_HOURS,
    )
    finishes = _finishes_with(spec, catalog, arch, lora_rank, t, nodes, tp, pp)
    fixed = k.interval if k.enabled and isinstance(k.interval, int) else None
    if fixed is not None and finishes(checkpoints={"interval": "auto"}):
        return u.NeverFinishesAtInterval(**facts, interval_seconds=fixed).problem()
    if not k.enabled:
        return u.NeverFinishesUncheckpointed(**facts).problem()
    oss_only = spec.storage.shared == "none"
    if spot_nodes:
        return _spot_never_finishes(spec, facts, fixed, oss_only, finishes).problem()
    nodes_cls = u.NeverFinishesFixedNodes if isinstance(spec.compute.nodes, int) else u.NeverFinishesAutoNodes
    return nodes_cls(**facts, fixed_interval_seconds=fixed, oss_only=oss_only).problem()


def _finishes_with(
    spec: Spec,
    catalog: Catalog,
    arch: sizing.Architecture,
    lora_rank: int | None,
    t: InstanceType,
    nodes: int,
    tp: int,
    pp: int,
) -> Callable[..., bool]:
    """Whether the run finishes, within twice its uninterrupted time, with some spec sections' fields changed
    (``finishes(spot={"on_demand_base": 4})``)."""

    def finishes(**changes: dict[str, object]) -> bool:
        sections = {name: getattr(spec, name).model_copy(update=v) for name, v in changes.items()}
        x = fit_schedule(spec.model_copy(update=sections), catalog, arch, lora_rank, t, nodes, tp, pp)
        return x is None or (
            x.finishes
            and x.wall_hours <= 2 * (x.compute_hours + x.pipeline_bubble_hours + x.checkpoint_write_hours)
        )

    return finishes


def _spot_never_finishes(
    spec: Spec,
    facts: Interruptions,
    fixed: int | None,
    oss_only: bool,
    finishes: Callable[..., bool],
) -> u.NeverFinishesOnSpot:
    """The spot refusal: the highest of a few lower reclaim rates at which the run finishes, and the fewest more
    on-demand nodes (an eighth, a quarter or half of the spot nodes more) with which it does."""
    spot, nodes = spec.spot, facts["nodes"]
    on_demand, spot_nodes = spot_split(spec, nodes)
    rates = [x for x in (2, 1, 0.5, 0.25, 0.1, 0.05, 0.01) if x < spot.interruptions_per_node_day]
    rate = next((x for x in rates if finishes(spot={"interruptions_per_node_day": x})), None)
    bases = sorted({on_demand + max(1, spot_nodes // d) for d in (8, 4, 2)} | {nodes})
    base = next((b for b in bases if on_demand < b < nodes and finishes(spot={"on_demand_base": b})), None)
    mixed = platform_for(spec).has(Capability.MIXED_SPOT)  # a DLC job's workers are all spot or all on demand
    return u.NeverFinishesOnSpot(
        **facts,
        fixed_interval_seconds=fixed,
        oss_only=oss_only,
        finishing_rate=rate,
        mixed_spot=mixed,
        on_demand_base=spot.on_demand_base,
        finishing_base=base,
    )
