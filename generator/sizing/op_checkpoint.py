"""Op-level selective activation checkpointing (``recompute: selective-op``): torchtitan's policy, which checkpoints
every transformer block but saves the outputs of some ops and recomputes the rest in the backward pass.

The policy (torchtitan ``torchtitan/parallelisms/parallelize_llama.py`` at 157a12c, the commit of the LLaMa 13B / 70B
table in docs/performance.md, ``no_recompute_list`` / ``_custom_policy``; the same rule in
``torchtitan/distributed/activation_checkpoint.py`` ``SelectiveAC`` at c5d93d1) saves the output of every
``aten.mm`` except each second one of a block (the count restarts in every block), of the scaled-dot-product
flash / efficient attention, and of tensor parallelism's ``reduce_scatter``; everything else (norms, rotary
embedding, SiLU, the gating product, residual adds) is recomputed. A Llama block runs its matmuls in the order
W_q, W_k, W_v, W_o, then W_1, W_3, W_2 (SwiGLU; W_1, W_2 for a GELU MLP), so it saves the outputs of W_q, W_v, W_1
and W_2 and recomputes W_k, W_o and W_3. docs/sizing.md section 3 has the derivation.

Pure arithmetic like the rest of :mod:`generator.sizing`.
"""

from __future__ import annotations

from fractions import Fraction

from generator.sizing.architecture import Architecture

# [SP] Table 2's attention share of its 34 s*b*h (11, plus one LayerNorm input 2): 5 stay replicated over tp without
# sequence parallelism (the QKV input, its dropout mask, the norm input), 8 are split (Q, K, V, projection input)
SELECTIVE_ATTENTION_REPLICATED = 5
SELECTIVE_ATTENTION_SPLIT = 8


def _split(t: int, sp: bool) -> bool:
    return sp and t > 1


def selective_attention(t: int, sp: bool) -> Fraction:
    """The attention half of [SP]'s selective coefficient (s*b*h units per layer): what a MoE layer's attention
    stores under ``selective``, replaced by the op policy's saved tensors under ``selective-op``."""
    total = SELECTIVE_ATTENTION_REPLICATED + SELECTIVE_ATTENTION_SPLIT
    return (
        Fraction(total, t)
        if _split(t, sp)
        else SELECTIVE_ATTENTION_REPLICATED + Fraction(SELECTIVE_ATTENTION_SPLIT, t)
    )


def saved_attention(arch: Architecture, t: int, sp: bool) -> Fraction:
    """s*b*h units per layer the op policy keeps for the attention half of a block, 16-bit unless said:
    the block input 2 (checkpoint keeps its argument; split over tp with SP), W_q's output 2*a*d/(h t), W_v's
    2*g'*d/h (g' = the KV heads on this rank, at least one: replicated when tp > g), the attention output
    2*a*d/(h t) and its fp32 log-sum-exp 4*a/(h t), and with SP the reduce-scatter after W_o, 2/t."""
    h, a, d = arch.hidden, arch.heads, arch.d_head
    kv = Fraction(max(arch.kv_heads, t), t) * d
    split = _split(t, sp)
    block_input = Fraction(2, t) if split else Fraction(2)
    scatter = Fraction(2, t) if split else Fraction(0)
    return block_input + Fraction(2 * 2 * a * d, h * t) + 2 * kv / h + Fraction(4 * a, h * t) + scatter


def saved_mlp(arch: Architecture, t: int, sp: bool) -> Fraction:
    """s*b*h units per layer the op policy keeps for a dense MLP: W_1's output 2*f/(h t) and, for SwiGLU, W_2's
    output 2 (the row-parallel matmul's partial sum, full width and sequence before its reduction) with SP its
    reduce-scatter 2/t; a GELU MLP's second matmul (the 6th of the block) is recomputed."""
    first = Fraction(2 * arch.ffn_hidden, arch.hidden * t)
    if arch.mlp_matrices == 2:
        return first
    return first + 2 + (Fraction(2, t) if _split(t, sp) else Fraction(0))


def saved_coefficient(arch: Architecture, t: int, sp: bool, selective: Fraction) -> Fraction:
    """s*b*h units one layer keeps under ``selective-op``. A MoE model keeps its MLP half as under ``selective``
    (``selective`` is that coefficient; torchtitan's MoE policy, with grouped GEMMs and all-to-all outputs, is not
    modelled: an over-estimate of the routed layers)."""
    if arch.moe is not None:
        return selective - selective_attention(t, sp) + saved_attention(arch, t, sp)
    return saved_attention(arch, t, sp) + saved_mlp(arch, t, sp)


def recompute_flops_per_token(arch: Architecture) -> float:
    """Forward FLOPs the backward pass re-runs per trained token: the recomputed matmuls W_k (2*h*g*d) and W_o
    (2*a*d*h) of every layer and W_3 (SwiGLU; a GELU MLP's W_2) of a dense model's MLPs, 2*h*f (a MoE model's MLP
    half is kept, :func:`saved_coefficient`); the recomputed norms, rotary embedding and elementwise ops are
    memory-bound and left out."""
    h, d = arch.hidden, arch.d_head
    attention = 2.0 * h * arch.kv_heads * d + 2.0 * arch.heads * d * h
    mlp = 2.0 * h * arch.ffn_hidden if arch.moe is None else 0.0
    return arch.layers * (attention + mlp)
