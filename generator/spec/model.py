"""The spec language: what a training run needs, as the user writes it in YAML.

These pydantic models are the edge of the system: they parse and type-check the YAML (``extra="forbid"``
so unknown keys are errors) and are frozen, so the planner can treat a spec as a value. Facts that need the
catalog (is this GPU known, is this zone in the region) are checked in :mod:`generator.plan.check`.
``docs/spec.md`` documents every field; keep the two in step (a test checks that every field is documented).
"""

from __future__ import annotations

import ipaddress
import re
import types
import typing
from typing import Annotated, Any, Literal, TypeAlias, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from generator.errors import clip, excerpt
from generator.spec import defaults, limits, units
from generator.spec import weights as weights_source
from generator.spec.moe import MoESpec
from generator.spec.tags import TagKey, TagValue, spec_error

SPEC_VERSION = 1

NAME_RE = r"^[a-z][a-z0-9-]{1,38}[a-z0-9]$"


def _shown(value: Any) -> str:
    """A number as the user probably wrote it: 1e30, not 1e+30 or 1000000000000000019884624838656."""
    if isinstance(value, str):
        return value
    return f"{value:,}" if isinstance(value, int) else f"{value:g}".replace("e+", "e")


def _unit(parser: Any, what: str, maximum: int | None = None, too_large: str = "", hint: str = "") -> Any:
    """A units parser as a pydantic before-validator, with an upper bound (``too_large`` says it in words)."""
    def parse(value: Any) -> Any:
        try:
            n = parser(value, what)
        except units.UnitError as e:
            raise ValueError(str(e)) from None
        if maximum is not None and n > maximum:
            raise spec_error(f"{_shown(value)} is too large: {too_large}", hint)
        return n

    return parse


def _auto_or(parser: Any, what: str, maximum: int | None = None, too_large: str = "", hint: str = "") -> Any:
    inner = _unit(parser, what, maximum, too_large, hint)

    def parse(value: Any) -> Any:
        if value == "auto":
            return "auto"
        return inner(value)

    return parse


def _count_schema(maximum: int) -> dict[str, Any]:
    return {"anyOf": [{"type": "integer", "minimum": 1, "maximum": maximum},
                      {"type": "string", "pattern": r"^[0-9._eE+-]+\s*([KMBGTPkmbgtp]|[KMGTkmgt][iI])?$"}]}


_BYTES_SCHEMA = {"anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": limits.MAX_BYTES // 2**30},
                           {"type": "string", "pattern": r"^[0-9._]+([eE][+-]?[0-9]+)?\s*([KMGTPkmgtp][iI]?)?[Bb]$"}]}
_SECONDS_SCHEMA = {"anyOf": [{"type": "number", "exclusiveMinimum": 0,
                              "maximum": limits.MAX_CHECKPOINT_INTERVAL_SECONDS // 60},
                             {"type": "string",
                              "pattern": r"^[0-9.]+([eE][+-]?[0-9]+)?\s*([sS]|[sS][eE][cC]|[mM]|[mM][iI][nN]|[hH]|[dD])$"}]}


def _count(maximum: int, too_large: str, hint: str) -> BeforeValidator:
    return BeforeValidator(_unit(units.parse_count, "count", maximum, too_large, hint))


ParameterCount: TypeAlias = Annotated[int, _count(limits.MAX_PARAMETERS, "at most 100T (10^14) parameters",
                                                  "the largest published models have about 2T parameters; check "
                                                  "the suffix (B = 10^9, T = 10^12) and the exponent"),
                                      WithJsonSchema(_count_schema(limits.MAX_PARAMETERS))]
TokenCount: TypeAlias = Annotated[int, _count(limits.MAX_TOKENS, "at most 1,000T (10^15) tokens",
                                              "the largest published training runs use tens of T tokens; check "
                                              "the suffix (B = 10^9, T = 10^12) and the exponent"),
                                  WithJsonSchema(_count_schema(limits.MAX_TOKENS))]
BatchTokens: TypeAlias = Annotated[int, _count(limits.MAX_GLOBAL_BATCH_TOKENS, "at most 10B (10^10) tokens per "
                                               "optimizer step", "published runs use 4M to 64M tokens per step, "
                                               "e.g. global_batch_tokens: 4Mi"),
                                   WithJsonSchema(_count_schema(limits.MAX_GLOBAL_BATCH_TOKENS))]
_SIZE_TOO_LARGE = "at most 100 PiB"
_SIZE_HINT = "a bare number is GiB; write the unit, e.g. 500GiB or 12TiB"
Bytes = Annotated[int, BeforeValidator(_unit(units.parse_bytes, "size", limits.MAX_BYTES, _SIZE_TOO_LARGE,
                                             _SIZE_HINT)), WithJsonSchema(_BYTES_SCHEMA)]
AutoBytes = Annotated[
    int | Literal["auto"],
    BeforeValidator(_auto_or(units.parse_bytes, "size", limits.MAX_BYTES, _SIZE_TOO_LARGE, _SIZE_HINT)),
    WithJsonSchema({"anyOf": [{"const": "auto"}, *_BYTES_SCHEMA["anyOf"]]}),
]
AutoInterval = Annotated[
    int | Literal["auto"],
    BeforeValidator(_auto_or(units.parse_seconds, "duration", limits.MAX_CHECKPOINT_INTERVAL_SECONDS,
                             "a checkpoint interval is at most 30 days (30d)",
                             "write auto for the Young/Daly optimum, or e.g. 2h; a bare number is minutes")),
    WithJsonSchema({"anyOf": [{"const": "auto"}, *_SECONDS_SCHEMA["anyOf"]]}),
]
PositiveInt = Annotated[int, Field(gt=0)]
AutoInt = Annotated[int, Field(gt=0, le=100_000)] | Literal["auto"]


def _accepts(annotation: Any) -> frozenset[str]:
    """What kinds of scalar a field's annotation takes: "bool", "number", "auto" (containers are not looked into)."""
    out: set[str] = set()

    def walk(a: Any) -> None:
        origin = typing.get_origin(a)
        if a is bool:
            out.add("bool")
        elif a in (int, float):
            out.add("number")
        elif origin is Literal:
            for v in typing.get_args(a):
                out.add("bool" if isinstance(v, bool) else "number" if isinstance(v, (int, float)) else
                        "auto" if v == "auto" else "text")
        elif origin is Annotated:
            walk(typing.get_args(a)[0])
        elif origin in (Union, types.UnionType):
            for x in typing.get_args(a):
                walk(x)

    walk(annotation)
    return frozenset(out)


_ACCEPTS: dict[tuple[type, str], frozenset[str]] = {}
_YAML_BOOL_WORDS = ("true", "false", "yes", "no", "on", "off")  # YAML 1.1 booleans, which YAML 1.2 reads as text


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)

    @field_validator("*", mode="before")
    @classmethod
    def _booleans_are_not_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """pydantic's lax mode reads true as 1 and 1 as true; in a spec either is a mistake."""
        key = (cls, info.field_name or "")
        if key not in _ACCEPTS:
            _ACCEPTS[key] = _accepts(cls.model_fields[info.field_name].annotation) if info.field_name else frozenset()
        accepts = _ACCEPTS[key]
        if isinstance(value, bool):
            if "number" in accepts and "bool" not in accepts:
                auto = " (or auto)" if "auto" in accepts else ""
                raise spec_error(f"expected a number{auto}, got {str(value).lower()}",
                                 "true and false are not numbers; write the number itself")
        elif "bool" in accepts and "number" not in accepts:
            if isinstance(value, (int, float)):
                raise spec_error(f"expected true or false, got {_shown(value)}", "numbers are not booleans here; "
                                 "write true or false")
            if isinstance(value, str) and value.strip().lower() not in _YAML_BOOL_WORDS and (
                    "auto" not in accepts or value != "auto"):
                raise spec_error(f"expected true or false, got {value!r}", "write true or false"
                                 + (", or auto" if "auto" in accepts else ""))
        return value


class ArchitectureSpec(_Strict):
    """An explicit transformer shape (wins over ``preset`` and ``parameters``)."""

    layers: Annotated[int, Field(gt=0, le=1000)]
    hidden: Annotated[int, Field(gt=0, le=1_000_000)]
    heads: Annotated[int, Field(gt=0, le=10_000)]
    kv_heads: Annotated[int, Field(gt=0, le=10_000)] | None = None
    vocab: Annotated[int, Field(gt=0, le=10_000_000)] = 32000
    ffn_hidden: Annotated[int, Field(gt=0, le=10_000_000)] | None = None
    tied_embeddings: bool = False
    mlp_matrices: Literal[2, 3] = 3
    head_dim: Annotated[int, Field(gt=0, le=100_000)] | None = None  # width of a head when not hidden/heads (Qwen3)

    @model_validator(mode="after")
    def _divides(self) -> ArchitectureSpec:
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        return self


class FinetuneSpec(_Strict):
    method: Literal["full", "lora", "qlora"] = "full"
    lora_rank: Annotated[int, Field(gt=0, le=4096)] = 16
    paged_optimizer: bool = False  # LoRA/QLoRA only: generator/spec/conflicts.py, by the spec check


class ModelSpec(_Strict):
    parameters: ParameterCount | None = None
    preset: str | None = None
    architecture: ArchitectureSpec | None = None
    moe: MoESpec | None = None  # mixture of experts (generator/spec/moe.py)
    precision: Literal["bf16", "fp16", "fp32", "fp8"] = defaults.PRECISION
    optimizer: Literal["adamw", "adam", "sgd", "adafactor", "lion", "adamw-8bit", "adamw-bf16"] = defaults.OPTIMIZER
    sequence_length: Annotated[int, Field(gt=0, le=10_000_000)] = defaults.SEQUENCE_LENGTH
    micro_batch_size: Annotated[int, Field(gt=0, le=4096)] = defaults.MICRO_BATCH_SIZE
    global_batch_tokens: BatchTokens | None = None
    tokens: TokenCount | None = None
    finetune: FinetuneSpec = FinetuneSpec()
    # base weights to start from: modelscope://ORG/NAME[@REVISION] or oss://BUCKET/PREFIX/ (generator/spec/weights.py)
    weights: Annotated[str, Field(pattern=weights_source.WEIGHTS_RE, max_length=weights_source.MAX_WEIGHTS_CHARS)] | None = None

    @field_validator("weights", mode="before")
    @classmethod
    def _weights(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        try:
            return weights_source.parse(v).uri
        except weights_source.WeightsError as e:
            raise spec_error(e.message, e.hint) from None

    @model_validator(mode="after")
    def _needs_a_size(self) -> ModelSpec:
        if self.parameters is None and self.preset is None and self.architecture is None:
            raise ValueError("say how large the model is: give parameters (e.g. 70B), a preset or an architecture")
        if self.parameters is not None and (self.preset is not None or self.architecture is not None):
            raise ValueError("give the model's size one way: parameters, or a preset, or an architecture "
                             "(the parameter count is derived from a preset or an architecture)")
        return self


class ParallelismSpec(_Strict):
    tensor: AutoInt = "auto"
    pipeline: AutoInt = "auto"
    data: AutoInt = "auto"
    expert: AutoInt = "auto"  # expert-parallel degree (MoE models; 1 for dense)
    context: AutoInt = "auto"  # context-parallel degree: the sequence split over cp ranks (long context)
    virtual_stages: Annotated[int, Field(ge=1, le=64)] = 1  # interleaved 1F1B chunks per pipeline stage
    framework: Literal["auto", "megatron", "deepspeed", "fsdp", "zero-paper"] = defaults.FRAMEWORK
    zero_stage: Annotated[int, Field(ge=0, le=3)] = defaults.ZERO_STAGE
    sequence_parallel: bool = defaults.SEQUENCE_PARALLEL
    recompute: Literal["none", "selective", "full"] = defaults.RECOMPUTE
    offload: Literal["none", "optimizer", "optimizer+params"] = defaults.OFFLOAD  # CPU offload (DeepSpeed, FSDP)
    memory_headroom: Annotated[float, Field(ge=0, le=0.5)] = defaults.MEMORY_HEADROOM

    @field_validator("memory_headroom", mode="before")
    @classmethod
    def _a_share(cls, v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0.5 < v <= 100:
            raise spec_error(f"{_shown(v)} is not a share of the GPU's memory (at most 0.5)",
                             "write a fraction: 0.05 keeps 5% of each GPU's memory free")
        return v

    @field_validator("offload")
    @classmethod
    def _framework_that_offloads(cls, v: str, info: ValidationInfo) -> str:
        if v != "none" and info.data.get("framework") in ("megatron", "zero-paper"):
            raise spec_error(f"offload {v} runs on DeepSpeed (ZeRO-Offload, ZeRO-Infinity) or FSDP (CPUOffload); "
                             f"trainstack does not model it for framework {info.data.get('framework')}",
                             "use framework: deepspeed (zero_stage 1-3; optimizer+params needs 3) or fsdp "
                             "(optimizer+params), or offload: none")
        return v

    @field_validator("zero_stage")
    @classmethod
    def _stage_the_framework_runs(cls, v: int, info: ValidationInfo) -> int:
        if v >= 2 and info.data.get("framework") == "megatron":
            raise spec_error(f"framework megatron runs ZeRO stage 0 or 1 (its distributed optimizer shards the "
                             f"optimizer states only), not {v}",
                             "use zero_stage: 1, or framework: deepspeed or fsdp for stages 2 and 3")
        return v


class ComputeSpec(_Strict):
    gpu: str = "auto"
    nodes: AutoInt = "auto"
    max_nodes: Annotated[int, Field(gt=0, le=100_000)] = 512
    gpus_per_node: Literal[1, 2, 4, 8] | Literal["auto"] = "auto"  # noqa: PYI030 (two enums in the schema)
    bare_metal: Literal["any", "prefer", "require", "avoid"] = "any"
    instance_types: tuple[str, ...] = ()
    platform: Literal["ecs", "lingjun", "pai-dlc"] = "ecs"
    image_id: Annotated[str, Field(pattern=limits.IMAGE_ID_RE, max_length=limits.MAX_IMAGE_ID_CHARS)] | None = None
    # an ACR image pinned by digest that trainstack-launch runs torchrun in (instead of the host's PyTorch)
    container_image: Annotated[str, Field(pattern=limits.CONTAINER_IMAGE_RE,
                                          max_length=limits.MAX_CONTAINER_IMAGE_CHARS)] | None = None
    # the ACR Enterprise Edition instance (cri-...) of a private container_image: nodes log in with their role
    container_registry_instance: Annotated[str, Field(pattern=limits.ACR_INSTANCE_ID_RE)] | None = None
    # an existing ECS key pair for administrators (null: none on ECS, where access is through Cloud Assistant)
    admin_key_pair: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9:_.-]{1,127}$")] | None = None
    system_disk_gib: Annotated[int, Field(ge=40, le=2048)] = 200
    data_disk_gib: Annotated[int, Field(ge=0, le=32768)] = 0
    paused: bool = False  # no GPU nodes; everything else (network, storage, bucket, role) stays

    @field_validator("data_disk_gib")
    @classmethod
    def _disk(cls, v: int) -> int:
        if 0 < v < 20:
            raise ValueError("an ESSD data disk is at least 20 GiB; use 0 for none")
        return v

    @field_validator("container_image", mode="before")
    @classmethod
    def _container(cls, v: Any) -> Any:
        if isinstance(v, str) and limits.container_image_parts(v) is None:
            raise spec_error(f"{excerpt(v)} is not an Alibaba Cloud Container Registry image pinned by digest",
                             "write REGISTRY/NAMESPACE/REPOSITORY[:TAG]@sha256:DIGEST with an ACR registry "
                             "(registry[-vpc].REGION.aliyuncs.com or INSTANCE-registry[-vpc].REGION.cr.aliyuncs.com); "
                             "the digest (64 hex digits) pins the image: `docker inspect --format "
                             "'{{index .RepoDigests 0}}' IMAGE` prints it")
        return v

    @field_validator("image_id", mode="before")
    @classmethod
    def _image(cls, v: Any) -> Any:
        if isinstance(v, str) and not (re.fullmatch(limits.IMAGE_ID_RE, v) and len(v) <= limits.MAX_IMAGE_ID_CHARS):
            raise spec_error(f"{v[:60]!r}{'...' if len(v) > 60 else ''} is not an image id: use 1-128 letters, digits, "
                             "'_', '.' and '-'",
                             "an ECS image id looks like m-bp1g7004ksh0oeuc****, a Lingjun image id like "
                             "i190982651690986913088")
        return v


def _cidr(value: str) -> str:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as e:
        raise ValueError(f"{excerpt(value)} is not a network in CIDR form such as 10.0.0.0/16 ({clip(str(e), 120)})"
                         ) from None
    if net.version != 4:
        raise ValueError("only IPv4 networks are supported")
    return str(net)


class NetworkSpec(_Strict):
    vpc_cidr: str = "10.0.0.0/16"
    rdma: bool | Literal["auto"] = "auto"
    jumbo_frames: bool = True
    egress: Literal["nat", "none"] = "nat"
    admin_cidrs: tuple[str, ...] = ()

    @field_validator("vpc_cidr")
    @classmethod
    def _vpc(cls, v: str) -> str:
        v = _cidr(v)
        net = ipaddress.IPv4Network(v)  # _cidr accepts IPv4 networks only
        if not any(net.subnet_of(p) for p in map(ipaddress.IPv4Network, ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))):
            raise ValueError("a VPC needs a private range: a part of 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16")
        if not 8 <= net.prefixlen <= 24:
            raise ValueError("a VPC CIDR must be between /8 and /24")
        return v

    @field_validator("admin_cidrs")
    @classmethod
    def _admin(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_cidr(c) for c in v)


class DatasetSpec(_Strict):
    source: Annotated[str, Field(pattern=limits.OSS_SOURCE_RE)]
    size: Bytes
    path: Annotated[str, Field(pattern=limits.FILESET_PATH_RE, max_length=limits.MAX_PATH_CHARS)] = "/datasets/"

    @field_validator("source", mode="before")
    @classmethod
    def _oss(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        m = re.fullmatch(r"oss://([a-z0-9][a-z0-9-]{1,61}[a-z0-9])(/.*)?", v, flags=re.DOTALL)
        if not m:
            raise spec_error(f"{v[:80]!r} is not an OSS location: write oss://bucket/prefix/",
                             "a bucket name is 3-63 lowercase letters, digits and '-', e.g. oss://my-corpus/tokenized/")
        wrong = limits.oss_prefix_problem(m.group(2)[1:]) if m.group(2) else None
        if wrong:
            raise spec_error(f"{v[:80]!r} is not a usable OSS location: {wrong}",
                             "quotes, backticks, '$', '\\', spaces and control characters are refused because the "
                             "location is written into the generated program; e.g. oss://my-corpus/tokenized/")
        return v

    @field_validator("path", mode="before")
    @classmethod
    def _path(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        if len(v) > limits.MAX_PATH_CHARS:
            raise spec_error(f"the fileset path is {len(v):,} characters; at most {limits.MAX_PATH_CHARS:,}")
        if not re.fullmatch(limits.FILESET_PATH_RE, v):
            raise spec_error("a fileset path starts and ends with '/' and holds letters, digits, '.', '_', '-' and "
                             "'/', e.g. /datasets/")
        segments = v.strip("/").split("/")
        if any(seg in (".", "..") for seg in segments):
            raise spec_error(f"{excerpt(v, 80)} has a '.' or '..' segment; a fileset path is written from the file system's root",
                             "e.g. /datasets/ or /datasets/corpus-2026/")
        kept = [seg for seg in segments if seg]
        if not kept:
            raise spec_error("a fileset cannot be the file system's root directory", "e.g. /datasets/")
        return "/" + "/".join(kept) + "/"


class StorageSpec(_Strict):
    shared: Literal["auto", "cpfs", "extreme-nas", "none"] = "auto"
    capacity: AutoBytes = "auto"
    storage_class: Literal["auto", "advance_100", "advance_200", "standard", "advance"] = "auto"
    mount_path: Annotated[str, Field(pattern=limits.MOUNT_PATH_RE, max_length=limits.MAX_PATH_CHARS)] = "/mnt/shared"
    dataset: DatasetSpec | None = None

    @field_validator("mount_path", mode="before")
    @classmethod
    def _mount(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        if len(v) > limits.MAX_PATH_CHARS:
            raise spec_error(f"the mount path is {len(v):,} characters; at most {limits.MAX_PATH_CHARS:,}",
                             "use e.g. /mnt/shared")
        if not re.fullmatch(limits.MOUNT_PATH_RE, v):
            raise spec_error(f"{v[:80]!r} is not an absolute path of letters, digits, '.', '_', '-' and '/'",
                             "use e.g. /mnt/shared")
        norm = limits.normalize_abs_path(v)
        system = limits.system_dir(norm)
        if system == "/":
            raise spec_error(f"{excerpt(v, 80)} is the root directory" + (f" (it normalizes to {norm})" if v != "/" else "")
                             + "; mounting over it would hide the whole system", "use e.g. /mnt/shared")
        if system is not None:
            where = "is" if norm == system else "is under"
            normalized = f" (it normalizes to {norm})" if norm != v else ""
            raise spec_error(f"{excerpt(v, 80)}{normalized} {where} {system}, a system directory; mounting the shared file "
                             "system there would hide the operating system's files", "use e.g. /mnt/shared")
        return norm


class MilestonesSpec(_Strict):
    """checkpoints.milestones: checkpoints kept forever beside keep_last's window (docs/operations.md)."""

    every: Annotated[int, Field(ge=2, le=100_000)]  # one checkpoint in every N (a window of N intervals) is kept


class CheckpointSpec(_Strict):
    enabled: bool = True
    bucket: str | None = None
    region: str | None = None
    prefix: str = "checkpoints/"
    interval: AutoInterval = "auto"
    retention_days: Annotated[int, Field(gt=0, le=3650)] = 30
    transition_ia_days: Annotated[int, Field(gt=0, le=3650)] | None = 30
    abort_multipart_days: Annotated[int, Field(gt=0, le=365)] = 3
    keep_last: Annotated[int, Field(ge=1, le=100_000)] | None = None  # None: keep every checkpoint
    milestones: MilestonesSpec | None = None  # with keep_last: one checkpoint in every N kept forever (ECS)

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]", v):
            raise ValueError("an OSS bucket name is 3-63 lowercase letters, digits and hyphens, not starting or ending with '-'")
        return v

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*/", v):
            raise ValueError("a prefix is a path without a leading '/' that ends in '/', e.g. checkpoints/")
        if limits.dot_segment(v):
            raise spec_error(f"{v[:60]!r} has a '.' or '..' segment, which would reach outside the run's own prefix "
                             "(the nodes' RAM policy and the copy to OSS name the prefix as written)",
                             "e.g. checkpoints/ or runs/llama-70b/checkpoints/")
        return v


class SpotSpec(_Strict):
    enabled: bool = False
    strategy: Literal["SpotAsPriceGo", "SpotWithPriceLimit"] = "SpotAsPriceGo"
    max_price_ratio: Annotated[float, Field(gt=0, le=1)] = 1.0
    on_demand_base: Annotated[int, Field(ge=0, le=100_000)] = 1
    protection_hours: Literal[0, 1] = 1
    interruption: Literal["terminate", "stop"] = "terminate"
    interruptions_per_node_day: Annotated[float, Field(ge=0, le=100)] = 0.1
    price_ratio: Annotated[float, Field(gt=0, lt=1)] = 0.5  # assumed spot price as a fraction of list (an assumption)
    # the fewest nodes the elastic launch keeps training on (torchrun --nnodes MIN:MAX); None: the plan's memory minimum
    min_nodes: Annotated[int, Field(ge=1, le=100_000)] | None = None


class BudgetSpec(_Strict):
    currency: Literal["CNY"] = "CNY"
    per_hour: Annotated[float, Field(gt=0, le=limits.MAX_BUDGET_PER_HOUR)] | None = None
    total: Annotated[float, Field(gt=0, le=limits.MAX_BUDGET_TOTAL)] | None = None
    max_days: Annotated[float, Field(gt=0, le=3650)] | None = None

    @field_validator("per_hour", "total", mode="before")
    @classmethod
    def _money(cls, v: Any, info: ValidationInfo) -> Any:
        maximum = limits.MAX_BUDGET_PER_HOUR if info.field_name == "per_hour" else limits.MAX_BUDGET_TOTAL
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > maximum:
            unit = "CNY per hour" if info.field_name == "per_hour" else "CNY"
            raise spec_error(f"{_shown(v)} {unit} is too large: at most {maximum:,} (10^{len(str(maximum)) - 1})",
                             "check the exponent; budgets are in CNY" + (
                                 ", and 100,000 nodes of the priciest catalog type cost about 2.8e7 CNY per hour"
                                 if info.field_name == "per_hour" else ""))
        return v


class Waiver(_Strict):
    rule: Annotated[str, Field(pattern=r"^TS[0-9]{3}$")]
    reason: Annotated[str, Field(min_length=10, max_length=limits.MAX_WAIVER_REASON_CHARS,
                                 pattern=limits.NO_CONTROL_RE)]

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        v = v.strip()  # a block scalar (reason: >) ends with a line feed
        if len(v) > limits.MAX_WAIVER_REASON_CHARS:
            raise spec_error(f"the reason is {len(v):,} characters; at most {limits.MAX_WAIVER_REASON_CHARS}",
                             "say why in a sentence or two and link to the longer discussion")
        ctrl = limits.control_character(v)
        if ctrl:
            raise spec_error(f"the reason contains {ctrl}; write it on one line without control characters",
                             "a long reason may be folded over several lines with reason: >- (they join with spaces)")
        return v


class Spec(_Strict):
    """A whole training-run spec (the root of a ``*.yaml`` file)."""

    name: Annotated[str, Field(pattern=NAME_RE)]
    stack: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,30}$")] = "dev"
    region: str
    zones: tuple[str, ...] = ()
    model: ModelSpec
    parallelism: ParallelismSpec = ParallelismSpec()
    compute: ComputeSpec = ComputeSpec()
    network: NetworkSpec = NetworkSpec()
    storage: StorageSpec = StorageSpec()
    checkpoints: CheckpointSpec = CheckpointSpec()
    spot: SpotSpec = SpotSpec()
    budget: BudgetSpec = BudgetSpec()
    tags: Annotated[dict[TagKey, TagValue], WithJsonSchema({
        "type": "object", "maxProperties": 15,
        "propertyNames": {"minLength": 1, "maxLength": limits.TAG_KEY_MAX, "pattern": limits.NO_CONTROL_RE},
        "additionalProperties": {"type": "string", "maxLength": limits.TAG_VALUE_MAX,
                                 "pattern": limits.NO_CONTROL_RE}})] = {}
    waivers: tuple[Waiver, ...] = ()

    @field_validator("tags", mode="wrap")
    @classmethod
    def _tags(cls, v: Any, handler: ValidatorFunctionWrapHandler) -> dict[str, str]:
        """The tag count, reported together with the problems of single tags (a plain after-validator would run only
        once every key and value is valid)."""
        count = [InitErrorDetails(type=spec_error(
            f"{len(v)} tags; at most 15 (a resource holds 20 and trainstack adds 5 of its own)",
            "drop the tags you can do without"), loc=(), input=v)] if isinstance(v, dict) and len(v) > 15 else []
        try:
            out = handler(v)
        except ValidationError as e:
            if not count:
                raise
            raise ValidationError.from_exception_data("tags", [*count, *_error_details(e)]) from None
        if count:
            raise ValidationError.from_exception_data("tags", count)
        return out


def _error_details(error: ValidationError) -> list[InitErrorDetails]:
    """``error``'s problems as details a new ValidationError can carry (trainstack's own keep message and hint)."""
    out: list[InitErrorDetails] = []
    for e in error.errors(include_url=False):
        ctx = e.get("ctx") or {}
        kind = (PydanticCustomError("trainstack", "{message}", ctx) if e["type"] == "trainstack" else
                PydanticCustomError(e["type"], e["msg"].replace("{", "{{").replace("}", "}}"), ctx or None))
        out.append(InitErrorDetails(type=kind, loc=e["loc"], input=e["input"]))
    return out


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a spec file, for editors (``trainstack schema``)."""
    schema = Spec.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://trainstack.dev/schema/spec-v{SPEC_VERSION}.json"
    schema["title"] = "trainstack training spec"
    return schema
