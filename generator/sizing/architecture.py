"""The model's shape: parameter counting, the published presets, and shapes derived for a parameter count.

:func:`architecture_for` resolves what a spec gives (an explicit shape, a preset, or only a parameter count)
into an :class:`Architecture`. Shapes and counts cite their papers inline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from generator.sizing.common import SizingError, _positive_int


def parameters_of(
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    vocab: int,
    ffn_hidden: int,
    *,
    tied_embeddings: bool = False,
    mlp_matrices: int = 3,
) -> int:
    """Parameter count of a dense pre-norm decoder from its shape.

    With L=layers, h=hidden, a=heads, g=kv_heads, d=h/a (head dim), f=ffn_hidden, V=vocab::

        attention / layer = h*h (W_q) + 2*h*(g*d) (W_k, W_v; GQA) + h*h (W_o)
        mlp       / layer = mlp_matrices * h * f     (3 for SwiGLU gate/up/down, 2 for GELU up/down)
        norms     / layer = 2*h                      (two RMSNorm gains)
        embeddings        = V*h, plus another V*h for an untied output projection
        final norm        = h

        total = L * (2h^2 + 2hgd + mlp_matrices*h*f + 2h) + V*h*(1 if tied else 2) + h

    Not counted: biases (Qwen2's q/k/v biases, GPT-3's linear/LayerNorm biases) and learned
    position embeddings; these are < 0.03% for the presets below.  For Llama 2/3 the formula
    reproduces the released checkpoints exactly (e.g. 6,738,415,616 for llama-2-7b).
    """
    for name, value in (("layers", layers), ("hidden", hidden), ("heads", heads),
                        ("kv_heads", kv_heads), ("vocab", vocab), ("ffn_hidden", ffn_hidden)):
        _positive_int(name, value)
    if hidden % heads:
        raise SizingError(f"hidden ({hidden}) must be divisible by heads ({heads}); pick heads = hidden/128.")
    if heads % kv_heads:
        raise SizingError(f"heads ({heads}) must be divisible by kv_heads ({kv_heads}) "
                          "for grouped-query attention.")
    if mlp_matrices not in (2, 3):
        raise SizingError(f"mlp_matrices must be 2 (GELU MLP) or 3 (SwiGLU MLP), got {mlp_matrices!r}.")
    head_dim = hidden // heads
    attention = 2 * hidden * hidden + 2 * hidden * kv_heads * head_dim
    mlp = mlp_matrices * hidden * ffn_hidden
    per_layer = attention + mlp + 2 * hidden
    embeddings = vocab * hidden * (1 if tied_embeddings else 2)
    return layers * per_layer + embeddings + hidden


@dataclass(frozen=True, slots=True)
class Architecture:
    """Shape of a dense decoder.  ``parameters`` is the authoritative count used for sizing:
    the published count for presets, the requested count for derived shapes, and
    ``parameters_of(shape)`` for explicit shapes.

    ``tied_embeddings`` and ``mlp_matrices`` are extensions to the basic shape (defaults are
    Llama-style: untied output projection, 3-matrix SwiGLU MLP); GPT-3 and the Megatron 1T
    model need ``tied_embeddings=True, mlp_matrices=2``.
    """

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    vocab: int
    ffn_hidden: int
    parameters: int
    source: str
    tied_embeddings: bool = False
    mlp_matrices: int = 3

    def __post_init__(self) -> None:
        # Validates the shape (raises SizingError) and keeps parameters sane.
        parameters_of(self.layers, self.hidden, self.heads, self.kv_heads, self.vocab, self.ffn_hidden,
                      tied_embeddings=self.tied_embeddings, mlp_matrices=self.mlp_matrices)
        _positive_int("parameters", self.parameters)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def counted_parameters(self) -> int:
        """``parameters_of`` applied to this shape (may differ slightly from ``parameters``)."""
        return parameters_of(self.layers, self.hidden, self.heads, self.kv_heads, self.vocab,
                             self.ffn_hidden, tied_embeddings=self.tied_embeddings,
                             mlp_matrices=self.mlp_matrices)

    @property
    def layer_parameters(self) -> int:
        """Parameters of one transformer block (attention + MLP + its two norms)."""
        d = self.head_dim
        return (2 * self.hidden * self.hidden + 2 * self.hidden * self.kv_heads * d
                + self.mlp_matrices * self.hidden * self.ffn_hidden + 2 * self.hidden)

    @property
    def linear_parameters(self) -> int:
        """Parameters in the blocks' linear layers (what QLoRA quantises to 4 bit)."""
        return self.layers * (self.layer_parameters - 2 * self.hidden)


def _preset(name: str, layers: int, hidden: int, heads: int, kv_heads: int, vocab: int, ffn: int,
            parameters: float, citation: str, **extra: object) -> Architecture:
    return Architecture(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, vocab=vocab,
                        ffn_hidden=ffn, parameters=int(parameters),
                        source=f"preset {name} ({citation})", **extra)  # type: ignore[arg-type]


# Shapes are from the papers' architecture tables and the released Hugging Face config.json
# files; parameter counts are the published (rounded) counts of the released checkpoints.
PRESETS: dict[str, Architecture] = {
    a.source.split()[1]: a  # source starts with "preset <name> (...)"
    for a in (
        _preset("llama-2-7b", 32, 4096, 32, 32, 32000, 11008, 6.74e9,
                "Touvron et al. 2023, Llama 2, Table 1 + HF config; 6.74B params"),
        _preset("llama-2-13b", 40, 5120, 40, 40, 32000, 13824, 13.0e9,
                "Touvron et al. 2023, Llama 2, Table 1 + HF config; 13.0B params"),
        _preset("llama-2-70b", 80, 8192, 64, 8, 32000, 28672, 69.0e9,
                "Touvron et al. 2023, Llama 2, Table 1 (GQA) + HF config; 69.0B params"),
        _preset("llama-65b", 80, 8192, 64, 64, 32000, 22016, 65.2e9,
                "Touvron et al. 2023, LLaMA, Table 2 + HF config; 65.2B params; the QLoRA paper's 65B base"),
        _preset("llama-3-8b", 32, 4096, 32, 8, 128256, 14336, 8.03e9,
                "Dubey et al. 2024, Llama 3, Table 3 + HF config; 8.03B params"),
        _preset("llama-3-70b", 80, 8192, 64, 8, 128256, 28672, 70.6e9,
                "Dubey et al. 2024, Llama 3, Table 3 + HF config; 70.6B params"),
        _preset("llama-3-405b", 126, 16384, 128, 8, 128256, 53248, 405e9,
                "Dubey et al. 2024, Llama 3, Table 3 + HF config; 405B params; trained with pp=16 (Sec. 3.3.2)"),
        _preset("qwen2-7b", 28, 3584, 28, 4, 152064, 18944, 7.62e9,
                "Yang et al. 2024, Qwen2, Table 1 + HF config; 7.62B params in the released checkpoint"),
        _preset("qwen2-72b", 80, 8192, 64, 8, 152064, 29568, 72.7e9,
                "Yang et al. 2024, Qwen2, Table 1 + HF config; 72.7B params"),
        _preset("gpt3-175b", 96, 12288, 96, 96, 50257, 4 * 12288, 175e9,
                "Brown et al. 2020, GPT-3, Table 2.1; GELU MLP 4h, tied embeddings; 175B params",
                tied_embeddings=True, mlp_matrices=2),
        _preset("bloom-176b", 70, 14336, 112, 112, 250880, 4 * 14336, 176.2e9,
                "BigScience 2022, BLOOM, arXiv:2211.05100 Table 3 + HF config; GELU MLP 4h, tied embeddings; "
                "176B params; trained with tp=4 pp=12", tied_embeddings=True, mlp_matrices=2),
        _preset("mt-nlg-530b", 105, 20480, 128, 128, 51200, 4 * 20480, 530e9,
                "Smith et al. 2022, Megatron-Turing NLG 530B, arXiv:2201.11990 Sec. 2.3; GELU MLP 4h, tied "
                "embeddings; 530B params", tied_embeddings=True, mlp_matrices=2),
        _preset("megatron-1t", 128, 25600, 160, 160, 51200, 4 * 25600, 1008e9,
                "Narayanan et al. 2021, Megatron-LM PTD-P, Table 1 1T row; vocab 51200, "
                "GELU MLP 4h, tied embeddings; 1008B params",
                tied_embeddings=True, mlp_matrices=2),
    )
}

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
            key = (err > 0.02, aspect_dev > math.log(2), heads % 8 != 0, layers % 4 != 0, deep,
                   aspect_dev, err)
            if best is None or key < best[0]:
                best = (key, hidden, layers, heads, kv, ffn, count, err)
    if best is None or best[7] > 0.10:
        raise SizingError(
            f"cannot derive a decoder shape within 10% of {parameters:,} parameters (the 32000-token "
            "embedding dominates at this size); give an explicit shape (layers, hidden, heads, ...) instead."
        )
    _, hidden, layers, heads, kv, ffn, count, err = best
    return Architecture(
        layers=layers, hidden=hidden, heads=heads, kv_heads=kv, vocab=_DERIVED_VOCAB, ffn_hidden=ffn,
        parameters=parameters,
        source=(f"derived from {parameters:,} parameters (Llama-style, hidden~=128*layers, head_dim 128, "
                f"{'GQA 8 KV heads' if kv != heads else 'MHA'}; shape counts {count:,}, {err:.1%} off)"),
    )


_SHAPE_FIELDS = ("layers", "hidden", "heads", "kv_heads", "vocab", "ffn_hidden", "tied_embeddings",
                 "mlp_matrices")


def architecture_for(parameters: int | None = None, preset: str | None = None,
                     **shape: object) -> Architecture:
    """Resolve the architecture for a spec.  Precedence: explicit shape > preset > derived.

    * A shape with at least layers, hidden and heads stands alone: preset and parameters are
      ignored; missing fields default to kv_heads = heads, ffn_hidden = Llama's rule
      (~8/3*hidden, multiple of 256), vocab 32000, untied, SwiGLU.
    * Fewer shape fields override the base architecture: the preset if given, else
      ``derive_architecture(parameters)``.
    * Whenever shape fields are given, ``parameters`` is recounted from the resulting shape.
    * ``parameters`` is ignored when a preset is given.  ``None`` shape values are ignored.
    """
    unknown = sorted(set(shape) - set(_SHAPE_FIELDS))
    if unknown:
        raise SizingError(f"unknown architecture field(s) {unknown}; allowed: {', '.join(_SHAPE_FIELDS)}.")
    shape = {k: v for k, v in shape.items() if v is not None}
    base: Architecture | None = None
    if preset is not None and preset not in PRESETS:
        raise SizingError(f"unknown preset {preset!r}; choose one of: {', '.join(sorted(PRESETS))}.")
    if {"layers", "hidden", "heads"} <= set(shape):
        pass  # complete enough to stand alone
    elif preset is not None:
        base = PRESETS[preset]
    elif parameters is not None:
        base = derive_architecture(parameters)
    else:
        raise SizingError("give a model size: parameters, a preset, or an explicit shape "
                          "(at least layers, hidden and heads).")
    if not shape:
        assert base is not None
        return base
    if base is None:
        hidden = shape["hidden"]
        merged: dict[str, object] = {"kv_heads": shape["heads"], "vocab": _DERIVED_VOCAB,
                                     "ffn_hidden": _llama_ffn(hidden) if isinstance(hidden, int) else hidden,
                                     "tied_embeddings": False, "mlp_matrices": 3}
        origin = "explicit shape"
    else:
        merged = {f: getattr(base, f) for f in _SHAPE_FIELDS}
        origin = f"{base.source.split(' (')[0]} with overrides"
    merged.update(shape)
    m: dict = merged
    count = parameters_of(m["layers"], m["hidden"], m["heads"], m["kv_heads"], m["vocab"], m["ffn_hidden"],
                          tied_embeddings=bool(m["tied_embeddings"]), mlp_matrices=m["mlp_matrices"])
    overrides = ", ".join(f"{k}={shape[k]}" for k in _SHAPE_FIELDS if k in shape)
    return Architecture(parameters=count, source=f"{origin} ({overrides}); parameters counted from shape",
                        **merged)  # type: ignore[arg-type]
