"""The spec's compute, network and spot sections: the nodes (platform, GPU, count, type, images, disks, pause),
the network they sit in (VPC range, RDMA, jumbo frames, egress, admin access) and spot capacity.

One of the modules :mod:`generator.spec.model` gathers into the spec; the placement and the platforms read these.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from generator.errors import clip, excerpt
from generator.spec import limits
from generator.spec.fieldtypes import AutoInt, Strict
from generator.spec.tags import spec_error


class ComputeSpec(Strict):
    gpu: str = "auto"
    nodes: AutoInt = "auto"
    max_nodes: Annotated[int, Field(gt=0, le=100_000)] = 512
    gpus_per_node: Literal[1, 2, 4, 8] | Literal["auto"] = "auto"  # noqa: PYI030 (two enums in the schema)
    bare_metal: Literal["any", "prefer", "require", "avoid"] = "any"
    instance_types: tuple[str, ...] = ()
    platform: Literal["ecs", "lingjun", "pai-dlc"] = "ecs"
    image_id: (
        Annotated[str, Field(pattern=limits.IMAGE_ID_RE, max_length=limits.MAX_IMAGE_ID_CHARS)] | None
    ) = None
    # an ACR image pinned by digest that trainstack-launch runs torchrun in (instead of the host's PyTorch)
    container_image: (
        Annotated[str, Field(pattern=limits.CONTAINER_IMAGE_RE, max_length=limits.MAX_CONTAINER_IMAGE_CHARS)]
        | None
    ) = None
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
            raise spec_error(
                f"{excerpt(v)} is not an Alibaba Cloud Container Registry image pinned by digest",
                "write REGISTRY/NAMESPACE/REPOSITORY[:TAG]@sha256:DIGEST with an ACR registry "
                "(registry[-vpc].REGION.aliyuncs.com or INSTANCE-registry[-vpc].REGION.cr.aliyuncs.com); "
                "the digest (64 hex digits) pins the image: `docker inspect --format "
                "'{{index .RepoDigests 0}}' IMAGE` prints it",
            )
        return v

    @field_validator("image_id", mode="before")
    @classmethod
    def _image(cls, v: Any) -> Any:
        if isinstance(v, str) and not (
            re.fullmatch(limits.IMAGE_ID_RE, v) and len(v) <= limits.MAX_IMAGE_ID_CHARS
        ):
            raise spec_error(
                f"{v[:60]!r}{'...' if len(v) > 60 else ''} is not an image id: use 1-128 letters, digits, "
                "'_', '.' and '-'",
                "an ECS image id looks like m-bp1g7004ksh0oeuc****, a Lingjun image id like "
                "i190982651690986913088",
            )
        return v


def _cidr(value: str) -> str:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as e:
        raise ValueError(
            f"{excerpt(value)} is not a network in CIDR form such as 10.0.0.0/16 ({clip(str(e), 120)})"
        ) from None
    if net.version != 4:
        raise ValueError("only IPv4 networks are supported")
    return str(net)


class NetworkSpec(Strict):
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
        if not any(
            net.subnet_of(p)
            for p in map(ipaddress.IPv4Network, ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
        ):
            raise ValueError(
                "a VPC needs a private range: a part of 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16"
            )
        if not 8 <= net.prefixlen <= 24:
            raise ValueError("a VPC CIDR must be between /8 and /24")
        return v

    @field_validator("admin_cidrs")
    @classmethod
    def _admin(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_cidr(c) for c in v)


class SpotSpec(Strict):
    enabled: bool = False
    strategy: Literal["SpotAsPriceGo", "SpotWithPriceLimit"] = "SpotAsPriceGo"
    max_price_ratio: Annotated[float, Field(gt=0, le=1)] = 1.0
    on_demand_base: Annotated[int, Field(ge=0, le=100_000)] = 1
    protection_hours: Literal[0, 1] = 1
    interruption: Literal["terminate", "stop"] = "terminate"
    interruptions_per_node_day: Annotated[float, Field(ge=0, le=100)] = 0.1
    price_ratio: Annotated[float, Field(gt=0, lt=1)] = (
        0.5  # assumed spot price as a fraction of list (an assumption)
    )
    # the fewest nodes the elastic launch keeps training on (torchrun --nnodes MIN:MAX); None: the plan's memory minimum
    min_nodes: Annotated[int, Field(ge=1, le=100_000)] | None = None
