"""The spec language: what a training run needs, as the user writes it in YAML.

These pydantic models are the edge of the system: they parse and type-check the YAML (``extra="forbid"``
so unknown keys are errors) and are frozen, so the planner can treat a spec as a value. Facts that need the
catalog (is this GPU known, is this zone in the region) are checked in :mod:`generator.validate`.
``docs/spec.md`` documents every field; keep the two in step (a test checks that every field is documented).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from . import units

SPEC_VERSION = 1

NAME_RE = r"^[a-z][a-z0-9-]{1,38}[a-z0-9]$"


def _unit(parser: Any, what: str) -> Any:
    def parse(value: Any) -> Any:
        try:
            return parser(value, what)
        except units.UnitError as e:
            raise ValueError(str(e)) from None

    return parse


def _auto_or(parser: Any, what: str) -> Any:
    inner = _unit(parser, what)

    def parse(value: Any) -> Any:
        if value == "auto":
            return "auto"
        return inner(value)

    return parse


_COUNT_SCHEMA = {"anyOf": [{"type": "integer", "minimum": 1},
                           {"type": "string", "pattern": r"^[0-9._eE+-]+\s*([KMBGTPkmbgtp]|[KMGTkmgt][iI])?$"}]}
_BYTES_SCHEMA = {"anyOf": [{"type": "number", "exclusiveMinimum": 0},
                           {"type": "string", "pattern": r"^[0-9._]+([eE][+-]?[0-9]+)?\s*([KMGTPkmgtp][iI]?)?[Bb]$"}]}
_SECONDS_SCHEMA = {"anyOf": [{"type": "number", "exclusiveMinimum": 0},
                             {"type": "string",
                              "pattern": r"^[0-9.]+([eE][+-]?[0-9]+)?\s*([sS]|[sS][eE][cC]|[mM]|[mM][iI][nN]|[hH]|[dD])$"}]}

Count = Annotated[int, BeforeValidator(_unit(units.parse_count, "count")), WithJsonSchema(_COUNT_SCHEMA)]
Bytes = Annotated[int, BeforeValidator(_unit(units.parse_bytes, "size")), WithJsonSchema(_BYTES_SCHEMA)]
AutoBytes = Annotated[
    Union[int, Literal["auto"]],
    BeforeValidator(_auto_or(units.parse_bytes, "size")),
    WithJsonSchema({"anyOf": [{"const": "auto"}, *_BYTES_SCHEMA["anyOf"]]}),
]
AutoSeconds = Annotated[
    Union[int, Literal["auto"]],
    BeforeValidator(_auto_or(units.parse_seconds, "duration")),
    WithJsonSchema({"anyOf": [{"const": "auto"}, *_SECONDS_SCHEMA["anyOf"]]}),
]
PositiveInt = Annotated[int, Field(gt=0)]
AutoInt = Union[Annotated[int, Field(gt=0, le=100_000)], Literal["auto"]]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


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


class ModelSpec(_Strict):
    parameters: Count | None = None
    preset: str | None = None
    architecture: ArchitectureSpec | None = None
    precision: Literal["bf16", "fp16", "fp32"] = "bf16"
    optimizer: Literal["adamw", "adam", "sgd", "adafactor", "lion", "adamw-8bit"] = "adamw"
    sequence_length: Annotated[int, Field(gt=0, le=10_000_000)] = 4096
    micro_batch_size: Annotated[int, Field(gt=0, le=4096)] = 1
    global_batch_tokens: Count | None = None
    tokens: Count | None = None
    finetune: FinetuneSpec = FinetuneSpec()

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
    zero_stage: Annotated[int, Field(ge=0, le=3)] = 1
    sequence_parallel: bool = True
    recompute: Literal["none", "selective", "full"] = "selective"


class ComputeSpec(_Strict):
    gpu: str = "auto"
    nodes: AutoInt = "auto"
    max_nodes: Annotated[int, Field(gt=0, le=100_000)] = 512
    gpus_per_node: Union[Literal[1, 2, 4, 8], Literal["auto"]] = "auto"
    bare_metal: Literal["any", "prefer", "require", "avoid"] = "any"
    instance_types: tuple[str, ...] = ()
    platform: Literal["ecs", "lingjun"] = "ecs"
    image_id: str | None = None
    system_disk_gib: Annotated[int, Field(ge=40, le=2048)] = 200
    data_disk_gib: Annotated[int, Field(ge=0, le=32768)] = 0

    @field_validator("data_disk_gib")
    @classmethod
    def _disk(cls, v: int) -> int:
        if 0 < v < 20:
            raise ValueError("an ESSD data disk is at least 20 GiB; use 0 for none")
        return v


def _cidr(value: str) -> str:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as e:
        raise ValueError(f"'{value}' is not a network in CIDR form such as 10.0.0.0/16 ({e})") from None
    if net.version != 4:
        raise ValueError("only IPv4 networks are supported")
    return str(net)


class NetworkSpec(_Strict):
    vpc_cidr: str = "10.0.0.0/16"
    rdma: Union[bool, Literal["auto"]] = "auto"
    jumbo_frames: bool = True
    egress: Literal["nat", "none"] = "nat"
    admin_cidrs: tuple[str, ...] = ()

    @field_validator("vpc_cidr")
    @classmethod
    def _vpc(cls, v: str) -> str:
        v = _cidr(v)
        net = ipaddress.ip_network(v)
        if not any(net.subnet_of(p) for p in map(ipaddress.ip_network, ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))):
            raise ValueError("a VPC needs a private range: a part of 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16")
        if not 8 <= net.prefixlen <= 24:
            raise ValueError("a VPC CIDR must be between /8 and /24")
        return v

    @field_validator("admin_cidrs")
    @classmethod
    def _admin(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_cidr(c) for c in v)


class DatasetSpec(_Strict):
    source: str
    size: Bytes
    path: str = "/datasets/"

    @field_validator("source")
    @classmethod
    def _oss(cls, v: str) -> str:
        if not re.fullmatch(r"oss://[a-z0-9][a-z0-9-]{1,61}[a-z0-9](/[^\s]*)?", v):
            raise ValueError(f"'{v}' is not an OSS location: write oss://bucket/prefix/")
        return v

    @field_validator("path")
    @classmethod
    def _path(cls, v: str) -> str:
        if not re.fullmatch(r"/[A-Za-z0-9._/-]*/", v):
            raise ValueError("a fileset path starts and ends with '/', e.g. /datasets/")
        return v


class StorageSpec(_Strict):
    shared: Literal["auto", "cpfs", "extreme-nas", "none"] = "auto"
    capacity: AutoBytes = "auto"
    storage_class: Literal["auto", "advance_100", "advance_200", "standard", "advance"] = "auto"
    mount_path: str = "/mnt/shared"
    dataset: DatasetSpec | None = None

    @field_validator("mount_path")
    @classmethod
    def _mount(cls, v: str) -> str:
        if not re.fullmatch(r"/[A-Za-z0-9._/-]+", v) or v.rstrip("/") in ("", "/etc", "/usr", "/var", "/root"):
            raise ValueError(f"'{v}' is not a usable mount path; use e.g. /mnt/shared")
        return v.rstrip("/")


class CheckpointSpec(_Strict):
    enabled: bool = True
    bucket: str | None = None
    region: str | None = None
    prefix: str = "checkpoints/"
    interval: AutoSeconds = "auto"
    retention_days: Annotated[int, Field(gt=0, le=3650)] = 30
    transition_ia_days: Annotated[int, Field(gt=0, le=3650)] | None = 30
    abort_multipart_days: Annotated[int, Field(gt=0, le=365)] = 3

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


class BudgetSpec(_Strict):
    currency: Literal["CNY"] = "CNY"
    per_hour: Annotated[float, Field(gt=0)] | None = None
    total: Annotated[float, Field(gt=0)] | None = None
    max_days: Annotated[float, Field(gt=0, le=3650)] | None = None


class Waiver(_Strict):
    rule: Annotated[str, Field(pattern=r"^TS[0-9]{3}$")]
    reason: Annotated[str, Field(min_length=10)]


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
    tags: dict[Annotated[str, Field(min_length=1, max_length=64)], Annotated[str, Field(max_length=128)]] = {}
    waivers: tuple[Waiver, ...] = ()

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: dict[str, str]) -> dict[str, str]:
        if len(v) > 15:
            raise ValueError(f"{len(v)} tags; at most 15 (a resource holds 20 and trainstack adds 5 of its own)")
        for key in v:
            if key.lower().startswith(("aliyun", "acs:", "http://", "https://")):
                raise ValueError(f"tag key '{key}' uses a prefix Alibaba Cloud reserves (aliyun, acs:, http://, https://)")
            if key == "managed-by" or key.startswith("trainstack-"):
                raise ValueError(f"tag key '{key}' is reserved for trainstack's own tags")
        return v


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a spec file, for editors (``trainstack schema``)."""
    schema = Spec.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://trainstack.dev/schema/spec-v{SPEC_VERSION}.json"
    schema["title"] = "trainstack training spec"
    return schema
