"""The model's shape: :class:`Architecture` and its parameter counting.

The published presets are in :mod:`generator.sizing.presets`; the shape derived for a bare parameter count and
the resolution of what a spec gives (:func:`~generator.sizing.shapes.architecture_for`) in
:mod:`generator.sizing.shapes`. Counts cite their papers inline.
"""

from __future__ import annotations

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
    for name, value in (
        ("layers", layers),
        ("hidden", hidden),
        ("heads", heads),
        ("kv_heads", kv_heads),
        ("vocab", vocab),
        ("ffn_hidden", ffn_hidden),
    ):
        _positive_int(name, value)
    if hidden % heads:
        raise SizingError(f"hidden ({hidden}) must be divisible by heads ({heads}); pick heads = hidden/128.")
    if heads % kv_heads:
        raise SizingError(
            f"heads ({heads}) must be divisible by kv_heads ({kv_heads}) for grouped-query attention."
        )
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
                raise SizingError(
                    f"active parameters ({self.active:,}) exceed the total ({self.parameters:,})."
                )

    @property
    def d_head(self) -> int:
        """The width of one attention head: ``head_dim``, or hidden/heads."""
        return self.head_dim or self.hidden // self.heads

    @property
    def counted_parameters(self) -> int:
        """``parameters_of`` applied to this shape (may differ slightly from ``parameters``)."""
        return parameters_of(
            self.layers,
            self.hidden,
            self.heads,
            self.kv_heads,
            self.vocab,
            self.ffn_hidden,
            tied_embeddings=self.tied_embeddings,
            mlp_matrices=self.mlp_matrices,
            head_dim=self.head_dim,
            moe=self.moe,
        )

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
        total, _, used = mlp_parameters(
            self.layers, self.hidden, self.ffn_hidden, self.mlp_matrices, self.moe
        )
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
