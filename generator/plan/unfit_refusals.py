"""The two refusals of a search that ends with nothing to plan: no instance type fits (TSP029-TSP031, raised by
:func:`generator.plan.unfit.nothing_fits`), or the chosen fit never finishes because interruptions cost more time
than the run makes between them (TSP024-TSP028, raised by :func:`generator.plan.run_hours.never_finishes`).

They are :class:`~generator.plan.refusals.Refusal` events like the others (a code, the spec field, typed fields,
the words rendered from them here only); :func:`codes` lists them, after :func:`generator.plan.refusals.codes`'s,
in docs/codes.md's table of planning problems. They live apart because their hints are decision lists (which
fixes help depends on the constraints that bound, the spec's settings and the fixes the planner tried), longer
than all the other refusals together: in refusals.py they would push it past the module limit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from generator.plan import rejections as r
from generator.plan.refusal import Refusal
from generator.spec.units import human_count, human_seconds

# -- the run never finishes (generator/plan/run_hours.py: never_finishes)


def _auto_interval(interval_seconds: int) -> str:
    return (
        f"set checkpoints.interval: auto (now {human_seconds(interval_seconds)}; the Young/Daly interval loses the "
        "least to interruptions)"
    )


FASTER_CHECKPOINTS = (
    "write checkpoints faster: set storage.shared: auto, so they go to a shared file system faster than OSS"
)


@dataclass(frozen=True, slots=True)
class NeverFinishes(Refusal):
    """The base of the never-finishes refusals (no code of its own): the interruptions and what each costs. No
    figure of the capped schedule is a field: its wall time is a cap, not an estimate."""

    nodes: int
    instance_type: str
    interruptions_per_hour: float
    node_mtbf_hours: float  # an assumption (generator/sizing/checkpoint.py)
    spot_nodes: int
    spot_interruptions_per_node_day: float  # spot.interruptions_per_node_day, an assumption
    interval_hours: float  # the schedule's checkpoint interval
    restore_seconds: float
    relaunch_hours: float

    def lost_hours(self) -> float:
        """What one interruption costs: half an interval of work on average, a restore and a relaunch."""
        return self.interval_hours / 2 + self.restore_seconds / 3600 + self.relaunch_hours

    def costs(self) -> str:
        return (
            f"the work since the last checkpoint (half the {human_seconds(self.interval_hours * 3600)} interval "
            f"on average), a restore of {human_seconds(self.restore_seconds)} and a "
            f"{self.relaunch_hours * 60:.0f}-minute relaunch"
        )

    def text(self) -> str:
        causes = f"{self.nodes} node(s) failing at an assumed MTBF of {self.node_mtbf_hours:,.0f} h each"
        if self.spot_nodes:
            causes += (
                f" and {self.spot_nodes} spot node(s) reclaimed at an assumed "
                f"{self.spot_interruptions_per_node_day:g} per node-day"
            )
        return (
            f"the run never finishes on {self.nodes} x {self.instance_type}: it is interrupted every "
            f"{human_seconds(3600 / self.interruptions_per_hour)} on average ({causes}), and each interruption "
            f"costs {self.costs()}, about {human_seconds(self.lost_hours() * 3600)}: more time is lost than the "
            "run makes between interruptions"
        )

    def fixes(self) -> list[str]:
        return []

    def hint(self) -> str:
        return "to fix: " + "; or ".join(self.fixes())


@dataclass(frozen=True, slots=True)
class NeverFinishesAtInterval(NeverFinishes):
    code = "TSP024"
    path = ("checkpoints", "interval")
    summary = "the run never finishes at the fixed checkpoints.interval; at auto it would"
    interval_seconds: int  # checkpoints.interval

    def fixes(self) -> list[str]:
        return [_auto_interval(self.interval_seconds)]


@dataclass(frozen=True, slots=True)
class NeverFinishesUncheckpointed(NeverFinishes):
    code = "TSP025"
    path = ("checkpoints", "enabled")
    summary = "the run never finishes with checkpoints off: each interruption restarts it"

    def costs(self) -> str:
        return "a restart from the beginning"

    def fixes(self) -> list[str]:
        return [
            "set checkpoints.enabled: true so an interruption loses only the work since the last checkpoint"
        ]


@dataclass(frozen=True, slots=True)
class NeverFinishesOnNodes(NeverFinishes):
    """A never-finishes refusal whose fix is elsewhere than the checkpoint interval: the later fixes name the
    fixed interval (if any) or, with checkpoints on OSS only, a faster tier."""

    fixed_interval_seconds: int | None  # checkpoints.interval when fixed (auto alone does not make it finish)
    oss_only: bool  # storage.shared: none (checkpoints go to OSS)

    def later_fixes(self) -> list[str]:
        if self.fixed_interval_seconds is not None:
            return [_auto_interval(self.fixed_interval_seconds)]
        if self.oss_only:
            return [FASTER_CHECKPOINTS]
        return []

    def fixes(self) -> list[str]:
        return ["train on fewer nodes (each one adds failures)", *self.later_fixes()]


@dataclass(frozen=True, slots=True)
class NeverFinishesOnSpot(NeverFinishesOnNodes):
    code = "TSP026"
    path = ("spot", "interruptions_per_node_day")
    summary = "the run never finishes: spot reclaims (an assumed rate) interrupt it too often"
    finishing_rate: float | None  # the highest tried spot.interruptions_per_node_day at which it finishes
    mixed_spot: bool  # the platform mixes spot and on-demand nodes (spot.on_demand_base applies)
    on_demand_base: int  # spot.on_demand_base
    finishing_base: int | None  # an on_demand_base at which it finishes (None: none tried does)

    def fixes(self) -> list[str]:
        out = []
        if self.finishing_rate is not None:
            out.append(
                f"check spot.interruptions_per_node_day ({self.spot_interruptions_per_node_day:g}, an "
                f"assumption): at {self.finishing_rate:g} or less the run finishes"
            )
        if self.mixed_spot:
            out.append(
                f"keep more nodes on demand (spot.on_demand_base: {self.finishing_base}, now {self.on_demand_base})"
                if self.finishing_base is not None
                else f"keep most nodes on demand (spot.on_demand_base, now {self.on_demand_base} of {self.nodes})"
            )
        return [*out, "set spot.enabled: false", *self.later_fixes()]


@dataclass(frozen=True, slots=True)
class NeverFinishesFixedNodes(NeverFinishesOnNodes):
    code = "TSP027"
    path = ("compute", "nodes")
    summary = "the run never finishes on the compute.nodes given: node failures interrupt it too often"


@dataclass(frozen=True, slots=True)
class NeverFinishesAutoNodes(NeverFinishesOnNodes):
    code = "TSP028"
    path = ("compute", "max_nodes")
    summary = "the run never finishes on the node count chosen: node failures interrupt it too often"


# -- no instance type fits (generator/plan/unfit.py: nothing_fits)

FABRIC_ONLY = {"fabric", "filter", "bf16"}  # kinds no memory or deadline fix helps: only a fabric, or TCP


@dataclass(frozen=True, slots=True)
class NothingFits(Refusal):
    """The base of the no-type-fits refusals (no code of its own): every type's rejection, most telling first,
    and the spec's settings the fixes depend on. The hint names the fixes for the constraints that bound, not
    others (more memory does not meet a deadline)."""

    machine: str  # "instance type", or the platform's noun for what it trains on
    parameters: int
    rejected: tuple[tuple[str, r.Rejection], ...]  # (type, why): the most telling kinds first
    fixed_nodes: bool  # compute.nodes is a number
    max_nodes: int
    max_days: float | None
    gpu: str  # compute.gpu ("auto" or one GPU)
    spot: bool  # spot.enabled
    # the fields whose memory saving can help (parallelism.zero_stage, parallelism.recompute, model.micro_batch_size)
    memory_savings: tuple[str, ...]
    megatron: bool  # parallelism.framework: megatron (its distributed optimizer is ZeRO-1)
    type_filter: bool  # compute.instance_types is set
    fixed_degrees: bool  # parallelism.tensor or pipeline is a number

    def fields(self) -> dict[str, Any]:
        """The fields, each rejection as its type with plan.json's reason (code, kind and fields)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["rejected"] = tuple({"instance_type": k, **why.to_dict()} for k, why in self.rejected)
        return out

    @property
    def kinds(self) -> set[str]:
        return {why.kind for _, why in self.rejected}

    def text(self) -> str:
        details = "; ".join(f"{k}: {why.text()}" for k, why in self.rejected[:2])
        if len(self.rejected) > 2:
            details += f"; and {len(self.rejected) - 2} more like these"
        return (
            f"no {self.machine} in the region can train this {human_count(self.parameters)}-parameter model"
            + (f" ({details})" if details else "")
        )

    def deadline_fixes(self) -> list[str]:
        reasons = [why for _, why in self.rejected]
        needs = [why.nodes for why in reasons if isinstance(why, r.DeadlineNodes) and why.one_node is None]
        out = []
        if needs and not self.fixed_nodes:
            out.append(f"raise compute.max_nodes (now {self.max_nodes}) to at least {min(needs)}")
        if any(
            isinstance(why, (r.DeadlineNodes, r.DeadlineNever)) and why.one_node == "fabric"
            for why in reasons
        ):
            out.append(
                "let the run use several nodes: a region with 8-GPU eRDMA types (see 'trainstack catalog "
                "--regions'), or network.rdma: false to accept TCP"
            )
        out.append(f"allow more days (budget.max_days, now {self.max_days or 0.0:g})")
        out.append("train on fewer tokens (model.tokens)")
        out.append(
            "choose a GPU with a higher BF16 peak (compute.gpu: auto, or see 'trainstack catalog')"
            if self.gpu != "auto"
            else "choose a region with faster GPUs (see 'trainstack catalog --regions')"
        )
        if self.spot and any(isinstance(why, r.DeadlineNever) for why in reasons):
            out.append(
                "cut interruptions: keep more nodes on demand (spot.on_demand_base) or set spot.enabled: false"
            )
        return out

    def memory_fixes(self) -> list[str]:
        out = ["raise compute.max_nodes"] if not self.fixed_nodes and self.max_nodes < 512 else []
        if "parallelism.zero_stage" in self.memory_savings:
            out.append(
                "use parallelism.zero_stage: 3 to shard weights, gradients and optimizer states"
                + (
                    " (with framework: deepspeed or fsdp; Megatron's distributed optimizer is ZeRO-1)"
                    if self.megatron
                    else ""
                )
            )
        if "parallelism.recompute" in self.memory_savings:
            out.append("use parallelism.recompute: full to trade compute for activation memory")
        if "model.micro_batch_size" in self.memory_savings:
            out.append("lower model.micro_batch_size")
        if self.gpu != "auto":
            out.append("set compute.gpu: auto or choose a GPU with more memory")
        return out

    def fixes(self) -> list[str]:
        kinds = self.kinds
        out = ["set compute.nodes: auto (or more nodes)"] if self.fixed_nodes else []
        if "deadline" in kinds:
            out += self.deadline_fixes()
        elif (
            "memory" in kinds
        ):  # more memory does not meet a deadline: the types that fit memory already miss it
            out += self.memory_fixes()
        short = [why for _, why in self.rejected if isinstance(why, r.HostMemoryShort)]
        if short and short[0].offload == "none":  # a paged optimizer's moments (generator/sizing/paged.py)
            out.insert(
                0,
                "spread the paged optimizer moments over more nodes (compute.nodes: auto, or more), or choose an "
                "instance type with more host memory",
            )
        elif short:
            out.insert(
                0,
                "spread the offloaded states over more nodes (compute.nodes: auto, or more), or choose an instance "
                "type with more host memory, or parallelism.offload: optimizer (keeps the weights on the GPUs)",
            )
        if "batch" in kinds:
            out.append(
                "choose a model.global_batch_tokens whose sequences divide by more data-parallel degrees (a power "
                "of two)"
            )
        if self.type_filter:
            out.append("widen compute.instance_types")
        if self.fixed_degrees and kinds & {"memory", "layout"}:
            out.append("let parallelism.tensor / pipeline be auto")
        if kinds and kinds <= FABRIC_ONLY and "fabric" in kinds:  # memory is not the problem
            out = [
                "choose a region with 8-GPU eRDMA types (see 'trainstack catalog --regions')",
                "set network.rdma: false to accept TCP",
            ]
            if self.gpu != "auto":
                out.append("set compute.gpu: auto (another GPU may have eRDMA types here)")
        if "bf16" in kinds:
            out.append("set model.precision: fp16 to allow the GPUs without bf16")
        return out or [
            "set compute.gpu: auto and widen the spec's filters (compute.instance_types, bare_metal, gpus_per_node)"
        ]

    def hint(self) -> str:
        return "to fix: " + "; or ".join(dict.fromkeys(self.fixes()))


@dataclass(frozen=True, slots=True)
class NoTypeFitsNodes(NothingFits):
    code = "TSP029"
    path = ("compute", "nodes")
    summary = "no instance type can train the model on the compute.nodes given"


@dataclass(frozen=True, slots=True)
class NoTypeMeetsDeadline(NothingFits):
    code = "TSP030"
    path = ("budget", "max_days")
    summary = "no instance type can train the model within budget.max_days (the deadline is what binds)"


@dataclass(frozen=True, slots=True)
class NoTypeFits(NothingFits):
    code = "TSP031"
    path = ("compute",)
    summary = (
        "no instance type can train the model (memory, the layout, the batch, the fabric or a filter binds)"
    )


def codes() -> list[type[Refusal]]:
    """This module's refusal classes, by code (docs/codes.md lists them after :func:`generator.plan.refusals.codes`'s:
    their codes follow)."""
    found = {
        v
        for v in globals().values()
        if isinstance(v, type) and issubclass(v, Refusal) and v.code.startswith("TSP")
    }
    return sorted(found, key=lambda c: c.code)
