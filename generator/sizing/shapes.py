"""The shape sizing uses for what a spec gives: an explicit shape, a preset with overrides, or only a parameter
count (a Llama-style shape derived for it).

Apart from :mod:`generator.sizing.architecture` (the shape and its counting) because resolving and deriving are
rules about what a spec means, with their own defaults (Llama's MLP width rule, the aspect ratio of published
decoders), and they read the presets (:mod:`generator.sizing.presets`), which need the shape class first.
"""

from __future__ import annotations

import math

from generator.sizing.architecture import Architecture, parameters_of
from generator.sizing.common import SizingError, _positive_int
from generator.sizing.moe import MoE
from generator.sizing.presets import PRESETS

# Layer-count / width rule for derived shapes: hidden ~= 128 * layers, the aspect ratio of
# GPT-3 6.7B/13B/175B (Brown et al. 2020, Table 2.1) and Llama-2-7B/13B (~128).  Kaplan et al.
# (2020, Sec. 3.1, Fig. 5) show the loss varies only a few percent over a wide range of aspect
# ratios at fixed size, so the exact choice matters little for sizing.
_TARGET_ASPECT = 128
_HEAD_DIM = 128
_DERIVED_VOCAB = 32000
_GQA_THRESHOLD = 30e9  # Llama 2 used GQA (8 KV heads) for its 34B and 70B models.


def _llama_ffn(hidden: int) -> int:
    """Llama's SwiGLU width rule: int(2*4h/3) rounded up to a multiple of 256."""
    f = (8 * hidden) // 3
    return 256 * (-(-f // 256))


def _best_derived_shape(parameters: int) -> tuple | None:
    """The search of :func:`derive_architecture`: ``(key, hidden, layers, heads, kv, ffn, count, err)`` of the
    best candidate shape, or None when even the narrowest candidate has no room for one layer."""
    gqa = parameters > _GQA_THRESHOLD
    step = 1024 if gqa else _HEAD_DIM
    best: tuple | None = None
    for hidden in range(step, 131072 + 1, step):
        heads = hidden // _HEAD_DIM
        kv = 8 if gqa else heads
        ffn = _llama_ffn(hidden)
        base = parameters_of(1, hidden, heads, kv, _DERIVED_VOCAB, ffn)
        per_layer = parameters_of(2, hidden, heads, kv, _DERIVED_VOCAB, ffn) - base
        embed = base - per_layer
        fit = (parameters - embed) / per_layer
        if round(fit) < 1:
            break  # wider candidates only make the embeddings bigger
        # Nearest layer count, and the nearest multiples of 4, 8 and 16 (so pipeline degrees divide it).
        for layers in {round(fit), 4 * round(fit / 4), 8 * round(fit / 8), 16 * round(fit / 16)} - {0}:
            count = embed + layers * per_layer
            err = abs(count - parameters) / parameters
            aspect_dev = abs(math.log(hidden / layers / _TARGET_ASPECT))
            # above ~100B a run needs deep pipelines: prefer layer counts that pp = 8 (or 16) divides
            deep = parameters > 100e9 and layers % 8 != 0
            key = (
                err > 0.02,
                aspect_dev > math.log(2),
                heads % 8 != 0,
                layers % 4 != 0,
                deep,
                aspect_dev,
                err,
            )
            if best is None or key < best[0]:
                best = (key, hidden, layers, heads, kv, ffn, count, err)
    return best


def derive_architecture(parameters: int) -> Architecture:
    """A plausible Llama-style dense decoder for a bare parameter count.

    Rules: head_dim 128 (heads = hidden/128); kv_heads = heads, or 8 (GQA) above 30B, in which
    case hidden is a multiple of 1024 so the 8 KV groups divide the heads; ffn from Llama's
    rule (~8/3*hidden, multiple of 256); vocab 32000; untied output projection.

    Search: for every candidate hidden (multiples of 128, or 1024 with GQA) take the layer count
    that best fits the budget, and the nearest multiples of 4, 8 and 16.  Among candidates within 2% of the
    request and with hidden/layers within a factor 2 of 128, prefer heads divisible by 8 (so
    tp=8 works), then layers divisible by 4 (so pp=2/4 work), above 100B by 8, then the aspect ratio closest to
    hidden = 128*layers.
    ``architecture.parameters`` is the *requested* count; the shape's own count
    (``counted_parameters``) is within 10% (2% for >= ~1e9).  Raises SizingError if no shape
    comes within 10% (tiny models, where the 32000-token embedding dominates).
    """
    _positive_int("parameters", parameters)
    best = _best_derived_shape(parameters)
    if best is None or best[7] > 0.10:
        raise SizingError(
            f"cannot derive a decoder shape within 10% of {parameters:,} parameters (the 32000-token "
            "embedding dominates at this size); give an explicit shape (layers, hidden, heads, ...) instead."
        )
    _, hidden, layers, heads, kv, ffn, count, err = best
    return Architecture(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv,
        vocab=_DERIVED_VOCAB,
        ffn_hidden=ffn,
        parameters=parameters,
        source=(
            f"derived from {parameters:,} parameters (Llama-style, hidden~=128*layers, head_dim 128, "
            f"{'GQA 8 KV heads' if kv != heads else 'MHA'}; shape counts {count:,}, {err:.1%} off)"
        ),
    )


_SHAPE_FIELDS = (
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "vocab",
    "ffn_hidden",
    "tied_embeddings",
    "mlp_matrices",
    "head_dim",
)


def _base_architecture(
    parameters: int | None, preset: str | None, shape: dict[str, object]
) -> Architecture | None:
    """What the shape fields override: None for a shape that stands alone, else the preset or the derived shape."""
    if preset is not None and preset not in PRESETS:
        raise SizingError(f"unknown preset {preset!r}; choose one of: {', '.join(sorted(PRESETS))}.")
    if {"layers", "hidden", "heads"} <= set(shape):
        return None  # complete enough to stand alone
    if preset is not None:
        return PRESETS[preset]
    if parameters is not None:
        return derive_architecture(parameters)
    raise SizingError(
        "give a model size: parameters, a preset, or an explicit shape (at least layers, hidden and heads)."
    )


def _starting_fields(base: Architecture | None, shape: dict[str, object]) -> tuple[dict[str, object], str]:
    """The fields the overrides apply to, and the source's first words: the defaults of an explicit shape, or
    the base architecture's own fields."""
    if base is None:
        hidden = shape["hidden"]
        fields: dict[str, object] = {
            "kv_heads": shape["heads"],
            "vocab": _DERIVED_VOCAB,
            "ffn_hidden": _llama_ffn(hidden) if isinstance(hidden, int) else hidden,
            "tied_embeddings": False,
            "mlp_matrices": 3,
            "head_dim": None,
            "moe": None,
        }
        return fields, "explicit shape"
    return {
        f: getattr(base, f) for f in (*_SHAPE_FIELDS, "moe")
    }, f"{base.source.split(' (')[0]} with overrides"


def architecture_for(
    parameters: int | None = None, preset: str | None = None, moe: MoE | None = None, **shape: object
) -> Architecture:
    """Resolve the architecture for a spec.  Precedence: explicit shape > preset > derived.

    * A shape with at least layers, hidden and heads stands alone: preset and parameters are
      ignored; missing fields default to kv_heads = heads, ffn_hidden = Llama's rule
      (~8/3*hidden, multiple of 256), vocab 32000, untied, SwiGLU.
    * Fewer shape fields override the base architecture: the preset if given, else
      ``derive_architecture(parameters)``.
    * Whenever shape fields are given, ``parameters`` is recounted from the resulting shape.
    * ``parameters`` is ignored when a preset is given.  ``None`` shape values are ignored.
    * ``moe`` makes the shape a mixture of experts (or replaces a MoE preset's experts); the parameters are then
      counted from the shape. A bare parameter count has no shape to put experts into: that is an error.
    """
    unknown = sorted(set(shape) - set(_SHAPE_FIELDS))
    if unknown:
        raise SizingError(f"unknown architecture field(s) {unknown}; allowed: {', '.join(_SHAPE_FIELDS)}.")
    shape = {k: v for k, v in shape.items() if v is not None}
    base = _base_architecture(parameters, preset, shape)
    if moe is not None and base is not None and base.source.startswith("derived"):
        raise SizingError(
            "model.moe needs the model's shape to place the experts in: give model.architecture "
            "(layers, hidden, heads, ...) or a MoE preset (deepseek-v3, mixtral-8x7b, mixtral-8x22b, "
            "qwen3-30b-a3b, qwen3-235b-a22b) instead of a bare parameter count."
        )
    if not shape and moe is None:
        assert base is not None
        return base
    merged, origin = _starting_fields(base, shape)
    merged.update(shape)
    if moe is not None:
        merged["moe"] = moe
    m: dict = merged
    count = parameters_of(
        m["layers"],
        m["hidden"],
        m["heads"],
        m["kv_heads"],
        m["vocab"],
        m["ffn_hidden"],
        tied_embeddings=bool(m["tied_embeddings"]),
        mlp_matrices=m["mlp_matrices"],
        head_dim=m["head_dim"],
        moe=m["moe"],
    )
    overrides = ", ".join(
        [f"{k}={shape[k]}" for k in _SHAPE_FIELDS if k in shape]
        + ([f"moe: {moe.experts} experts top-{moe.top_k}"] if moe is not None else [])
    )
    return Architecture(
        parameters=count, source=f"{origin} ({overrides}); parameters counted from shape", **m
    )
