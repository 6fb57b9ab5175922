"""Per-GPU memory of a training setup: model states, Korthikanti activations, LoRA/QLoRA, the reserve.

:func:`per_gpu_memory` is the whole model: it validates a :class:`TrainingSetup` and returns a
:class:`MemoryBreakdown` whose notes spell out every formula with the numbers plugged in. Full-training model
states follow the ZeRO paper here (``framework="zero-paper"``) or a framework's own accounting in
:mod:`generator.sizing.frameworks`, LoRA/QLoRA's in :mod:`generator.sizing.lora`. docs/sizing.md has the
derivation and worked examples; [ZeRO], [SP], [LoRA] and [QLoRA] are listed in :mod:`generator.sizing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from generator.sizing.activations import RECOMPUTE_MODES, _ranges, pipeline_splits, stage_layers
from generator.sizing.activations import activations as stage_activations
from generator.sizing.architecture import Architecture
from generator.sizing.common import GiB, SizingError, _ceil, _gb, _positive_int
from generator.sizing.fp8 import weight_cache as fp8_weight_cache
from generator.sizing.frameworks import (
    FSDP_LIVE_GRAD_UNITS,
    FSDP_LIVE_UNITS,
    check_framework,
    fsdp_root_unit,
    full_model_states,
    largest_module_parameters,
    resolve_framework,
)
from generator.sizing.lora import _lora_states
from generator.sizing.offload import check_offload, offload_states
from generator.sizing.paged import check_paged, paged_moments
from generator.sizing.precision import (
    PRECISION_BYTES,
    PURE_16BIT_OPTIMIZERS,
    _check_optimizer,
    _check_precision,
    optimizer_bytes_per_param,
)
from generator.sizing.reserve import runtime_reserve
from generator.sizing.setup import TrainingSetup


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Bytes per GPU (worst GPU).  ``notes`` spell out each formula with numbers plugged in."""

    weights: int
    gradients: int
    optimizer_states: int
    activations: int
    reserve: int
    total: int
    notes: tuple[str, ...]
    host: int = 0  # host (CPU) memory per GPU for offloaded states (parallelism.offload)
    pcie_bytes: int = 0  # bytes per optimizer step over the GPU's PCIe link for offloaded states
    paged: int = (
        0  # a paged optimizer's moments in full training: host-evictable, not in total (sizing.paged)
    )

    @property
    def model_states(self) -> int:
        return self.weights + self.gradients + self.optimizer_states

    def to_dict(self) -> dict:
        return {
            "weights": self.weights,
            "gradients": self.gradients,
            "optimizer_states": self.optimizer_states,
            "activations": self.activations,
            "reserve": self.reserve,
            "total": self.total,
        }


def validate_setup(setup: TrainingSetup) -> None:
    """Raise SizingError (with what to change) if the setup cannot be sized.

    Length: a flat list of independent refusals (fourteen), each with its own message; split, they would only be
    called one after another."""
    arch = setup.arch
    for name in ("seq_len", "micro_batch", "tp", "pp", "dp"):
        _positive_int(name, getattr(setup, name))
    _check_precision(setup.precision)
    _check_optimizer(setup.optimizer)
    if setup.precision == "fp8" and setup.qlora:
        raise SizingError("QLoRA keeps the frozen base in 4-bit NF4, not FP8: use precision bf16 with QLoRA.")
    if setup.zero_stage not in (0, 1, 2, 3) or isinstance(setup.zero_stage, bool):
        raise SizingError(f"zero_stage must be 0, 1, 2 or 3, got {setup.zero_stage!r}.")
    if setup.recompute not in RECOMPUTE_MODES:
        raise SizingError(f"unknown recompute {setup.recompute!r}; allowed: {', '.join(RECOMPUTE_MODES)}.")
    if not tp_splits_heads(arch, setup.tp):
        ok = [t for t in (1, 2, 4, 8, 16) if tp_splits_heads(arch, t)]
        kv = f"{arch.kv_heads} KV head{'s' if arch.kv_heads != 1 else ''}"
        raise SizingError(
            f"tp={setup.tp} does not split the {arch.heads} attention heads and {kv} (tp must divide "
            f"the heads, and divide the KV heads or be a multiple of them: Megatron-LM replicates KV "
            f"heads when tp exceeds them); use a tensor-parallel degree from {ok}."
        )
    _positive_int("ep", setup.ep)
    _positive_int("cp", setup.cp)
    if setup.cp > 1 and setup.seq_len % (2 * setup.cp):
        raise SizingError(
            f"cp={setup.cp} splits each sequence into 2 x cp = {2 * setup.cp} chunks (Megatron-Core "
            f"context parallelism balances the causal mask that way): the sequence length "
            f"{setup.seq_len} must be a multiple of {2 * setup.cp}."
        )
    if setup.cp > 1 and setup.lora_rank is not None:
        raise SizingError(
            f"cp={setup.cp}: context parallelism is modelled for full training (Megatron-Core); "
            "LoRA/QLoRA trainers (PEFT) do not run it, use cp=1."
        )
    _positive_int("vpp", setup.vpp)
    if setup.vpp > 1 and (setup.pp == 1 or arch.layers % (setup.pp * setup.vpp)):
        raise SizingError(
            f"vpp={setup.vpp} interleaves {setup.vpp} chunks per pipeline stage: it needs pp > 1 and "
            f"pp x vpp dividing the {arch.layers} layers (Megatron-LM's interleaved schedule); got "
            f"pp={setup.pp}."
        )
    if setup.ep > 1 and arch.moe is None:
        raise SizingError(
            f"ep={setup.ep}: expert parallelism needs a mixture-of-experts model (model.moe or a MoE "
            "preset); use ep=1 for a dense model."
        )
    if arch.moe is not None and arch.moe.experts % setup.ep:
        raise SizingError(
            f"ep={setup.ep} does not divide the {arch.moe.experts} experts; use an expert-parallel "
            f"degree that divides them."
        )
    if setup.dp % setup.ep:
        raise SizingError(
            f"ep={setup.ep} does not divide the data-parallel degree {setup.dp}: the expert-parallel "
            "group is carved from the data-parallel ranks (Megatron-Core); use an ep that divides dp."
        )
    if setup.pp > arch.layers:
        raise SizingError(
            f"pp={setup.pp} is more pipeline stages than the model's {arch.layers} layers; "
            f"use pp <= {arch.layers}."
        )
    if not pipeline_splits(arch.layers, setup.pp):
        ok = [p for p in range(2, min(arch.layers, 64) + 1) if pipeline_splits(arch.layers, p)]
        raise SizingError(
            f"pp={setup.pp} cannot split the {arch.layers} layers into equal stages with shorter first "
            f"and last ones ({setup.pp - 2} stages of {stage_layers(arch.layers, setup.pp)} leave "
            f"{arch.layers - (setup.pp - 2) * stage_layers(arch.layers, setup.pp)} for the first and "
            f"last); use a pipeline degree from {_ranges(ok)}."
        )
    check_framework(setup.framework, setup.zero_stage)
    check_offload(
        setup.offload,
        resolve_framework(setup.framework, setup.zero_stage),
        setup.zero_stage,
        setup.lora_rank is not None,
        arch.moe is not None,
    )
    if setup.paged_optimizer:
        check_paged(
            resolve_framework(setup.framework, setup.zero_stage),
            setup.zero_stage,
            setup.offload,
            setup.lora_rank is not None,
        )
    if setup.lora_rank is not None:
        _positive_int("lora_rank", setup.lora_rank)
    if setup.qlora and setup.lora_rank is None:
        raise SizingError("qlora=True needs lora_rank; set lora_rank (e.g. 16) or turn qlora off.")
    if setup.reserve_bytes is not None and (
        isinstance(setup.reserve_bytes, bool)
        or not isinstance(setup.reserve_bytes, int)
        or setup.reserve_bytes < 0
    ):
        raise SizingError(
            f"reserve_bytes must be a non-negative integer or None, got {setup.reserve_bytes!r}."
        )


def tp_splits_heads(arch: Architecture, tp: int) -> bool:
    """Whether tensor parallelism ``tp`` can split the attention: it divides the query heads, and divides the KV
    heads or is a multiple of them (each KV head then replicated on tp/g ranks, as Megatron-LM does)."""
    g = arch.kv_heads
    return tp >= 1 and arch.heads % tp == 0 and (g % tp == 0 or tp % g == 0)


def model_state_bytes(
    parameters: int,
    *,
    precision: str = "bf16",
    optimizer: str = "adamw",
    zero_stage: int = 0,
    dp: int = 1,
    tp: int = 1,
    pp: int = 1,
) -> tuple[int, int, int]:
    """(weights, gradients, optimizer states) bytes per GPU for full training, as in [ZeRO] Sec. 5.

    Psi = parameters / (tp*pp)  (approximation: embeddings split like everything else).
    Baseline (mixed precision):  2*Psi + 2*Psi + K*Psi.
    ZeRO-1 (P_os): K*Psi/dp;  ZeRO-2 (P_os+g): also 2*Psi/dp;  ZeRO-3 (P_os+g+p): also 2*Psi/dp.
    fp32 training: 4-byte weights and gradients, K = optimizer moments only.
    """
    _positive_int("parameters", parameters)
    for name, v in (("dp", dp), ("tp", tp), ("pp", pp)):
        _positive_int(name, v)
    if zero_stage not in (0, 1, 2, 3):
        raise SizingError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}.")
    k = optimizer_bytes_per_param(optimizer, precision)  # also validates both names
    p = PRECISION_BYTES[precision]
    psi = Fraction(parameters, tp * pp)
    w = _ceil(p * psi / (dp if zero_stage >= 3 else 1))
    g = _ceil(p * psi / (dp if zero_stage >= 2 else 1))
    o = _ceil(k * psi / (dp if zero_stage >= 1 else 1))
    return w, g, o


# ZeRO-3 re-gathers each layer's weights before use; with prefetch the current and the next
# layer are live (FSDP's default backward prefetch, DeepSpeed's prefetch bucket).  Assumption.
_ZERO3_LIVE_LAYERS = 2


def per_gpu_memory(setup: TrainingSetup) -> MemoryBreakdown:
    """Peak bytes on the most loaded GPU: model states + activations + runtime reserve.

    See docs/sizing.md for the derivation; every term's formula is repeated in ``notes``.
    """
    validate_setup(setup)
    notes: list[str] = []
    host = pcie = 0
    if setup.offload != "none":
        weights, gradients, optimizer_states, host, pcie = _offloaded(setup, notes)
    else:
        weights, gradients, optimizer_states = _model_states(setup, notes)
    paged = 0
    if setup.paged_optimizer and setup.lora_rank is None:
        # the paged moments are host-evictable: the resident total leaves them out, the host must hold them
        paged = paged_moments(optimizer_states, setup.optimizer, setup.precision, notes)
        optimizer_states -= paged
        host = paged
    if setup.precision == "fp8":
        weights += _fp8_weight_cache(setup, notes)
    activations = stage_activations(setup, notes)
    rest = weights + gradients + optimizer_states + activations
    if setup.reserve_bytes is not None:
        reserve = setup.reserve_bytes
        notes.append(f"reserve = {_gb(reserve)} (given)")
    else:
        # the optimizer states are allocated once and never freed: they leave no free slices to fragment
        # (docs/sizing.md section 5, "Fragmentation")
        fragmenting = weights + gradients + activations
        reserve = runtime_reserve(
            fragmenting, tp=setup.tp, pp=setup.pp, cp=setup.cp, ep=setup.ep, notes=notes
        )
    total = rest + reserve
    notes.append(f"total = {_gb(total)} per GPU ({total / GiB:.1f} GiB)")
    return MemoryBreakdown(
        weights=weights,
        gradients=gradients,
        optimizer_states=optimizer_states,
        activations=activations,
        reserve=reserve,
        total=total,
        notes=tuple(notes),
        host=host,
        pcie_bytes=pcie,
        paged=paged,
    )


def _offloaded(setup: TrainingSetup, notes: list[str]) -> tuple[int, int, int, int, int]:
    """Model states on the GPU, host bytes and PCIe bytes per step under CPU offload (dense full training only:
    :func:`generator.sizing.offload.check_offload`), sharded over dp x cp."""
    arch, t, p = setup.arch, setup.tp, setup.pp
    params = arch.parameters + kv_replication_parameters(arch, t)
    per_stage = stage_layers(arch.layers, p)
    psi = Fraction(params * per_stage, arch.layers * t) if arch.layers % p else Fraction(params, t * p)
    notes.append(
        f"Psi per GPU = {float(psi):,.0f} parameters (its tensor shard of its largest pipeline stage)"
    )
    largest = Fraction(
        largest_module_parameters(
            arch.layers, arch.hidden, arch.ffn_hidden, arch.vocab, arch.kv_heads * arch.d_head
        ),
        t,
    )
    return offload_states(
        resolve_framework(setup.framework, setup.zero_stage),
        setup.offload,
        psi=psi,
        pb=PRECISION_BYTES[setup.precision],
        k=optimizer_bytes_per_param(setup.optimizer, setup.precision),
        zero_stage=setup.zero_stage,
        dp=setup.dp * setup.cp,
        layer_params=Fraction(arch.layer_parameters, t),
        largest_module=largest,
        live_units=FSDP_LIVE_UNITS,
        notes=notes,
        root=fsdp_root_unit(arch.hidden, arch.vocab, arch.tied_embeddings, t, p),
        grad_units=FSDP_LIVE_GRAD_UNITS if p == 1 else 1,
    )


def _model_states(setup: TrainingSetup, notes: list[str]) -> tuple[int, int, int]:
    """Weights, gradients, optimizer states per GPU ([ZeRO] Sec. 3.1 and 5, a framework's own accounting, or
    LoRA/QLoRA as PEFT and the QLoRA reference code run them).

    A MoE model's routed experts are sharded over the expert-parallel group (ep) besides tp and pp, and ZeRO (or
    the distributed optimizer) shards their states over the expert data-parallel group of dp/ep ranks, the dense
    part over all dp (Megatron-Core MoE README, "expert data parallel"); the two parts are sized apart and added."""
    arch = setup.arch
    t, p, dp, ep = setup.tp, setup.pp, setup.dp, setup.ep
    if setup.cp > 1:
        # the cp ranks of a replica hold the same weights, so gradients are reduced, and ZeRO or the distributed
        # optimizer shards, over dp x cp ranks (Megatron-Core's data-parallel group "with context parallel")
        notes.append(
            f"context parallelism cp={setup.cp}: every cp rank holds the whole stage's weights; ZeRO shards "
            f"over dp x cp = {dp} x {setup.cp} = {dp * setup.cp} ranks (Megatron-Core)"
        )
        dp *= setup.cp
    per_stage = stage_layers(arch.layers, p)
    share = Fraction(per_stage, arch.layers) if arch.layers % p else Fraction(1, p)
    replicated = kv_replication_parameters(arch, t)
    if replicated:
        notes.append(
            f"tp={t} > {arch.kv_heads} KV head{'s' if arch.kv_heads > 1 else ''}: each tensor rank keeps a "
            f"copy of its KV head (Megatron-LM replicates them), {replicated:,} parameters more than an even "
            "split, counted in Psi"
        )
    params = arch.parameters + replicated
    experts = arch.expert_parameters
    psi = _dense_psi(arch, params - experts, t, p, bool(experts), notes)
    if not experts:
        return _states(setup, psi, dp, Fraction(arch.layer_parameters, t), notes)
    psi_e = Fraction(experts) * share / (t * ep)
    notes.append(
        f"routed experts per GPU = {experts:,} expert parameters x {share} of the layers / (tp={t} x ep={ep}) "
        f"= {float(psi_e):,.0f} (expert tensor parallelism = tp, Megatron-Core's default; "
        f"{arch.moe.experts // ep if arch.moe else 0} experts per rank)"
    )
    if setup.lora_rank is not None:  # a frozen base: weights only, so the two parts need no separate sharding
        return _states(setup, psi + psi_e, dp, Fraction(moe_layer_parameters(arch, ep), t), notes)
    d = _states(setup, psi, dp, Fraction(moe_layer_parameters(arch, ep), t), notes)
    notes.append(
        f"expert part: sharded over the expert data-parallel group of dp/ep = {dp}/{ep} = {dp // ep} ranks"
    )
    e = _states(setup, psi_e, dp // ep, Fraction(0), notes, largest=Fraction(0))
    total = tuple(a + b for a, b in zip(d, e, strict=True))
    notes.append(f"model states = non-expert + expert parts = {_gb(sum(d))} + {_gb(sum(e))}")
    return total[0], total[1], total[2]


def _dense_psi(arch: Architecture, dense: int, t: int, p: int, moe: bool, notes: list[str]) -> Fraction:
    """Psi, the ZeRO paper's parameter count, on one GPU: the non-expert ``dense`` parameters of its tensor shard
    of the largest pipeline stage."""
    per_stage = stage_layers(arch.layers, p)
    if arch.layers % p:
        # uneven pipeline: the largest stage holds ceil(L/pp) of the L layers (embeddings scaled alike)
        psi = Fraction(dense * per_stage, arch.layers * t)
        notes.append(
            f"Psi per GPU = parameters x ceil(L/pp)/L / tp = {dense:,} x {per_stage}/{arch.layers}"
            f" / {t} = {float(psi):,.0f} (pp={p} does not divide {arch.layers} layers: the largest stage "
            f"holds {per_stage}; embeddings assumed split like the other weights)"
            + (" [non-expert part]" if moe else "")
        )
    else:
        psi = Fraction(dense, t * p)
        notes.append(
            f"Psi per GPU = parameters/(tp*pp) = {dense:,}/({t}*{p}) = {float(psi):,.0f} "
            "(embeddings assumed split like the other weights)" + (" [non-expert part]" if moe else "")
        )
    return psi


def _fp8_weight_cache(setup: TrainingSetup, notes: list[str]) -> int:
    """The FP8 weight cache of this GPU's transformer blocks (:func:`generator.sizing.fp8.weight_cache`)."""
    arch = setup.arch
    local = Fraction(stage_layers(arch.layers, setup.pp) * moe_layer_parameters(arch, setup.ep), setup.tp)
    return fp8_weight_cache(local, setup.zero_stage, notes)


def kv_replication_parameters(arch: Architecture, tp: int) -> int:
    """Parameters the K and V projections add over an even tp split when tp exceeds the KV heads: Megatron-LM
    replicates each KV head on tp/g ranks (its GQA with --num-query-groups < --tensor-model-parallel-size), so each
    rank holds 2·h·d for one head instead of 2·h·g·d/tp; over the layers that is 2·h·d·(tp - g)·L in total."""
    if tp <= arch.kv_heads:
        return 0
    return 2 * arch.hidden * arch.d_head * (tp - arch.kv_heads) * arch.layers


def moe_layer_parameters(arch: Architecture, ep: int) -> int:
    """One block's parameters on a rank of the expert-parallel group: attention, norms, router and shared experts
    whole, the routed experts / ep (what a ZeRO-3 or FSDP unit gathers)."""
    moe = arch.moe
    if moe is None:
        return arch.layer_parameters
    routed = moe.experts * arch.mlp_matrices * arch.hidden * moe.expert_ffn_hidden
    return arch.layer_parameters - routed + routed // ep


def _states(
    setup: TrainingSetup,
    psi: Fraction,
    dp: int,
    layer_params: Fraction,
    notes: list[str],
    largest: Fraction | None = None,
) -> tuple[int, int, int]:
    """Model states of ``psi`` parameters per GPU, sharded by ZeRO over ``dp`` ranks, under the setup's framework
    (``layer_params``: one block's parameters per GPU, for ZeRO-3 gathers; ``largest``: the largest module's).

    Length: weights, gradients and optimizer states in turn, each with its ZeRO sharding and its note."""
    arch = setup.arch
    t, z = setup.tp, setup.zero_stage
    pb = PRECISION_BYTES[setup.precision]
    k = optimizer_bytes_per_param(setup.optimizer, setup.precision)
    per_stage = stage_layers(arch.layers, setup.pp)
    framework = resolve_framework(setup.framework, z)
    pure = setup.optimizer in PURE_16BIT_OPTIMIZERS
    if pure and setup.lora_rank is None:
        notes.append(
            f"optimizer {setup.optimizer}: pure bf16, no fp32 master copy or fp32 gradients: 2 + 2 + {k} "
            f"bytes/param under every framework, sharded by ZeRO as in the paper (Megatron-Core "
            "--use-precision-aware-optimizer with bf16 main params, gradients and moments)"
        )
    if setup.lora_rank is None and framework != "zero-paper" and not pure:
        if setup.framework == "auto":
            notes.append(
                f"framework auto -> {framework} (ZeRO stage {z}: megatron for 0 and 1, deepspeed for 2 and 3)"
            )
        # the dense part (largest not given) holds the embedding and output layer, FSDP's root unit
        root = (
            fsdp_root_unit(arch.hidden, arch.vocab, arch.tied_embeddings, t, setup.pp)
            if framework == "fsdp" and largest is None
            else (Fraction(0), Fraction(0))
        )
        if largest is None:
            largest = Fraction(
                largest_module_parameters(
                    arch.layers, arch.hidden, arch.ffn_hidden, arch.vocab, arch.kv_heads * arch.d_head
                ),
                t,
            )
        return full_model_states(
            framework,
            psi=psi,
            precision=setup.precision,
            k=k,
            zero_stage=z,
            dp=dp,
            layer_params=layer_params,
            largest_module=largest,
            notes=notes,
            root=root,
            pp=setup.pp,
        )
    if setup.lora_rank is None and not pure:
        notes.append(
            "framework zero-paper: model states as in the ZeRO paper (Rajbhandari et al. 2020, Sec. 5)"
        )
        notes.append(
            f"precision {setup.precision}: {pb}-byte weights/grads; optimizer K = {k} bytes/param "
            + (
                "(moments + fp32 master weights, mixed precision)"
                if setup.precision != "fp32"
                else "(moments only: fp32 weights need no master copy)"
            )
        )
    # ZeRO partitions over the data-parallel group: stage 1 optimizer states, stage 2 also
    # gradients, stage 3 also weights.
    w_div = dp if z >= 3 else 1
    g_div = dp if z >= 2 else 1
    o_div = dp if z >= 1 else 1
    sharded = f" (ZeRO-{z}: /dp={dp})"

    if setup.lora_rank is None:
        # ---- full training: 2*Psi + 2*Psi + K*Psi ----
        weights_full = pb * psi
        weights = _ceil(weights_full / w_div)
        notes.append(f"weights = {pb}*Psi{'/dp' + sharded if w_div > 1 else ''} = {_gb(weights)}")
        gradients = _ceil(pb * psi / g_div)
        notes.append(f"gradients = {pb}*Psi{'/dp' + sharded if g_div > 1 else ''} = {_gb(gradients)}")
        optimizer_states = _ceil(k * psi / o_div)
        notes.append(
            f"optimizer states = K*Psi{'/dp' if o_div > 1 else ''} = {k}*{float(psi):,.0f}"
            f"{f'/{dp}' if o_div > 1 else ''} = {_gb(optimizer_states)} ({setup.optimizer})"
        )
        live_layer_bytes = pb * layer_params
    else:
        weights, gradients, optimizer_states, weights_full, live_layer_bytes = _lora_states(
            setup, psi, Fraction(per_stage, arch.layers) / t, w_div, g_div, o_div, sharded, notes
        )

    if z >= 3 and dp > 1 and live_layer_bytes:
        # ZeRO-3 working set: the gathered (tp-sharded) weights of the live layers, capped at the
        # unsharded weights (a GPU never holds more than all of them).  Not in the ZeRO paper's
        # model-state formula; see _ZERO3_LIVE_LAYERS.
        gathered = _ZERO3_LIVE_LAYERS * live_layer_bytes
        new_weights = min(_ceil(weights_full), weights + _ceil(gathered))
        notes.append(
            f"ZeRO-3 gather working set = {_ZERO3_LIVE_LAYERS} layers x {float(layer_params * t):,.0f} "
            f"params/tp in {'NF4' if setup.qlora else setup.precision} = {_gb(gathered)} "
            f"(assumption: current + prefetched layer); weights -> {_gb(new_weights)}"
        )
        weights = new_weights
    return weights, gradients, optimizer_states
