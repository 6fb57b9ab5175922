"""The Plan: every decision the planner made, immutable, with a reason a user can read.

A Plan is the single input of rendering and is written as ``plan.json`` beside the generated program, so a
reviewer can see why each resource exists. ``PLAN_SCHEMA_VERSION`` changes when a field is renamed or
retyped; adding a field with a default does not.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from generator.plan.rejections import Rejection
from generator.plan.stable_json import dumps
from generator.plan.warns import PlanWarning

# 2: each of ``warnings`` is {"code", "fields", "text"} (generator/plan/warns/), not a sentence
PLAN_SCHEMA_VERSION = 2


@dataclass(frozen=True, slots=True)
class Decision:
    topic: str
    choice: str
    reason: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """An instance type the planner considered, with how it would be used and what it would cost."""

    instance_type: str
    nodes: int
    gpus: int
    tp: int
    pp: int
    dp: int
    per_gpu_gib: float
    cost_per_hour: float
    run_cost: float | None
    run_hours: float | None
    verdict: str  # "chosen", or why it lost (or was rejected), in words
    reason: Rejection | None = (
        None  # a rejected type's reason as data (plan.json: {"code", "kind", "fields"})
    )


@dataclass(frozen=True, slots=True)
class Node:
    rank: int
    name: str
    zone: str
    vswitch: str
    private_ip: str
    spot: bool
    deployment_set: str | None


@dataclass(frozen=True, slots=True)
class VSwitch:
    key: str
    name: str
    zone: str
    cidr: str


@dataclass(frozen=True, slots=True)
class IpRange:
    """One block of addresses in a vSwitch and what takes it (the plan's IP plan, ``Network.ip_plan``)."""

    vswitch: str  # VSwitch.key
    first: str
    last: str
    addresses: int
    consumer: str


@dataclass(frozen=True, slots=True)
class DeploymentSet:
    key: str
    name: str
    zone: str
    strategy: str
    ranks: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MoESummary:
    """A mixture-of-experts model's expert layers (model.moe, or a MoE preset's)."""

    experts: int
    top_k: int
    expert_ffn_hidden: int
    shared_experts: int
    dense_layers: int
    capacity_factor: float | None
    expert_parameters: int  # the routed experts' parameters, what expert parallelism shards


@dataclass(frozen=True, slots=True)
class ModelSummary:
    parameters: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    vocab: int
    ffn_hidden: int
    architecture_source: str
    precision: str
    optimizer: str
    sequence_length: int
    micro_batch_size: int
    global_batch_tokens: int | None
    tokens: int | None
    finetune: str
    lora_rank: int | None
    active_parameters: int = 0  # parameters a token passes through (= parameters for a dense model)
    moe: MoESummary | None = None


@dataclass(frozen=True, slots=True)
class Sizing:
    """Per-GPU memory in bytes (integers) and the formulas behind them."""

    weights: int
    gradients: int
    optimizer_states: int
    activations: int
    reserve: int
    total: int
    gpu_memory: int
    headroom: int
    notes: tuple[str, ...]
    training_flops: float | None
    training_hours: float | None
    mfu: float
    peak_tflops: float
    framework: str = (
        "zero-paper"  # whose accounting of the model states (megatron, deepspeed, fsdp, zero-paper)
    )
    min_headroom: int = 0  # bytes per GPU the fit search kept free (parallelism.memory_headroom)
    offload: str = "none"  # parallelism.offload: none | optimizer | optimizer+params
    host_per_gpu: int = (
        0  # host bytes per GPU: offloaded states or paged optimizer moments (0 without either)
    )


@dataclass(frozen=True, slots=True)
class Compute:
    platform: str
    instance_type: str
    family: str
    gpu: str
    gpus_per_node: int
    nodes: int
    total_gpus: int
    tp: int
    pp: int
    dp: int
    zero_stage: int
    sequence_parallel: bool
    recompute: str
    bare_metal: bool
    vcpu: int
    memory_gib: float
    gpu_memory_gib: float
    rdma: str  # "erdma", "roce", "lingjun-hpn" (the Lingjun fabric) or "none"
    eri_per_node: int
    scc: bool
    hpc_cluster: bool
    uefi_required: bool
    image_id: str | None
    system_disk_gib: int
    data_disk_gib: int
    ranks: tuple[Node, ...]
    deployment_sets: tuple[DeploymentSet, ...]
    # compute.paused: the program declares no GPU node; ranks, names and addresses are planned as if running
    paused: bool = False
    min_nodes: int = (
        1  # the elastic launch's minimum (torchrun --nnodes MIN:nodes): fewest nodes that still fit memory
    )
    ep: int = 1  # expert-parallel degree (MoE models): the routed experts split over ep of the dp ranks
    vpp: int = 1  # interleaved (virtual) pipeline stages per GPU; 1 = plain 1F1B
    cp: int = 1  # context-parallel degree: each sequence split over cp ranks; dp = total_gpus / (tp pp cp)
    # compute.admin_key_pair (Lingjun: that or NAME-admin); None: no key pair, access through Cloud Assistant
    key_pair: str | None = None
    # the image the nodes boot: compute.image_id, or on ECS the pinned default of catalog images.csv ("" on DLC)
    image: str = ""
    # compute.container_image with the registry's VPC endpoint: trainstack-launch runs torchrun in it ("" for none)
    container_image: str = ""
    # compute.container_registry_instance: the nodes log in to it with their role before the pull ("" for none)
    container_registry_instance: str = ""


@dataclass(frozen=True, slots=True)
class Network:
    vpc_cidr: str
    vswitches: tuple[VSwitch, ...]
    admin_cidrs: tuple[str, ...]
    jumbo_frames: bool
    mtu: int
    nccl_env: tuple[tuple[str, str], ...]
    egress: str  # "nat": outbound-only internet through a NAT gateway; "none": VPC-internal mirrors only
    ip_plan: tuple[IpRange, ...] = ()  # every address block of every vSwitch and its consumer (ECS plans)
    jumbo_source: str = ""  # the catalog's source tags for the family's jumbo-frame support (ECS eRDMA plans)


@dataclass(frozen=True, slots=True)
class Dataset:
    source: str
    size_bytes: int
    fileset_path: str
    flow_throughput_mbps: int


@dataclass(frozen=True, slots=True)
class Storage:
    kind: str  # "cpfs", "extreme-nas" or "none"
    capacity_gib: int
    storage_type: str
    throughput_mbps: int
    mount_path: str
    zone: str
    vswitch: str  # the file system's own vSwitch (CPFS sets vswitch_id on the file system; it cannot move)
    dataset: Dataset | None
    service_vswitch: str = (
        ""  # where the NFS protocol service and its export (CPFS) or the mount target take addresses
    )


@dataclass(frozen=True, slots=True)
class Weights:
    """The base weights (``model.weights``): where they come from, where they land, how large they are.

    Platform-neutral: ``source_kind``, ``uri``, ``model_id``/``revision`` (ModelScope) or ``bucket``/``prefix`` (OSS),
    ``landing_path`` and ``size_bytes`` say what and where; ``shared`` and ``fetches`` how they get there (the ECS and
    Lingjun bootstraps, or the PAI-DLC job's prelude). On PAI-DLC, OSS weights are mounted read-only, not copied:
    ``landing_path`` is the mount, ``fetches`` 0 and ``shared`` False (they are not on the shared file system)."""

    source_kind: str  # "modelscope" or "oss"
    uri: str  # canonical: modelscope://ORG/NAME@REVISION or oss://BUCKET/PREFIX/
    model_id: str  # ORG/NAME ("" for OSS)
    revision: str  # ModelScope branch, tag or commit ("" for OSS)
    bucket: str  # OSS bucket ("" for ModelScope)
    prefix: str  # OSS folder, ending in '/' ("" for ModelScope)
    endpoint: str  # the bucket's internal OSS endpoint in the plan's region ("" for ModelScope)
    landing_path: str  # absolute path on every node (on PAI-DLC: in every worker's container)
    shared: bool  # on the shared file system (fetched once for the cluster); False: each node's own disk, or mounted
    fetches: (
        int  # how many times the files are downloaded: 1, once per node without shared storage, 0 if mounted
    )
    size_bytes: int  # ESTIMATE: parameters x bytes per parameter of the checkpoint's dtype
    size_basis: str  # how size_bytes was estimated, in words


@dataclass(frozen=True, slots=True)
class Checkpoints:
    enabled: bool
    bucket: str
    prefix: str
    interval_seconds: int
    retention_days: int
    transition_ia_days: int | None
    abort_multipart_days: int
    internal_endpoint: str
    size_bytes: int
    write_seconds: float
    cluster_mtbf_hours: float
    facts_key: str = ""  # the cluster facts object (trainstack/cluster.json), outside the checkpoint prefix; "" without a bucket
    tier: str = "oss"  # where the job writes checkpoints: "oss", or "cpfs" / "extreme-nas" (copied to OSS in the background)
    directory: str = ""  # the checkpoint directory on the shared file system when tier is not "oss"
    restore_seconds: float = 0.0  # reading one checkpoint back from the tier
    keep_last: int | None = None  # checkpoints.keep_last; None: every checkpoint is kept
    expire_days: int = (
        0  # current objects under the prefix expire this many days after they are written; 0: never
    )
    expiry_enabled: bool = (
        False  # the expiry rule is on (off while compute.paused, so the newest checkpoint stays)
    )
    # checkpoints.milestones.every: one checkpoint in every N is kept forever
    milestone_every: int | None = None
    # the milestone window, N intervals or H hours; 0: no window (the expiry rule needs no tag without milestones)
    milestone_seconds: int = 0
    milestone_hours: float | None = None  # checkpoints.milestones.every_hours (plan.json only when set)
    milestone_steps: tuple[int, ...] = ()  # checkpoints.milestones.at_steps, sorted (plan.json only when set)

    @property
    def tags_milestones(self) -> bool:
        """Rank 0's trainstack-ckpt-sync tags milestones (by window or by step), and the expiry rule selects a tag."""
        return bool(self.milestone_seconds or self.milestone_steps)


@dataclass(frozen=True, slots=True)
class Schedule:
    """The run's hours with every overhead counted (``plan --json`` ``schedule``); wall = the sum of the five."""

    compute_hours: float  # executed FLOPs (attention and logits included) at the layout's expected MFU
    pipeline_bubble_hours: float  # 1F1B bubble: (pp-1)/m of compute
    checkpoint_write_hours: float  # blocking writes to the checkpoint tier
    expected_rework_hours: float  # work lost to interruptions: tau/2 each
    restore_hours: float  # reading the last checkpoint back and relaunching, after each interruption
    wall_hours: float
    mfu: float  # the GPU's rated MFU times the layout's factors
    microbatches: int  # m: micro-batches per step per pipeline
    interruptions: float  # expected over the run
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Spot:
    enabled: bool
    strategy: str
    price_limit: float | None
    protection_hours: int
    interruption: str
    on_demand_ranks: tuple[int, ...]
    spot_ranks: tuple[int, ...]
    assumed_price_ratio: float
    interruptions_per_node_day: float


# Where a price comes from (``PriceSource.basis``, ``CostItem.basis``): a dated list price, an ESTIMATE (scaled,
# borrowed or unverified), an assumption (the spot discount), or no price in the catalog.
LIST_PRICE, ESTIMATE, ASSUMPTION, NOT_PRICED = "list price", "ESTIMATE", "assumption", "not priced"
PRICE_BASES = (LIST_PRICE, ESTIMATE, ASSUMPTION, NOT_PRICED)


@dataclass(frozen=True, slots=True)
class PriceSource:
    """The provenance of one priced line of the cost as data (``plan.json`` ``cost.prices``), so a reader asks
    whether a figure is an estimate without reading the price notes' words."""

    line: str  # "compute", "dlc_worker", "shared_storage", "object_storage", "object_storage_ia" or "spot"
    item: str  # the catalog item priced: the instance type, cpfs-..., nas-extreme-..., oss-standard, oss-ia
    basis: str  # one of PRICE_BASES
    source: str = ""  # the catalog's source tag ("" when not priced)


@dataclass(frozen=True, slots=True)
class CostItem:
    """One line of what a paused cluster still pays for; ``per_hour`` is None when the catalog has no price."""

    item: str
    label: str
    quantity: str
    per_hour: float | None
    per_day: float | None
    basis: str  # LIST_PRICE, ESTIMATE or NOT_PRICED


@dataclass(frozen=True, slots=True)
class PausedCost:
    """What the kept resources of a paused cluster (``compute.paused: true``) cost: no node runs."""

    per_hour: float
    per_day: float
    items: tuple[CostItem, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Cost:
    """The plan's cost per hour, per day and for the whole run, line by line, with each price's provenance."""

    currency: str
    compute_on_demand_per_hour: float
    compute_spot_per_hour: float
    shared_storage_per_hour: float
    object_storage_per_hour: float
    total_per_hour: float
    total_per_day: float
    run_hours: float | None  # progress: compute, pipeline bubble and checkpoint writes
    expected_rework_hours: float | None  # what interruptions cost: the schedule's rework AND its restores
    run_total: float | None
    price_notes: tuple[str, ...]
    paused: PausedCost | None = None  # set only when compute.paused: the total then is what a resume costs
    # each line's whole-run amount (None without model.tokens): per hour x wall-clock hours, except a prepaid
    # Lingjun subscription, whose compute is the prepaid amount; the lines sum to run_total
    compute_on_demand_run: float | None = None
    compute_spot_run: float | None = None
    shared_storage_run: float | None = None
    object_storage_run: float | None = None
    checkpoints_kept: int = (
        0  # checkpoints in the bucket at the end of the run (all, or keep_last's window); 0: unknown
    )
    object_storage_after_run_per_month: float | None = None  # what the bucket costs each month after the run
    subscription_months: int | None = (
        None  # Lingjun Subscription: the prepaid period the compute run is priced at
    )
    prices: tuple[PriceSource, ...] = ()  # where each line's price comes from (the notes say it in words)

    def basis(self, line: str) -> str:
        """The basis of one cost line's price (``PriceSource.line``); NOT_PRICED when the line has none."""
        return next((p.basis for p in self.prices if p.line == line), NOT_PRICED)

    @property
    def estimated(self) -> bool:
        """Whether any price behind the figures is an ESTIMATE or an assumption."""
        return any(p.basis in (ESTIMATE, ASSUMPTION) for p in self.prices)


@dataclass(frozen=True, slots=True)
class LingjunSubnet:
    key: str
    name: str
    zone: str
    cidr: str


@dataclass(frozen=True, slots=True)
class Lingjun:
    """What a Lingjun (eflo) cluster needs beyond the common plan; ``Plan.lingjun`` is None on ECS."""

    vpd_cidr: str  # the Lingjun network segment (eflo.Vpd)
    subnets: tuple[LingjunSubnet, ...]  # one eflo.Subnet per zone used; the nodes' bonds take addresses here
    hpn_zone: str
    cluster_type: str  # eflo.Cluster cluster_type
    machine_type: str
    payment_type: str  # eflo.Node payment_type: "PayAsYouGo" or "Subscription"
    period_months: int | None  # prepaid months for Subscription (None for PayAsYouGo)
    bonds: int | None
    node_group: str  # eflo.NodeGroup node_group_name
    user_data_max_bytes: int  # the largest bootstrap script the node group takes (before base64)


@dataclass(frozen=True, slots=True)
class DlcDataSource:
    """A PAI workspace dataset the job mounts (``pai.WorkspaceDataset``) and where its id lands in the stack outputs."""

    name: str  # the dataset's name in the workspace (pai.WorkspaceDataset dataset_name)
    kind: str  # "nas" (Extreme NAS), "cpfs" or "oss"
    mount_path: str  # where the job's containers see it
    output_key: str  # the stack output that holds the dataset id (CreateJob DataSources[].DataSourceId)
    uri: str = (
        ""  # the dataset's location as PAI writes it (nas://..., cpfs://..., oss://...); "" if deploy-time
    )
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class DlcSpot:
    """DLC's JobSpec.SpotSpec (alibabacloud-pai-dlc20201203 ``SpotSpec``: SpotStrategy, SpotPriceLimit,
    SpotDiscountLimit; DLC documents SpotDiscountLimit for Lingjun resources only)."""

    spot_strategy: str  # "SpotWithPriceLimit" or "SpotAsPriceGo"
    spot_price_limit: (
        float | None
    )  # CNY per worker-hour; the request sends it per minute, as the SDK's SpotSpec documents
    spot_discount_limit: (
        float | None
    )  # a fraction of list price (0.1-0.9); Lingjun resources only, so None here


@dataclass(frozen=True, slots=True)
class Dlc:
    """What a PAI-DLC job needs beyond the common plan; ``Plan.dlc`` is None on ECS and Lingjun.

    trainstack provisions what surrounds the job (workspace, VPC, datasets, checkpoint bucket, RAM role); the job
    itself is created by ``trainstack submit`` (DLC CreateJob) from these fields and the stack outputs named by
    ``outputs`` (keys below, values the output names).
    """

    workspace_name: str  # pai.WorkspaceWorkspace workspace_name
    job_type: str  # CreateJob JobType: "PyTorchJob"
    worker_count: int  # JobSpecs[Worker].PodCount
    worker_instance_type: str  # JobSpecs[Worker].EcsSpec, e.g. ecs.gn7e-c16g1.16xlarge
    gpus_per_worker: int
    gpu: str
    image: str  # JobSpecs[Worker].Image: an official PAI DLC PyTorch image for the region
    image_source: str  # where the image name comes from (and whether it is verified)
    tp: int
    pp: int
    dp: int
    data_sources: tuple[DlcDataSource, ...]
    environment: tuple[tuple[str, str], ...]  # CreateJob Envs: checkpoint locations, layout, NCCL
    spot: DlcSpot | None
    resource: str  # "public" (pay-as-you-go public resources) -- trainstack plans no resource quota
    outputs: tuple[
        tuple[str, str], ...
    ]  # ("workspace_id", "pai_workspace_id"), ...: the stack outputs a job reads
    max_running_hours: int | None = (
        None  # CreateJob JobMaxRunningTimeMinutes / 60 (None: DLC's default, 30 days)
    )
    # ModelScope weights (generator/platforms/dlc/weights.py): the command every worker runs before the user's command,
    # and the checkpoint-bucket key the stack publishes trainstack-weights at; "" otherwise (and left out of plan.json)
    prelude: str = ""
    weights_script_key: str = ""


@dataclass(frozen=True, slots=True)
class Waived:
    rule: str
    reason: str


@dataclass(frozen=True, slots=True)
class Plan:
    schema_version: int
    catalog_version: str
    spec_digest: str
    name: str
    stack: str
    region: str
    zones: tuple[str, ...]
    tags: tuple[tuple[str, str], ...]
    model: ModelSummary
    sizing: Sizing
    compute: Compute
    network: Network
    storage: Storage
    checkpoints: Checkpoints
    spot: Spot
    cost: Cost
    decisions: tuple[Decision, ...]
    candidates: tuple[Candidate, ...]
    warnings: tuple[PlanWarning, ...] = field(default_factory=tuple)  # plan.json: {"code", "fields", "text"}
    waivers: tuple[Waived, ...] = field(default_factory=tuple)
    lingjun: Lingjun | None = None
    dlc: Dlc | None = None
    schedule: Schedule | None = None  # None without model.tokens
    weights: Weights | None = None

    def to_dict(self) -> dict[str, Any]:
        data = _plain(self)
        for row, candidate in zip(data["candidates"], self.candidates, strict=True):
            if candidate.reason is None:
                row.pop("reason")  # a fitting type's verdict is its rank, not a rejection
            else:
                row["reason"] = _plain(candidate.reason.to_dict())
        data["warnings"] = [_plain(w.to_dict()) for w in self.warnings]
        if data.get("lingjun") is None:
            data.pop("lingjun", None)  # ECS plans keep the plan.json they had before Lingjun existed
        if data.get("dlc") is None:
            data.pop("dlc", None)  # ECS and Lingjun plans keep the plan.json they had before PAI-DLC existed
        else:
            for key in (
                "prelude",
                "weights_script_key",
            ):  # DLC plans without ModelScope weights keep theirs too
                if not data["dlc"].get(key):
                    data["dlc"].pop(key, None)
        if data.get("weights") is None:
            data.pop("weights", None)  # plans without base weights keep the plan.json they had before
        if not data["compute"].get(
            "paused"
        ):  # plans that never pause keep the plan.json they had before pausing
            data["compute"].pop("paused", None)
        if data["compute"].get("key_pair") is None:  # plans without an admin key pair keep theirs too
            data["compute"].pop("key_pair", None)
        if not data["compute"].get("image"):
            data["compute"].pop("image", None)
        if not data["compute"].get("container_image"):  # plans without a container image keep their plan.json
            data["compute"].pop("container_image", None)
        if not data["compute"].get("container_registry_instance"):
            data["compute"].pop("container_registry_instance", None)
        if data["cost"].get("paused") is None:
            data["cost"].pop("paused", None)
        if data.get("schedule") is None:
            data.pop("schedule", None)
        for key in (
            "milestone_hours",
            "milestone_steps",
        ):  # plans without these milestones keep their plan.json
            if not data["checkpoints"].get(key):
                data["checkpoints"].pop(key, None)
        return data

    def to_json(self) -> str:
        return dumps(self.to_dict())


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    """Plain data, floats rounded to 6 places; a dataclass as ``dataclasses.asdict`` gives it, in the same walk and
    without asdict's deep copies (a plan is frozen and holds tuples, never a mutable leaf): ~11,000 values."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if isinstance(value, float):
        return round(value, 6)
    names = _FIELD_NAMES.get(kind)
    if names is None and hasattr(kind, "__dataclass_fields__"):
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(value))
    if names is not None:
        return {name: _plain(getattr(value, name)) for name in names}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
