"""Per-GPU memory of a training setup: model states, Korthikanti activations, LoRA/QLoRA, the reserve.

:func:`per_gpu_memory` is the whole model: it validates a :class:`TrainingSetup` and returns a
:class:`MemoryBreakdown` whose notes spell out every formula with the numbers plugged in. Full-training model
states follow the ZeRO paper here (``framework="zero-paper"``) or a framework's own accounting in
:mod:`generator.sizing.frameworks`. docs/sizing.md has the derivation and worked examples; [ZeRO], [SP], [LoRA]
and [QLoRA] are listed in :mod:`generator.sizing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from generator.sizing.architecture import Architecture
from generator.sizing.common import GiB, SizingError, _ceil, _gb, _positive_int
from generator.sizing.fp8 import activation_saving as fp8_activation_saving
from generator.sizing.fp8 import weight_cache as fp8_weight_cache
from generator.sizing.frameworks import (
    check_framework,
    full_model_states,
    largest_module_parameters,
    resolve_framework,
)
from generator.sizing.moe import routed_mlp_activation_delta
from generator.sizing.precision import (
    PRECISION_BYTES,
    PURE_16BIT_OPTIMIZERS,
    _check_optimizer,
    _check_precision,
    optimizer_bytes_per_param,
)

RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "full")


@dataclass(frozen=True, slots=True)
class TrainingSetup:
    arch: Architecture
    seq_len: int
    micro_batch: int
    precision: str = "bf16"
    optimizer: str = "adamw"
    zero_stage: int = 0
    tp: int = 1
    pp: int = 1
    dp: int = 1
    sequence_parallel: bool = False
    recompute: str = "none"  # none | selective | full
    lora_rank: int | None = None
    qlora: bool = False
    reserve_bytes: int | None = None  # None -> default runtime reserve
    # Whose accounting of the model states: "zero-paper" (the library default, [ZeRO] Sec. 5), "megatron",
    # "deepspeed", "fsdp", or "auto" (megatron for ZeRO 0/1, deepspeed for 2/3; the spec's and CLI's default).
    framework: str = "zero-paper"
    paged_optimizer: bool = False  # LoRA/QLoRA: optimizer states in paged (CPU-evictable) memory [QLoRA] Sec. 3
    ep: int = 1  # expert-parallel degree (MoE models): the routed experts are split over ep ranks of the dp group
    vpp: int = 1  # interleaved (virtual) pipeline stages per GPU (Megatron-LM --num-layers-per-virtual-pipeline-stage)


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

    @property
    def model_states(self) -> int:
        return self.weights + self.gradients + self.optimizer_states

    def to_dict(self) -> dict:
        return {"weights": self.weights, "gradients": self.gradients,
                "optimizer_states": self.optimizer_states, "activations": self.activations,
                "reserve": self.reserve, "total": self.total}


# Runtime reserve: CUDA context + cuBLAS/cuDNN workspaces (~0.5-1 GiB), NCCL communicator
# buffers (hundreds of MiB per communicator), and caching-allocator fragmentation (often
# 5-10% of the peak).  This is an engineering assumption, not a published figure.
DEFAULT_RESERVE_MIN_BYTES = 2 * GiB
DEFAULT_RESERVE_FRACTION = Fraction(5, 100)


def validate_setup(setup: TrainingSetup) -> None:
    """Raise SizingError (with what to change) if the setup cannot be sized."""
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
        raise SizingError(f"tp={setup.tp} does not split the {arch.heads} attention heads and {kv} (tp must divide "
                          f"the heads, and divide the KV heads or be a multiple of them: Megatron-LM replicates KV "
                          f"heads when tp exceeds them); use a tensor-parallel degree from {ok}.")
    _positive_int("ep", setup.ep)
    _positive_int("vpp", setup.vpp)
    if setup.vpp > 1 and (setup.pp == 1 or arch.layers % (setup.pp * setup.vpp)):
        raise SizingError(f"vpp={setup.vpp} interleaves {setup.vpp} chunks per pipeline stage: it needs pp > 1 and "
                          f"pp x vpp dividing the {arch.layers} layers (Megatron-LM's interleaved schedule); got "
                          f"pp={setup.pp}.")
    if setup.ep > 1 and arch.moe is None:
        raise SizingError(f"ep={setup.ep}: expert parallelism needs a mixture-of-experts model (model.moe or a MoE "
                          "preset); use ep=1 for a dense model.")
    if arch.moe is not None and arch.moe.experts % setup.ep:
        raise SizingError(f"ep={setup.ep} does not divide the {arch.moe.experts} experts; use an expert-parallel "
                          f"degree that divides them.")
    if setup.dp % setup.ep:
        raise SizingError(f"ep={setup.ep} does not divide the data-parallel degree {setup.dp}: the expert-parallel "
                          "group is carved from the data-parallel ranks (Megatron-Core); use an ep that divides dp.")
    if setup.pp > arch.layers:
        raise SizingError(f"pp={setup.pp} is more pipeline stages than the model's {arch.layers} layers; "
                          f"use pp <= {arch.layers}.")
    if not pipeline_splits(arch.layers, setup.pp):
        ok = [p for p in range(2, min(arch.layers, 64) + 1) if pipeline_splits(arch.layers, p)]
        raise SizingError(f"pp={setup.pp} cannot split the {arch.layers} layers into equal stages with shorter first "
                          f"and last ones ({setup.pp - 2} stages of {stage_layers(arch.layers, setup.pp)} leave "
                          f"{arch.layers - (setup.pp - 2) * stage_layers(arch.layers, setup.pp)} for the first and "
                          f"last); use a pipeline degree from {_ranges(ok)}.")
    check_framework(setup.framework, setup.zero_stage)
    if setup.paged_optimizer and setup.lora_rank is None:
        raise SizingError("paged_optimizer applies to LoRA/QLoRA fine-tuning (bitsandbytes paged optimizers); "
                          "set lora_rank or turn paged_optimizer off.")
    if setup.lora_rank is not None:
        _positive_int("lora_rank", setup.lora_rank)
    if setup.qlora and setup.lora_rank is None:
        raise SizingError("qlora=True needs lora_rank; set lora_rank (e.g. 16) or turn qlora off.")
    if setup.reserve_bytes is not None and (
        isinstance(setup.reserve_bytes, bool) or not isinstance(setup.reserve_bytes, int)
        or setup.reserve_bytes < 0
    ):
        raise SizingError("reserve_bytes must be a non-negative integer or None, "
                          f"got {setup.reserve_bytes!r}.")


def tp_splits_heads(arch: Architecture, tp: int) -> bool:
    """Whether tensor parallelism ``tp`` can split the attention: it divides the query heads, and divides the KV
    heads or is a multiple of them (each KV head then replicated on tp/g ranks, as Megatron-LM does)."""
    g = arch.kv_heads
    return tp >= 1 and arch.heads % tp == 0 and (g % tp == 0 or tp % g == 0)


def model_state_bytes(parameters: int, *, precision: str = "bf16", optimizer: str = "adamw",
                      zero_stage: int = 0, dp: int = 1, tp: int = 1, pp: int = 1) -> tuple[int, int, int]:
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


def _activation_coefficient(s: int, h: int, a: int, t: int, sp: bool, recompute: str) -> Fraction:
    """Bytes per (s*b*h) for one layer, [SP] Table 2 (16-bit activations, 1-byte dropout masks).

    The 34 = 11 (attention: QKV input 2, Q and K 4, V 2, projection input 2, dropout mask 1)
           + 19 (MLP: input 2, GeLU input 8, second linear input 8, dropout mask 1)
           + 4  (two LayerNorm inputs), and 5as/h = softmax output 2 + dropout mask 1 +
    dropout output 2 per attention score (a*s*s*b entries).
    """
    attn_scores = Fraction(5 * a * s, h * t)  # 5as/(ht)
    if recompute == "none":
        # TP only: LayerNorm/dropout regions (10 sbh) stay replicated; SP splits them too.
        return (Fraction(34, t) if sp else 10 + Fraction(24, t)) + attn_scores
    if recompute == "selective":
        # The a*s*s attention-core activations are recomputed, everything else kept.
        return Fraction(34, t) if sp else 10 + Fraction(24, t)
    # full: only each layer's input (2 bytes per element) is kept; SP keeps it split over t.
    return Fraction(2, t) if sp else Fraction(2)


def activation_bytes_per_layer(seq_len: int, micro_batch: int, hidden: int, heads: int, *, tp: int = 1,
                               sequence_parallel: bool = False, recompute: str = "none") -> int:
    """Activation bytes of one transformer layer for one micro-batch on one GPU, [SP] Table 2.

    ==========================  ===========================================
    no parallelism              s*b*h*(34 + 5*a*s/h)
    tensor parallel             s*b*h*(10 + 24/t + 5*a*s/(h*t))
    tensor + sequence parallel  s*b*h*(34/t + 5*a*s/(h*t))
    TP + selective recompute    s*b*h*(10 + 24/t)
    TP + SP + selective         s*b*h*34/t
    full recompute              2*s*b*h  (2*s*b*h/t with SP)
    ==========================  ===========================================
    """
    for name, v in (("seq_len", seq_len), ("micro_batch", micro_batch), ("hidden", hidden),
                    ("heads", heads), ("tp", tp)):
        _positive_int(name, v)
    if recompute not in RECOMPUTE_MODES:
        raise SizingError(f"unknown recompute {recompute!r}; allowed: {', '.join(RECOMPUTE_MODES)}.")
    coeff = _activation_coefficient(seq_len, hidden, heads, tp, sequence_parallel, recompute)
    return _ceil(seq_len * micro_batch * hidden * coeff)


def lora_trainable_parameters(arch: Architecture, rank: int) -> int:
    """LoRA adapter parameters with rank r on q, k, v, o and every MLP projection [LoRA].

    A d_in x d_out matrix gets A (d_in x r) and B (r x d_out): r*(d_in + d_out) parameters.
    Per layer: q r(h+h), k and v r(h+g*d) each, o r(h+h), and for SwiGLU gate/up r(h+f) each,
    down r(f+h) (GELU MLP: up and down only).  Total = layers * that.
    """
    _positive_int("rank", rank)
    h, f, kvd = arch.hidden, arch.ffn_hidden, arch.kv_heads * arch.d_head
    attention = rank * ((h + h) + 2 * (h + kvd) + (h + h))
    mlp = arch.mlp_matrices * rank * (h + f)
    return arch.layers * (attention + mlp)


# QLoRA NF4 with double quantisation ([QLoRA] Sec. 3): 4 bits per weight + 8-bit absmax per
# 64-weight block (8/64 bit) + fp32 second-level constant per 256 blocks (32/(64*256) bit)
# = 4.127 bits per quantised weight.
_QLORA_BITS = Fraction(4) + Fraction(8, 64) + Fraction(32, 64 * 256)

# ZeRO-3 re-gathers each layer's weights before use; with prefetch the current and the next
# layer are live (FSDP's default backward prefetch, DeepSpeed's prefetch bucket).  Assumption.
_ZERO3_LIVE_LAYERS = 2


def per_gpu_memory(setup: TrainingSetup) -> MemoryBreakdown:
    """Peak bytes on the most loaded GPU: model states + activations + runtime reserve.

    See docs/sizing.md for the derivation; every term's formula is repeated in ``notes``.
    """
    validate_setup(setup)
    notes: list[str] = []
    weights, gradients, optimizer_states = _model_states(setup, notes)
    if setup.precision == "fp8":
        weights += _fp8_weight_cache(setup, notes)
    activations = _activations(setup, notes)
    rest = weights + gradients + optimizer_states + activations
    if setup.reserve_bytes is not None:
        reserve = setup.reserve_bytes
        notes.append(f"reserve = {_gb(reserve)} (given)")
    else:
        reserve = max(DEFAULT_RESERVE_MIN_BYTES, _ceil(DEFAULT_RESERVE_FRACTION * rest))
        notes.append(f"reserve = max(2 GiB, 5% of {_gb(rest)}) = {_gb(reserve)} (CUDA context, NCCL buffers, "
                     "allocator fragmentation; engineering assumption)")
    total = rest + reserve
    notes.append(f"total = {_gb(total)} per GPU ({total / GiB:.1f} GiB)")
    return MemoryBreakdown(weights=weights, gradients=gradients, optimizer_states=optimizer_states,
                           activations=activations, reserve=reserve, total=total, notes=tuple(notes))


def stage_layers(layers: int, pp: int) -> int:
    """Layers on the largest pipeline stage: ceil(L/pp).  When pp does not divide L, Megatron-LM places the
    remainder with ``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers`` and
    DeepSpeed's ``PipelineModule`` partitions by layer count; either way no stage holds more than ceil(L/pp)
    (Llama 3 405B: 126 layers on 16 stages, one layer fewer on the first and last, [Llama3] Sec. 3.3.2)."""
    return -(-layers // pp)


def pipeline_splits(layers: int, pp: int) -> bool:
    """Whether ``pp`` stages can hold ``layers`` as practitioners split them: every middle stage ceil(L/pp) layers,
    the first and last at least one and at most that many (Megatron-LM's --decoder-first-pipeline-num-layers and
    --decoder-last-pipeline-num-layers; Llama 3 405B 7 + 14x8 + 7 = 126; BLOOM 5 + 10x6 + 5 = 70)."""
    if pp < 1 or pp > layers:
        return False
    if layers % pp == 0 or pp <= 2:
        return True
    m = stage_layers(layers, pp)
    return 2 <= layers - (pp - 2) * m <= 2 * m


def _ranges(values: list[int]) -> str:
    """[2, 3, 4, 7, 8] -> '2-4, 7, 8': a long list of degrees, short (runs of three or more collapse)."""
    runs: list[list[int]] = []
    for v in values:
        if runs and runs[-1][-1] == v - 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) >= 3 else ", ".join(map(str, r)) for r in runs)


def _model_states(setup: TrainingSetup, notes: list[str]) -> tuple[int, int, int]:
    """Weights, gradients, optimizer states per GPU ([ZeRO] Sec. 3.1 and 5, a framework's own accounting, or
    LoRA/QLoRA as PEFT and the QLoRA reference code run them).

    A MoE model's routed experts are sharded over the expert-parallel group (ep) besides tp and pp, and ZeRO (or
    the distributed optimizer) shards their states over the expert data-parallel group of dp/ep ranks, the dense
    part over all dp (Megatron-Core MoE README, "expert data parallel"); the two parts are sized apart and added."""
    arch = setup.arch
    t, p, dp, ep = setup.tp, setup.pp, setup.dp, setup.ep
    per_stage = stage_layers(arch.layers, p)
    share = Fraction(per_stage, arch.layers) if arch.layers % p else Fraction(1, p)
    replicated = kv_replication_parameters(arch, t)
    if replicated:
        notes.append(f"tp={t} > {arch.kv_heads} KV head{'s' if arch.kv_heads > 1 else ''}: each tensor rank keeps a "
                     f"copy of its KV head (Megatron-LM replicates them), {replicated:,} parameters more than an even "
                     "split, counted in Psi")
    params = arch.parameters + replicated
    experts = arch.expert_parameters
    dense = params - experts
    if arch.layers % p:
        # uneven pipeline: the largest stage holds ceil(L/pp) of the L layers (embeddings scaled alike)
        psi = Fraction(dense * per_stage, arch.layers * t)
        notes.append(f"Psi per GPU = parameters x ceil(L/pp)/L / tp = {dense:,} x {per_stage}/{arch.layers}"
                     f" / {t} = {float(psi):,.0f} (pp={p} does not divide {arch.layers} layers: the largest stage "
                     f"holds {per_stage}; embeddings assumed split like the other weights)"
                     + (" [non-expert part]" if experts else ""))
    else:
        psi = Fraction(dense, t * p)
        notes.append(f"Psi per GPU = parameters/(tp*pp) = {dense:,}/({t}*{p}) = {float(psi):,.0f} "
                     "(embeddings assumed split like the other weights)" + (" [non-expert part]" if experts else ""))
    if not experts:
        return _states(setup, psi, dp, Fraction(arch.layer_parameters, t), notes)
    psi_e = Fraction(experts) * share / (t * ep)
    notes.append(f"routed experts per GPU = {experts:,} expert parameters x {share} of the layers / (tp={t} x ep={ep}) "
                 f"= {float(psi_e):,.0f} (expert tensor parallelism = tp, Megatron-Core's default; "
                 f"{arch.moe.experts // ep if arch.moe else 0} experts per rank)")
    if setup.lora_rank is not None:  # a frozen base: weights only, so the two parts need no separate sharding
        return _states(setup, psi + psi_e, dp, Fraction(moe_layer_parameters(arch, ep), t), notes)
    d = _states(setup, psi, dp, Fraction(moe_layer_parameters(arch, ep), t), notes)
    notes.append(f"expert part: sharded over the expert data-parallel group of dp/ep = {dp}/{ep} = {dp // ep} ranks")
    e = _states(setup, psi_e, dp // ep, Fraction(0), notes, largest=Fraction(0))
    total = tuple(a + b for a, b in zip(d, e, strict=True))
    notes.append(f"model states = non-expert + expert parts = {_gb(sum(d))} + {_gb(sum(e))}")
    return total[0], total[1], total[2]


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


def _states(setup: TrainingSetup, psi: Fraction, dp: int, layer_params: Fraction, notes: list[str],
            largest: Fraction | None = None) -> tuple[int, int, int]:
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
        notes.append(f"optimizer {setup.optimizer}: pure bf16, no fp32 master copy or fp32 gradients: 2 + 2 + {k} "
                     f"bytes/param under every framework, sharded by ZeRO as in the paper (Megatron-Core "
                     "--use-precision-aware-optimizer with bf16 main params, gradients and moments)")
    if setup.lora_rank is None and framework != "zero-paper" and not pure:
        if setup.framework == "auto":
            notes.append(f"framework auto -> {framework} (ZeRO stage {z}: megatron for 0 and 1, deepspeed for 2 and 3)")
        if largest is None:
            largest = Fraction(largest_module_parameters(arch.layers, arch.hidden, arch.ffn_hidden, arch.vocab,
                                                         arch.kv_heads * arch.d_head), t)
        return full_model_states(framework, psi=psi, precision=setup.precision, k=k, zero_stage=z, dp=dp,
                                 layer_params=layer_params, largest_module=largest, notes=notes)
    if setup.lora_rank is None and not pure:
        notes.append("framework zero-paper: model states as in the ZeRO paper (Rajbhandari et al. 2020, Sec. 5)")
        notes.append(f"precision {setup.precision}: {pb}-byte weights/grads; optimizer K = {k} bytes/param "
                     + ("(moments + fp32 master weights, mixed precision)" if setup.precision != "fp32"
                        else "(moments only: fp32 weights need no master copy)"))
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
        notes.append(f"optimizer states = K*Psi{'/dp' if o_div > 1 else ''} = {k}*{float(psi):,.0f}"
                     f"{f'/{dp}' if o_div > 1 else ''} = {_gb(optimizer_states)} ({setup.optimizer})")
        live_layer_bytes = pb * layer_params
    else:
        weights, gradients, optimizer_states, weights_full, live_layer_bytes = _lora_states(
            setup, psi, Fraction(per_stage, arch.layers) / t, w_div, g_div, o_div, sharded, notes)

    if z >= 3 and dp > 1 and live_layer_bytes:
        # ZeRO-3 working set: the gathered (tp-sharded) weights of the live layers, capped at the
        # unsharded weights (a GPU never holds more than all of them).  Not in the ZeRO paper's
        # model-state formula; see _ZERO3_LIVE_LAYERS.
        gathered = _ZERO3_LIVE_LAYERS * live_layer_bytes
        new_weights = min(_ceil(weights_full), weights + _ceil(gathered))
        notes.append(f"ZeRO-3 gather working set = {_ZERO3_LIVE_LAYERS} layers x {float(layer_params * t):,.0f} "
                     f"params/tp in {'NF4' if setup.qlora else setup.precision} = {_gb(gathered)} "
                     f"(assumption: current + prefetched layer); weights -> {_gb(new_weights)}")
        weights = new_weights
    return weights, gradients, optimizer_states


# Adapter precision as the common trainers run LoRA: PEFT upcasts 16-bit adapter weights to fp32
# (get_peft_model(autocast_adapter_dtype=True), the default since PEFT 0.12; https://huggingface.co/docs/peft),
# and the QLoRA reference code casts them to bf16 (artidoro/qlora, qlora.py, get_accelerate_model: LoraLayer
# modules .to(torch.bfloat16) under --bf16).  Either way the optimizer steps the adapters themselves: no fp32
# master copy, so its state is the moments only (AdamW: 8 bytes, paged_adamw_32bit keeps them in fp32).
LORA_ADAPTER_BYTES = 4
QLORA_ADAPTER_BYTES = 2


def _lora_states(setup: TrainingSetup, psi: Fraction, share: Fraction, w_div: int, g_div: int, o_div: int,
                 sharded: str, notes: list[str]) -> tuple[int, int, int, Fraction, Fraction]:
    """LoRA/QLoRA: a frozen base (weights only) and trainable adapters with their gradients and optimizer
    moments in the adapters' own precision.  ``share`` is the fraction of the layers (and so of the adapters)
    on this GPU's stage, divided by tp."""
    arch = setup.arch
    t = setup.tp
    pb = PRECISION_BYTES[setup.precision]
    r = setup.lora_rank
    assert r is not None
    if setup.qlora:
        # Block linear weights in NF4 + constants; embeddings, output head and norms stay
        # 16-bit (bitsandbytes/PEFT do not quantise them).
        quantised = arch.linear_parameters
        others = max(arch.parameters - quantised, 0)
        base_full = (Fraction(quantised * _QLORA_BITS, 8) + pb * others) * psi / arch.parameters
        notes.append(f"frozen base (QLoRA) = ({float(_QLORA_BITS):.3f}/8 B x {quantised:,} block linear "
                     f"params + {pb} B x {others:,} others) on this GPU's share = {_gb(base_full)}; no base "
                     "gradients or optimizer states")
        live_layer_bytes = Fraction(arch.layer_parameters * _QLORA_BITS, 8 * t)
        ab = QLORA_ADAPTER_BYTES if setup.precision != "fp32" else 4
        who = "bf16 adapters as the QLoRA reference code casts them (artidoro/qlora qlora.py)"
    else:
        base_full = pb * psi
        notes.append(f"frozen base (LoRA) = {pb}*Psi = {_gb(base_full)}; no base gradients, optimizer states or "
                     "fp32 master copy")
        live_layer_bytes = Fraction(pb * arch.layer_parameters, t)
        ab = LORA_ADAPTER_BYTES
        who = "fp32 adapters as PEFT upcasts them (get_peft_model autocast_adapter_dtype=True)"
    trainable = lora_trainable_parameters(arch, r)
    tpsi = trainable * share
    notes.append("LoRA/QLoRA model states as PEFT-based trainers hold them, whatever the framework setting "
                 "(the framework accountings describe full training)")
    moments = (optimizer_bytes_per_param(setup.optimizer, "bf16") if setup.optimizer in PURE_16BIT_OPTIMIZERS
               else optimizer_bytes_per_param(setup.optimizer, "fp32"))
    notes.append(f"LoRA r={r} on q,k,v,o and MLP projections: r*(d_in+d_out) summed = {trainable:,} "
                 f"trainable params ({trainable / arch.parameters:.3%} of the model), "
                 f"{float(tpsi):,.0f} per GPU; {who}")
    weights_full = base_full + ab * tpsi
    weights = _ceil(weights_full / w_div)
    notes.append(f"weights = base + {ab}*adapters{'/dp' + sharded if w_div > 1 else ''} = {_gb(weights)}")
    gradients = _ceil(ab * tpsi / g_div)
    notes.append(f"gradients = {ab}*adapters{'/dp' + sharded if g_div > 1 else ''} = {_gb(gradients)}")
    if setup.paged_optimizer:
        optimizer_states = 0
        notes.append(f"optimizer states = 0 on the GPU: paged optimizer ({moments}*adapters = "
                     f"{_gb(moments * tpsi / o_div)} in CUDA unified memory, evicted to CPU RAM when the GPU runs "
                     "short; Dettmers et al. 2023, QLoRA, Sec. 3 'Paged Optimizers')")
    else:
        optimizer_states = _ceil(moments * tpsi / o_div)
        notes.append(f"optimizer states = {moments}*adapters{'/dp' + sharded if o_div > 1 else ''} = "
                     f"{_gb(optimizer_states)} ({setup.optimizer} moments only: the adapters are the optimizer's "
                     "parameters, no master copy)")
    return weights, gradients, optimizer_states, weights_full, live_layer_bytes


def _activations(setup: TrainingSetup, notes: list[str]) -> int:
    """Activation bytes on the worst pipeline stage ([SP] Sec. 4, Table 2 and Sec. 4.3).

    Length: one published formula, term by term, each beside the note it writes (split, it reads in pieces)."""
    arch = setup.arch
    s, b, h, a, L, v = setup.seq_len, setup.micro_batch, arch.hidden, arch.heads, arch.layers, arch.vocab
    t, p, sp, mode = setup.tp, setup.pp, setup.sequence_parallel, setup.recompute
    # [SP] counts 16-bit activations (+1-byte dropout masks); fp32 training doubles everything
    # (over-counts the masks, < 3%).
    scale = Fraction(PRECISION_BYTES[setup.precision], 2)
    sbh = s * b * h
    coeff = _activation_coefficient(s, h, a, t, sp, mode)
    moe_delta = (routed_mlp_activation_delta(h, t, sp and t > 1, arch.mlp_matrices, arch.moe)
                 if arch.moe is not None else Fraction(0))
    if mode != "full":
        coeff += moe_delta
    if setup.precision == "fp8":
        saving = fp8_activation_saving(t, sp and t > 1, mode)
        coeff -= saving
        if saving:
            notes.append(f"fp8: the four GEMM inputs of a block are stored in FP8 (Transformer Engine), half their "
                         f"bytes: {float(saving):.4g} x s*b*h less per layer than bf16")
    per_layer = sbh * coeff * scale
    notes.append(
        f"activations/layer/micro-batch ({'TP+SP' if sp and t > 1 else 'TP' if t > 1 else 'no parallelism'}, "
        f"recompute={mode}) = s*b*h*{_coeff_text(mode, sp, t)} = {s}*{b}*{h}*{float(coeff):.4g}"
        f"{' x2 (fp32)' if scale != 1 else ''} = {_gb(per_layer)}   [Korthikanti et al. 2022, Table 2]"
    )
    # Pipeline, 1F1B schedule: stage i holds (p - i) micro-batches in flight, so the first stage
    # stores L/p layers x p micro-batches = L layer-activations ([SP] Sec. 4.2.3).  Assumes at
    # least p micro-batches per step.  The last stage holds one micro-batch of its L/p layers.
    layers_per_stage = stage_layers(L, p)
    # interleaved schedule with v chunks per stage: the first stage holds L (1 + (p-1)/(p v)) layer-activations
    # ([SP] Sec. 4.2.3): the warm-up runs further ahead on the chunks
    interleave = 1 + Fraction(p - 1, p * setup.vpp) if setup.vpp > 1 else Fraction(1)
    stored_first = layers_per_stage * p * per_layer * interleave
    # Extra terms ([SP] Sec. 4.3): embedding dropout mask s*b*h*p/t on the first stage; on the
    # last stage the final norm and output projection inputs 4*s*b*h/t and the fp32 logits for
    # the cross-entropy 4*s*b*v/t (vocab-parallel, so /t even without SP).
    split = t if sp else 1
    embed_mask = Fraction(sbh * p, split)
    output = Fraction(4 * sbh, split) * scale + Fraction(4 * s * b * v, t)
    # Full recompute: during a layer's backward pass its recomputed activations are live, so
    # add one layer's non-recomputed activations (minus the input already counted).  Selective
    # recompute only re-materialises one layer's attention scores (5as^2b/t, transient, and
    # never materialised by FlashAttention); [SP] Table 2 does not count it and neither do we.
    # FlashAttention (what recompute=full runs with in Megatron-LM, DeepSpeed and FSDP trainers) never stores the
    # a*s*s scores, so the working set is the selective-recompute layer (Dao et al. 2022, FlashAttention,
    # arXiv:2205.14135, Sec. 3.1: O(N) extra memory), with a MoE layer's routed activations.
    working = (sbh * (_activation_coefficient(s, h, a, t, sp, "selective") + moe_delta - coeff) * scale
               if mode == "full" else Fraction(0))
    first = stored_first + embed_mask + working
    if p == 1:
        first += output
        activations, where = _ceil(first), "single stage"
    else:
        last = layers_per_stage * per_layer + output + working
        activations = _ceil(max(first, last))
        where = "first pipeline stage" if first >= last else "last pipeline stage"
    stored = (f"ceil(L/pp)*pp = {layers_per_stage}*{p} layer-micro-batches (1F1B: first stage holds pp "
              f"micro-batches)" + (f" x (1 + (pp-1)/(pp*v)) = x{float(interleave):.3f} (interleaved, v={setup.vpp})"
                                   if setup.vpp > 1 else "") + " x per-layer"
              if p > 1 else f"L = {L} layers x per-layer")
    notes.append(
        f"activations = {stored} = {_gb(stored_first)}"
        f" + embedding dropout mask s*b*h*p{'/t' if sp else ''} = {_gb(embed_mask)}"
        f" + output (4*s*b*h{'/t' if sp else ''} + fp32 logits 4*s*b*v/t){' [last stage]' if p > 1 else ''}"
        f" = {_gb(output)}"
        + (f" + recompute working set (one layer) = {_gb(working)}" if working else "")
        + f"; worst GPU: {where} = {_gb(activations)}"
    )
    if arch.moe is not None and mode != "full":
        m = arch.moe
        notes.append(f"MoE layers: the MLP term becomes the router input and logits plus (top_k {m.top_k} x "
                     f"imbalance {float(m.imbalance):g} + {m.shared_experts} shared) token copies x (2 + 2 x "
                     f"{arch.mlp_matrices} x {m.expert_ffn_hidden}/h) per expert, /tp: {float(moe_delta):+.4g} x s*b*h "
                     "per layer (imbalance: " + ("the capacity factor" if m.capacity_factor else
                                                  "a dropless router's reserve, Switch Transformer's 1.25") + ")")
    if mode == "none":
        notes.append("recompute=none assumes attention scores are materialised (5as/h term); with "
                     "FlashAttention/fused attention use recompute='selective', which drops that term")
    if setup.lora_rank is not None:
        notes.append("activations for LoRA/QLoRA are taken as for full fine-tuning (adapters add "
                     "r-wide tensors; frozen layers still need their inputs for the adapters)")
    return activations


def _coeff_text(mode: str, sp: bool, t: int) -> str:
    """The [SP] Table 2 coefficient of s*b*h, as text."""
    if mode == "none":
        if t == 1:
            return "(34 + 5as/h)"
        return "(34/t + 5as/(ht))" if sp else "(10 + 24/t + 5as/(ht))"
    if mode == "selective":
        return "34" if t == 1 else "34/t" if sp else "(10 + 24/t)"
    return "2/t" if sp and t > 1 else "2"
