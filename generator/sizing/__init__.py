"""Training memory, compute and checkpoint sizing ("sizing") for dense decoder LLMs.

Everything here is pure arithmetic: no I/O, no clock, no pulumi.  The formulas
come from the papers cited inline; docs/sizing.md has the worked examples.

References (short names used in comments):

* [ZeRO]   Rajbhandari, Rasley, Ruwase, He. "ZeRO: Memory Optimizations Toward
           Training Trillion Parameter Models", SC 2020 (arXiv:1910.02054), Sec. 3.1, 5.
* [SP]     Korthikanti, Casper, Lym, McAfee, Andersch, Shoeybi, Catanzaro.
           "Reducing Activation Recomputation in Large Transformer Models",
           MLSys 2023 (arXiv:2205.05198), Sec. 4 and Table 2.
* [PTD-P]  Narayanan et al. "Efficient Large-Scale Language Model Training on GPU
           Clusters Using Megatron-LM", SC 2021 (arXiv:2104.04473), Table 1.
* [Kaplan] Kaplan et al. "Scaling Laws for Neural Language Models", 2020, Sec. 2.1 (C ~= 6ND).
* [Chinchilla] Hoffmann et al. "Training Compute-Optimal Large Language Models", 2022.
* [PaLM]   Chowdhery et al. "PaLM", 2022, Appendix B (MFU vs HFU).
* [LoRA]   Hu et al. "LoRA: Low-Rank Adaptation of Large Language Models", 2021.
* [QLoRA]  Dettmers et al. "QLoRA: Efficient Finetuning of Quantized LLMs", 2023, Sec. 3.
* [8bit]   Dettmers et al. "8-bit Optimizers via Block-wise Quantization", ICLR 2022.
* [Young]  Young, "A first order approximation to the optimum checkpoint interval", CACM 1974.
* [Daly]   Daly, "A higher order estimate of the optimum checkpoint interval for
           restart dumps", FGCS 2006.
* [Llama3] Dubey et al. "The Llama 3 Herd of Models", 2024, Sec. 3.3.

Units: bytes are exact integers; "GB" in notes means 1e9 bytes (as in [ZeRO]),
"GiB" means 2**30 bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

__all__ = [
    "SizingError",
    "Architecture",
    "PRESETS",
    "parameters_of",
    "derive_architecture",
    "architecture_for",
    "OPTIMIZER_BYTES",
    "PRECISION_BYTES",
    "RECOMPUTE_MODES",
    "optimizer_bytes_per_param",
    "TrainingSetup",
    "MemoryBreakdown",
    "validate_setup",
    "model_state_bytes",
    "activation_bytes_per_layer",
    "lora_trainable_parameters",
    "per_gpu_memory",
    "training_flops",
    "training_hours",
    "RECOMPUTE_FLOP_FACTOR",
    "CheckpointModel",
    "checkpoint_size_bytes",
    "young_daly_interval",
    "checkpoint_plan",
    "DEFAULT_MFU",
    "DEFAULT_NODE_MTBF_HOURS",
    "DEFAULT_RESERVE_MIN_BYTES",
    "DEFAULT_RESERVE_FRACTION",
]

GB = 10**9
GiB = 2**30


class SizingError(ValueError):
    """An input the sizing model cannot use; the message says what to change."""


def _gb(n: int | float | Fraction) -> str:
    return f"{float(n) / GB:.2f} GB"


def _ceil(x: int | Fraction) -> int:
    """Exact ceiling of a non-negative int or Fraction."""
    return -(-x.numerator // x.denominator) if isinstance(x, Fraction) else int(x)


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SizingError(f"{name} must be a positive integer, got {value!r}; set it to a whole number >= 1.")


def _positive_number(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise SizingError(f"{name} must be a positive number, got {value!r}.")


# --------------------------------------------------------------------------------------
# Architecture and parameter counting
# --------------------------------------------------------------------------------------


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
        _preset("llama-3-8b", 32, 4096, 32, 8, 128256, 14336, 8.03e9,
                "Dubey et al. 2024, Llama 3, Table 3 + HF config; 8.03B params"),
        _preset("llama-3-70b", 80, 8192, 64, 8, 128256, 28672, 70.6e9,
                "Dubey et al. 2024, Llama 3, Table 3 + HF config; 70.6B params"),
        _preset("qwen2-7b", 28, 3584, 28, 4, 152064, 18944, 7.62e9,
                "Yang et al. 2024, Qwen2, Table 1 + HF config; 7.62B params in the released checkpoint"),
        _preset("qwen2-72b", 80, 8192, 64, 8, 152064, 29568, 72.7e9,
                "Yang et al. 2024, Qwen2, Table 1 + HF config; 72.7B params"),
        _preset("gpt3-175b", 96, 12288, 96, 96, 50257, 4 * 12288, 175e9,
                "Brown et al. 2020, GPT-3, Table 2.1; GELU MLP 4h, tied embeddings; 175B params",
                tied_embeddings=True, mlp_matrices=2),
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


# --------------------------------------------------------------------------------------
# Bytes per parameter
# --------------------------------------------------------------------------------------

# Optimizer bytes per parameter under 16-bit mixed precision, INCLUDING the 4-byte fp32
# master copy of the weights ([ZeRO] Sec. 3.1 calls this K; K = 12 for mixed-precision Adam:
# fp32 weights + fp32 momentum + fp32 variance).
OPTIMIZER_BYTES: dict[str, int] = {
    "adamw": 12,       # 4 master + 4 m + 4 v                                    [ZeRO]
    "adam": 12,        # same as AdamW (weight decay adds no state)
    "sgd": 8,          # 4 master + 4 momentum buffer: we assume SGD *with* momentum, the usual
                       # choice for training; plain SGD (no momentum) would be 4.
    "adafactor": 4,    # 4 master; factored second moment is O(rows+cols) per matrix (~0) and
                       # no first moment (beta1=None, Shazeer & Stern 2018 default).
    "lion": 8,         # 4 master + 4 momentum (Chen et al. 2023 keep one moment)
    "adamw-8bit": 6,   # 4 master + 1 m + 1 v; block-wise constants (1 fp32 / 2048 values) ~0  [8bit]
}
_MASTER_BYTES = 4  # fp32 master copy held by the optimizer under mixed precision

PRECISION_BYTES: dict[str, int] = {"bf16": 2, "fp16": 2, "fp32": 4}
RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "full")


def _check_optimizer(optimizer: str) -> None:
    if optimizer not in OPTIMIZER_BYTES:
        raise SizingError(f"unknown optimizer {optimizer!r}; allowed: {', '.join(OPTIMIZER_BYTES)}.")


def _check_precision(precision: str) -> None:
    if precision not in PRECISION_BYTES:
        raise SizingError(f"unknown precision {precision!r}; allowed: {', '.join(PRECISION_BYTES)}.")


def optimizer_bytes_per_param(optimizer: str, precision: str) -> int:
    """K of [ZeRO]: optimizer-held bytes per trainable parameter.

    bf16/fp16 (mixed precision): ``OPTIMIZER_BYTES`` (moments + fp32 master weights).
    fp32: the weights already are fp32, so there is no separate master copy and
    K = moments only (8 for Adam).
    """
    _check_optimizer(optimizer)
    _check_precision(precision)
    k = OPTIMIZER_BYTES[optimizer]
    return k - _MASTER_BYTES if precision == "fp32" else k


# --------------------------------------------------------------------------------------
# Training setup and per-GPU memory
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# Compute and time
# --------------------------------------------------------------------------------------

# Executed FLOPs per parameter per token.  6 = forward 2 + backward 4 ([Kaplan] Sec. 2.1).
# Full recompute runs the forward twice: 8 (+33%).  Selective recompute only recomputes the
# attention core, whose FLOPs 6ND already leaves out; [SP] reports a few percent overhead,
# which we do not model.
RECOMPUTE_FLOP_FACTOR: dict[str, int] = {"none": 6, "selective": 6, "full": 8}

# 38-43% BF16 MFU reported for Llama 3 405B on H100 ([Llama3] Table 4).  Assumption.
DEFAULT_MFU = 0.40


def training_flops(parameters: int, tokens: int) -> float:
    """Model training FLOPs C = 6*N*D ([Kaplan] Sec. 2.1; used by [Chinchilla]).

    Ignores attention-score FLOPs (2*n_layer*n_ctx*d_attn per token forward, a few percent
    at 2-8K context) and any recomputation; see ``training_hours`` for recompute.
    """
    _positive_int("parameters", parameters)
    _positive_int("tokens", tokens)
    return 6.0 * parameters * tokens


def training_hours(parameters: int, tokens: int, gpus: int, peak_tflops: float, mfu: float,
                   recompute: str = "none") -> float:
    """Wall-clock hours = executed FLOPs / (gpus * peak * utilisation) / 3600.

    Executed FLOPs = RECOMPUTE_FLOP_FACTOR[recompute] * N * D (8ND with full recompute).
    ``peak_tflops`` is the dense (non-sparse) per-GPU peak for the training precision.
    ``mfu`` is therefore interpreted as the utilisation of *executed* FLOPs (what [PaLM]
    calls HFU).  If you pass a measured MFU in the strict [PaLM] sense (model FLOPs only,
    recompute excluded), use recompute="none" to avoid counting recompute twice.
    """
    _positive_int("gpus", gpus)
    _positive_number("peak_tflops", peak_tflops)
    if isinstance(mfu, bool) or not isinstance(mfu, (int, float)) or not 0 < mfu <= 1:
        raise SizingError(f"mfu must be in (0, 1], got {mfu!r}; typical large-scale values are 0.3-0.5.")
    if recompute not in RECOMPUTE_FLOP_FACTOR:
        raise SizingError(f"unknown recompute {recompute!r}; allowed: {', '.join(RECOMPUTE_FLOP_FACTOR)}.")
    flops = training_flops(parameters, tokens) * RECOMPUTE_FLOP_FACTOR[recompute] / 6
    return flops / (gpus * peak_tflops * 1e12 * mfu) / 3600.0


# --------------------------------------------------------------------------------------
# Checkpointing
# --------------------------------------------------------------------------------------

# Llama 3 saw 419 unexpected interruptions in 54 days on 16,384 H100s = 2,048 8-GPU nodes
# ([Llama3] Sec. 3.3.4): 2048*54*24/419 ~= 6,300 node-hours between job interruptions.  We
# assume 2,000 h per 8-GPU node, ~3x more pessimistic, for cloud fleets without Meta's
# automated remediation.  An engineering assumption, not a vendor figure (the planner uses it).
DEFAULT_NODE_MTBF_HOURS = 2000.0


@dataclass(frozen=True, slots=True)
class CheckpointModel:
    size_bytes: int
    write_seconds: float
    mtbf_hours: float
    interval_seconds: float
    notes: tuple[str, ...]


def checkpoint_size_bytes(parameters: int, optimizer: str, precision: str = "bf16",
                          lora_trainable: int | None = None) -> int:
    """Bytes of a full restartable checkpoint.

    Mixed precision: 16-bit weights + K (fp32 master + moments) = (2 + K) bytes/param,
    14 for AdamW.  fp32: 4 + moments (12 for AdamW).  With LoRA only the adapters (and their
    optimizer state) are saved: lora_trainable * (2 + K); the frozen base is re-read from the
    base model.
    """
    _positive_int("parameters", parameters)
    k = optimizer_bytes_per_param(optimizer, precision)
    per_param = PRECISION_BYTES[precision] + k
    if lora_trainable is not None:
        _positive_int("lora_trainable", lora_trainable)
        return lora_trainable * per_param
    return parameters * per_param


def young_daly_interval(write_seconds: float, mtbf_seconds: float) -> float:
    """Optimal compute time between checkpoints, tau = sqrt(2*C*M) ([Young]; first-order term
    of [Daly] eq. 20), clamped to >= C (checkpointing more often than it takes to write is
    meaningless; Daly's higher-order form returns M once C >= 2M)."""
    _positive_number("write_seconds", write_seconds)
    _positive_number("mtbf_seconds", mtbf_seconds)
    return max(math.sqrt(2.0 * write_seconds * mtbf_seconds), float(write_seconds))


def checkpoint_plan(parameters: int, optimizer: str, precision: str, write_gbps: float, nodes: int,
                    node_mtbf_hours: float, spot: bool, spot_interruptions_per_node_day: float,
                    lora_trainable: int | None = None) -> CheckpointModel:
    """Checkpoint size, write time, cluster MTBF and Young/Daly interval.

    * ``write_gbps``: aggregate write bandwidth of the whole job to checkpoint storage, in Gbit/s;
      write time C = size / (write_gbps * 1e9 / 8).
    * cluster failure rate (per hour) = nodes / node_mtbf_hours
      + (nodes * spot_interruptions_per_node_day / 24 if spot); MTBF M = 1 / rate.
      Failures are assumed independent and exponential (any one stops the synchronous job).
    """
    size = checkpoint_size_bytes(parameters, optimizer, precision, lora_trainable)
    _positive_number("write_gbps", write_gbps)
    _positive_int("nodes", nodes)
    _positive_number("node_mtbf_hours", node_mtbf_hours)
    if isinstance(spot_interruptions_per_node_day, bool) or not isinstance(
            spot_interruptions_per_node_day, (int, float)) or spot_interruptions_per_node_day < 0:
        raise SizingError("spot_interruptions_per_node_day must be a number >= 0, got "
                          f"{spot_interruptions_per_node_day!r}.")
    write_seconds = size / (write_gbps * 1e9 / 8)
    hardware_rate = nodes / node_mtbf_hours
    spot_rate = nodes * spot_interruptions_per_node_day / 24.0 if spot else 0.0
    mtbf_hours = 1.0 / (hardware_rate + spot_rate)
    interval = young_daly_interval(write_seconds, mtbf_hours * 3600.0)
    per_param = size // (lora_trainable if lora_trainable is not None else parameters)
    overhead = write_seconds / interval + interval / (2 * mtbf_hours * 3600.0)
    notes = (
        f"checkpoint = {per_param} B/param x {lora_trainable or parameters:,} "
        f"{'LoRA adapter params' if lora_trainable else 'params'} = {_gb(size)} "
        f"({PRECISION_BYTES[precision]}-byte weights + {optimizer} K="
        f"{optimizer_bytes_per_param(optimizer, precision)})",
        f"write time C = {_gb(size)} / ({write_gbps:g} Gbit/s / 8) = {write_seconds:,.1f} s",
        f"failure rate = {nodes}/{node_mtbf_hours:g} h"
        + (f" + {nodes}*{spot_interruptions_per_node_day:g}/24 h (spot)" if spot else "")
        + f" = {hardware_rate + spot_rate:.4g}/h -> cluster MTBF M = {mtbf_hours:,.2f} h",
        f"interval = max(sqrt(2*C*M), C) = sqrt(2*{write_seconds:,.1f}*{mtbf_hours * 3600:,.0f}) = "
        f"{interval:,.0f} s ({interval / 60:.1f} min)   [Young 1974; Daly 2006 first order]",
        f"expected overhead ~= C/tau + tau/(2M) = {overhead:.1%} of wall-clock (excludes restart time)",
    )
    return CheckpointModel(size_bytes=size, write_seconds=write_seconds, mtbf_hours=mtbf_hours,
                           interval_seconds=interval, notes=notes)
