"""Mixture-of-experts layers: their shape (:class:`MoE`), parameter counts (total, routed-expert and active),
the activation memory of a routed MLP, and the all-to-all traffic of expert parallelism.

A MoE decoder replaces the MLP of its MoE layers by ``experts`` routed expert MLPs of width ``expert_ffn_hidden``,
of which a router picks ``top_k`` per token, plus ``shared_experts`` that every token passes through (DeepSeekMoE,
Dai et al. 2024, arXiv:2401.06066, Sec. 3). The first ``dense_layers`` layers keep a dense MLP of ``ffn_hidden``
(DeepSeek-V3's ``first_k_dense_replace`` = 3). A token's FLOPs follow its *active* parameters; memory holds all of
them, with the routed experts sharded over the expert-parallel group (Megatron-Core MoE README,
https://github.com/NVIDIA/Megatron-LM/tree/main/megatron/core/transformer/moe: "expert parallelism", the expert
weights and their optimizer states sharded over the expert data-parallel group of size dp/ep).

Pure arithmetic like the rest of :mod:`generator.sizing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from generator.sizing.common import SizingError, _positive_int

# Token-imbalance reserve of a dropless router: the most loaded expert rank receives more than its average share
# of tokens. Switch Transformer (Fedus, Zoph, Shazeer 2021, arXiv:2101.03961, Sec. 2.2 and Table 1) trains with an
# expert capacity factor of 1.0-1.25, i.e. buffers 25% over the mean; a dropless MoE (Megatron-Core's default,
# DeepSeek-V3's auxiliary-loss-free balancing) has no cap, so trainstack reserves the same 25% for the routed
# activations (an assumption). With ``capacity_factor`` given, tokens over capacity are dropped and the buffers
# are exactly that factor over the mean.
DEFAULT_IMBALANCE = Fraction(5, 4)

# Known MoE model names (lower case substrings): a spec that names one of these but gives only a parameter count
# would be sized as a dense model. Sources: the models' Hugging Face model cards.
KNOWN_MOE_NAMES = (
    "deepseek-v2",
    "deepseek-v3",
    "deepseek-r1",
    "deepseek-moe",
    "mixtral",
    "qwen1.5-moe",
    "qwen2-57b-a14b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "qwen3-coder-480b",
    "dbrx",
    "grok-1",
    "arctic",
    "olmoe",
    "jamba",
    "kimi-k2",
    "glm-4.5",
    "gpt-oss",
    "llama-4",
    "hunyuan-a13b",
    "ernie-4.5",
)


@dataclass(frozen=True, slots=True)
class MoE:
    """The expert layers of a MoE decoder. ``capacity_factor`` None is a dropless router."""

    experts: int
    top_k: int
    expert_ffn_hidden: int
    shared_experts: int = 0
    dense_layers: int = 0
    capacity_factor: float | None = None

    def __post_init__(self) -> None:
        for name in ("experts", "top_k", "expert_ffn_hidden"):
            _positive_int(name, getattr(self, name))
        for name in ("shared_experts", "dense_layers"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise SizingError(f"moe.{name} must be a whole number >= 0, got {v!r}.")
        if self.top_k > self.experts:
            raise SizingError(
                f"moe.top_k ({self.top_k}) is more than the {self.experts} experts a token can be "
                "routed to; use top_k <= experts."
            )
        cf = self.capacity_factor
        if cf is not None and (isinstance(cf, bool) or not isinstance(cf, (int, float)) or not 1 <= cf <= 16):
            raise SizingError(
                f"moe.capacity_factor must be from 1 to 16 (or left out for a dropless router), got {cf!r}."
            )

    @property
    def imbalance(self) -> Fraction:
        """The routed activations' headroom over the mean: the capacity factor, or DEFAULT_IMBALANCE if dropless."""
        if self.capacity_factor is None:
            return DEFAULT_IMBALANCE
        return Fraction(self.capacity_factor).limit_denominator(1000)


def moe_layers(layers: int, moe: MoE) -> int:
    if moe.dense_layers >= layers:
        raise SizingError(
            f"moe.dense_layers ({moe.dense_layers}) leaves none of the {layers} layers for experts; "
            f"use dense_layers < {layers}."
        )
    return layers - moe.dense_layers


def mlp_parameters(
    layers: int, hidden: int, ffn_hidden: int, mlp_matrices: int, moe: MoE | None
) -> tuple[int, int, int]:
    """(all MLP parameters, routed-expert parameters, MLP parameters a token uses) summed over the layers.

    A MoE layer holds (experts + shared) x mlp_matrices x h x f_e plus the router h x experts; a token uses
    (top_k + shared) experts and the router. Dense layers hold mlp_matrices x h x ffn_hidden."""
    dense_mlp = mlp_matrices * hidden * ffn_hidden
    if moe is None:
        return layers * dense_mlp, 0, layers * dense_mlp
    n = moe_layers(layers, moe)
    expert = mlp_matrices * hidden * moe.expert_ffn_hidden
    router = hidden * moe.experts
    routed = n * moe.experts * expert
    total = moe.dense_layers * dense_mlp + routed + n * (moe.shared_experts * expert + router)
    active = moe.dense_layers * dense_mlp + n * ((moe.top_k + moe.shared_experts) * expert + router)
    return total, routed, active


def routed_mlp_activation_delta(hidden: int, tp: int, sp: bool, mlp_matrices: int, moe: MoE) -> Fraction:
    """Bytes per (s*b*h) a MoE layer stores beyond a dense layer's [SP] Table 2 MLP term (16-bit activations).

    [SP]'s MLP term is 19 s*b*h (input 2, the two 4h-wide intermediates 16, dropout mask 1); without sequence
    parallelism 3 of it stay replicated over tp. A MoE layer stores instead the router input 2 and its fp32 logits
    4*E/h, and for each of the (top_k x imbalance + shared) copies of a token an expert receives: the dispatched
    input 2 and the expert's intermediates 2 x mlp_matrices x f_e / h (SwiGLU: gate, up and their product; GELU:
    the two activations), split over the expert tensor-parallel group (= tp, Megatron-Core's default)."""
    copies = moe.top_k * moe.imbalance + moe.shared_experts
    routed = copies * (2 + Fraction(2 * mlp_matrices * moe.expert_ffn_hidden, hidden)) / tp
    router = 2 + Fraction(4 * moe.experts, hidden)
    if sp:
        return router / tp + routed - Fraction(19, tp)
    return router + routed - (3 + Fraction(16, tp))


def alltoall_bytes_per_token(hidden: int, layers: int, moe: MoE, precision_bytes: int = 2) -> int:
    """Bytes one token sends through expert-parallel all-to-all over a training step: in each MoE layer its hidden
    state goes to top_k experts and comes back (dispatch and combine) in the forward pass, and the same again for
    the gradients in the backward pass: 4 x top_k x h x bytes per MoE layer (Megatron-Core's alltoall token
    dispatcher; DeepSeek-V3 technical report, arXiv:2412.19437, Sec. 3.2.2, counts the same dispatch and combine)."""
    return 4 * moe.top_k * hidden * precision_bytes * moe_layers(layers, moe)


def name_looks_moe(*names: str | None) -> str | None:
    """The known MoE model name any of ``names`` contains (case-insensitive), or None."""
    for name in names:
        low = (name or "").lower()
        for known in KNOWN_MOE_NAMES:
            if known in low:
                return known
    return None
