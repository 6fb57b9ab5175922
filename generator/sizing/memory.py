"""Per-GPU memory of a training setup: ZeRO model states, Korthikanti activations, LoRA/QLoRA, the reserve.

:func:`per_gpu_memory` is the whole model: it validates a :class:`TrainingSetup` and returns a
:class:`MemoryBreakdown` whose notes spell out every formula with the numbers plugged in. docs/sizing.md has
the derivation and worked examples; [ZeRO], [SP], [LoRA] and [QLoRA] are listed in :mod:`generator.sizing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from generator.sizing.architecture import Architecture
from generator.sizing.common import GiB, SizingError, _ceil, _gb, _positive_int
from generator.sizing.precision import (
    PRECISION_BYTES,
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
    if setup.zero_stage not in (0, 1, 2, 3) or isinstance(setup.zero_stage, bool):
        raise SizingError(f"zero_stage must be 0, 1, 2 or 3, got {setup.zero_stage!r}.")
    if setup.recompute not in RECOMPUTE_MODES:
        raise SizingError(f"unknown recompute {setup.recompute!r}; allowed: {', '.join(RECOMPUTE_MODES)}.")
    if arch.heads % setup.tp:
        ok = [t for t in (1, 2, 4, 8, 16) if arch.heads % t == 0 and arch.kv_heads % t == 0]
        raise SizingError(f"tp={setup.tp} does not divide the {arch.heads} attention heads; "
                          f"use a tensor-parallel degree that divides them, e.g. one of {ok}.")
    if arch.kv_heads % setup.tp:
        ok = [t for t in (1, 2, 4, 8, 16) if arch.kv_heads % t == 0]
        raise SizingError(f"tp={setup.tp} does not divide the {arch.kv_heads} KV heads; use tp in {ok}. "
                          "(Megatron can replicate KV heads when tp > kv_heads, but this model requires "
                          "divisibility.)")
    if arch.layers % setup.pp:
        ok = [p for p in range(1, min(arch.layers, 64) + 1) if arch.layers % p == 0]
        raise SizingError(f"pp={setup.pp} does not divide the {arch.layers} layers; "
                          f"use a pipeline degree that divides them: {ok}.")
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
    h, f, kvd = arch.hidden, arch.ffn_hidden, arch.kv_heads * arch.head_dim
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


def _model_states(setup: TrainingSetup, notes: list[str]) -> tuple[int, int, int]:
    """Weights, gradients, optimizer states per GPU ([ZeRO] Sec. 3.1 and 5; LoRA/QLoRA variants)."""
    arch = setup.arch
    t, p, dp, z = setup.tp, setup.pp, setup.dp, setup.zero_stage
    pb = PRECISION_BYTES[setup.precision]
    k = optimizer_bytes_per_param(setup.optimizer, setup.precision)
    shard = t * p
    psi = Fraction(arch.parameters, shard)
    notes.append(f"Psi per GPU = parameters/(tp*pp) = {arch.parameters:,}/({t}*{p}) = {float(psi):,.0f} "
                 "(embeddings assumed split like the other weights)")
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
        live_layer_bytes = Fraction(pb * arch.layer_parameters, t)
    else:
        # ---- LoRA / QLoRA: frozen base (weights only), trainable adapters with full states ----
        r = setup.lora_rank
        if setup.qlora:
            # Block linear weights in NF4 + constants; embeddings, output head and norms stay
            # 16-bit (bitsandbytes/PEFT do not quantise them).
            quantised = arch.linear_parameters
            others = max(arch.parameters - quantised, 0)
            base_full = Fraction(quantised * _QLORA_BITS, 8 * shard) + Fraction(pb * others, shard)
            notes.append(f"frozen base (QLoRA) = ({float(_QLORA_BITS):.3f}/8 B x {quantised:,} block linear "
                         f"params + {pb} B x {others:,} others)/(tp*pp) = {_gb(base_full)}; no base "
                         "gradients or optimizer states")
            live_layer_bytes = Fraction(arch.layer_parameters * _QLORA_BITS, 8 * t)
        else:
            base_full = pb * psi
            notes.append(f"frozen base (LoRA) = {pb}*Psi = {_gb(base_full)}; no base gradients or "
                         "optimizer states")
            live_layer_bytes = Fraction(pb * arch.layer_parameters, t)
        trainable = lora_trainable_parameters(arch, r)
        tpsi = Fraction(trainable, shard)
        notes.append(f"LoRA r={r} on q,k,v,o and MLP projections: r*(d_in+d_out) summed = {trainable:,} "
                     f"trainable params ({trainable / arch.parameters:.3%} of the model), "
                     f"{float(tpsi):,.0f} per GPU")
        weights_full = base_full + pb * tpsi
        weights = _ceil(weights_full / w_div)
        notes.append(f"weights = base + {pb}*adapters{'/dp' + sharded if w_div > 1 else ''} = {_gb(weights)}")
        gradients = _ceil(pb * tpsi / g_div)
        notes.append(f"gradients = {pb}*adapters{'/dp' + sharded if g_div > 1 else ''} = {_gb(gradients)}")
        optimizer_states = _ceil(k * tpsi / o_div)
        notes.append(f"optimizer states = {k}*adapters{'/dp' + sharded if o_div > 1 else ''} = "
                     f"{_gb(optimizer_states)} ({setup.optimizer})")

    if z >= 3 and dp > 1:
        # ZeRO-3 working set: the gathered (tp-sharded) weights of the live layers, capped at the
        # unsharded weights (a GPU never holds more than all of them).  Not in the ZeRO paper's
        # model-state formula; see _ZERO3_LIVE_LAYERS.
        gathered = _ZERO3_LIVE_LAYERS * live_layer_bytes
        new_weights = min(_ceil(weights_full), weights + _ceil(gathered))
        notes.append(f"ZeRO-3 gather working set = {_ZERO3_LIVE_LAYERS} layers x {arch.layer_parameters:,} "
                     f"params/tp in {'NF4' if setup.qlora else setup.precision} = {_gb(gathered)} "
                     f"(assumption: current + prefetched layer); weights -> {_gb(new_weights)}")
        weights = new_weights
    return weights, gradients, optimizer_states


def _activations(setup: TrainingSetup, notes: list[str]) -> int:
    """Activation bytes on the worst pipeline stage ([SP] Sec. 4, Table 2 and Sec. 4.3)."""
    arch = setup.arch
    s, b, h, a, L, v = setup.seq_len, setup.micro_batch, arch.hidden, arch.heads, arch.layers, arch.vocab
    t, p, sp, mode = setup.tp, setup.pp, setup.sequence_parallel, setup.recompute
    # [SP] counts 16-bit activations (+1-byte dropout masks); fp32 training doubles everything
    # (over-counts the masks, < 3%).
    scale = Fraction(PRECISION_BYTES[setup.precision], 2)
    sbh = s * b * h
    coeff = _activation_coefficient(s, h, a, t, sp, mode)
    per_layer = sbh * coeff * scale
    notes.append(
        f"activations/layer/micro-batch ({'TP+SP' if sp and t > 1 else 'TP' if t > 1 else 'no parallelism'}, "
        f"recompute={mode}) = s*b*h*{_coeff_text(mode, sp, t)} = {s}*{b}*{h}*{float(coeff):.4g}"
        f"{' x2 (fp32)' if scale != 1 else ''} = {_gb(per_layer)}   [Korthikanti et al. 2022, Table 2]"
    )
    # Pipeline, 1F1B schedule: stage i holds (p - i) micro-batches in flight, so the first stage
    # stores L/p layers x p micro-batches = L layer-activations ([SP] Sec. 4.2.3).  Assumes at
    # least p micro-batches per step.  The last stage holds one micro-batch of its L/p layers.
    layers_per_stage = L // p
    stored_first = layers_per_stage * p * per_layer
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
    working = (sbh * (_activation_coefficient(s, h, a, t, sp, "none") - coeff) * scale
               if mode == "full" else Fraction(0))
    first = stored_first + embed_mask + working
    if p == 1:
        first += output
        activations, where = _ceil(first), "single stage"
    else:
        last = layers_per_stage * per_layer + output + working
        activations = _ceil(max(first, last))
        where = "first pipeline stage" if first >= last else "last pipeline stage"
    stored = (f"(L/pp)*pp = {layers_per_stage}*{p} layer-micro-batches (1F1B: first stage holds pp "
              f"micro-batches) x per-layer" if p > 1 else f"L = {L} layers x per-layer")
    notes.append(
        f"activations = {stored} = {_gb(stored_first)}"
        f" + embedding dropout mask s*b*h*p{'/t' if sp else ''} = {_gb(embed_mask)}"
        f" + output (4*s*b*h{'/t' if sp else ''} + fp32 logits 4*s*b*v/t){' [last stage]' if p > 1 else ''}"
        f" = {_gb(output)}"
        + (f" + recompute working set (one layer) = {_gb(working)}" if working else "")
        + f"; worst GPU: {where} = {_gb(activations)}"
    )
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
