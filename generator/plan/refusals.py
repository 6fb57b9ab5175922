"""Why the planner refuses a spec (a :class:`~generator.plan.fit.PlanningError`, exit 2): one event class per
problem, each with a stable code (``TSP...``), the spec field it names and typed fields; the message and the hint
are rendered from them here only.

In the manner of :mod:`generator.plan.rejections` and :mod:`generator.plan.warns` (dbt's events: a class per event
with a code and a message built from its fields). A part raises ``PlanningError([event.problem()])``; the
:class:`~generator.errors.Problem` it makes carries ``code`` and ``fields`` beside the rendered words, so the CLI
prints the same ``FILE:LINE:COL: field: message`` and ``hint:`` lines as ever while tests and scripts read the
code. ``docs/codes.md`` lists every code (``tests/test_codes.py`` checks it against :func:`codes`). The
spec-against-catalog checks raise theirs from :mod:`generator.plan.check_refusals` (``TSC...``), and a search that
ends with nothing to plan (no type fits, the run never finishes) from :mod:`generator.plan.unfit_refusals`
(``TSP024``-``TSP031``, listed by its own :func:`~generator.plan.unfit_refusals.codes`). The base class is
:class:`generator.plan.refusal.Refusal`; these modules run only when a name is first read from them
(:mod:`generator.plan` defers them: a spec that plans never needs them).
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.plan.refusal import Refusal
from generator.spec.units import human_bytes


@dataclass(frozen=True, slots=True)
class UnknownRegion(Refusal):
    code = "TSP001"
    path = ("region",)
    summary = "the catalog has no such region"
    region: str

    def text(self) -> str:
        return f"unknown region '{self.region}'"


# -- spot.min_nodes (generator/plan/compute.py: elastic_minimum)


@dataclass(frozen=True, slots=True)
class MinNodesOverPlan(Refusal):
    code = "TSP002"
    path = ("spot", "min_nodes")
    summary = "spot.min_nodes is more than the plan's node count"
    asked: int
    nodes: int
    floor: int  # the fewest nodes whose GPUs hold the training state

    def text(self) -> str:
        return f"min_nodes {self.asked} is more than the plan's {self.nodes} node(s)"

    def hint(self) -> str:
        return f"use a value from {self.floor} to {self.nodes}"


@dataclass(frozen=True, slots=True)
class MinNodesShort(Refusal):
    code = "TSP003"
    path = ("spot", "min_nodes")
    summary = "the GPUs of spot.min_nodes nodes cannot hold the training state"
    asked: int
    floor: int
    nodes: int
    layout: str  # "tp=8 pp=1 zero=1": the layout the floor is computed for

    def text(self) -> str:
        return (
            f"min_nodes {self.asked} cannot hold the training state: with {self.layout} the GPUs of fewer than "
            f"{self.floor} node(s) run out of memory"
        )

    def hint(self) -> str:
        return f"use a value from {self.floor} to {self.nodes}, or leave it out"


@dataclass(frozen=True, slots=True)
class MinNodesSplit(Refusal):
    code = "TSP004"
    path = ("spot", "min_nodes")
    summary = "the layout cannot split the GPUs of spot.min_nodes nodes into whole replicas"
    asked: int
    gpus: int  # the GPUs of `asked` nodes
    layout: str
    multiple: int  # node counts that split evenly are multiples of this

    def text(self) -> str:
        return f"{self.asked} node(s) have {self.gpus} GPUs, which {self.layout} cannot split evenly"

    def hint(self) -> str:
        return f"use a multiple of {self.multiple}"


# -- the budget (generator/plan/compute.py, generator/plan/cost.py)


@dataclass(frozen=True, slots=True)
class BudgetNeedsTokens(Refusal):
    code = "TSP005"
    path = ("budget", "total")
    summary = "budget.total without model.tokens: the run's length is unknown"

    def text(self) -> str:
        return "a total budget needs model.tokens to estimate the run's length"

    def hint(self) -> str:
        return "add model.tokens (e.g. 300B)"


@dataclass(frozen=True, slots=True)
class CheapestOverHourly(Refusal):
    code = "TSP006"
    path = ("budget", "per_hour")
    summary = "even the cheapest fitting plan costs more per hour than budget.per_hour"
    cny_per_hour: float
    nodes: int
    instance_type: str
    budget: float
    spot_lever: str  # the spot change the hint names ("" when there is none)
    deadline: bool  # budget.max_days is set (fewer nodes would help)

    def text(self) -> str:
        return (
            f"the cheapest plan costs {self.cny_per_hour:,.2f} CNY/h ({self.nodes}x {self.instance_type}), over "
            f"the budget of {self.budget:,.2f} CNY/h"
        )

    def hint(self) -> str:
        return (
            "raise budget.per_hour, "
            + self.spot_lever
            + ("relax budget.max_days (fewer nodes), " if self.deadline else "")
            + "or shrink the model or sequence length"
        )


@dataclass(frozen=True, slots=True)
class CheapestOverTotal(Refusal):
    code = "TSP007"
    path = ("budget", "total")
    summary = "even the cheapest fitting plan's compute costs more than budget.total"
    run_cny: float
    nodes: int
    instance_type: str
    budget: float
    spot_lever: str

    def text(self) -> str:
        return (
            f"the cheapest plan's compute alone is expected to cost {self.run_cny:,.0f} CNY ({self.nodes}x "
            f"{self.instance_type}; storage and checkpoint objects come on top), over the budget of "
            f"{self.budget:,.0f} CNY"
        )

    def hint(self) -> str:
        return "raise budget.total, " + self.spot_lever + "or train on fewer tokens (model.tokens)"


@dataclass(frozen=True, slots=True)
class PlanOverTotal(Refusal):
    code = "TSP008"
    path = ("budget", "total")
    summary = "the whole plan (compute, storage, checkpoint objects) costs more than budget.total"
    run_cny: float
    compute_cny: float
    shared_storage_cny: float
    objects_cny: float
    budget: float

    def text(self) -> str:
        return (
            f"the plan is expected to cost {self.run_cny:,.0f} CNY for the whole run (compute "
            f"{self.compute_cny:,.0f}, shared storage {self.shared_storage_cny:,.0f}, checkpoint objects "
            f"{self.objects_cny:,.0f}), over the budget of {self.budget:,.0f} CNY"
        )

    def hint(self) -> str:
        return "raise budget.total, train on fewer tokens, or use less storage"


@dataclass(frozen=True, slots=True)
class PlanOverHourly(Refusal):
    code = "TSP009"
    path = ("budget", "per_hour")
    summary = "the plan with its storage costs more per hour than budget.per_hour"
    cny_per_hour: float
    budget: float

    def text(self) -> str:
        return f"the plan costs {self.cny_per_hour:,.2f} CNY/h with storage, over the budget of {self.budget:,.2f} CNY/h"

    def hint(self) -> str:
        return "raise budget.per_hour, or use less storage"


# -- base weights and checkpoints (generator/plan/weights.py, generator/plan/checkpoints.py)


@dataclass(frozen=True, slots=True)
class WeightsNeedShared(Refusal):
    code = "TSP010"
    path = ("storage", "shared")
    summary = "model.weights on several ECS nodes without a shared file system"
    nodes: int
    size_bytes: int

    def text(self) -> str:
        return (
            f"model.weights on {self.nodes} nodes needs a shared file system: with storage.shared: none each "
            f"node would download the {human_bytes(self.size_bytes)} of weights itself"
        )

    def hint(self) -> str:
        return (
            "set storage.shared: auto (Extreme NAS, or CPFS with a dataset) or cpfs, so one node fetches the "
            "weights and every node reads them"
        )


@dataclass(frozen=True, slots=True)
class ModelScopeNoEgress(Refusal):
    code = "TSP011"
    path = ("model", "weights")
    summary = "ModelScope weights with network.egress: none"
    region: str

    def text(self) -> str:
        return (
            "ModelScope weights are downloaded from modelscope.cn, but network.egress: none gives the nodes no "
            "internet access"
        )

    def hint(self) -> str:
        return (
            f"set network.egress: nat, or copy the weights to an OSS bucket in {self.region} and write "
            "oss://BUCKET/PREFIX/"
        )


@dataclass(frozen=True, slots=True)
class DlcWeightsNeedShared(Refusal):
    code = "TSP012"
    path = ("storage", "shared")
    summary = "ModelScope weights on several PAI-DLC workers without a shared file system"
    nodes: int
    size_bytes: int

    def text(self) -> str:
        return (
            f"ModelScope weights on {self.nodes} PAI-DLC workers need a shared file system: with storage.shared: "
            f"none each worker would download the {human_bytes(self.size_bytes)} of weights into its own container"
        )

    def hint(self) -> str:
        return (
            "set storage.shared: auto or extreme-nas (a shared dataset: one worker fetches the weights and every "
            "worker reads them), or copy the weights to OSS and write model.weights: oss://BUCKET/PREFIX/ (DLC "
            "mounts them, nothing is copied)"
        )


@dataclass(frozen=True, slots=True)
class DlcWeightsNeedBucket(Refusal):
    code = "TSP013"
    path = ("checkpoints", "enabled")
    summary = (
        "ModelScope weights on PAI-DLC with checkpoints off (the fetch script lives in the checkpoint bucket)"
    )

    def text(self) -> str:
        return (
            "ModelScope weights on PAI-DLC need the checkpoint bucket: DLC runs no node bootstrap, so the stack "
            "publishes the script that fetches them (trainstack-weights) in that bucket and the job mounts it"
        )

    def hint(self) -> str:
        return (
            "set checkpoints.enabled: true, or copy the weights to OSS and write model.weights: "
            "oss://BUCKET/PREFIX/ (DLC mounts them, nothing to fetch)"
        )


@dataclass(frozen=True, slots=True)
class ClusterNeedsBucket(Refusal):
    code = "TSP014"
    path = ("checkpoints", "enabled")
    summary = "a multi-node ECS cluster with checkpoints off (the cluster facts are published in the bucket)"
    nodes: int

    def text(self) -> str:
        return (
            f"a {self.nodes}-node ECS cluster needs the checkpoint bucket: the cluster facts (members, "
            "rendezvous) are published there, and without it they would ride in every node's user data, which "
            "would grow with the cluster past the ECS user-data limit"
        )

    def hint(self) -> str:
        return "set checkpoints.enabled: true, or compute.nodes: 1"


# -- shared storage (generator/plan/storage.py)


@dataclass(frozen=True, slots=True)
class NoSharedFileSystem(Refusal):
    code = "TSP016"
    path = ("storage", "shared")
    summary = "a shared file system or a dataset on a platform without one (Lingjun)"

    def text(self) -> str:
        return "Lingjun plans have no shared file system"

    def hint(self) -> str:
        return "set storage.shared: none and remove storage.dataset"


@dataclass(frozen=True, slots=True)
class CapacityWithoutFileSystem(Refusal):
    code = "TSP017"
    path = ("storage", "capacity")
    summary = "storage.capacity is set but the plan has no shared file system"

    def text(self) -> str:
        return "a capacity is set but the plan needs no shared file system"

    def hint(self) -> str:
        return "remove capacity, or set storage.shared: cpfs or extreme-nas"


@dataclass(frozen=True, slots=True)
class DatasetOverCapacity(Refusal):
    code = "TSP018"
    path = ("storage", "capacity")
    summary = "the dataset does not fit the CPFS capacity the spec gives"
    dataset_bytes: int
    capacity_gib: float
    fix_gib: int  # the smallest capacity CPFS accepts that holds it
    largest_tib: int  # the largest dataset the largest CPFS holds (when fix_gib cannot)

    def text(self) -> str:
        return f"the {human_bytes(self.dataset_bytes)} dataset does not fit in a CPFS capacity of {self.capacity_gib:.10g} GiB"

    def hint(self) -> str:
        return (
            f"use {self.fix_gib}GiB"
            if self.fix_gib * 2**30 >= self.dataset_bytes
            else f"import at most {self.largest_tib}TiB"
        )


@dataclass(frozen=True, slots=True)
class WeightsOverCapacity(Refusal):
    code = "TSP019"
    path = ("storage", "capacity")
    summary = "the base weights (and the dataset) do not fit the capacity the spec gives"
    weights_bytes: int
    with_dataset: bool
    capacity_gib: float
    fix_gib: int

    def text(self) -> str:
        return (
            f"the base weights (about {human_bytes(self.weights_bytes)}, an estimate)"
            + (" and the dataset" if self.with_dataset else "")
            + f" do not fit in a capacity of {self.capacity_gib:.10g} GiB"
        )

    def hint(self) -> str:
        return f"use {self.fix_gib}GiB, or capacity: auto"


@dataclass(frozen=True, slots=True)
class StorageClassMismatch(Refusal):
    code = "TSP020"
    path = ("storage", "storage_class")
    summary = "storage.storage_class is not one the chosen file system takes"
    kind: str  # "cpfs" or "extreme-nas"
    storage_class: str

    def text(self) -> str:
        if self.kind == "cpfs":
            return f"the plan uses CPFS, which takes advance_100 or advance_200, not {self.storage_class}"
        return f"the plan uses Extreme NAS, which takes standard or advance, not {self.storage_class}"


# -- the network (generator/plan/network.py)


@dataclass(frozen=True, slots=True)
class VpcTooSmall(Refusal):
    code = "TSP015"
    path = ("network", "vpc_cidr")
    summary = "network.vpc_cidr has too few addresses for the nodes"
    vpc: str
    nodes: int
    vswitch: str  # the compute vSwitch
    room: int  # node addresses it holds
    first_offset: int  # the first node address (.N)
    reserved_last: int  # addresses Alibaba Cloud reserves at the end
    largest: int  # the most nodes a VPC of this size can hold

    def text(self) -> str:
        return (
            f"{self.vpc} is too small for {self.nodes} nodes: the compute vSwitch {self.vswitch} holds "
            f"{self.room} node addresses (from .{self.first_offset} up to the last {self.reserved_last}, which "
            f"Alibaba Cloud reserves) and may take at most the lower half of the VPC ({self.largest} nodes)"
        )

    def hint(self) -> str:
        return "use a larger range such as 10.0.0.0/16"


@dataclass(frozen=True, slots=True)
class IpPlanInconsistent(Refusal):
    code = "TSP021"
    path = ("network", "vpc_cidr")
    summary = "the IP plan's vSwitches leave the VPC or overlap (cannot happen for a VPC the loader accepts)"
    findings: tuple[str, ...]  # each inconsistency: "compute 10.0.0.0/17 overlaps storage 10.0.0.0/24"

    def text(self) -> str:
        return "the IP plan is inconsistent: " + "; ".join(self.findings)

    def hint(self) -> str:
        return "use a larger range such as 10.0.0.0/16"


@dataclass(frozen=True, slots=True)
class NoStorageVSwitch(Refusal):
    code = "TSP022"
    path = ("storage", "shared")
    summary = "internal: the network plan has no storage vSwitch for the file system the storage plan chose"
    kind: str

    def text(self) -> str:
        return f"internal: the network plan has no storage vSwitch for the {self.kind} file system"


# -- checkpoint milestones (generator/plan/milestones.py)


@dataclass(frozen=True, slots=True)
class MilestoneWindowShort(Refusal):
    code = "TSP023"
    path = ("checkpoints", "milestones", "every_hours")
    summary = "checkpoints.milestones.every_hours is not longer than the checkpoint interval"
    hours: float
    interval_seconds: int

    def text(self) -> str:
        return (
            f"milestones every {self.hours:g} h are no longer than the checkpoint interval "
            f"({self.interval_seconds / 3600:.4g} h): every checkpoint would be a milestone, kept forever"
        )

    def hint(self) -> str:
        return (
            f"use every_hours above {self.interval_seconds / 3600:.4g}, or remove checkpoints.keep_last to keep "
            "every checkpoint"
        )


def codes() -> list[type[Refusal]]:
    """Every refusal class, by code (docs/codes.md lists them)."""
    found = {
        v
        for v in globals().values()
        if isinstance(v, type) and issubclass(v, Refusal) and v is not Refusal and v.code.startswith("TSP")
    }
    return sorted(found, key=lambda c: c.code)
