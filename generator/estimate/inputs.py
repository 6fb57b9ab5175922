"""The command line's checks before the estimate sizes anything: the combinations a user can get wrong on a command
line (a model sized twice or not at all, MoE flags without experts, counts that are not whole numbers, GPUs that
tp x pp x cp does not divide), each refused with its event (:mod:`generator.estimate.events`).

Apart from :mod:`generator.estimate` because these are rules about flags, not about the model: the sizing model
checks the shape and the layout itself (its errors become :class:`~generator.estimate.events.SizingFailed`).
The rules a spec shares are not repeated here: they live in :mod:`generator.spec.conflicts`.
"""

from __future__ import annotations

import generator.estimate.events as ev
from generator import sizing
from generator.estimate.events import EstimateError
from generator.plan.fit import data_parallel, replica_gpus
from generator.spec.conflicts import training_conflicts


def _whole(option: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EstimateError.of(ev.NotWholeNumber(option, value))


def data_parallel_degree(gpus: int | None, tp: int, pp: int, cp: int = 1) -> int:
    """dp = gpus / (tp * pp * cp); without ``gpus`` one model replica (dp = 1).

    Every GPU holds one tensor-parallel shard of one pipeline stage of one context-parallel share of one replica,
    so the total must be a whole multiple of tp * pp * cp; anything else leaves GPUs idle, which the user almost
    surely did not mean. The degree itself is :func:`generator.plan.fit.data_parallel`, as the planner counts it.
    """
    for flag, value in (("--tp", tp), ("--pp", pp), ("--cp", cp)):
        _whole(flag, value)
    if gpus is None:
        return 1
    _whole("--gpus", gpus)
    per_replica = replica_gpus(tp, pp, cp)
    dp = data_parallel(gpus, tp, pp, cp)
    if not dp:
        lower = gpus // per_replica * per_replica
        near = tuple(n for n in (lower, lower + per_replica) if n >= per_replica)
        raise EstimateError.of(ev.GpusNotMultiple(gpus, tp, pp, cp, per_replica, near))
    return dp


def check_model_size(
    params: int | None, preset: str | None, layers: int | None, hidden: int | None, heads: int | None
) -> None:
    """Some size is given: a parameter count, a preset, or a shape with layers, hidden and heads."""
    if params is None and preset is None and layers is None and hidden is None and heads is None:
        raise EstimateError.of(ev.NoModelSize())
    if params is None and preset is None and not (layers and hidden and heads):
        raise EstimateError.of(ev.PartialShape())


def check_sized_once(
    params: int | None, preset: str | None, layers: int | None, hidden: int | None, heads: int | None
) -> None:
    """As in a spec (model.parameters with model.preset or model.architecture is an error): one size only."""
    full_shape = layers is not None and hidden is not None and heads is not None
    if params is not None and (preset is not None or full_shape):
        raise EstimateError.of(ev.SizedTwice("shape" if full_shape else "preset"))


def check_training_flags(
    lora_rank: int | None,
    qlora: bool,
    precision: str,
    optimizer: str,
    paged_optimizer: bool,
    headroom: float,
    counts: dict[str, int | None],
) -> None:
    """The fine-tuning method, the combinations the spec check refuses too (their shared codes), the headroom,
    and the counts given by ``counts`` (flag -> value, None when not given)."""
    if qlora and lora_rank is None:
        raise EstimateError.of(ev.QloraNeedsRank())
    method = "qlora" if qlora else "lora" if lora_rank is not None else "full"
    for conflict in training_conflicts(method, precision, optimizer, paged_optimizer):
        raise EstimateError(
            f"{conflict.flag}: {conflict.message}: {conflict.flag_hint}.",
            conflict.code,
            {"flag": conflict.flag},
        )
    if isinstance(headroom, bool) or not isinstance(headroom, (int, float)) or not 0 <= headroom <= 0.5:
        raise EstimateError.of(ev.HeadroomOutOfRange(headroom))
    for flag, value in counts.items():
        if value is not None:
            _whole(flag, value)


def moe_from_flags(
    experts: int | None,
    top_k: int | None,
    expert_ffn_hidden: int | None,
    shared_experts: int,
    dense_layers: int,
    capacity_factor: float | None,
) -> sizing.MoE | None:
    """The mixture of experts the flags describe (as ``model.moe``), None for a dense model."""
    given = [
        f
        for f, v in (
            ("--top-k", top_k),
            ("--expert-ffn-hidden", expert_ffn_hidden),
            ("--capacity-factor", capacity_factor),
        )
        if v is not None
    ]
    given += [f for f, v in (("--shared-experts", shared_experts), ("--dense-layers", dense_layers)) if v]
    if experts is None and given:
        raise EstimateError.of(ev.MoeFlagsWithoutExperts(tuple(given)))
    if experts is None:
        return None
    if top_k is None or expert_ffn_hidden is None:
        raise EstimateError.of(ev.ExpertsIncomplete())
    try:
        return sizing.MoE(
            experts=experts,
            top_k=top_k,
            expert_ffn_hidden=expert_ffn_hidden,
            shared_experts=shared_experts,
            dense_layers=dense_layers,
            capacity_factor=capacity_factor,
        )
    except sizing.SizingError as e:
        raise EstimateError.of(ev.SizingFailed(str(e))) from None
