"""Why the planner refuses an instance type (or Lingjun machine type): one event class per reason, each with a
stable code, the kind of constraint that bound it and typed fields; the English is rendered from them here only.

In the manner of dbt's events (``core/dbt/events/types.py`` in dbt-labs/dbt-core: a class per event with a
``code()`` and a ``message()`` built from its fields). The planner reads the kind and the fields, never the text:
:func:`generator.plan.unfit.nothing_fits` picks its hints from them, ``plan.json`` carries them in each rejected
candidate's ``reason`` (``{"code", "kind", "fields"}``), and tests assert them. ``docs/codes.md`` lists every code
(``tests/test_codes.py`` checks it against :func:`codes`).

Kinds: ``deadline``, ``memory``, ``batch``, ``layout`` (tp x pp cannot split the GPUs), ``fabric`` (no RDMA, or not
8 GPUs, for multi-node), ``bf16`` (a GPU without bf16) and ``filter`` (not offered, invitation-only, a spec filter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from generator.events import Event
from generator.spec.units import human_bytes, human_count

MULTI_NODE_GPUS = 8  # multi-node training uses 8-GPU nodes so tensor parallelism stays on NVLink

KINDS = (
    "deadline",
    "memory",
    "batch",
    "layout",
    "fabric",
    "filter",
    "bf16",
)  # the order hints and listings use


@dataclass(frozen=True, slots=True)
class Rejection(Event):
    """The base of every rejection (abstract: each reason is a subclass with its own :meth:`text`): ``code`` and
    ``kind`` are the class's, the fields the instance's."""

    KIND: ClassVar[str] = "filter"

    @property
    def kind(self) -> str:
        return self.KIND

    @property
    def one_node_only(self) -> bool:
        """The type was kept to one node (no RDMA, or not 8 GPUs) and that is part of why it fails."""
        return getattr(self, "one_node", None) is not None

    def to_dict(self) -> dict[str, Any]:
        """What plan.json's ``reason`` holds: the code, the kind and the fields (the text is the candidate's)."""
        return {"code": self.code, "kind": self.kind, "fields": self.fields()}


def _only_one(one_node: str | None, gpus: int) -> str:
    """The suffix of a reason for a type that ``nodes: auto`` keeps to one node (``one_node``: why, or None)."""
    if one_node is None:
        return ""
    if one_node == "gpus":
        return f"; it trains on one node only: {gpus} GPUs per node, and multi-node training uses 8-GPU nodes"
    return "; it trains on one node only: no eRDMA or RoCE for multi-node training"


def _cp(cp: int) -> str:
    """The context-parallel factor of a replica's size in a reason ("" when cp is 1)."""
    return f" x cp={cp}" if cp > 1 else ""


def _days(tokens: int, max_days: float) -> str:
    return f"{human_count(tokens)} tokens in {max_days:g} days"


_COUNTED = " (checkpoint writes, rework and restores after interruptions counted)"


@dataclass(frozen=True, slots=True)
class NotOffered(Rejection):
    code = "TSR001"
    summary = "the type is not offered in the region per the catalog"
    region: str

    def text(self) -> str:
        return f"not offered in {self.region} per the catalog"


@dataclass(frozen=True, slots=True)
class NotOnDlc(Rejection):
    code = "TSR002"
    summary = "the ECS type is not on PAI-DLC's public resource list (dlc_specs.csv)"

    def text(self) -> str:
        return "not on PAI-DLC's public resource list in the catalog (dlc_specs.csv)"


@dataclass(frozen=True, slots=True)
class NoPrecision(Rejection):
    code = "TSR003"
    summary = "the GPU cannot run model.precision (bf16 on Volta, fp8 without FP8 tensor cores); kind bf16 or filter"
    precision: str
    gpu: str

    @property
    def kind(self) -> str:
        return "filter" if self.precision == "fp8" else "bf16"

    def text(self) -> str:
        if self.precision == "fp8":
            return f"no fp8 support ({self.gpu}: no FP8 tensor cores) and model.precision is fp8; bf16 would allow it"
        return (
            f"no bf16 support ({self.gpu}, Volta: fp16 and fp32 only) and model.precision is bf16; fp16 would "
            "allow it"
        )


@dataclass(frozen=True, slots=True)
class InviteOnly(Rejection):
    code = "TSR004"
    summary = "an invitation-only preview type that compute.instance_types does not name"

    def text(self) -> str:
        return "invitation-only preview; list it in compute.instance_types to consider it"


@dataclass(frozen=True, slots=True)
class RdmaRequired(Rejection):
    code = "TSR005"
    KIND = "fabric"
    summary = "network.rdma is true and the type has no eRDMA or RoCE"

    def text(self) -> str:
        return "no eRDMA or RoCE, and network.rdma is true"


@dataclass(frozen=True, slots=True)
class LingjunBareMetal(Rejection):
    code = "TSR006"
    summary = "Lingjun nodes are bare metal and compute.bare_metal is avoid"

    def text(self) -> str:
        return "Lingjun nodes are bare metal and compute.bare_metal is avoid"


@dataclass(frozen=True, slots=True)
class NoHpnZone(Rejection):
    code = "TSR007"
    summary = "the Lingjun machine type has no known HPN zone among the spec's zones"
    known: tuple[tuple[str, str], ...]  # (zone, HPN zone) the catalog knows

    def text(self) -> str:
        known = ", ".join(f"{z} (HPN {h})" for z, h in self.known)
        return f"no known HPN zone in the zones you listed; the catalog knows it in {known}"


@dataclass(frozen=True, slots=True)
class NotMultiNode(Rejection):
    code = "TSR008"
    KIND = "fabric"
    summary = "compute.nodes asks for several nodes of a type that is not an 8-GPU RDMA type"
    gpus: int

    def text(self) -> str:
        if self.gpus != MULTI_NODE_GPUS:
            return f"{self.gpus} GPUs per node; multi-node training uses 8-GPU nodes"
        return "no eRDMA or RoCE for multi-node training"


@dataclass(frozen=True, slots=True)
class TensorTooWide(Rejection):
    code = "TSR009"
    KIND = "layout"
    summary = "parallelism.tensor is more than the node's GPUs"
    tensor: int
    gpus: int

    def text(self) -> str:
        return f"tensor parallelism {self.tensor} does not fit in a {self.gpus}-GPU node"


@dataclass(frozen=True, slots=True)
class NoTensorDegree(Rejection):
    code = "TSR010"
    KIND = "layout"
    summary = "no tensor-parallel degree divides both the heads and the node's GPUs"
    heads: int
    gpus: int

    def text(self) -> str:
        return f"no tensor-parallel degree divides both {self.heads} heads and {self.gpus} GPUs"


@dataclass(frozen=True, slots=True)
class ReplicaSplitsNoNodes(Rejection):
    code = "TSR011"
    KIND = "layout"
    summary = "tp x pp does not divide the GPUs of the spec's fixed compute.nodes"
    tp: int
    pp: int
    nodes: int
    gpus: int
    cp: int = 1  # the context-parallel degree (a replica is tp x pp x cp GPUs)

    def text(self) -> str:
        return (
            f"tp={self.tp} x pp={self.pp}{_cp(self.cp)} = {self.tp * self.pp * self.cp} GPUs per model replica "
            f"does not divide the "
            f"{self.nodes * self.gpus} GPUs of {self.nodes} node(s); choose a pipeline degree whose product "
            "with tp divides them"
        )


@dataclass(frozen=True, slots=True)
class DataDegreeNoNodes(Rejection):
    code = "TSR012"
    KIND = "layout"
    summary = "parallelism.data x tp x pp GPUs is no whole node count up to the limit"
    data: int
    tp: int
    pp: int
    max_nodes: int
    cp: int = 1

    def text(self) -> str:
        return (
            f"parallelism.data {self.data} x tp={self.tp} x pp={self.pp} needs "
            f"{self.data * self.tp * self.pp * self.cp} "
            f"GPUs, which no node count up to {self.max_nodes} gives"
        )


@dataclass(frozen=True, slots=True)
class ReplicaNeedsNodes(Rejection):
    code = "TSR013"
    KIND = "layout"
    summary = "one model replica (tp x pp) needs more nodes than the type may use"
    tp: int
    pp: int
    nodes: int  # the nodes one replica needs
    max_nodes: int
    gpus: int
    one_node: (
        str | None
    )  # "gpus" or "fabric": why nodes: auto keeps the type to one node; None if it does not
    cp: int = 1

    def text(self) -> str:
        return (
            f"tp={self.tp} x pp={self.pp}{_cp(self.cp)} = {self.tp * self.pp * self.cp} GPUs per model replica "
            f"needs {self.nodes} node(s)"
            + (
                _only_one(self.one_node, self.gpus)
                if self.one_node
                else f", over compute.max_nodes ({self.max_nodes})"
            )
        )


@dataclass(frozen=True, slots=True)
class SizingFailed(Rejection):
    code = "TSR014"
    summary = "the memory model refused every layout of the type (its message says why)"
    message: str

    def text(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class OutOfMemory(Rejection):
    code = "TSR015"
    KIND = "memory"
    summary = "the training state does not fit the GPUs, even at the most nodes a layout can use"
    need_bytes: float
    nodes: int
    tp: int
    pp: int
    gpu: str
    gpu_memory_gib: float
    usable_bytes: int
    headroom: float
    gpus: int
    one_node: str | None

    def text(self) -> str:
        return (
            f"needs {human_bytes(self.need_bytes)} per GPU even at {self.nodes} node(s) with tp={self.tp} "
            f"pp={self.pp}; each {self.gpu} has {self.gpu_memory_gib:g} GiB, {human_bytes(self.usable_bytes)} of "
            f"it usable with the {self.headroom:.0%} headroom" + _only_one(self.one_node, self.gpus)
        )


@dataclass(frozen=True, slots=True)
class DeadlineNodes(Rejection):
    code = "TSR016"
    KIND = "deadline"
    summary = "meeting budget.max_days needs more nodes than the type may use"
    tokens: int
    max_days: float
    nodes: int  # the nodes the deadline needs
    tp: int
    pp: int
    max_nodes: int
    gpus: int
    one_node: str | None

    def text(self) -> str:
        return (
            f"fits in memory, but finishing {_days(self.tokens, self.max_days)}{_COUNTED} needs {self.nodes} nodes "
            f"with tp={self.tp} pp={self.pp}"
            + (
                _only_one(self.one_node, self.gpus)
                if self.one_node
                else f", over compute.max_nodes ({self.max_nodes})"
            )
        )


@dataclass(frozen=True, slots=True)
class DeadlineNever(Rejection):
    code = "TSR017"
    KIND = "deadline"
    summary = "no node count meets budget.max_days: more nodes bring more interruptions"
    tokens: int
    max_days: float
    nodes: int  # the most nodes tried
    tp: int
    pp: int
    days_taken: float | None  # at that count; None when interruptions outpace progress
    gpus: int
    one_node: str | None

    def text(self) -> str:
        at = (
            "interruptions outpace progress"
            if self.days_taken is None
            else f"it takes about {self.days_taken:,.1f} days"
        )
        return (
            f"fits in memory, but no node count finishes {_days(self.tokens, self.max_days)}{_COUNTED}: at "
            f"{self.nodes} node(s) with tp={self.tp} pp={self.pp} {at}, and more nodes bring more interruptions"
            + _only_one(self.one_node, self.gpus)
        )


@dataclass(frozen=True, slots=True)
class BatchIndivisible(Rejection):
    code = "TSR018"
    KIND = "batch"
    summary = "no node count gives a data-parallel degree that divides the global batch"
    max_nodes: int
    sequences: int
    micro_batch: int

    def text(self) -> str:
        return (
            f"fits in memory, but no node count up to {self.max_nodes} gives a data-parallel degree that divides "
            f"the global batch of {self.sequences} sequences (x micro-batch {self.micro_batch})"
        )


@dataclass(frozen=True, slots=True)
class NoLayout(Rejection):
    code = "TSR019"
    KIND = "layout"
    summary = "no tp x pp layout fits up to the node limit"
    tps: tuple[int, ...]
    pps: tuple[int, ...]
    max_nodes: int

    def text(self) -> str:
        return f"no layout of tp in {list(self.tps)} and pp in {list(self.pps)} fits up to {self.max_nodes} node(s)"


@dataclass(frozen=True, slots=True)
class MultiNodeNeeded(Rejection):
    code = "TSR020"
    KIND = "fabric"
    summary = "the fit needs several nodes of a type without RDMA or 8 GPUs"

    def text(self) -> str:
        return "needs more than one node but has no eRDMA/RoCE or fewer than 8 GPUs"


@dataclass(frozen=True, slots=True)
class NeverFinishes(Rejection):
    code = "TSR021"
    KIND = "deadline"
    summary = "the fit never finishes: interruptions cost more time than the run makes between them"
    nodes: int

    def text(self) -> str:
        return (
            f"never finishes on {self.nodes} node(s): interruptions cost more time than the run makes between "
            "them"
        )


@dataclass(frozen=True, slots=True)
class HostMemoryShort(Rejection):
    code = "TSR022"
    KIND = "memory"
    summary = (
        "the GPUs fit, but the CPU-offloaded states (or paged optimizer moments) do not fit the node's host memory "
        "(80% of it usable)"
    )
    offload: str
    need_bytes: int  # host bytes per node
    nodes: int
    tp: int
    pp: int
    instance_type: str
    memory_gib: float
    usable_bytes: int

    def text(self) -> str:
        return (
            # offload none: the host holds a paged optimizer's moments (generator/sizing/paged.py)
            (
                f"offload {self.offload}: the offloaded states"
                if self.offload != "none"
                else "the paged moments"
            )
            + f" need {human_bytes(self.need_bytes)} of host memory per "
            f"node even at {self.nodes} node(s) with tp={self.tp} pp={self.pp}; {self.instance_type} has "
            f"{self.memory_gib:g} GiB, {human_bytes(self.usable_bytes)} of it usable for them (80%)"
        )


def order(item: tuple[str, Rejection]) -> tuple[int, str]:
    """Rejected types in the order a reader learns most from: those that fail on the run itself first, types of a
    GPU without bf16 or fp8 (excluded before any sizing) last; by name within each."""
    name, why = item
    return (1 if isinstance(why, NoPrecision) else 0, name)


def codes() -> list[type[Rejection]]:
    """Every rejection class, by code (docs/codes.md lists them)."""
    # the module's names, not Rejection.__subclasses__(): slots=True replaces each class, and the replaced one lingers
    found = {
        v
        for v in globals().values()
        if isinstance(v, type) and issubclass(v, Rejection) and v is not Rejection
    }
    return sorted(found, key=lambda c: c.code)
