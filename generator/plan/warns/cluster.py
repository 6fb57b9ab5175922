"""The warnings of the shared cluster parts: the model and the run, the network, storage and base weights, spot
and the checkpoint bucket (each section names the planner module that raises them)."""

from __future__ import annotations

from dataclasses import dataclass

from generator.plan.warns.base import MOE_PRESETS, PlanWarning
from generator.spec.units import human_bytes, human_seconds

# -- the model and the run (generator/plan/compute.py)


@dataclass(frozen=True, slots=True)
class MoeSizedDense(PlanWarning):
    code = "TSW001"
    summary = (
        "the name or weights look like a known mixture-of-experts model, but only a parameter count is given"
    )
    known: str  # the MoE model the name looks like

    def text(self) -> str:
        return (
            f"the model looks like {self.known}, a mixture-of-experts model, but the spec gives only a total "
            "parameter count: it is sized as a dense model, so its FLOPs, hours and cost are those of every "
            "parameter working on every token; give model.moe with model.architecture, or a MoE preset "
            f"({MOE_PRESETS})"
        )


@dataclass(frozen=True, slots=True)
class HostMemoryLow(PlanWarning):
    code = "TSW002"
    summary = "the chosen type has less host memory than GPU memory"
    instance_type: str
    host_gib: float
    gpu_gib: float  # all the node's GPUs together
    ratio: float

    def text(self) -> str:
        return (
            f"{self.instance_type} has {self.host_gib:g} GiB host memory for {self.gpu_gib:g} GiB of GPU memory "
            f"({self.ratio:.2f}x); 1-2x is recommended so data loading and checkpoint staging do not stall"
        )


@dataclass(frozen=True, slots=True)
class DeadlineMissed(PlanWarning):
    code = "TSW003"
    summary = "the expected wall time (interruptions counted) is over budget.max_days"
    wall_hours: float
    nodes: int
    checkpoint_write_hours: float
    rework_hours: float
    restore_hours: float
    bare_hours: float  # compute and pipeline bubble only
    max_days: float
    fixed_nodes: bool  # compute.nodes is a number (nodes: auto would size for the deadline)

    def text(self) -> str:
        return (
            f"the run misses its deadline: about {self.wall_hours / 24:,.1f} days on {self.nodes} node(s) "
            f"with checkpoint writes ({self.checkpoint_write_hours:,.0f} h), rework "
            f"({self.rework_hours:,.0f} h) and restores ({self.restore_hours:,.0f} h) counted "
            f"({self.bare_hours / 24:,.1f} days without them), over budget.max_days ({self.max_days:g})"
            + ("; set compute.nodes: auto to size for the deadline" if self.fixed_nodes else "")
        )


@dataclass(frozen=True, slots=True)
class RunOverAYear(PlanWarning):
    code = "TSW004"
    summary = (
        "the run takes over a year (limits.LONG_RUN_HOURS): usually a typo in model.tokens or parameters"
    )
    wall_hours: float
    nodes: int

    def text(self) -> str:
        wall = self.wall_hours
        return (
            f"the run takes about {wall / 24 / 365:,.1f} years ({wall / 24:,.0f} days, checkpoint writes, "
            f"rework and restores after interruptions included) on {self.nodes} node(s): check model.tokens "
            "and model.parameters, or allow more nodes (compute.max_nodes, budget.max_days)"
        )


@dataclass(frozen=True, slots=True)
class IntervalOverRun(PlanWarning):
    code = "TSW005"
    summary = "a fixed checkpoints.interval is longer than the whole run"
    interval_seconds: int
    run_seconds: float

    def text(self) -> str:
        return (
            f"checkpoints.interval ({human_seconds(self.interval_seconds)}) is longer than the whole run "
            f"({human_seconds(self.run_seconds)}): no checkpoint is written before it ends; write interval: auto"
        )


@dataclass(frozen=True, slots=True)
class IntervalOverMtbf(PlanWarning):
    code = "TSW006"
    summary = "a fixed checkpoints.interval is longer than the cluster's expected time between interruptions"
    interval_seconds: int
    mtbf_hours: float  # an assumption (the catalog's interruption rates)

    def text(self) -> str:
        return (
            f"checkpoints.interval ({human_seconds(self.interval_seconds)}) is longer than the cluster's expected "
            f"time between interruptions ({self.mtbf_hours:,.1f} h, an assumption): most interruptions would "
            "lose more than a checkpoint's worth of work; write interval: auto"
        )


@dataclass(frozen=True, slots=True)
class Fp16LossScaling(PlanWarning):
    code = "TSW007"
    summary = "model.precision is fp16"

    def text(self) -> str:
        return (
            "fp16 mixed precision needs loss scaling; bf16 is the default for LLM training on A100 and newer"
        )


@dataclass(frozen=True, slots=True)
class Fp32Slow(PlanWarning):
    code = "TSW008"
    summary = "model.precision is fp32"

    def text(self) -> str:
        return "fp32 training is about 2x the memory and far slower than bf16 mixed precision"


@dataclass(frozen=True, slots=True)
class NotGenerallyAvailable(PlanWarning):
    code = "TSW009"
    summary = "the chosen ECS family is not generally available (invitation, preview)"
    family: str
    availability: str

    def text(self) -> str:
        return (
            f"{self.family} is sold as '{self.availability}' (not generally available): confirm access with "
            "Alibaba Cloud before deploying"
        )


# -- the network (generator/plan/network.py, generator/platforms/lingjun/plan.py)


@dataclass(frozen=True, slots=True)
class RdmaOff(PlanWarning):
    code = "TSW010"
    summary = "network.rdma is false for a multi-node run: gradients go over TCP"
    nodes: int

    def text(self) -> str:
        return (
            f"network.rdma is false: {self.nodes} nodes will exchange gradients over TCP and the GPUs will wait "
            "on the network for much of each step"
        )


@dataclass(frozen=True, slots=True)
class JumboNotEnabled(PlanWarning):
    code = "TSW011"
    summary = "network.jumbo_frames is true but the catalog does not document jumbo frames for the family"
    instance_type: str
    why: str  # the "jumbo frames" decision's reason (generator.plan.placement.jumbo_support)
    mtu: int

    def text(self) -> str:
        return (
            f"network.jumbo_frames is true but jumbo frames were NOT enabled on {self.instance_type}: "
            f"{self.why}. The nodes use MTU {self.mtu}, which NCCL over eRDMA needs without jumbo frames "
            "[DOC-ERDMA-GPU]"
        )


@dataclass(frozen=True, slots=True)
class LingjunRdmaOff(PlanWarning):
    code = "TSW012"
    summary = "network.rdma: false on Lingjun, whose nodes are always on the HPN fabric"

    def text(self) -> str:
        return "network.rdma: false has no effect on Lingjun: its nodes are always on the HPN fabric"


# -- storage and base weights (generator/plan/storage.py, generator/plan/weights.py)


@dataclass(frozen=True, slots=True)
class CpfsNotOffered(PlanWarning):
    code = "TSW013"
    summary = "CPFS is not offered in the region, so a large dataset reads from Extreme NAS"
    region: str

    def text(self) -> str:
        return f"CPFS is not offered in {self.region}; large datasets will read slowly from Extreme NAS"


@dataclass(frozen=True, slots=True)
class CpfsThroughputShort(PlanWarning):
    code = "TSW014"
    summary = "the CPFS file system's throughput is below what the nodes are assumed to read"
    throughput_mbps: int
    nodes: int
    need_mbps: int
    per_node_mbps: int  # the assumption (storage.CPFS_MBPS_PER_NODE)
    enough_gib: int  # the capacity that would give need_mbps (at most the largest CPFS)

    def text(self) -> str:
        return (
            f"CPFS gives {self.throughput_mbps:,} MB/s; {self.nodes} nodes may want {self.need_mbps:,} MB/s "
            f"(assumed {self.per_node_mbps} MB/s per node): set storage.capacity: {self.enough_gib}GiB "
            "if data loading stalls (capacity can grow later, never shrink)"
        )


@dataclass(frozen=True, slots=True)
class DataflowBucketTag(PlanWarning):
    code = "TSW015"
    summary = "the dataset bucket needs the cpfs-dataflow=true tag before `trainstack up`"
    bucket: str

    def text(self) -> str:
        return (
            f"before `trainstack up`, tag the dataset bucket {self.bucket} with cpfs-dataflow=true: a CPFS data "
            "flow cannot read a bucket without that tag (Alibaba Cloud, 'Manage dataflows', 2025-11); trainstack "
            "does not own that bucket"
        )


@dataclass(frozen=True, slots=True)
class WeightsPerNode(PlanWarning):
    code = "TSW016"
    summary = "without a shared file system each node downloads the base weights itself"
    nodes: int
    size_bytes: int

    def text(self) -> str:
        return (
            f"model.weights: each of the {self.nodes} nodes downloads the {human_bytes(self.size_bytes)} of "
            "weights itself (Lingjun plans have no shared file system); expect the first launch to wait for it"
        )


@dataclass(frozen=True, slots=True)
class WeightsDiskTight(PlanWarning):
    code = "TSW017"
    summary = "the base weights may not fit on the system disk beside the system"
    size_bytes: int
    system_disk_gib: int
    reserve_gib: int  # the assumption (weights.LOCAL_RESERVE_GIB)

    def text(self) -> str:
        return (
            f"model.weights: the weights (about {human_bytes(self.size_bytes)}) may not fit on the "
            f"{self.system_disk_gib} GiB system disk beside the system (assumed {self.reserve_gib} GiB): raise "
            "compute.system_disk_gib or use shared storage"
        )


@dataclass(frozen=True, slots=True)
class DlcWeightsRefetch(PlanWarning):
    code = "TSW018"
    summary = "on PAI-DLC without a shared file system every job downloads the base weights again"
    size_bytes: int

    def text(self) -> str:
        return (
            f"model.weights: without a shared file system every PAI-DLC job downloads the "
            f"{human_bytes(self.size_bytes)} of weights again; set storage.shared: extreme-nas to fetch them once"
        )


# -- spot (generator/plan/spot.py, generator/platforms/dlc/plan.py)


@dataclass(frozen=True, slots=True)
class SpotAssumed(PlanWarning):
    code = "TSW019"
    summary = "the spot price and reclaim rate are assumptions, not quotes (ECS and Lingjun)"
    price_ratio: float
    interruptions_per_node_day: float

    def text(self) -> str:
        return (
            f"the spot price ({self.price_ratio:.0%} of list) and reclaim rate "
            f"({self.interruptions_per_node_day:g}/node-day) are assumptions, not quotes: GPU spot prices vary "
            "by zone and hour (unverified)"
        )


@dataclass(frozen=True, slots=True)
class SpotAllOnDemand(PlanWarning):
    code = "TSW020"
    summary = "spot is enabled but spot.on_demand_base covers every node"

    def text(self) -> str:
        return "spot is enabled but every node is in the on-demand base"


@dataclass(frozen=True, slots=True)
class SpotRankZero(PlanWarning):
    code = "TSW021"
    summary = "every node is spot, rank 0 (the torchrun rendezvous) included"

    def text(self) -> str:
        return (
            "every node is spot, rank 0 included (spot.on_demand_base: 0): rank 0 hosts the job's torchrun "
            "rendezvous, so a reclaim of rank 0 stops training until a new rank 0 is deployed; set "
            "spot.on_demand_base: 1 to keep it on demand"
        )


@dataclass(frozen=True, slots=True)
class DlcSpotAssumed(PlanWarning):
    code = "TSW022"
    summary = "PAI-DLC's spot price and reclaim rate are assumptions, and preemptible stock is not guaranteed"
    price_ratio: float
    interruptions_per_node_day: float

    def text(self) -> str:
        return (
            f"the spot price ({self.price_ratio:.0%} of list) and reclaim rate "
            f"({self.interruptions_per_node_day:g}/node-day) are assumptions, not quotes; DLC preemptible stock "
            "is not guaranteed [DOC-DLC-JOB]"
        )


# -- the checkpoint bucket (generator/plan/cost.py)


@dataclass(frozen=True, slots=True)
class CheckpointsExpire(PlanWarning):
    code = "TSW023"
    summary = (
        "checkpoints.keep_last: the bucket's size at the end of the run, and the final checkpoint expires too"
    )
    keep_last: int | None  # checkpoints.keep_last (set whenever expire_days is)
    kept: int  # checkpoints in the bucket at the end of the run (an estimate)
    size_bytes: int  # one checkpoint
    expire_days: int
    retention_days: int
    bucket: str
    prefix: str
    tier: str  # "oss", or the shared file system checkpoints are written to first
    directory: str  # where the background copy uploads from (tier not "oss")
    milestone_every: int | None = None  # checkpoints.milestones.every: one in every N kept forever
    milestone_hours: float | None = None  # checkpoints.milestones.every_hours: one per H hours kept forever
    milestone_steps: int = 0  # checkpoints.milestones.at_steps: how many steps' checkpoints are kept forever

    def text(self) -> str:
        return (
            f"checkpoints.keep_last {self.keep_last}: the bucket holds about {self.kept:,} x "
            f"{human_bytes(self.size_bytes)} = {human_bytes(self.kept * self.size_bytes)} at the end of the run "
            f"(an ESTIMATE: {self.expire_days} days as current objects plus checkpoints.retention_days "
            f"({self.retention_days}) as noncurrent versions"
            + (
                f", and the milestones, one in every {self.milestone_every}, kept forever"
                if self.milestone_every
                else f", and the milestones, one per {self.milestone_hours:g} h, kept forever"
                if self.milestone_hours
                else f", and the milestones of {self.milestone_steps} listed step(s), kept forever"
                if self.milestone_steps
                else ""
            )
            + "). The lifecycle rule also expires the FINAL "
            f"checkpoint {self.expire_days} days after it is written: set compute.paused: true when the run ends "
            f"(the rule is disabled while paused) or copy it out of oss://{self.bucket}/{self.prefix}"
            + (
                ""
                if self.tier == "oss"
                else f". The background copy from {self.directory} (trainstack-ckpt-sync) uploads again any checkpoint "
                "still there, so keep_last bounds the bucket only if the training script also keeps only the last "
                f"{self.keep_last} on the shared file system"
            )
        )


@dataclass(frozen=True, slots=True)
class CheckpointsKeptForever(PlanWarning):
    code = "TSW024"
    summary = "the checkpoint bucket keeps every checkpoint: its size at the end of the run and after"
    kept: int
    size_bytes: int
    after_run_cny_per_month: float | None
    transition_ia_days: int | None
    retention_days: int
    bucket: str
    prefix: str

    def text(self) -> str:
        return (
            f"the checkpoint bucket keeps every checkpoint: about {self.kept:,} x "
            f"{human_bytes(self.size_bytes)} = {human_bytes(self.kept * self.size_bytes)} by the end of the run"
            + (
                f", about {self.after_run_cny_per_month:,.0f} CNY per month after it"
                + (
                    f" once in Infrequent Access (checkpoints.transition_ia_days: {self.transition_ia_days})"
                    if self.transition_ia_days
                    else ""
                )
                if self.after_run_cny_per_month is not None
                else ""
            )
            + f" (an ESTIMATE). Only noncurrent versions (overwritten or deleted) expire, after "
            f"checkpoints.retention_days ({self.retention_days}); delete the step folders you no longer need "
            f"under oss://{self.bucket}/{self.prefix} and they are gone {self.retention_days} days later"
        )
