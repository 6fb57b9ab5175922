"""Model states (weights, gradients, optimizer states) per GPU as the training frameworks allocate them.

The ZeRO paper's formula ([ZeRO] Sec. 5, ``zero-paper``) counts 16-bit weights and gradients and K bytes of
optimizer state. The frameworks people run keep more: Megatron-LM keeps fp32 main gradients for bf16 and its
distributed optimizer shards only the optimizer state ([MEGATRON-DO]); DeepSpeed's own estimators count an fp32
gradient partition and the largest layer gathered whole ([DS-EST]); PyTorch FSDP keeps fp32 sharded parameters
and gradients beside the 16-bit units it gathers ([FSDP]). This module owns those accountings and the rule that
picks one when the spec says ``auto``; :mod:`generator.sizing.memory` calls it for full training.

Sources (cited in docs/sizing.md, section 2, and in every note):

* [MEGATRON-DO] Megatron-LM, docs/source/api-guide/dist_optimizer.md, table of bytes per parameter
  (https://github.com/NVIDIA/Megatron-LM/blob/main/docs/source/api-guide/dist_optimizer.md), and
  megatron/training/arguments.py ("bfloat16 requires gradient accumulation and all-reduce to be done in fp32").
* [DS-EST] DeepSpeed, deepspeed/runtime/zero/stage_1_and_2.py ``estimate_zero2_model_states_mem_needs``
  (2*params + 18*params/gpus since PR #5099, June 2024) and stage3.py ``estimate_zero3_model_states_mem_needs``
  (4*largest_layer_params + 18*params/gpus); https://deepspeed.readthedocs.io/en/latest/memory.html.
* [FSDP] Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel", VLDB 2023
  (arXiv:2304.11277), Sec. 3-4, and https://pytorch.org/docs/stable/fsdp.html (ShardingStrategy, MixedPrecision);
  the working set at a block's backward from the code (docs/sizing.md section 2b, read 2026-12-03): FSDP1
  torch/distributed/fsdp/_runtime_utils.py (pytorch/pytorch at 3ade90a), FSDP2 torch/distributed/fsdp/_fully_shard/
  _fsdp_state.py and _fsdp_param_group.py (at 1fd469d and 62a45b6), Hugging Face Accelerate
  src/accelerate/utils/dataclasses.py (v0.23.0), torchtitan parallelize_llama.py (d4c86e3).
"""

from __future__ import annotations

from fractions import Fraction

from generator.sizing.common import SizingError, _ceil, _gb
from generator.sizing.precision import PRECISION_BYTES

FRAMEWORKS: tuple[str, ...] = ("megatron", "deepspeed", "fsdp", "zero-paper")
FRAMEWORK_CHOICES: tuple[str, ...] = ("auto", *FRAMEWORKS)

# fp32 gradient copy that the mixed-precision optimizers of Megatron (bf16 main grads), DeepSpeed and FSDP keep.
_FP32 = 4

# FSDP with one unit per transformer block (transformer_auto_wrap_policy): the unit being computed and the one
# prefetched (BackwardPrefetch.BACKWARD_PRE, the default) are gathered in 16 bit.  Assumption, from [FSDP]
# Sec. 3.3-3.4 (FSDP1 prefetches one handle, FSDP2's implicit backward prefetch one group).
FSDP_LIVE_UNITS = 2
# Unsharded gradients live at a block's backward: its own, being computed in the param dtype, and the previous
# block's reduce-scatter input, which FSDP2 keeps in ``comm_ctx.reduce_scatter_state`` until the next block's
# post-backward (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py ``post_backward``) and FSDP1 frees
# only when its reduce-scatter on the post-backward stream completes (``_no_dispatch_record_stream`` in
# torch/distributed/fsdp/_runtime_utils.py ``_reduce_grad``). Counted in the param dtype: Hugging Face Accelerate's
# reduce dtype (``MixedPrecision(param_dtype=dtype, reduce_dtype=dtype)``); torchtitan reduces in fp32, 2 bytes
# more per parameter of that block (not counted). Without pipeline parallelism only: with it torchtitan defers the
# reduce-scatter to the last micro-batch (a flow trainstack does not model), and one unit is counted as before.
FSDP_LIVE_GRAD_UNITS = 2


def fsdp_root_unit(hidden: int, vocab: int, tied: bool, tp: int, pp: int) -> tuple[Fraction, Fraction]:
    """(parameters, gradient parameters) per GPU of FSDP's root unit beyond the blocks: what is left when every
    block is its own unit, the embedding, the final norm and the output layer (norm not counted: h parameters).

    The root is not resharded after the forward (FSDP1: ``_post_forward_reshard`` frees the unsharded flat
    parameter only ``not state._is_root``, torch/distributed/fsdp/_runtime_utils.py; FSDP2: ``_lazy_init`` sets the
    root's ``post_forward_mesh_info = None``, torch/distributed/fsdp/_fully_shard/_fsdp_state.py), so its 16-bit
    copy is gathered through the backward; its gradient is reduce-scattered once the whole unit's is ready, after
    the embedding's at the end of the backward, so the output layer's 16-bit gradient lives through every block's
    backward. Vocab-parallel under tensor parallelism (/tp). Counted without pipeline parallelism only: with it the
    embedding and the output layer sit on the end stages, not on the worst one (assumption: not modelled)."""
    if pp > 1:
        return Fraction(0), Fraction(0)
    embedding = Fraction(vocab * hidden, tp)
    return embedding * (1 if tied else 2), embedding


def resolve_framework(framework: str, zero_stage: int) -> str:
    """``auto`` -> ``megatron`` for ZeRO stage 0 or 1 (Megatron's distributed optimizer is ZeRO-1), ``deepspeed``
    for stage 2 or 3 (the framework that runs ZeRO-2/3 with tensor and pipeline parallelism: Megatron-DeepSpeed).
    """
    if framework not in FRAMEWORK_CHOICES:
        raise SizingError(f"unknown framework {framework!r}; allowed: {', '.join(FRAMEWORK_CHOICES)}.")
    if framework == "auto":
        return "megatron" if zero_stage <= 1 else "deepspeed"
    return framework


def check_framework(framework: str, zero_stage: int) -> None:
    """Raise SizingError for a ZeRO stage the framework does not implement."""
    resolved = resolve_framework(framework, zero_stage)
    if resolved == "megatron" and zero_stage >= 2:
        raise SizingError(
            f"Megatron-LM's distributed optimizer shards only the optimizer state (ZeRO-1), not ZeRO-{zero_stage}; "
            "use zero_stage 0 or 1 with framework megatron, or framework deepspeed or fsdp for stages 2 and 3."
        )


def largest_module_parameters(layers: int, hidden: int, ffn_hidden: int, vocab: int, kv_dim: int) -> int:
    """Parameters of the largest single module, as DeepSpeed's ``model_to_params`` counts them (each module's own
    parameters, ``recurse=False``): the embedding V*h, an MLP matrix h*f, or an attention projection h*h."""
    return max(vocab * hidden, hidden * ffn_hidden, hidden * hidden, hidden * kv_dim, 1 if layers else 0)


def full_model_states(
    framework: str,
    *,
    psi: Fraction,
    precision: str,
    k: int,
    zero_stage: int,
    dp: int,
    layer_params: Fraction,
    largest_module: Fraction,
    notes: list[str],
    root: tuple[Fraction, Fraction] = (Fraction(0), Fraction(0)),
    pp: int = 1,
) -> tuple[int, int, int]:
    """(weights, gradients, optimizer states) bytes per GPU for full training under ``framework``
    (``megatron``, ``deepspeed`` or ``fsdp``; ``zero-paper`` stays in :mod:`generator.sizing.memory`).

    ``psi`` is the parameters on this GPU (its tensor shard of its largest pipeline stage), ``k`` the optimizer's
    bytes per parameter as [ZeRO] counts it (fp32 master + moments under mixed precision, moments only in fp32),
    ``layer_params`` one transformer block's parameters per GPU, ``largest_module`` the largest single module's and
    ``root`` FSDP's root unit (:func:`fsdp_root_unit`; zero where it does not apply) and ``pp`` the pipeline degree
    (FSDP's per-block gradient flow is counted without pipeline parallelism).
    """
    pb, z, d, mixed = PRECISION_BYTES[precision], zero_stage, dp, precision != "fp32"
    if framework == "megatron":
        return _megatron(psi, pb, precision, k, z, d, notes)
    if framework == "deepspeed":
        return _deepspeed(psi, pb, mixed, k, z, d, largest_module, notes, bf16=precision in ("bf16", "fp8"))
    if framework == "fsdp":
        return _fsdp(
            psi, pb, mixed, k, z, d, layer_params, notes, root, FSDP_LIVE_GRAD_UNITS if pp == 1 else 1
        )
    raise SizingError(f"unknown framework {framework!r}; allowed: {', '.join(FRAMEWORKS)}.")


def _megatron(
    psi: Fraction, pb: int, precision: str, k: int, z: int, d: int, notes: list[str]
) -> tuple[int, int, int]:
    """[MEGATRON-DO]: bf16 params + fp32 grads 18 B (non-distributed) or 6 + 12/d; fp16 grads 20 or 4 + 16/d;
    fp32 16 or 8 + 8/d.  With optimizers other than Adam, 12 becomes K (an extrapolation of the table)."""
    if z >= 2:
        raise SizingError(f"Megatron-LM's distributed optimizer implements ZeRO-1 only, not ZeRO-{z}.")
    if precision == "fp32":
        gb, ob, row = 4, k, "fp32 param, fp32 grads"
    elif precision == "fp16":  # Megatron keeps fp16 grads unless --accumulate-allreduce-grads-in-fp32
        gb, ob, row = 2, k + _FP32, "float16 param, float16 grads (fp32 main grads in the optimizer)"
    else:
        gb, ob, row = _FP32, k, "16-bit param, fp32 main grads (bf16 accumulates and all-reduces in fp32)"
    div = d if z >= 1 else 1
    w, g, o = _ceil(pb * psi), _ceil(gb * psi), _ceil(ob * psi / div)
    per_param = f"{pb + gb} + {ob}/d" if z >= 1 else f"{pb + gb + ob}"
    notes.append(
        f"framework megatron ({'distributed optimizer' if z >= 1 else 'non-distributed optimizer'}, "
        f"{row}): {per_param} bytes/param [Megatron-LM docs/source/api-guide/dist_optimizer.md, table; "
        f"https://github.com/NVIDIA/Megatron-LM]"
    )
    notes.append(
        f"weights = {pb}*Psi = {_gb(w)}; gradients (grad buffer) = {gb}*Psi = {_gb(g)}; optimizer states "
        f"= {ob}*Psi{f'/dp={d}' if div > 1 else ''} = {_gb(o)} (distributed optimizer shards only these)"
    )
    return w, g, o


def _deepspeed_stage(
    psi: Fraction, pb: int, mixed: bool, k: int, z: int, d: int, bf16: bool
) -> tuple[int, int, int, str]:
    """Weights, gradients and optimizer states of ZeRO stage ``z`` as DeepSpeed holds them (before ZeRO-3's
    gathered layer), and how they are counted."""
    fp32_grads = _FP32 if mixed else 0
    if z == 0:
        w, g, o = _ceil(pb * psi), _ceil((pb + fp32_grads) * psi), _ceil(k * psi)
        how = (
            f"stage 0: nothing sharded, {pb} + {pb + fp32_grads} + {k} bytes/param (assumption: the estimator's "
            "buffers, unsharded)"
        )
    elif z == 1 and bf16:
        # bf16 with ZeRO-1 runs DeepSpeed's BF16_Optimizer, which keeps an fp32 gradient-accumulation buffer the size
        # of the whole bf16 flat group (torch.zeros_like(bf16_groups_flat[i], dtype=float32)), not a partition; only
        # the fp32 master weights and the moments are sharded (deepspeed/runtime/bf16_optimizer.py)
        w, g, o = _ceil(pb * psi), _ceil((pb + _FP32) * psi), _ceil(k * psi / d)
        how = (
            f"stage 1 with bf16 (BF16_Optimizer): {2 * pb + _FP32} + {k}/d bytes/param (16-bit gradients and the "
            "fp32 gradient buffer whole, fp32 master weights and moments sharded; deepspeed/runtime/"
            "bf16_optimizer.py)"
        )
    elif z == 1:
        w, g, o = _ceil(pb * psi), _ceil(pb * psi + Fraction(fp32_grads) * psi / d), _ceil(k * psi / d)
        how = (
            f"stage 1: {2 * pb} + {fp32_grads + k}/d bytes/param (16-bit gradients whole, the fp32 gradient "
            "partition and optimizer states sharded; assumption: DeepSpeed publishes no stage-1 estimator)"
        )
    elif z == 2:
        w, g, o = _ceil(pb * psi), _ceil((pb + fp32_grads) * psi / d), _ceil(k * psi / d)
        per_param = f"{pb} + {pb + fp32_grads + k}/d"
        how = f"stage {z}: {per_param} bytes/param [DeepSpeed estimate_zero{z}_model_states_mem_needs, no offload]"
    else:
        # ZeRO-3: the 16-bit gradients are reduce-scattered layer by layer as backward produces them, so the
        # estimator counts them only in the largest-layer term; the partitions are 16-bit params, the fp32
        # gradient partition (the 16-bit one in fp32 training) and the optimizer states: 2 + 4 + 12 = 18 / d.
        gpart = fp32_grads if mixed else pb
        w, g, o = _ceil(pb * psi / d), _ceil(gpart * psi / d), _ceil(k * psi / d)
        per_param = f"{pb + gpart + k}/d + 2 x {pb} x largest layer"
        how = f"stage {z}: {per_param} bytes/param [DeepSpeed estimate_zero{z}_model_states_mem_needs, no offload]"
    return w, g, o, how


def _deepspeed(
    psi: Fraction,
    pb: int,
    mixed: bool,
    k: int,
    z: int,
    d: int,
    largest: Fraction,
    notes: list[str],
    bf16: bool = False,
) -> tuple[int, int, int]:
    """[DS-EST]: ZeRO-2 2*Psi + 18*Psi/d (2 16-bit grads + 4 fp32 grads + 4 fp32 params + 8 moments, sharded);
    ZeRO-3 4*largest_layer + 18*Psi/d.  Stages 0 and 1 have no estimator; they keep the same buffers with the
    16-bit gradients (and for stage 0 everything) unsharded (assumption)."""
    w, g, o, how = _deepspeed_stage(psi, pb, mixed, k, z, d, bf16)
    notes.append(
        f"framework deepspeed, ZeRO {how}; https://deepspeed.readthedocs.io/en/latest/memory.html, "
        "deepspeed/runtime/zero/stage_1_and_2.py and stage3.py"
    )
    notes.append(f"weights = {_gb(w)}; gradients = {_gb(g)}; optimizer states (K={k}) = {_gb(o)}")
    if z == 3:
        gathered = _ceil(2 * pb * largest)
        notes.append(
            f"ZeRO-3 largest layer gathered whole: 2 x {pb} B (params + grads) x {float(largest):,.0f} "
            f"params (the largest single module per GPU) = {_gb(gathered)} [DS-EST largest_layer_memory]; "
            f"weights -> {_gb(w + gathered)}"
        )
        w += gathered
    return w, g, o


def _fsdp(
    psi: Fraction,
    pb: int,
    mixed: bool,
    k: int,
    z: int,
    d: int,
    layer: Fraction,
    notes: list[str],
    root: tuple[Fraction, Fraction],
    grad_units: int,
) -> tuple[int, int, int]:
    """[FSDP] with MixedPrecision(param_dtype=16-bit): the sharded FlatParameter stays fp32 (it is the optimizer's
    parameter, so K's master copy is it), gradients are reduce-scattered into fp32 shards, and 16-bit copies are
    gathered per unit. FULL_SHARD = ZeRO-3, SHARD_GRAD_OP = ZeRO-2 (also used for 1: FSDP has no optimizer-only
    sharding), NO_SHARD = stage 0. ``root``: the root unit's parameters and gradient parameters
    (:func:`fsdp_root_unit`), gathered (FULL_SHARD; the other strategies keep every parameter gathered) and not
    reduce-scattered until the end of the backward; ``grad_units`` the blocks whose unsharded gradients are live."""
    param32 = 0 if mixed else 4  # fp32 training: the params themselves (K is moments only)
    sharded = k + param32 + 4  # fp32 params (in K when mixed) + moments + fp32 grads
    unit16 = pb if mixed else 0  # the 16-bit compute copy of a gathered unit
    if z == 0:
        w, g, o = _ceil((param32 + unit16) * psi), _ceil(4 * psi), _ceil(k * psi)
        how = f"NO_SHARD: {param32 + unit16 + 4 + k} bytes/param, nothing sharded"
    else:
        strategy = "FULL_SHARD" if z == 3 else "SHARD_GRAD_OP"
        o = _ceil(k * psi / d)
        # fp32 grad shard + the live units' unsharded 16-bit grads + the root's output-layer gradient
        g = _ceil(4 * psi / d + grad_units * pb * layer + pb * root[1])
        w_sharded = Fraction(param32, 1) * psi / d
        if z == 3:
            w = _ceil(w_sharded + FSDP_LIVE_UNITS * pb * layer + pb * root[0])
            how = (
                f"{strategy}: {sharded}/d bytes/param + {FSDP_LIVE_UNITS} gathered {pb * 8}-bit units (assumption: "
                "one unit per transformer block, backward prefetch)"
            )
        else:
            # the gathered compute copy: the 16-bit one, or in fp32 training the unsharded fp32 flat parameter
            # beside its shard
            w = _ceil(w_sharded + pb * psi)
            how = (
                f"{strategy}{' (ZeRO-1 has no FSDP equivalent; the closest)' if z == 1 else ''}: {pb} + "
                f"{sharded}/d bytes/param ({pb * 8}-bit parameters stay gathered between forward and backward)"
            )
        how += _fsdp_working_set(z, pb, grad_units, root)
    notes.append(
        f"framework fsdp, {how} [Zhao et al. 2023, PyTorch FSDP, arXiv:2304.11277; "
        "https://pytorch.org/docs/stable/fsdp.html]"
    )
    notes.append(f"weights = {_gb(w)}; gradients = {_gb(g)}; optimizer states (fp32 shard, K={k}) = {_gb(o)}")
    return w, g, o


def _fsdp_working_set(z: int, pb: int, grad_units: int, root: tuple[Fraction, Fraction]) -> str:
    """How :func:`_fsdp` counts the live gradient units and the root unit, for its note."""
    how = f" + {grad_units} units' {pb * 8}-bit gradients" + (
        " (the block's own and the previous block's reduce-scatter input: FSDP2 reduce_scatter_state, "
        "FSDP1 record_stream)"
        if grad_units > 1
        else " (with pipeline parallelism: one block's, assumption)"
    )
    if root[1]:
        how += (
            f"; root unit (embedding and output layer, {float(root[0]):,.0f} params) "
            f"{'gathered through the backward, ' if z == 3 else ''}its output layer's {pb * 8}-bit gradient "
            f"({float(root[1]):,.0f} params) held until the root's reduce-scatter at the end of the backward "
            "(FSDP1 _post_forward_reshard, FSDP2 _lazy_init: the root is not resharded after forward)"
        )
    return how
