"""The command line's checks before the estimate sizes anything: the combinations a user can get wrong on a command
line (a model sized twice or not at all, MoE flags without experts, counts that are not whole numbers, GPUs that
tp x pp x cp does not divide), each refused with its event (:mod:`generator.estimate.events`).

Apart from :mod:`generator.estimate` because these are rules about flags, not about the model: the sizing model
checks the shape and the layout itself (its errors become :class:`~generator.estimate.events.SizingFailed`).
The rules a spec shares are not repeated here: they live in :mod:`generator.spec.conflicts`. :class:`Options` is every
input by name, with the spec's defaults; :func:`checked_dp` runs these checks on it in the order the flags are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import generator.estimate.events as ev
from generator import sizing
from generator.catalog import Catalog
from generator.estimate.events import EstimateError
from generator.plan.fit import data_parallel, replica_gpus
from generator.spec import defaults
from generator.spec.conflicts import training_conflicts


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """Every input of :func:`generator.estimate.estimate`, named as ``trainstack estimate``'s flags name them (``--seq-len``
    is ``seq_len``), each defaulting as a spec that leaves the same field out (:mod:`generator.spec.defaults`).

    The model is a parameter count, a preset, or a shape (``layers``, ``hidden``, ``heads`` and the rest), as a spec's
    ``model`` section. ``experts``, ``top_k``, ``expert_ffn_hidden``, ``shared_experts``, ``dense_layers`` and
    ``capacity_factor`` make it a mixture of experts (as ``model.moe``), ``ep`` its expert-parallel degree (it must
    divide dp); ``vpp`` interleaved pipeline stages per GPU (as ``parallelism.virtual_stages``); ``cp`` the
    context-parallel degree (as ``parallelism.context``): each sequence split over cp ranks, dp = gpus / (tp x pp x cp).
    ``sp`` only takes effect with tp > 1 (as in the planner): sequence parallelism splits along the tensor-parallel
    group. ``framework`` picks whose accounting of the model states to use (``auto``: megatron for ZeRO 0/1, deepspeed
    for 2/3; ``zero-paper`` reproduces the ZeRO paper), and ``headroom`` is the share of the GPU's memory a fit must
    leave free, as ``parallelism.memory_headroom`` in a spec.

    ``gpu`` (a catalog name or alias) adds ``fits`` and a ``gpu`` block; ``tokens`` adds ``training_flops`` (6ND) and,
    with a GPU, ``gpu_hours`` and wall-clock ``hours`` at the catalog's MFU. ``instance_type`` (an ECS type or a Lingjun
    machine type) is the node: its GPU (``gpu`` may be left out, or must be the same) and, under CPU offload, its vCPUs
    for the optimizer step and its host memory for the offloaded states; without it the step assumes the planner's
    vCPUs per GPU and ``warnings`` says so (TSE106). ``catalog`` is only read when ``gpu`` or ``instance_type`` is
    given.
    """

    # the model
    params: int | None = None
    preset: str | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    vocab: int | None = None
    ffn_hidden: int | None = None
    mlp_matrices: int | None = None
    tied_embeddings: bool | None = None
    head_dim: int | None = None
    # a mixture of experts
    experts: int | None = None
    top_k: int | None = None
    expert_ffn_hidden: int | None = None
    shared_experts: int = 0
    dense_layers: int = 0
    capacity_factor: float | None = None
    # the parallel layout
    ep: int = 1
    vpp: int = 1
    cp: int = 1
    gpus: int | None = None
    tp: int = 1
    pp: int = 1
    sp: bool = defaults.SEQUENCE_PARALLEL
    # the training
    seq_len: int = defaults.SEQUENCE_LENGTH
    micro_batch: int = defaults.MICRO_BATCH_SIZE
    precision: str = defaults.PRECISION
    optimizer: str = defaults.OPTIMIZER
    zero: int = defaults.ZERO_STAGE
    recompute: str = defaults.RECOMPUTE
    lora_rank: int | None = None
    qlora: bool = False
    paged_optimizer: bool = False
    offload: str = defaults.OFFLOAD
    framework: str = defaults.FRAMEWORK
    headroom: float = defaults.MEMORY_HEADROOM
    # the hardware and the run
    gpu: str | None = None
    tokens: int | None = None
    catalog: Catalog | None = None
    instance_type: str | None = None

    @property
    def shape(self) -> dict[str, int | bool | None]:
        """The explicit shape's fields, by the names ``sizing.architecture_for`` takes them."""
        return {
            "layers": self.layers,
            "hidden": self.hidden,
            "heads": self.heads,
            "kv_heads": self.kv_heads,
            "vocab": self.vocab,
            "ffn_hidden": self.ffn_hidden,
            "mlp_matrices": self.mlp_matrices,
            "tied_embeddings": self.tied_embeddings,
            "head_dim": self.head_dim,
        }


def checked_dp(o: Options) -> int:
    """The flags' checks, in the order the estimate always refused them (the first refusal wins), and dp."""
    check_model_size(o.params, o.preset, o.layers, o.hidden, o.heads)
    counts = {
        "--seq-len": o.seq_len,
        "--micro-batch": o.micro_batch,
        "--tokens": o.tokens,
        "--lora-rank": o.lora_rank,
    }
    check_training_flags(
        o.lora_rank,
        o.qlora,
        o.precision,
        o.optimizer,
        o.paged_optimizer,
        o.headroom,
        counts,
        (o.framework, o.zero, o.offload),
    )
    check_sized_once(o.params, o.preset, o.layers, o.hidden, o.heads)
    return data_parallel_degree(o.gpus, o.tp, o.pp, o.cp)


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
    layout: tuple[str, int, str] = (defaults.FRAMEWORK, defaults.ZERO_STAGE, defaults.OFFLOAD),
) -> None:
    """The fine-tuning method, the combinations the spec check refuses too (their shared codes), the headroom,
    and the counts given by ``counts`` (flag -> value, None when not given); ``layout`` is the framework, ZeRO
    stage and offload the paged optimizer's conflicts depend on."""
    if qlora and lora_rank is None:
        raise EstimateError.of(ev.QloraNeedsRank())
    method = "qlora" if qlora else "lora" if lora_rank is not None else "full"
    for conflict in training_conflicts(method, precision, optimizer, paged_optimizer, *layout):
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
