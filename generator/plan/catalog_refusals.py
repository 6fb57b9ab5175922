"""Why the spec-against-catalog check refuses a spec (:mod:`generator.plan.check`, exit 2) over what the catalog
says: the region and its zones, the model preset, the GPU and the instance types, CPFS in the region. One event
class per problem, each with a stable code (``TSC...``), the spec field it names and typed fields; the message and
the hint are rendered from them here only, as the planner's own refusals are (:mod:`generator.plan.refusals`). The
spec's own combinations the check refuses are in :mod:`generator.plan.spec_refusals`.

It exists apart from :mod:`generator.plan.refusals` because these are the checks that run before any planning (the
``check`` stage of ARCHITECTURE.md): a script telling a spec mistake from a planning dead end reads the prefix.
An event whose field is an item of a list (``zones[1]``, ``compute.instance_types[0]``) carries its ``index``.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.errors import excerpt
from generator.plan.refusal import Refusal


def near_or(close: str, otherwise: str) -> str:
    """The 'did you mean' hint for a near miss, else ``otherwise``."""
    return f"did you mean '{close}'?" if close else otherwise


@dataclass(frozen=True, slots=True)
class _Indexed(Refusal):
    """An event about one item of a list: its path ends in the item's index."""

    index: int

    def where(self) -> tuple[str | int, ...]:
        return (*self.path, self.index)


# -- the model


@dataclass(frozen=True, slots=True)
class BatchUnderSequence(Refusal):
    code = "TSC001"
    path = ("model", "global_batch_tokens")
    summary = "the global batch is smaller than one sequence"
    tokens: int
    sequence: int

    def text(self) -> str:
        return (
            f"a global batch of {self.tokens:,} tokens is less than one sequence of {self.sequence:,} tokens"
        )

    def hint(self) -> str:
        return f"use at least {self.sequence}, e.g. a multiple of it such as {self.sequence * 256} (256 sequences)"


@dataclass(frozen=True, slots=True)
class UnknownPreset(Refusal):
    code = "TSC002"
    path = ("model", "preset")
    summary = "the model preset is not one trainstack knows"
    preset: str
    close: str  # the nearest preset name, "" when none is near
    presets: tuple[str, ...]

    def text(self) -> str:
        return f"unknown preset {excerpt(self.preset)}"

    def hint(self) -> str:
        return near_or(self.close, "presets: " + ", ".join(self.presets))


# -- the region and zones


@dataclass(frozen=True, slots=True)
class RegionUnknown(Refusal):
    code = "TSC003"
    path = ("region",)
    summary = "the catalog has no such region"
    region: str
    close: str

    def text(self) -> str:
        return f"unknown region {excerpt(self.region)}"

    def hint(self) -> str:
        return near_or(self.close, "run 'trainstack catalog --regions' to list the regions trainstack knows")


@dataclass(frozen=True, slots=True)
class ZoneNotInRegion(_Indexed):
    code = "TSC004"
    path = ("zones",)
    summary = "a zone is not in the spec's region"
    zone: str
    region: str
    zones: tuple[str, ...]  # the region's zones
    close: str
    other: str  # the region the zone is in, "" when none

    def text(self) -> str:
        return f"zone {excerpt(self.zone)} is not in region {self.region}" + (
            f" (it is in {self.other})" if self.other else ""
        )

    def hint(self) -> str:
        zones = ", ".join(self.zones)
        if self.other:
            return f"set region: {self.other}, or use zones of {self.region}: {zones}"
        return near_or(self.close, f"zones of {self.region}: {zones}")


# -- the GPU and the instance types


@dataclass(frozen=True, slots=True)
class AcceleratorUnavailable(Refusal):
    code = "TSC005"
    path = ("compute", "gpu")
    summary = "compute.gpu names an accelerator no Alibaba Cloud product offers"
    gpu: str
    said: str  # what the catalog says of it, with its sources (generator/catalog/unavailable.py)
    nearest: str  # the nearest GPUs of the region, as the catalog words them

    def text(self) -> str:
        return self.said

    def hint(self) -> str:
        return f"{self.nearest}; set compute.gpu to one of them; every source: trainstack catalog --gpu {self.gpu}"


@dataclass(frozen=True, slots=True)
class UnknownGpu(Refusal):
    code = "TSC006"
    path = ("compute", "gpu")
    summary = "compute.gpu is not a GPU the catalog knows"
    gpu: str
    close: str
    known: tuple[str, ...]

    def text(self) -> str:
        return f"unknown GPU {excerpt(self.gpu)}"

    def hint(self) -> str:
        return near_or(self.close, f"known GPUs: {', '.join(self.known)}")


def _alternatives(by_types: bool, names: str, found: bool) -> str:
    if by_types:
        return (
            f"compute.instance_types of such a GPU, e.g. {names}" if found else "other compute.instance_types"
        )
    return "compute.gpu: auto" + (f", or {names}" if found else "")


@dataclass(frozen=True, slots=True)
class NoBf16(Refusal):
    code = "TSC007"
    path = ("model", "precision")
    summary = "bf16 on a GPU without bf16 tensor cores (V100)"
    gpu: str
    source: str  # the field that picks the GPU: compute.gpu or compute.instance_types
    nearest: tuple[str, ...]  # up to three GPUs of the region with bf16 and at least as much memory

    def text(self) -> str:
        return (
            f"bf16 needs a GPU with bf16 support, and {self.gpu} (from {self.source}) has none: "
            "Volta tensor cores do fp16 and fp32 only; bf16 needs NVIDIA Ampere or newer"
        )

    def hint(self) -> str:
        by_types = self.source.endswith("instance_types")
        alternatives = _alternatives(by_types, ", ".join(self.nearest), bool(self.nearest))
        return (
            f"set model.precision: fp16 (mixed precision with loss scaling) to train on {self.gpu}, or choose "
            f"a GPU with bf16 ({alternatives})"
        )


@dataclass(frozen=True, slots=True)
class NoFp8(Refusal):
    code = "TSC008"
    path = ("model", "precision")
    summary = "fp8 on a GPU without FP8 tensor cores"
    gpu: str
    source: str
    nearest: tuple[str, ...]  # up to three FP8 GPUs of the region
    by_sales: bool  # none is generally available: these are sold through sales or by invitation

    def text(self) -> str:
        return (
            f"fp8 needs a GPU with FP8 tensor cores, and {self.gpu} (from {self.source}) has "
            "none: FP8 training (Transformer Engine) needs NVIDIA Ada, Hopper or Blackwell"
        )

    def hint(self) -> str:
        names = ", ".join(self.nearest) + (
            " (offered through sales or by invitation)" if self.by_sales else ""
        )
        alternatives = _alternatives(self.source.endswith("instance_types"), names, bool(self.nearest))
        return f"set model.precision: bf16 to train on {self.gpu}, or choose a GPU with FP8 ({alternatives})"


@dataclass(frozen=True, slots=True)
class NoLingjunGpu(Refusal):
    code = "TSC009"
    path = ("compute", "gpu")
    summary = "no Lingjun machine type of the region has the GPU"
    gpu: str
    region: str
    offered: tuple[str, ...]  # the GPUs of the region's Lingjun types

    def text(self) -> str:
        return f"no Lingjun machine type with {self.gpu} in {self.region} in the catalog"

    def hint(self) -> str:
        return (
            f"Lingjun GPUs there: {', '.join(self.offered) or 'none'} "
            "(GPU identities of Lingjun types are unverified; see the catalog notes)"
        )


@dataclass(frozen=True, slots=True)
class GpuNotInRegion(Refusal):
    code = "TSC010"
    path = ("compute", "gpu")
    summary = "the region offers no instance type with the GPU"
    gpu: str
    region: str
    offered: tuple[str, ...]  # the GPUs of the region
    regions: tuple[str, ...]  # the regions that offer the GPU

    def text(self) -> str:
        return f"region {self.region} offers no {self.gpu} instance types in the catalog"

    def hint(self) -> str:
        return (
            f"GPUs there: {', '.join(self.offered) or 'none'}; {self.gpu} is in: "
            f"{', '.join(self.regions) or 'no known region'}"
        )


@dataclass(frozen=True, slots=True)
class NotLingjunType(_Indexed):
    code = "TSC011"
    path = ("compute", "instance_types")
    summary = "a Lingjun plan lists a type that is not a Lingjun machine type"
    name: str
    ecs_type: bool  # it is an ECS instance type
    close: str
    known: tuple[str, ...]  # the Lingjun machine types of the catalog

    def text(self) -> str:
        if self.ecs_type:
            return f"{self.name} is an ECS instance type, not a Lingjun machine type"
        return f"unknown Lingjun machine type {excerpt(self.name)}"

    def hint(self) -> str:
        return near_or(self.close, "Lingjun machine types in the catalog: " + ", ".join(self.known))


@dataclass(frozen=True, slots=True)
class LingjunTypeOffPlatform(_Indexed):
    code = "TSC012"
    path = ("compute", "instance_types")
    summary = "a plan off Lingjun lists a Lingjun machine type"
    name: str

    def text(self) -> str:
        return f"{self.name} is a Lingjun (eflo) machine type, not an ECS instance type"

    def hint(self) -> str:
        return "set compute.platform: lingjun, or list ECS types"


@dataclass(frozen=True, slots=True)
class UnknownInstanceType(_Indexed):
    code = "TSC013"
    path = ("compute", "instance_types")
    summary = "an instance type the catalog does not know"
    name: str
    close: str

    def text(self) -> str:
        return f"unknown instance type {excerpt(self.name)}"

    def hint(self) -> str:
        return near_or(self.close, "run 'trainstack catalog' to list GPU instance types")


@dataclass(frozen=True, slots=True)
class TypeWithoutRdma(_Indexed):
    code = "TSC014"
    path = ("compute", "instance_types")
    summary = "network.rdma is true and a listed type has no eRDMA or RoCE"
    name: str

    def text(self) -> str:
        return f"{self.name} has no eRDMA interface (ERI) or RoCE, but network.rdma is true"

    def hint(self) -> str:
        return "choose an ERI type such as ecs.ebmgn7ex.32xlarge or ecs.gn8v-8x.48xlarge, or set network.rdma: auto"


@dataclass(frozen=True, slots=True)
class NodesOverMax(Refusal):
    code = "TSC015"
    path = ("compute", "nodes")
    summary = "compute.nodes is more than compute.max_nodes"
    nodes: int
    max_nodes: int

    def text(self) -> str:
        return f"{self.nodes} nodes is more than compute.max_nodes ({self.max_nodes})"

    def hint(self) -> str:
        return "raise compute.max_nodes if you mean it"


# -- storage in the region


@dataclass(frozen=True, slots=True)
class CpfsNotInRegion(Refusal):
    code = "TSC021"
    path = ("storage", "shared")
    summary = "storage.shared: cpfs in a region without CPFS"
    region: str
    regions: tuple[str, ...]  # the CPFS regions

    def text(self) -> str:
        return f"CPFS is not offered in {self.region} per the catalog"

    def hint(self) -> str:
        return "CPFS regions: " + ", ".join(self.regions)
