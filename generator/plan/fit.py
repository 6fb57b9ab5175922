"""What the plan's parts share: a layout that fits an instance type (:class:`Fit`), its price and run time
(:class:`Scored`), and :class:`PlanningError`.

The parts (``compute``, ``network``, ``storage``, ``checkpoints``, ``spot``, ``lingjun``, ``cost``) each take
the chosen :class:`Scored` fit, or its :class:`Fit`, and build their part of the :class:`~generator.plan.model.Plan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from generator import sizing
from generator.catalog import InstanceType
from generator.errors import SpecErrors

if TYPE_CHECKING:  # the estimate command imports this module and skips pydantic
    from generator.spec.model import Spec


class PlanningError(SpecErrors):
    """No plan satisfies the spec; each problem says what to change."""


@dataclass(frozen=True, slots=True)
class Fit:
    """An instance type with the fewest nodes, and the parallel layout, whose GPUs hold the training state."""

    itype: InstanceType
    nodes: int
    tp: int
    pp: int
    dp: int
    memory: sizing.MemoryBreakdown
    ep: int = 1
    cp: int = 1  # context-parallel degree: the sequence split over cp ranks of each replica


def replica_gpus(tp: int, pp: int, cp: int = 1) -> int:
    """GPUs of one model replica: tensor x pipeline x context parallel (expert parallelism is carved from the
    data-parallel ranks and adds none)."""
    return tp * pp * cp


def data_parallel(gpus: int, tp: int, pp: int, cp: int = 1) -> int:
    """The data-parallel degree of ``gpus`` GPUs: gpus / (tp x pp x cp), the one place it is computed (0 when the
    GPUs do not split into whole replicas)."""
    per = replica_gpus(tp, pp, cp)
    return gpus // per if gpus % per == 0 else 0


def context_degree(spec: Spec) -> int:
    """The spec's context-parallel degree for a layout already chosen: ``parallelism.context`` when fixed, else 1
    (``auto`` is resolved by the fit search, which sizes each candidate with :func:`with_context`)."""
    c = spec.parallelism.context
    return c if isinstance(c, int) else 1


def with_context(spec: Spec, cp: int) -> Spec:
    """The spec with ``parallelism.context`` fixed to ``cp``: how the fit search and the parts after it size a
    layout whose context-parallel degree ``auto`` chose."""
    if spec.parallelism.context == cp:
        return spec
    return spec.model_copy(update={"parallelism": spec.parallelism.model_copy(update={"context": cp})})


# GPUs of one NVLink domain: the 8 GPUs of a multi-node type (generator.plan.layout.MULTI_NODE_GPUS)
NVLINK_GPUS = 8


def expert_degree(arch: sizing.Architecture, fixed: int | str, tp: int, dp: int) -> int:
    """The expert-parallel degree of a layout: ``parallelism.expert`` when the spec fixes it, else the largest
    degree that divides the experts and the data-parallel degree and keeps ep x tp inside one node's NVLink
    domain (its all-to-all then never crosses the network); 1 for a dense model. A larger ep never needs more
    memory: the experts' weights shrink by ep and their ZeRO shards stay E x K/(tp pp dp)."""
    if arch.moe is None:
        return 1 if fixed == "auto" else int(fixed)
    if isinstance(fixed, int):
        return fixed
    return max(
        e for e in range(1, max(1, NVLINK_GPUS // tp) + 1) if arch.moe.experts % e == 0 and dp % e == 0
    )


@dataclass(frozen=True, slots=True)
class Scored:
    """A fit with its price per hour, run time, expected rework and run cost; ``key`` ranks it (lower wins)."""

    fit: Fit
    per_hour: float
    spot_per_hour: float
    run_hours: float | None
    rework_hours: float | None
    run_cost: float | None
    key: tuple[float, ...]
    schedule: sizing.Schedule | None = (
        None  # run_hours = compute + bubble + writes; rework_hours = rework + restores
    )


def training_setup(
    spec: Spec, arch: sizing.Architecture, tp: int, pp: int, dp: int, lora_rank: int | None
) -> sizing.TrainingSetup:
    """The sizing setup of a layout of the spec: tp, pp and dp given, cp from the spec (:func:`context_degree`)."""
    m, p = spec.model, spec.parallelism
    return sizing.TrainingSetup(
        arch=arch,
        seq_len=m.sequence_length,
        micro_batch=m.micro_batch_size,
        precision=m.precision,
        optimizer=m.optimizer,
        zero_stage=p.zero_stage,
        tp=tp,
        pp=pp,
        dp=dp,
        sequence_parallel=p.sequence_parallel and tp > 1,
        recompute=p.recompute,
        lora_rank=lora_rank,
        qlora=m.finetune.method == "qlora",
        framework=p.framework,
        paged_optimizer=m.finetune.paged_optimizer,
        offload=p.offload,
        ep=expert_degree(arch, p.expert, tp, dp),
        vpp=p.virtual_stages if pp > 1 else 1,
        cp=context_degree(spec),
    )
