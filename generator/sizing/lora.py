"""LoRA and QLoRA model states: a frozen base and trainable adapters, as PEFT-based trainers hold them.

Apart from :mod:`generator.sizing.memory` (which calls :func:`_lora_states` for a fine-tune) because adapters
follow their own rules, those of PEFT and the QLoRA reference code, not a framework's ZeRO accounting; [LoRA]
and [QLoRA] are listed in :mod:`generator.sizing`.
"""

from __future__ import annotations

from fractions import Fraction

from generator.sizing.architecture import Architecture
from generator.sizing.common import _ceil, _gb, _positive_int
from generator.sizing.precision import PRECISION_BYTES, PURE_16BIT_OPTIMIZERS, optimizer_bytes_per_param
from generator.sizing.setup import TrainingSetup


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

# Adapter precision as the common trainers run LoRA: PEFT upcasts 16-bit adapter weights to fp32
# (get_peft_model(autocast_adapter_dtype=True), the default since PEFT 0.12; https://huggingface.co/docs/peft),
# and the QLoRA reference code casts them to bf16 (artidoro/qlora, qlora.py, get_accelerate_model: LoraLayer
# modules .to(torch.bfloat16) under --bf16).  Either way the optimizer steps the adapters themselves: no fp32
# master copy, so its state is the moments only (AdamW: 8 bytes, paged_adamw_32bit keeps them in fp32).
LORA_ADAPTER_BYTES = 4
QLORA_ADAPTER_BYTES = 2


def _frozen_base(
    setup: TrainingSetup, psi: Fraction, notes: list[str]
) -> tuple[Fraction, Fraction, int, str]:
    """The frozen base on this GPU (QLoRA: block linear weights in NF4), one layer's live base bytes, and the
    adapters' bytes per parameter with who holds them so."""
    arch = setup.arch
    t = setup.tp
    pb = PRECISION_BYTES[setup.precision]
    if setup.qlora:
        # Block linear weights in NF4 + constants; embeddings, output head and norms stay
        # 16-bit (bitsandbytes/PEFT do not quantise them).
        quantised = arch.linear_parameters
        others = max(arch.parameters - quantised, 0)
        base_full = (Fraction(quantised * _QLORA_BITS, 8) + pb * others) * psi / arch.parameters
        notes.append(
            f"frozen base (QLoRA) = ({float(_QLORA_BITS):.3f}/8 B x {quantised:,} block linear "
            f"params + {pb} B x {others:,} others) on this GPU's share = {_gb(base_full)}; no base "
            "gradients or optimizer states"
        )
        live_layer_bytes = Fraction(arch.layer_parameters * _QLORA_BITS, 8 * t)
        ab = QLORA_ADAPTER_BYTES if setup.precision != "fp32" else 4
        who = "bf16 adapters as the QLoRA reference code casts them (artidoro/qlora qlora.py)"
    else:
        base_full = pb * psi
        notes.append(
            f"frozen base (LoRA) = {pb}*Psi = {_gb(base_full)}; no base gradients, optimizer states or "
            "fp32 master copy"
        )
        live_layer_bytes = Fraction(pb * arch.layer_parameters, t)
        ab = LORA_ADAPTER_BYTES
        who = "fp32 adapters as PEFT upcasts them (get_peft_model autocast_adapter_dtype=True)"
    return base_full, live_layer_bytes, ab, who


def _lora_states(
    setup: TrainingSetup,
    psi: Fraction,
    share: Fraction,
    w_div: int,
    g_div: int,
    o_div: int,
    sharded: str,
    notes: list[str],
) -> tuple[int, int, int, Fraction, Fraction]:
    """LoRA/QLoRA: a frozen base (weights only) and trainable adapters with their gradients and optimizer
    moments in the adapters' own precision.  ``share`` is the fraction of the layers (and so of the adapters)
    on this GPU's stage, divided by tp."""
    arch = setup.arch
    r = setup.lora_rank
    assert r is not None
    base_full, live_layer_bytes, ab, who = _frozen_base(setup, psi, notes)
    trainable = lora_trainable_parameters(arch, r)
    tpsi = trainable * share
    notes.append(
        "LoRA/QLoRA model states as PEFT-based trainers hold them, whatever the framework setting "
        "(the framework accountings describe full training)"
    )
    moments = (
        optimizer_bytes_per_param(setup.optimizer, "bf16")
        if setup.optimizer in PURE_16BIT_OPTIMIZERS
        else optimizer_bytes_per_param(setup.optimizer, "fp32")
    )
    notes.append(
        f"LoRA r={r} on q,k,v,o and MLP projections: r*(d_in+d_out) summed = {trainable:,} "
        f"trainable params ({trainable / arch.parameters:.3%} of the model), "
        f"{float(tpsi):,.0f} per GPU; {who}"
    )
    weights_full = base_full + ab * tpsi
    weights = _ceil(weights_full / w_div)
    notes.append(f"weights = base + {ab}*adapters{'/dp' + sharded if w_div > 1 else ''} = {_gb(weights)}")
    gradients = _ceil(ab * tpsi / g_div)
    notes.append(f"gradients = {ab}*adapters{'/dp' + sharded if g_div > 1 else ''} = {_gb(gradients)}")
    if setup.paged_optimizer:
        optimizer_states = 0
        notes.append(
            f"optimizer states = 0 on the GPU: paged optimizer ({moments}*adapters = "
            f"{_gb(moments * tpsi / o_div)} in CUDA unified memory, evicted to CPU RAM when the GPU runs "
            "short; Dettmers et al. 2023, QLoRA, Sec. 3 'Paged Optimizers')"
        )
    else:
        optimizer_states = _ceil(moments * tpsi / o_div)
        notes.append(
            f"optimizer states = {moments}*adapters{'/dp' + sharded if o_div > 1 else ''} = "
            f"{_gb(optimizer_states)} ({setup.optimizer} moments only: the adapters are the optimizer's "
            "parameters, no master copy)"
        )
    return weights, gradients, optimizer_states, weights_full, live_layer_bytes
