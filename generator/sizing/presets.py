"""The published model shapes a spec or ``trainstack estimate`` names with ``preset``.

Apart from :mod:`generator.sizing.architecture` because it is data (one row per released model, with its
paper and config), not arithmetic, and grows with every model family added.
"""

from __future__ import annotations

from generator.sizing.architecture import Architecture
from generator.sizing.moe import MoE


def _preset(
    name: str,
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    vocab: int,
    ffn: int,
    parameters: float,
    citation: str,
    **extra: object,
) -> Architecture:
    return Architecture(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        vocab=vocab,
        ffn_hidden=ffn,
        parameters=int(parameters),
        source=f"preset {name} ({citation})",
        **extra,  # type: ignore[arg-type]
    )


# Shapes are from the papers' architecture tables and the released Hugging Face config.json
# files; parameter counts are the published (rounded) counts of the released checkpoints.
PRESETS: dict[str, Architecture] = {
    a.source.split()[1]: a  # source starts with "preset <name> (...)"
    for a in (
        _preset(
            "llama-2-7b",
            32,
            4096,
            32,
            32,
            32000,
            11008,
            6.74e9,
            "Touvron et al. 2023, Llama 2, Table 1 + HF config; 6.74B params",
        ),
        _preset(
            "llama-2-13b",
            40,
            5120,
            40,
            40,
            32000,
            13824,
            13.0e9,
            "Touvron et al. 2023, Llama 2, Table 1 + HF config; 13.0B params",
        ),
        _preset(
            "llama-2-70b",
            80,
            8192,
            64,
            8,
            32000,
            28672,
            69.0e9,
            "Touvron et al. 2023, Llama 2, Table 1 (GQA) + HF config; 69.0B params",
        ),
        _preset(
            "llama-65b",
            80,
            8192,
            64,
            64,
            32000,
            22016,
            65.2e9,
            "Touvron et al. 2023, LLaMA, Table 2 + HF config; 65.2B params; the QLoRA paper's 65B base",
        ),
        _preset(
            "llama-3-8b",
            32,
            4096,
            32,
            8,
            128256,
            14336,
            8.03e9,
            "Dubey et al. 2024, Llama 3, Table 3 + HF config; 8.03B params",
        ),
        _preset(
            "llama-3-70b",
            80,
            8192,
            64,
            8,
            128256,
            28672,
            70.6e9,
            "Dubey et al. 2024, Llama 3, Table 3 + HF config; 70.6B params",
        ),
        _preset(
            "llama-3-405b",
            126,
            16384,
            128,
            8,
            128256,
            53248,
            405e9,
            "Dubey et al. 2024, Llama 3, Table 3 + HF config; 405B params; trained with pp=16 (Sec. 3.3.2)",
        ),
        _preset(
            "qwen2-7b",
            28,
            3584,
            28,
            4,
            152064,
            18944,
            7.62e9,
            "Yang et al. 2024, Qwen2, Table 1 + HF config; 7.62B params in the released checkpoint",
        ),
        _preset(
            "qwen2-72b",
            80,
            8192,
            64,
            8,
            152064,
            29568,
            72.7e9,
            "Yang et al. 2024, Qwen2, Table 1 + HF config; 72.7B params",
        ),
        _preset(
            "gpt3-175b",
            96,
            12288,
            96,
            96,
            50257,
            4 * 12288,
            175e9,
            "Brown et al. 2020, GPT-3, Table 2.1; GELU MLP 4h, tied embeddings; 175B params",
            tied_embeddings=True,
            mlp_matrices=2,
        ),
        _preset(
            "bloom-176b",
            70,
            14336,
            112,
            112,
            250880,
            4 * 14336,
            176.2e9,
            "BigScience 2022, BLOOM, arXiv:2211.05100 Table 3 + HF config; GELU MLP 4h, tied embeddings; "
            "176B params; trained with tp=4 pp=12",
            tied_embeddings=True,
            mlp_matrices=2,
        ),
        _preset(
            "mt-nlg-530b",
            105,
            20480,
            128,
            128,
            51200,
            4 * 20480,
            530e9,
            "Smith et al. 2022, Megatron-Turing NLG 530B, arXiv:2201.11990 Sec. 2.3; GELU MLP 4h, tied "
            "embeddings; 530B params",
            tied_embeddings=True,
            mlp_matrices=2,
        ),
        _preset(
            "megatron-1t",
            128,
            25600,
            160,
            160,
            51200,
            4 * 25600,
            1008e9,
            "Narayanan et al. 2021, Megatron-LM PTD-P, Table 1 1T row; vocab 51200, "
            "GELU MLP 4h, tied embeddings; 1008B params",
            tied_embeddings=True,
            mlp_matrices=2,
        ),
        # Mixture-of-experts presets: ``parameters`` and ``active`` are the published total and active counts.
        _preset(
            "mixtral-8x7b",
            32,
            4096,
            32,
            8,
            32000,
            14336,
            46.7e9,
            "Jiang et al. 2024, Mixtral of Experts, arXiv:2401.04088, Sec. 2 + HF config "
            "mistralai/Mixtral-8x7B-v0.1; 8 experts top-2; 46.7B total, 12.9B active",
            moe=MoE(experts=8, top_k=2, expert_ffn_hidden=14336),
            active=int(12.9e9),
        ),
        _preset(
            "mixtral-8x22b",
            56,
            6144,
            48,
            8,
            32768,
            16384,
            141e9,
            "Mistral AI 2024-04-17, 'Cheaper, Better, Faster, Stronger' (mistral.ai/news/mixtral-8x22b) + HF "
            "config mistralai/Mixtral-8x22B-v0.1; 8 experts top-2; 141B total, 39B active",
            moe=MoE(experts=8, top_k=2, expert_ffn_hidden=16384),
            active=int(39e9),
        ),
        _preset(
            "qwen3-30b-a3b",
            48,
            2048,
            32,
            4,
            151936,
            6144,
            30.5e9,
            "Qwen Team 2025, Qwen3 Technical Report, arXiv:2505.09388, Table 2 + HF config Qwen/Qwen3-30B-A3B; "
            "head_dim 128, 128 experts top-8 of width 768, no shared expert; 30.5B total, 3.3B active",
            head_dim=128,
            moe=MoE(experts=128, top_k=8, expert_ffn_hidden=768),
            active=int(3.3e9),
        ),
        _preset(
            "qwen3-235b-a22b",
            94,
            4096,
            64,
            4,
            151936,
            12288,
            235e9,
            "Qwen Team 2025, Qwen3 Technical Report, arXiv:2505.09388, Table 2 + HF config "
            "Qwen/Qwen3-235B-A22B; head_dim 128, 128 experts top-8 of width 1536, no shared expert; "
            "235B total, 22B active",
            head_dim=128,
            moe=MoE(experts=128, top_k=8, expert_ffn_hidden=1536),
            active=int(22e9),
        ),
        _preset(
            "deepseek-v3",
            61,
            7168,
            128,
            128,
            129280,
            18432,
            671e9,
            "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, arXiv:2412.19437, Sec. 4.2 + HF config "
            "deepseek-ai/DeepSeek-V3; 256 routed experts top-8 of width 2048 + 1 shared, first 3 layers dense "
            "(ffn 18432); 671B total, 37B active (the 14B multi-token-prediction module not counted); its "
            "multi-head latent attention is counted as plain 128-head attention (within ~10% per layer); "
            "trained with pp=16, ep=64 (Sec. 3.2)",
            moe=MoE(experts=256, top_k=8, expert_ffn_hidden=2048, shared_experts=1, dense_layers=3),
            active=int(37e9),
        ),
    )
}
