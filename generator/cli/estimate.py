"""``trainstack estimate`` (memory for a model and layout, no spec file) and ``trainstack cost SPEC``.

Both are thin: parsing and printing here, the logic in :mod:`generator.estimate`. Neither imports pulumi;
``estimate`` does not even load pydantic, so it answers in a fraction of a second.
"""

from __future__ import annotations

import json
from typing import Any

import click

from generator import sizing
from generator.cli.common import handle
from generator.spec import defaults
from generator.spec.units import UnitError, parse_count


class _Count(click.ParamType):
    """A count as people write it: 70B, 7.5e9, 4M (generator.spec.units.parse_count)."""

    name = "COUNT"

    def __init__(self, what: str) -> None:
        self.what = what

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        try:
            return parse_count(value, self.what)
        except UnitError as e:
            self.fail(str(e), param, ctx)


_POSITIVE = click.IntRange(min=1)


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str)


@click.command("estimate")
@click.option("--params", type=_Count("parameter count"), help="Parameter count, e.g. 7.5e9 or 70B.")
@click.option("--preset", metavar="NAME", help=f"A known model: {', '.join(sorted(sizing.PRESETS))}.")
@click.option(
    "--layers", type=_POSITIVE, help="Transformer layers (with --hidden and --heads: an explicit shape)."
)
@click.option("--hidden", type=_POSITIVE, help="Hidden size.")
@click.option("--heads", type=_POSITIVE, help="Attention heads.")
@click.option(
    "--kv-heads", type=_POSITIVE, help="Key/value heads (grouped-query attention); default = heads."
)
@click.option("--vocab", type=_POSITIVE, help="Vocabulary size (default 32000 for explicit shapes).")
@click.option("--ffn-hidden", type=_POSITIVE, help="MLP width (default: Llama's ~8/3 x hidden rule).")
@click.option(
    "--mlp-matrices",
    type=click.IntRange(2, 3),
    help="MLP matrices per layer: 3 for SwiGLU (Llama, default), 2 for GELU (GPT-3, BLOOM, MT-NLG).",
)
@click.option(
    "--tied-embeddings/--untied-embeddings",
    default=None,
    help="Output projection shares the embedding matrix (GPT-3, BLOOM, MT-NLG); default untied.",
)
@click.option(
    "--head-dim", type=_POSITIVE, help="Width of one attention head when not hidden/heads (Qwen3: 128)."
)
@click.option(
    "--experts",
    type=click.IntRange(min=2),
    help="Mixture of experts: routed experts per MoE layer (with --top-k and --expert-ffn-hidden).",
)
@click.option("--top-k", type=_POSITIVE, help="MoE: routed experts each token uses.")
@click.option("--expert-ffn-hidden", type=_POSITIVE, help="MoE: the MLP width of one expert.")
@click.option(
    "--shared-experts",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="MoE: experts every token passes through besides its top-k (DeepSeek-V3: 1).",
)
@click.option(
    "--dense-layers",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="MoE: leading layers that keep a dense MLP of --ffn-hidden (DeepSeek-V3: 3).",
)
@click.option(
    "--capacity-factor",
    type=click.FloatRange(1, 16),
    help="MoE: expert capacity over the mean load (tokens beyond it dropped); default: dropless.",
)
@click.option(
    "--ep",
    type=_POSITIVE,
    default=1,
    show_default=True,
    help="Expert-parallel degree (MoE): experts split over ep of the dp ranks; must divide dp.",
)
@click.option(
    "--vpp",
    type=_POSITIVE,
    default=1,
    show_default=True,
    help="Interleaved (virtual) pipeline stages per GPU (parallelism.virtual_stages); pp x vpp must divide "
    "the layers.",
)
@click.option(
    "--cp",
    type=_POSITIVE,
    default=1,
    show_default=True,
    help="Context-parallel degree (parallelism.context): each sequence split over cp ranks; dp = gpus / "
    "(tp x pp x cp); the sequence length must be a multiple of 2 x cp.",
)
@click.option(
    "--seq-len",
    type=_POSITIVE,
    default=defaults.SEQUENCE_LENGTH,
    show_default=True,
    help="Sequence length in tokens.",
)
@click.option(
    "--micro-batch",
    type=_POSITIVE,
    default=defaults.MICRO_BATCH_SIZE,
    show_default=True,
    help="Sequences per GPU per step.",
)
@click.option(
    "--precision",
    type=click.Choice(sorted(sizing.PRECISION_BYTES)),
    default=defaults.PRECISION,
    show_default=True,
    help="Training precision (model.precision). fp8: Transformer Engine FP8 GEMMs with bf16 weights and "
    "fp32 optimizer states; needs a GPU with FP8 (H20, L20, Blackwell, H100/H800/H200).",
)
@click.option(
    "--optimizer",
    type=click.Choice(list(sizing.OPTIMIZER_BYTES)),
    default=defaults.OPTIMIZER,
    show_default=True,
)
@click.option(
    "--zero", type=click.IntRange(0, 3), default=defaults.ZERO_STAGE, show_default=True, help="ZeRO stage."
)
@click.option(
    "--framework",
    type=click.Choice(list(sizing.FRAMEWORK_CHOICES)),
    default=defaults.FRAMEWORK,
    show_default=True,
    help="Whose accounting of the model states and of the loss's memory (its cross-entropy): auto = megatron "
    "for ZeRO 0/1, deepspeed for 2/3; zero-paper = the ZeRO paper's formula.",
)
@click.option(
    "--gpus", type=_POSITIVE, help="Total GPUs; dp = gpus / (tp x pp x cp). Default: tp x pp x cp (dp = 1)."
)
@click.option("--tp", type=_POSITIVE, default=1, show_default=True, help="Tensor-parallel degree.")
@click.option("--pp", type=_POSITIVE, default=1, show_default=True, help="Pipeline-parallel degree.")
@click.option(
    "--recompute",
    type=click.Choice(list(sizing.RECOMPUTE_MODES)),
    default=defaults.RECOMPUTE,
    show_default=True,
    help="Activation recomputation (selective = FlashAttention-style: no attention scores stored; selective-op = "
    "torchtitan's op-level policy: saves W_q, W_v, W_1, W_2 and attention outputs, recomputes the rest).",
)
@click.option(
    "--sp/--no-sp",
    default=defaults.SEQUENCE_PARALLEL,
    show_default=True,
    help="Sequence parallelism (only with --tp > 1).",
)
@click.option(
    "--lora-rank", type=_POSITIVE, help="Fine-tune LoRA adapters of this rank instead of all weights."
)
@click.option("--qlora", is_flag=True, help="LoRA over a 4-bit NF4 base (needs --lora-rank).")
@click.option(
    "--paged-optimizer",
    is_flag=True,
    help="A bitsandbytes paged optimizer: states in CUDA managed memory that spills to CPU RAM (QLoRA Sec. 3). "
    "LoRA/QLoRA: the adapters' states; full training: the moments (fp32 master stays on the GPU), host memory "
    "checked, PCIe per step when they do not fit the GPU; FSDP or DeepSpeed, not Megatron-LM or --offload.",
)
@click.option(
    "--offload",
    type=click.Choice(list(sizing.OFFLOAD_MODES)),
    default=defaults.OFFLOAD,
    show_default=True,
    help="CPU offload (parallelism.offload): optimizer = DeepSpeed ZeRO-Offload (--zero 1-3); "
    "optimizer+params = ZeRO-Infinity to CPU (--zero 3) or FSDP CPUOffload; needs --framework "
    "deepspeed or fsdp.",
)
@click.option(
    "--headroom",
    type=click.FloatRange(0, 0.5),
    default=defaults.MEMORY_HEADROOM,
    show_default=True,
    help="Share of the GPU's memory a fit must leave free (parallelism.memory_headroom).",
)
@click.option(
    "--gpu", "gpu", metavar="MODEL", help="Compare with this GPU's memory from the catalog (e.g. A100-80G)."
)
@click.option(
    "--instance-type",
    metavar="TYPE",
    help="The node (an ECS instance type or a Lingjun machine type from the catalog): its GPU (then --gpu may be "
    "left out), and under --offload its vCPUs for the CPU optimizer step and its host memory; without it the step "
    "assumes 6 vCPUs per GPU and says so.",
)
@click.option(
    "--tokens", type=_Count("token count"), help="Training tokens: adds 6ND FLOPs (and GPU-hours with --gpu)."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of the table.")
@handle
def estimate_command(as_json: bool, **options: Any) -> None:
    """Per-GPU memory (and optionally fit and compute) for a model and layout, without a spec file.

    \b
    Examples:
      trainstack estimate --params 7.5e9 --gpus 64 --zero 3
      trainstack estimate --preset llama-2-70b --gpus 128 --tp 8 --pp 4 --gpu A100-80G --tokens 2T
      trainstack estimate --preset llama-2-7b --lora-rank 16 --qlora --zero 0 --gpu A10 --json
      trainstack estimate --preset deepseek-v3 --gpus 2048 --pp 16 --ep 64 --recompute full --gpu H20 --tokens 14.8T
      trainstack estimate --layers 105 --hidden 20480 --heads 128 --ffn-hidden 81920 --vocab 51200 \\
          --mlp-matrices 2 --tied-embeddings --gpus 4480 --tp 8 --pp 35 --gpu A100-80G
      trainstack estimate --preset llama-3-70b --gpus 64 --zero 3 --framework deepspeed --offload optimizer \\
          --instance-type ecs.gn7e-c16g1.32xlarge --tokens 1T

    \b
    Refusals (exit 2) and the notes under "Notes" carry a code (TSE0nn, TSE1nn; docs/codes.md); --json prints
    each note as {"code", "fields", "text"} in "warnings".
    """
    import generator.estimate as est

    try:
        result = est.estimate(**options)  # every option but --json is an argument of the estimate, by name
    except est.EstimateError as e:
        if as_json:  # the refusal as data on stdout too; the sentence still goes to stderr, exit 2
            click.echo(_dump({"error": {"code": e.code, "fields": e.fields, "text": str(e)}}))
        raise
    click.echo(_dump(result) if as_json else est.estimate_text(result), nl=as_json)


@click.command("cost")
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of the tables.")
@handle
def cost_command(spec: str, as_json: bool) -> None:
    """What SPEC's plan costs per hour, per day and for the whole run, with the price data behind each line.

    Prices marked ESTIMATE are trainstack estimates, not published list prices; the runners-up are the
    other instance types that fit, with their cost.
    """
    import generator.estimate as est
    from generator import api
    from generator.catalog import load_catalog

    catalog = load_catalog()
    report = est.cost_report(api.plan(spec, catalog), catalog)
    click.echo(_dump(report) if as_json else est.cost_text(report), nl=as_json)


COMMANDS: list[click.Command] = [estimate_command, cost_command]
