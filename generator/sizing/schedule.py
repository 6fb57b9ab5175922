"""The run's schedule: model FLOPs with attention and logits, the expected MFU of a layout, the pipeline bubble,
checkpoint writes, the expected rework after interruptions and the restores, summed into wall-clock hours.

[PaLM], [PTD-P], [Young], [Daly] and [Llama3] are listed in :mod:`generator.sizing`; the layout factors of
:func:`layout_mfu` are labelled assumptions with their sources in docs/sizing.md (section 7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from generator.sizing.architecture import Architecture
from generator.sizing.checkpoint import young_daly_interval
from generator.sizing.common import SizingError, _positive_int, _positive_number
from generator.sizing.op_checkpoint import recompute_flops_per_token as op_recompute_flops

# Layout factors on the GPU's rated MFU (assumptions; docs/sizing.md section 7 has the sources).
# Tensor parallelism exchanges activations twice per layer in forward and backward; over PCIe (no NVLink; an A100's
# NVLink gives 600 GB/s, PCIe Gen4 x16 64 GB/s, NVIDIA A100 datasheet) that traffic is ~10x slower.
TP_OVER_PCIE_FACTOR = 0.7
# Tensor parallelism across nodes: [PTD-P] Sec. 5.4.1, Fig. 13 and Takeaway #1 ("tensor model parallelism should
# generally be used up to degree g when using g-GPU servers"): throughput drops steeply once tp leaves the server.
TP_ACROSS_NODES_FACTOR = 0.5
# Traffic between nodes over TCP instead of RDMA: NCCL's socket transport reaches a fraction of the NIC's line rate
# and costs host CPU (NCCL docs, NCCL_NET / socket transport); an assumption. It scales the bandwidth the network
# charges of :func:`data_parallel_ratio` and :func:`alltoall_ratio` see, and only those: a job whose exchange hides
# behind its compute loses nothing to TCP (an earlier flat x0.7 on the MFU counted TCP twice: issue 24).
TCP_BANDWIDTH_FACTOR = 0.7
# Micro-batches per step per pipeline when the spec gives no global batch: an assumption (PTD-P recommends m >> p).
DEFAULT_MICROBATCHES_PER_STAGE = 4
# Fixed time to relaunch the job after an interruption (rendezvous, NCCL init, data-loader warm-up), on top of the
# checkpoint read: an engineering assumption.
RELAUNCH_HOURS = 5 / 60
NEVER_HOURS = 1e9  # the wall time of a run that interruptions never let finish


@dataclass(frozen=True, slots=True)
class FlopsPerToken:
    """Model FLOPs per trained token (forward + backward), split into its terms ([PaLM] App. B; [PTD-P] Sec. 5.1)."""

    dense: float  # 6 x non-embedding parameters
    attention: float  # 12 x L x h x s (QK^T and AV, forward 4Lhs, backward 8Lhs)
    logits: float  # 6 x V x h (the output projection; an input-embedding lookup does no multiply)

    @property
    def total(self) -> float:
        return self.dense + self.attention + self.logits


def flops_per_token(arch: Architecture, seq_len: int) -> FlopsPerToken:
    """6·N_nonembedding + 12·L·h·s + 6·V·h: [PaLM] App. B's model FLOPs with the vocabulary projection counted
    apart ([PTD-P] Sec. 5.1: 72·B·s·L·h²·(1 + s/6h + V/12hL) per step without recompute is the same sum).

    N is the *active* parameter count: a MoE token passes through top_k routed experts, the shared ones and the
    router, not every expert (DeepSeek-V3 report, arXiv:2412.19437, Sec. 1: 37B of 671B "activated for each
    token"). The attention term uses the heads' width a·d (= h unless ``head_dim`` is set apart)."""
    _positive_int("seq_len", seq_len)
    embedding = arch.vocab * arch.hidden * (1 if arch.tied_embeddings else 2)
    nonembedding = max(0, arch.active_parameters - embedding)
    return FlopsPerToken(
        6.0 * nonembedding,
        12.0 * arch.layers * arch.heads * arch.d_head * seq_len,
        6.0 * arch.vocab * arch.hidden,
    )


def model_flops(arch: Architecture, seq_len: int, tokens: int) -> float:
    """Model FLOPs of training on ``tokens`` tokens ([PaLM] App. B): what a published MFU is measured against, no
    recompute and no capacity padding counted."""
    _positive_int("tokens", tokens)
    return flops_per_token(arch, seq_len).total * tokens


def executed_flops(arch: Architecture, seq_len: int, tokens: int, recompute: str) -> float:
    """FLOPs the GPUs execute: model FLOPs, plus one extra forward with full recompute (x 8/6), the attention
    core's forward (4·L·h·s per token, [SP] Sec. 5) with selective recompute, or the forward of the matmuls
    torchtitan's op-level policy does not save with selective-op (:mod:`generator.sizing.op_checkpoint`)."""
    _positive_int("tokens", tokens)
    f = flops_per_token(arch, seq_len)
    # a capacity factor pads every expert's batch to capacity: the routed experts compute cf x their tokens
    padded = _capacity_padding_flops(arch)
    if recompute == "full":
        return (f.total + padded) * tokens * 8 / 6
    if recompute == "selective":
        return (f.total + padded + f.attention / 3) * tokens
    if recompute == "selective-op":
        return (f.total + padded + op_recompute_flops(arch)) * tokens
    if recompute == "none":
        return (f.total + padded) * tokens
    raise SizingError(f"unknown recompute {recompute!r}; allowed: none, selective, selective-op, full.")


def attention_share(arch: Architecture, seq_len: int, recompute: str) -> float:
    """The attention core's share (QK^T and AV, with selective recompute their forward again) of the executed
    FLOPs: what FP8 leaves in BF16 (:func:`generator.sizing.mfu.fp8_speedup`). Full recompute repeats every
    forward, so it keeps the share; selective-op saves the attention output and re-runs only matmuls."""
    f = flops_per_token(arch, seq_len)
    attention = f.attention * (4 / 3 if recompute == "selective" else 1.0)
    return attention / (executed_flops(arch, seq_len, 1, recompute) * (6 / 8 if recompute == "full" else 1.0))


def _capacity_padding_flops(arch: Architecture) -> float:
    """FLOPs per token a capacity factor adds by padding the routed experts' batches (GShard/Switch-style token
    dropping: every expert runs capacity = cf x tokens x top_k / experts rows); 0 for a dropless router."""
    moe = arch.moe
    if moe is None or moe.capacity_factor is None:
        return 0.0
    n = arch.layers - moe.dense_layers
    routed = 6.0 * n * moe.top_k * arch.mlp_matrices * arch.hidden * moe.expert_ffn_hidden
    return routed * (moe.capacity_factor - 1)


@dataclass(frozen=True, slots=True)
class LayoutMfu:
    mfu: float
    factors: tuple[tuple[str, float], ...]  # (why, factor) applied to the GPU's rated MFU


def layout_mfu(
    rated_mfu: float,
    tp: int,
    gpus_per_node: int,
    interconnect: str,
    nodes: int,
    comm: tuple[tuple[str, float], ...] = (),
) -> LayoutMfu:
    """The expected MFU of a layout: ``rated_mfu`` (the fitted efficiency x model/executed FLOPs,
    :func:`generator.sizing.mfu.compute_efficiency`) times a factor for tensor parallelism over PCIe and tensor
    parallelism across nodes (assumptions, see the constants), and for each ``comm`` entry (why, ratio) the network
    time it leaves exposed as a ratio of compute time, a factor 1/(1 + ratio): one entry per collective kind, the
    expert all-to-all (:func:`alltoall_ratio`) and the data-parallel gradient exchange (:func:`data_parallel_ratio`);
    TCP between nodes lowers the bandwidth those see (:data:`TCP_BANDWIDTH_FACTOR`), not the MFU."""
    _positive_number("rated_mfu", rated_mfu)
    factors: list[tuple[str, float]] = [(why, 1.0 / (1.0 + ratio)) for why, ratio in comm if ratio > 0]
    if tp > gpus_per_node:
        factors.append((f"tensor parallel {tp} spans nodes of {gpus_per_node} GPUs", TP_ACROSS_NODES_FACTOR))
    elif tp > 1 and interconnect == "pcie":
        factors.append((f"tensor parallel {tp} over PCIe (no NVLink)", TP_OVER_PCIE_FACTOR))
    return LayoutMfu(rated_mfu * math.prod(f for _, f in factors), tuple(factors))


def alltoall_ratio(
    arch: Architecture,
    seq_len: int,
    ep: int,
    tp: int,
    gpus_per_node: int,
    nodes: int,
    nic_gbps: float,
    peak_tflops: float,
    mfu: float,
) -> float:
    """Expert-parallel all-to-all time over compute time for a MoE layout, 0 when ep x tp stays in one node.

    Per token, :func:`generator.sizing.moe.alltoall_bytes_per_token` bytes leave their GPU; with routing spread
    evenly a share 1 - gpus_per_node/(ep x tp) of them goes to another node, through the cluster's NICs
    (nodes x ``nic_gbps``); compute per token is its model FLOPs over all GPUs at ``peak_tflops`` x ``mfu``."""
    if arch.moe is None or ep * tp <= gpus_per_node or nic_gbps <= 0:
        return 0.0
    from generator.sizing.moe import alltoall_bytes_per_token

    remote = 1.0 - gpus_per_node / (ep * tp)
    comm = (
        alltoall_bytes_per_token(arch.hidden, arch.layers, arch.moe) * remote / (nodes * nic_gbps * 1e9 / 8)
    )
    compute = flops_per_token(arch, seq_len).total / (nodes * gpus_per_node * peak_tflops * 1e12 * mfu)
    return comm / compute


# Bytes per gradient value the data-parallel exchange moves: bf16 gradients (Megatron-LM --grad-reduce-in-bf16,
# DeepSpeed and FSDP with 16-bit reduce dtype). Frameworks that reduce in fp32 move twice this; an assumption.
GRAD_EXCHANGE_BYTES = 2


def data_parallel_ratio(
    params_per_gpu: float,
    dp: int,
    zero_stage: int,
    gpus_per_node: int,
    nodes: int,
    nic_gbps: float,
    step_compute_seconds: float,
    *,
    tp: int,
) -> float:
    """The data-parallel exchange's exposed network time over the compute time of a step, 0 on one node.

    Each GPU moves 2·(dp-1)/dp of its gradients per step (ring all-reduce, or ZeRO-1/2's reduce-scatter and
    all-gather), 3·(dp-1)/dp with ZeRO-3, which also all-gathers the weights in forward and backward ([ZeRO]
    Sec. 7.2). NCCL's ring (or tree) for one data-parallel group crosses each node boundary once, so a node's NICs
    (``nic_gbps``) carry one GPU's share per group with members on the node, not one per GPU (nccl-tests
    doc/PERFORMANCE.md, "bus bandwidth": a ring all-reduce moves 2·(n-1)/n of the data over every link, the
    inter-node one included; https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md, read
    2026-12-02). With Megatron's rank order (tp fastest, then dp; pp outermost) a node holds
    ``dp_ranks_per_node`` = min(dp, gpus_per_node // tp) ranks of each group and gpus_per_node / dp_ranks_per_node
    groups: tp=8 on 8-GPU nodes puts eight groups' traffic through the NICs, tp=1 one group's (issue 24). The
    exchange overlaps the backward pass (2/3 of the compute; Megatron-LM --overlap-grad-reduce, DeepSpeed
    overlap_comm, FSDP), and with ZeRO-3 the whole step (prefetched gathers); only what exceeds that window is
    exposed. A network-bound ZeRO-3 job on a 32 Gbit/s type is then slower than on a 170 Gbit/s one at the same
    price. A group whose tp·dp GPUs fit in one node (the pipeline stages span the nodes) exchanges over NVLink
    only: 0."""
    if nodes <= 1 or dp <= 1 or nic_gbps <= 0 or step_compute_seconds <= 0:
        return 0.0
    _positive_int("tp", tp)
    if tp * dp <= gpus_per_node:
        return 0.0
    passes = 3 if zero_stage >= 3 else 2
    per_gpu = passes * (dp - 1) / dp * GRAD_EXCHANGE_BYTES * params_per_gpu
    dp_ranks_per_node = max(1, min(dp, gpus_per_node // tp))
    groups_per_node = gpus_per_node / dp_ranks_per_node
    comm = per_gpu * groups_per_node / (nic_gbps * 1e9 / 8)
    window = step_compute_seconds * (1.0 if zero_stage >= 3 else 2 / 3)
    return max(0.0, comm - window) / step_compute_seconds


def microbatches(global_batch_sequences: int | None, dp: int, micro_batch: int, pp: int) -> int:
    """Micro-batches per step per pipeline, m = global batch / (dp x micro-batch); without a global batch,
    DEFAULT_MICROBATCHES_PER_STAGE x pp (an assumption)."""
    if global_batch_sequences is None:
        return DEFAULT_MICROBATCHES_PER_STAGE * pp
    return max(1, global_batch_sequences // max(1, dp * micro_batch))


@dataclass(frozen=True, slots=True)
class Tier:
    """Where checkpoints are written and read back, at what aggregate rates (Gbit/s)."""

    name: str
    write_gbps: float
    read_gbps: float


@dataclass(frozen=True, slots=True)
class Schedule:
    """A run's hours: compute, the pipeline bubble, blocking checkpoint writes, the work lost to interruptions and
    the restores after them, summed into wall-clock hours. ``wall_hours`` is infinite when interruptions come
    faster than the run can make progress (NEVER_HOURS)."""

    compute_hours: float
    pipeline_bubble_hours: float
    checkpoint_write_hours: float
    expected_rework_hours: float
    restore_hours: float
    wall_hours: float
    mfu: float
    microbatches: int
    bubble_fraction: float
    interruptions: float
    interval_hours: float
    write_seconds: float
    restore_seconds: float
    notes: tuple[str, ...]

    @property
    def finishes(self) -> bool:
        """False when interruptions cost more time than the run makes between them (``wall_hours`` is then the
        NEVER_HOURS cap, and the rework and restores figured from it mean nothing)."""
        return self.wall_hours < NEVER_HOURS


def _check_schedule_inputs(
    flops: float,
    gpus: int,
    peak_tflops: float,
    pp: int,
    m: int,
    virtual_stages: int,
    interruptions_per_hour: float,
) -> None:
    """The figures :func:`schedule` divides by: positive (the interruption rate: >= 0)."""
    _positive_number("flops", flops)
    _positive_int("gpus", gpus)
    _positive_number("peak_tflops", peak_tflops)
    _positive_int("pp", pp)
    _positive_int("m", m)
    _positive_int("virtual_stages", virtual_stages)
    if interruptions_per_hour < 0:
        raise SizingError(f"interruptions_per_hour must be >= 0, got {interruptions_per_hour!r}.")


def _default_interval(write_s: float, interruptions_per_hour: float) -> float:
    """Seconds between checkpoints when the spec sets none: Young/Daly from the write time and the interruption
    rate; an hour (or the write time, if longer) when there is nothing to write or no interruption."""
    mtbf_h = 1.0 / interruptions_per_hour if interruptions_per_hour > 0 else math.inf
    if write_s > 0 and math.isfinite(mtbf_h):
        return young_daly_interval(write_s, mtbf_h * 3600.0)
    return max(write_s, 3600.0)


def _schedule_notes(
    d: Schedule,
    flops: float,
    gpus: int,
    peak_tflops: float,
    mfu: LayoutMfu,
    pp: int,
    virtual_stages: int,
    tier: Tier,
    interruptions_per_hour: float,
) -> tuple[str, ...]:
    """The schedule's terms with their numbers plugged in, one line each (compute, bubble, writes, interruptions,
    wall)."""
    compute, bubble, writes, wall = (
        d.compute_hours,
        d.pipeline_bubble_hours,
        d.checkpoint_write_hours,
        d.wall_hours,
    )
    m, bubble_fraction, tau_h = d.microbatches, d.bubble_fraction, d.interval_hours
    write_s, restore_s = d.write_seconds, d.restore_seconds
    progress = compute + bubble
    notes = (
        f"compute = {flops:.3g} model FLOPs / ({gpus} GPUs x {peak_tflops:g} TFLOP/s x MFU {mfu.mfu:.3f}) = "
        f"{compute:,.1f} h" + ("".join(f"; MFU x{f:g}: {why}" for why, f in mfu.factors)),
        (
            f"pipeline bubble = (pp-1)/(v*m) = {pp - 1}/({virtual_stages}*{m}) (interleaved)"
            if virtual_stages > 1
            else f"pipeline bubble = (pp-1)/m = {pp - 1}/{m}"
        )
        + f" of compute ({bubble_fraction:.1%} of pipelined time) = "
        f"{bubble:,.1f} h",
        (
            f"checkpoint writes = {progress:,.1f} h / {tau_h:,.2f} h interval x {write_s:,.0f} s to {tier.name} "
            f"({tier.write_gbps:g} Gbit/s) = {writes:,.1f} h"
        ),
        (
            f"interruptions = {interruptions_per_hour:.4g}/h x wall; each loses tau/2 = {tau_h / 2:,.2f} h and a restore "
            f"of {restore_s:,.0f} s from {tier.name} ({tier.read_gbps:g} Gbit/s) + {RELAUNCH_HOURS * 60:.0f} min relaunch"
        ),
        f"wall = (compute + bubble + writes) / (1 - rate x (tau/2 + restore)) = {wall:,.1f} h",
    )
    return notes


def schedule(
    flops: float,
    gpus: int,
    peak_tflops: float,
    mfu: LayoutMfu,
    pp: int,
    m: int,
    size_bytes: int,
    tier: Tier,
    interruptions_per_hour: float,
    interval_seconds: float | None = None,
    virtual_stages: int = 1,
) -> Schedule:
    """The schedule of a run of ``flops`` model FLOPs (:func:`model_flops`) on ``gpus`` GPUs.

    * compute = flops / (gpus x peak x mfu), the MFU on model FLOPs without the bubble (recompute is in it:
      :func:`generator.sizing.mfu.compute_efficiency` x model/executed FLOPs); the 1F1B bubble adds (pp-1)/m of
      it, i.e. (pp-1)/(m+pp-1) of the pipelined time ([PTD-P] Sec. 2.2.1); with v interleaved (virtual) stages per GPU, (pp-1)/(v m)
      ([PTD-P] Sec. 2.2.2: each stage's work is split into v chunks, so the bubble shrinks v-fold);
    * checkpoint writes: every interval tau of progress the job stops for C = size / tier write rate;
    * each interruption loses tau/2 of work on average and a restore R = size / tier read rate + a relaunch;
    * interruptions arrive at rate lambda over the whole wall time, so
      wall = (compute + bubble + writes) / (1 - lambda (tau/2 + R)) (first order, as [Daly]).

    ``interval_seconds`` None: tau is Young/Daly sqrt(2 C M) from the tier's write time.
    """
    _check_schedule_inputs(flops, gpus, peak_tflops, pp, m, virtual_stages, interruptions_per_hour)
    compute = flops / (gpus * peak_tflops * 1e12 * mfu.mfu) / 3600.0
    vm = virtual_stages * m
    bubble_fraction = (pp - 1) / (vm + pp - 1)
    bubble = compute * (pp - 1) / vm
    write_s = size_bytes / (tier.write_gbps * 1e9 / 8) if size_bytes else 0.0
    restore_s = size_bytes / (tier.read_gbps * 1e9 / 8) if size_bytes else 0.0
    if interval_seconds is None:
        interval_seconds = _default_interval(write_s, interruptions_per_hour)
    tau_h = interval_seconds / 3600.0
    progress = compute + bubble
    writes = progress / tau_h * write_s / 3600.0 if size_bytes else 0.0
    per_interrupt = tau_h / 2 + restore_s / 3600.0 + RELAUNCH_HOURS
    lost = interruptions_per_hour * per_interrupt
    base = progress + writes
    # interruptions faster than progress: the run never ends; cap the wall time so plans stay comparable
    wall = base / (1.0 - lost) if lost < 1.0 - base / NEVER_HOURS else NEVER_HOURS
    interrupts = interruptions_per_hour * wall
    rework = interrupts * tau_h / 2
    restore = interrupts * (restore_s / 3600.0 + RELAUNCH_HOURS)
    hours = (compute, bubble, writes, rework, restore, wall)
    draft = Schedule(*hours, mfu.mfu, m, bubble_fraction, interrupts, tau_h, write_s, restore_s, ())
    notes = _schedule_notes(
        draft, flops, gpus, peak_tflops, mfu, pp, virtual_stages, tier, interruptions_per_hour
    )
    return replace(draft, notes=notes)
