"""The model's shape: parameter counting, the published presets, and shapes derived for a parameter count.

:func:`architecture_for` resolves what a spec gives (an explicit shape, a preset, or only a parameter count)
into an :class:`Architecture`. Shapes and counts cite their papers inline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from generator.sizing.common import SizingError, _positive_int
from generator.sizing.moe import MoE, mlp_parameters


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
    head_dim: int | None = None,
    moe: MoE | None = None,
) -> int:
    """Parameter count of a pre-norm decoder from its shape (dense, or MoE with ``moe``).

    With L=layers, h=hidden, a=heads, g=kv_heads, d=h/a (head dim), f=ffn_hidden, V=vocab::

        attention / layer = h*h (W_q) + 2*h*(g*d) (W_k, W_v; GQA) + h*h (W_o)
        mlp       / layer = mlp_matrices * h * f     (3 for SwiGLU gate/up/down, 2 for GELU up/down)
        norms     / layer = 2*h                      (two RMSNorm gains)
        embeddings        = V*h, plus another V*h for an untied output projection
        final norm        = h

        total = L * (2h^2 + 2hgd + mlp_matrices*h*f + 2h) + V*h*(1 if tied else 2) + h

    ``head_dim`` (default h/a) is the width of one attention head when a model sets it apart from h/a (Qwen3:
    hidden 4096, 64 heads of 128): W_q and W_o are then h x (a*d). With ``moe`` the MLP term is
    :func:`generator.sizing.moe.mlp_parameters` (routed and shared experts and the router in the MoE layers).

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
    if head_dim is not None:
        _positive_int("head_dim", head_dim)
    d = head_dim or hidden // heads
    attention = 2 * hidden * heads * d + 2 * hidden * kv_heads * d
    mlp, _, _ = mlp_parameters(layers, hidden, ffn_hidden, mlp_matrices, moe)
    embeddings = vocab * hidden * (1 if tied_embeddings else 2)
    return layers * (attention + 2 * hidden) + mlp + embeddings + hidden


@dataclass(frozen=True, slots=True)
class Architecture:
    """Shape of a dense decoder.  ``parameters`` is the authoritative count used for sizing:
    the published count for presets, the requested count for derived shapes, and
    ``parameters_of(shape)`` for explicit shapes.

    ``tied_embeddings`` and ``mlp_matrices`` are extensions to the basic shape (defaults are
    Llama-style: untied output projection, 3-matrix SwiGLU MLP); GPT-3 and the Megatron 1T
    model need ``tied_embeddings=True, mlp_matrices=2``. ``head_dim`` None means hidden/heads.

    ``moe`` makes it a mixture-of-experts decoder; ``active`` is the published count of parameters a token
    uses (presets), else :attr:`active_parameters` counts it from the shape.
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
    head_dim: int | None = None
    moe: MoE | None = None
    active: int | None = None

    def __post_init__(self) -> None:
        # Validates the shape (raises SizingError) and keeps parameters sane.
        self.counted_parameters  # noqa: B018 (raises SizingError for a shape that cannot be counted)
        _positive_int("parameters", self.parameters)
        if self.active is not None:
            _positive_int("active", self.active)
            if self.active > self.parameters:
                raise SizingError(f"active parameters ({self.active:,}) exceed the total ({self.parameters:,}).")

    @property
    def d_head(self) -> int:
        """The width of one attention head: ``head_dim``, or hidden/heads."""
        return self.head_dim or self.hidden // self.heads

    @property
    def counted_parameters(self) -> int:
        """``parameters_of`` applied to this shape (may differ slightly from ``parameters``)."""
        return parameters_of(self.layers, self.hidden, self.heads, self.kv_heads, self.vocab,
                             self.ffn_hidden, tied_embeddings=self.tied_embeddings,
                             mlp_matrices=self.mlp_matrices, head_dim=self.head_dim, moe=self.moe)

    @property
    def attention_parameters(self) -> int:
        """One layer's attention projections: W_q and W_o h x (a*d), W_k and W_v h x (g*d)."""
        d = self.d_head
        return 2 * self.hidden * self.heads * d + 2 * self.hidden * self.kv_heads * d

    def _scaled(self, counted: int) -> int:
        """A part of the shape's own count, scaled to ``parameters`` (the published count of a preset)."""
        total = self.counted_parameters
        return counted if total == self.parameters else round(counted * self.parameters / total)

    @property
    def expert_parameters(self) -> int:
        """Parameters of the routed experts (what expert parallelism shards); 0 for a dense model."""
        _, routed, _ = mlp_parameters(self.layers, self.hidden, self.ffn_hidden, self.mlp_matrices, self.moe)
        return self._scaled(routed)

    @property
    def active_parameters(self) -> int:
        """Parameters one token passes through: all of a dense model's; a MoE model's shared part, top_k routed
        experts and the router (the published count for a preset)."""
        if self.moe is None:
            return self.parameters
        if self.active is not None:
            return self.active
        total, _, used = mlp_parameters(self.layers, self.hidden, self.ffn_hidden, self.mlp_matrices, self.moe)
        return self.parameters - self._scaled(total - used)

    @property
    def layer_parameters(self) -> int:
        """Parameters of one transformer block (attention + MLP + its two norms); a MoE block with every expert."""
        mlp, _, _ = mlp_parameters(self.layers, self.hidden, self.ffn_hidden, self.mlp_matrices, self.moe)
        if self.moe is not None:
            n = self.layers - self.moe.dense_layers
            mlp = (mlp - self.moe.dense_layers * self.mlp_matrices * self.hidden * self.ffn_hidden) // n
        else:
            mlp //= self.layers
        return self.attention_parameters + mlp + 2 * self.hidden

    @property
    def linear_parameters(self) -> int:
        """Parameters in the blocks' linear layers (what QLoRA quantises to 4 bit)."""
        mlp, _, _ = mlp_parameters(self.layers, self.hidden, self.ffn_hidden, self.mlp_matrices, self.moe)
        return self.layers * self.attention_parameters + mlp


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
        # Mixture-of-experts presets: ``parameters`` and ``active`` are the published total and active counts.
        _preset("mixtral-8x7b", 32, 4096, 32, 8, 32000, 14336, 46.7e9,
                "Jiang et al. 2024, Mixtral of Experts, arXiv:2401.04088, Sec. 2 + HF config "
                "mistralai/Mixtral-8x7B-v0.1; 8 experts top-2; 46.7B total, 12.9B active",
                moe=MoE(experts=8, top_k=2, expert_ffn_hidden=14336), active=int(12.9e9)),
        _preset("mixtral-8x22b", 56, 6144, 48, 8, 32768, 16384, 141e9,
                "Mistral AI 2024-04-17, 'Cheaper, Better, Faster, Stronger' (mistral.ai/news/mixtral-8x22b) + HF "
                "config mistralai/Mixtral-8x22B-v0.1; 8 experts top-2; 141B total, 39B active",
                moe=MoE(experts=8, top_k=2, expert_ffn_hidden=16384), active=int(39e9)),
        _preset("qwen3-30b-a3b", 48, 2048, 32, 4, 151936, 6144, 30.5e9,
                "Qwen Team 2025, Qwen3 Technical Report, arXiv:2505.09388, Table 2 + HF config Qwen/Qwen3-30B-A3B; "
                "head_dim 128, 128 experts top-8 of width 768, no shared expert; 30.5B total, 3.3B active",
                head_dim=128, moe=MoE(experts=128, top_k=8, expert_ffn_hidden=768), active=int(3.3e9)),
        _preset("qwen3-235b-a22b", 94, 4096, 64, 4, 151936, 12288, 235e9,
                "Qwen Team 2025, Qwen3 Technical Report, arXiv:2505.09388, Table 2 + HF config "
                "Qwen/Qwen3-235B-A22B; head_dim 128, 128 experts top-8 of width 1536, no shared expert; "
                "235B total, 22B active", head_dim=128,
                moe=MoE(experts=128, top_k=8, expert_ffn_hidden=1536), active=int(22e9)),
        _preset("deepseek-v3", 61, 7168, 128, 128, 129280, 18432, 671e9,
                "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, arXiv:2412.19437, Sec. 4.2 + HF config "
                "deepseek-ai/DeepSeek-V3; 256 routed experts top-8 of width 2048 + 1 shared, first 3 layers dense "
                "(ffn 18432); 671B total, 37B active (the 14B multi-token-prediction module not counted); its "
                "multi-head latent attention is counted as plain 128-head attention (within ~10% per layer); "
                "trained with pp=16, ep=64 (Sec. 3.2)",
                moe=MoE(experts=256, top_k=8, expert_ffn_hidden=2048, shared_experts=1, dense_layers=3),
                active=int(37e9)),
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
                 "mlp_matrices", "head_dim")


def architecture_for(parameters: int | None = None, preset: str | None = None, moe: MoE | None = None,
                     **shape: object) -> Architecture:
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
    if moe is not None and base is not None and base.source.startswith("derived"):
        raise SizingError("model.moe needs the model's shape to place the experts in: give model.architecture "
                          "(layers, hidden, heads, ...) or a MoE preset (deepseek-v3, mixtral-8x7b, mixtral-8x22b, "
                          "qwen3-30b-a3b, qwen3-235b-a22b) instead of a bare parameter count.")
    if not shape and moe is None:
        assert base is not None
        return base
    if base is None:
        hidden = shape["hidden"]
        merged: dict[str, object] = {"kv_heads": shape["heads"], "vocab": _DERIVED_VOCAB,
                                     "ffn_hidden": _llama_ffn(hidden) if isinstance(hidden, int) else hidden,
                                     "tied_embeddings": False, "mlp_matrices": 3, "head_dim": None, "moe": None}
        origin = "explicit shape"
    else:
        merged = {f: getattr(base, f) for f in (*_SHAPE_FIELDS, "moe")}
        origin = f"{base.source.split(' (')[0]} with overrides"
    merged.update(shape)
    if moe is not None:
        merged["moe"] = moe
    m: dict = merged
    count = parameters_of(m["layers"], m["hidden"], m["heads"], m["kv_heads"], m["vocab"], m["ffn_hidden"],
                          tied_embeddings=bool(m["tied_embeddings"]), mlp_matrices=m["mlp_matrices"],
                          head_dim=m["head_dim"], moe=m["moe"])
    overrides = ", ".join([f"{k}={shape[k]}" for k in _SHAPE_FIELDS if k in shape]
                          + ([f"moe: {moe.experts} experts top-{moe.top_k}"] if moe is not None else []))
    return Architecture(parameters=count, source=f"{origin} ({overrides}); parameters counted from shape",
                        **merged)  # type: ignore[arg-type]
