"""Activation memory per GPU: the Korthikanti et al. per-layer coefficients, the layers and micro-batches each
pipeline stage holds (uneven first and last stages, the interleaved schedule), context parallelism's share of the
sequence, and the recompute working set.

:mod:`generator.sizing.memory` calls :func:`activations` for the worst GPU of a :class:`TrainingSetup`; the
formulas are in docs/sizing.md, section 3.
"""

from __future__ import annotations

from fractions import Fraction

from generator.sizing.common import SizingError, _ceil, _gb, _positive_int
from generator.sizing.fp8 import activation_saving as fp8_activation_saving
from generator.sizing.loss import loss_peak
from generator.sizing.moe import routed_mlp_activation_delta
from generator.sizing.op_checkpoint import saved_coefficient as op_saved_coefficient
from generator.sizing.precision import PRECISION_BYTES
from generator.sizing.setup import TrainingSetup

RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "selective-op", "full")


def _activation_coefficient(
    s: int, h: int, a: int, t: int, sp: bool, recompute: str, keys: int | None = None
) -> Fraction:
    """Bytes per (s*b*h) for one layer, [SP] Table 2 (16-bit activations, 1-byte dropout masks).

    The 34 = 11 (attention: QKV input 2, Q and K 4, V 2, projection input 2, dropout mask 1)
           + 19 (MLP: input 2, GeLU input 8, second linear input 8, dropout mask 1)
           + 4  (two LayerNorm inputs), and 5as/h = softmax output 2 + dropout mask 1 +
    dropout output 2 per attention score (a*s*s*b entries).
    """
    attn_scores = Fraction(
        5 * a * (keys or s), h * t
    )  # 5as/(ht); s keys per query (all s under context parallelism)
    if recompute == "none":
        # TP only: LayerNorm/dropout regions (10 sbh) stay replicated; SP splits them too.
        return (Fraction(34, t) if sp else 10 + Fraction(24, t)) + attn_scores
    if recompute == "selective":
        # The a*s*s attention-core activations are recomputed, everything else kept.
        return Fraction(34, t) if sp else 10 + Fraction(24, t)
    # full: only each layer's input (2 bytes per element) is kept; SP keeps it split over t.
    return Fraction(2, t) if sp else Fraction(2)


def activation_bytes_per_layer(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    *,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
) -> int:
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
    for name, v in (
        ("seq_len", seq_len),
        ("micro_batch", micro_batch),
        ("hidden", hidden),
        ("heads", heads),
        ("tp", tp),
    ):
        _positive_int(name, v)
    if recompute not in RECOMPUTE_MODES:
        raise SizingError(f"unknown recompute {recompute!r}; allowed: {', '.join(RECOMPUTE_MODES)}.")
    if recompute == "selective-op":
        # what the op policy saves depends on the KV heads and the MLP's width, which this signature lacks
        raise SizingError("recompute='selective-op' needs the layer's shape: size it with per_gpu_memory.")
    coeff = _activation_coefficient(seq_len, hidden, heads, tp, sequence_parallel, recompute)
    return _ceil(seq_len * micro_batch * hidden * coeff)


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


def stage_sizes(layers: int, pp: int) -> tuple[int, ...]:
    """The layers of each pipeline stage as practitioners split them (:func:`pipeline_splits`): ``L/pp`` each when
    ``pp`` divides ``L``; else ceil(L/pp) on every middle stage and the rest shared by the first and last stages, the
    first taking the smaller half (Llama 3 405B: 7 + 14 x 8 + 7; BLOOM 5 + 10 x 6 + 5)."""
    if layers % pp == 0:
        return (layers // pp,) * pp
    if pp == 2:
        return (layers // 2, layers - layers // 2)
    m = stage_layers(layers, pp)
    rest = layers - (pp - 2) * m
    return (rest // 2, *(m,) * (pp - 2), rest - rest // 2)


def activations(setup: TrainingSetup, notes: list[str]) -> int:
    """Activation bytes on the worst pipeline stage ([SP] Sec. 4, Table 2 and Sec. 4.3).

    Context parallelism (``setup.cp``) splits the sequence over cp ranks: each holds s/cp tokens of every activation
    (Megatron-Core context parallelism; the attention scores of recompute=none are s/cp queries against all s keys),
    and one layer's K and V chunks from the ring peers are in flight (double-buffered).

    Length: one published formula, term by term, each beside the note it writes (split, it reads in pieces)."""
    arch = setup.arch
    c = setup.cp
    s, b, h, a, L, v = setup.seq_len // c, setup.micro_batch, arch.hidden, arch.heads, arch.layers, arch.vocab
    t, p, sp, mode = setup.tp, setup.pp, setup.sequence_parallel, setup.recompute
    # [SP] counts 16-bit activations (+1-byte dropout masks); fp32 training doubles everything
    # (over-counts the masks, < 3%).
    scale = Fraction(PRECISION_BYTES[setup.precision], 2)
    sbh = s * b * h
    selective = _activation_coefficient(s, h, a, t, sp, "selective")
    coeff = (
        op_saved_coefficient(arch, t, sp, selective)
        if mode == "selective-op"
        else _activation_coefficient(s, h, a, t, sp, mode, keys=setup.seq_len)
    )
    moe_delta = (
        routed_mlp_activation_delta(h, t, sp and t > 1, arch.mlp_matrices, arch.moe)
        if arch.moe is not None
        else Fraction(0)
    )
    if mode != "full":
        coeff += moe_delta
    if setup.precision == "fp8":
        saving = fp8_activation_saving(t, sp and t > 1, mode)
        coeff -= saving
        if saving:
            notes.append(
                f"fp8: the four GEMM inputs of a block are stored in FP8 (Transformer Engine), half their "
                f"bytes: {float(saving):.4g} x s*b*h less per layer than bf16"
            )
    per_layer = sbh * coeff * scale
    notes.append(
        f"activations/layer/micro-batch ({'TP+SP' if sp and t > 1 else 'TP' if t > 1 else 'no parallelism'}, "
        f"recompute={mode}) = s*b*h*{_coeff_text(mode, sp, t)} = {s}*{b}*{h}*{float(coeff):.4g}"
        f"{' x2 (fp32)' if scale != 1 else ''} = {_gb(per_layer)}   "
        + (
            "[torchtitan's op-level policy]"
            if mode == "selective-op"
            else "[Korthikanti et al. 2022, Table 2]"
        )
        + (f"; s = {setup.seq_len}/cp={c} tokens per context-parallel rank" if c > 1 else "")
    )
    # Pipeline, 1F1B schedule: stage i holds (p - i) micro-batches in flight ([SP] Sec. 4.2.3; assumes at least p
    # micro-batches per step), so with even stages the first stores L/p layers x p micro-batches = L
    # layer-activations. With uneven stages (the first and last lighter) the worst is the stage i that maximises
    # layers_i x (p - i): Llama 3 405B's 7 + 14 x 8 + 7 peaks on the second stage, 8 x 15 = 120 < 8 x 16.
    sizes = stage_sizes(L, p)
    # interleaved schedule with v chunks per stage (even stages only): the first stage holds L (1 + (p-1)/(p v))
    # layer-activations ([SP] Sec. 4.2.3): the warm-up runs further ahead on the chunks
    interleave = 1 + Fraction(p - 1, p * setup.vpp) if setup.vpp > 1 else Fraction(1)
    held = [n * (p - i) for i, n in enumerate(sizes)]
    worst_mid = max(range(1, p - 1), key=lambda i: held[i]) if p > 2 else 0  # 0: no middle stage
    stored_first = held[0] * per_layer * interleave
    # Extra terms ([SP] Sec. 4.3): embedding dropout mask s*b*h*p/t on the first stage; on the
    # last stage the final norm and output projection inputs 4*s*b*h/t and the loss over the logits,
    # vocab-parallel (/t even without SP), as many bytes per logit as the framework's cross-entropy holds at its
    # peak (generator.sizing.loss)
    split = t if sp else 1
    embed_mask = Fraction(sbh * p, split)
    per_logit, loss_who = loss_peak(setup.framework, setup.zero_stage, t, p, setup.lora_rank is not None)
    output = Fraction(4 * sbh, split) * scale + Fraction(per_logit * s * b * v, t)
    # Full recompute: during a layer's backward pass its recomputed activations are live, so
    # add one layer's non-recomputed activations (minus the input already counted).  Selective
    # recompute only re-materialises one layer's attention scores (5as^2b/t, transient, and
    # never materialised by FlashAttention); [SP] Table 2 does not count it and neither do we.
    # FlashAttention (what recompute=full runs with in Megatron-LM, DeepSpeed and FSDP trainers) never stores the
    # a*s*s scores, so the working set is the selective-recompute layer (Dao et al. 2022, FlashAttention,
    # arXiv:2205.14135, Sec. 3.1: O(N) extra memory), with a MoE layer's routed activations. Op-level selective
    # re-runs the ops it did not save in the same layer's backward: the same layer, less what it kept.
    working = (
        sbh * max(Fraction(0), selective + moe_delta - coeff) * scale
        if mode in ("full", "selective-op")
        else Fraction(0)
    )
    if c > 1:
        # ring attention: the K and V chunks of one peer being computed on and the next one arriving, per layer in
        # flight (Megatron-Core context parallelism overlaps the exchange with attention): 2 x 2 x s/cp x b x g*d/t
        working += Fraction(2 * 2 * 2 * s * b * arch.kv_heads * arch.d_head, max(1, t)) * scale
    # the loss's tensors and the output layer's inputs are freed before the first layer's backward, where the
    # working set appears: the stage with the output layer peaks at the larger of the two
    tail = max(output, working)
    first = stored_first + embed_mask + (tail if p == 1 else working)
    mid = held[worst_mid] * per_layer + working if worst_mid else Fraction(0)
    if p == 1:
        activations, where = _ceil(first), "single stage"
    else:
        last = held[-1] * per_layer + tail
        activations = _ceil(max(first, last, mid))
        where = (
            "first pipeline stage"
            if first >= max(last, mid)
            else "last pipeline stage"
            if last >= mid
            else f"pipeline stage {worst_mid} ({sizes[worst_mid]} layers x {p - worst_mid} micro-batches)"
        )
    stored = (
        f"layers x micro-batches in flight on the first stage = {sizes[0]}*{p} (1F1B: stage i holds pp - i)"
        + (
            f" x (1 + (pp-1)/(pp*v)) = x{float(interleave):.3f} (interleaved, v={setup.vpp})"
            if setup.vpp > 1
            else ""
        )
        + " x per-layer"
        if p > 1
        else f"L = {L} layers x per-layer"
    )
    notes.append(
        f"activations = {stored} = {_gb(stored_first)}"
        f" + embedding dropout mask s*b*h*p{'/t' if sp else ''} = {_gb(embed_mask)}"
        + _tail_text(sp, p, (per_logit, loss_who, output), working)
        + (f"; stages of {'+'.join(map(str, sizes))} layers" if L % p else "")
        + f"; worst GPU: {where} = {_gb(activations)}"
    )
    if arch.moe is not None and mode != "full":
        m = arch.moe
        notes.append(
            f"MoE layers: the MLP term becomes the router input and logits plus (top_k {m.top_k} x "
            f"imbalance {float(m.imbalance):g} + {m.shared_experts} shared) token copies x (2 + 2 x "
            f"{arch.mlp_matrices} x {m.expert_ffn_hidden}/h) per expert, /tp: {float(moe_delta):+.4g} x s*b*h "
            "per layer (imbalance: "
            + (
                "the capacity factor"
                if m.capacity_factor
                else "a dropless router's reserve, Switch Transformer's 1.25"
            )
            + ")"
        )
    if mode == "none":
        notes.append(
            "recompute=none assumes attention scores are materialised (5as/h term); with "
            "FlashAttention/fused attention use recompute='selective', which drops that term"
        )
    if setup.lora_rank is not None:
        notes.append(
            "activations for LoRA/QLoRA are taken as for full fine-tuning (adapters add "
            "r-wide tensors; frozen layers still need their inputs for the adapters)"
        )
    return activations


def _tail_text(sp: bool, p: int, loss: tuple[int, str, Fraction], working: Fraction) -> str:
    """The output layer's term of the activations note: its inputs and the loss (bytes per logit, whose code, total),
    and the recompute working set it does not coexist with."""
    per_logit, who, output = loss
    out = f"output (4*s*b*h{'/t' if sp else ''} + loss {per_logit}*s*b*v/t, {who}) = {_gb(output)}"
    if not working:
        return f" + {out}{' [last stage]' if p > 1 else ''}"
    work = f"recompute working set (one layer) = {_gb(working)}"
    if p > 1:
        return f" + {work}; last stage: max({out}, {work})"
    return f" + max({out}, {work}) (not live together: the loss is freed before the layers' backward)"


def _coeff_text(mode: str, sp: bool, t: int) -> str:
    """The [SP] Table 2 coefficient of s*b*h, as text."""
    if mode == "none":
        if t == 1:
            return "(34 + 5as/h)"
        return "(34/t + 5as/(ht))" if sp else "(10 + 24/t + 5as/(ht))"
    if mode == "selective":
        return "34" if t == 1 else "34/t" if sp else "(10 + 24/t)"
    if mode == "selective-op":
        return "(the op policy's kept tensors, docs/sizing.md section 3b)"
    return "2/t" if sp and t > 1 else "2"
