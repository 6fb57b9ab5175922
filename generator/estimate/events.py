"""What ``trainstack estimate`` refuses and what it notes: one event class per case, each with a stable code
(``TSE0nn`` a refusal, ``TSE1nn`` a note) and typed fields; the English is rendered from them here only.

In the manner of the plan's warnings and refusals (:mod:`generator.plan.warns`, :mod:`generator.plan.refusals`;
dbt's events, ``core/dbt/events/types.py``). A refusal is raised as an :class:`~generator.estimate.EstimateError`
that carries its ``code`` and ``fields``; a note goes into the result's ``warnings`` as ``{"code", "fields",
"text"}`` (``estimate --json`` prints them so), and the text page prints its ``text``. Tests assert codes and
fields, not the words. A combination refused by a rule shared with the spec check (:mod:`generator.spec.conflicts`)
keeps that rule's code. ``docs/codes.md`` lists every code (``tests/test_estimate.py`` checks it against
:func:`codes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from generator.errors import EXIT_USAGE, TrainstackError
from generator.events import Event


@dataclass(frozen=True, slots=True)
class EstimateEvent(Event):
    """The base of every estimate refusal and note: ``code`` and ``summary`` are the class's, the fields the
    instance's."""


class EstimateRefusal(EstimateEvent):
    """A command line the estimate cannot use (exit 2); ``flag`` is the option it names ("" for none)."""

    __slots__ = ()
    flag: ClassVar[str] = ""


class EstimateNote(EstimateEvent):
    """Something the reader of an estimate should know (the result's ``warnings``)."""

    __slots__ = ()


class EstimateError(TrainstackError):
    """A command-line combination the estimate cannot use; the message says what to change (exit 2). ``code`` and
    ``fields`` are the refusal's (:func:`EstimateError.of`), or a shared rule's code
    (generator/spec/conflicts.py)."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, code: str = "", fields: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.fields: dict[str, Any] = dict(fields or {})

    @classmethod
    def of(cls, refusal: EstimateRefusal) -> EstimateError:
        """The error that reports ``refusal``: its text, code and fields."""
        return cls(refusal.text(), refusal.code, refusal.fields())


# -- refusals: the model's size


@dataclass(frozen=True, slots=True)
class NoModelSize(EstimateRefusal):
    code = "TSE001"
    flag = "--params"
    summary = "no parameter count, preset or shape"

    def text(self) -> str:
        return (
            "say how large the model is: --params (e.g. 70B), --preset (e.g. llama-2-70b), or a "
            "shape with --layers, --hidden and --heads."
        )


@dataclass(frozen=True, slots=True)
class PartialShape(EstimateRefusal):
    code = "TSE002"
    flag = "--layers"
    summary = "a partial shape without --params or --preset to start from"

    def text(self) -> str:
        return (
            "a partial shape needs a model to start from: add --params or --preset, or give all "
            "of --layers, --hidden and --heads."
        )


@dataclass(frozen=True, slots=True)
class SizedTwice(EstimateRefusal):
    code = "TSE003"
    flag = "--params"
    summary = "--params together with --preset or a full shape"
    by: str  # "preset" or "shape": what fixes the count already

    def text(self) -> str:
        return (
            f"give the model's size one way: --params, or --preset, or --layers/--hidden/--heads; "
            f"the {self.by} fixes the parameter count, so drop --params."
        )


@dataclass(frozen=True, slots=True)
class MoeFlagsWithoutExperts(EstimateRefusal):
    code = "TSE004"
    flag = "--experts"
    summary = "mixture-of-experts flags without --experts"
    flags: tuple[str, ...]

    def text(self) -> str:
        return (
            f"{', '.join(self.flags)} describe{'s' if len(self.flags) == 1 else ''} mixture-of-experts "
            "layers: add --experts (with --top-k and --expert-ffn-hidden), or use a MoE --preset."
        )


@dataclass(frozen=True, slots=True)
class ExpertsIncomplete(EstimateRefusal):
    code = "TSE005"
    flag = "--experts"
    summary = "--experts without --top-k or --expert-ffn-hidden"

    def text(self) -> str:
        return (
            "--experts needs --top-k (experts per token) and --expert-ffn-hidden (one expert's MLP "
            "width), as model.moe does."
        )


@dataclass(frozen=True, slots=True)
class SizingFailed(EstimateRefusal):
    code = "TSE006"
    summary = "the sizing model cannot use the shape or layout (generator/sizing: its message)"
    message: str

    def text(self) -> str:
        return self.message


# -- refusals: the layout and the setup


@dataclass(frozen=True, slots=True)
class NotWholeNumber(EstimateRefusal):
    code = "TSE010"
    summary = "a count (--tp, --pp, --cp, --gpus, --seq-len, ...) that is not a whole number >= 1"
    option: str
    value: Any

    def text(self) -> str:
        return f"{self.option} must be a whole number >= 1, got {self.value!r}."


@dataclass(frozen=True, slots=True)
class GpusNotMultiple(EstimateRefusal):
    code = "TSE011"
    flag = "--gpus"
    summary = "--gpus is not a multiple of tp x pp (x cp)"
    gpus: int
    tp: int
    pp: int
    cp: int
    replica_gpus: int
    near: tuple[int, ...]  # the nearest GPU counts that divide

    def text(self) -> str:
        cp = self.cp
        what = (
            f"tp x pp = {self.tp} x {self.pp}" if cp == 1 else f"tp x pp x cp = {self.tp} x {self.pp} x {cp}"
        )
        return (
            f"--gpus {self.gpus} is not a multiple of {what} = {self.replica_gpus}: the data-parallel degree "
            f"gpus/({'tp*pp' if cp == 1 else 'tp*pp*cp'}) must be a whole number; use --gpus "
            f"{' or '.join(str(n) for n in self.near)}, or change --tp/--pp{'/--cp' if cp > 1 else ''}."
        )


@dataclass(frozen=True, slots=True)
class QloraNeedsRank(EstimateRefusal):
    code = "TSE012"
    flag = "--qlora"
    summary = "--qlora without --lora-rank"

    def text(self) -> str:
        return (
            "--qlora trains LoRA adapters over a 4-bit base and needs their rank: add --lora-rank (e.g. 16)."
        )


@dataclass(frozen=True, slots=True)
class HeadroomOutOfRange(EstimateRefusal):
    code = "TSE013"
    flag = "--headroom"
    summary = "--headroom outside 0 to 0.5"
    headroom: Any

    def text(self) -> str:
        return f"--headroom is the share of GPU memory to keep free, from 0 to 0.5; got {self.headroom!r}."


# -- refusals: the GPU and the instance type


@dataclass(frozen=True, slots=True)
class UnknownGpu(EstimateRefusal):
    code = "TSE020"
    flag = "--gpu"
    summary = "a GPU the catalog does not know"
    gpu: str
    close: str  # did-you-mean, "" for none
    known: tuple[str, ...]

    def text(self) -> str:
        return (
            f"unknown GPU '{self.gpu}' for --gpu; {self.close + ' ' if self.close else ''}"
            f"The catalog knows: {', '.join(self.known)}."
        )


@dataclass(frozen=True, slots=True)
class AcceleratorNotOffered(EstimateRefusal):
    code = "TSE021"
    flag = "--gpu"
    summary = "an accelerator no Alibaba Cloud product offers and CUDA cannot run (Ascend)"
    accelerator: str
    answer: str  # the sourced answer of generator/catalog/unavailable.py: who offers it
    nearest: str  # its hint: the nearest catalog GPUs

    def text(self) -> str:
        return (
            f"{self.answer}.\n{self.nearest}; give one of them to --gpu; every source: trainstack catalog --gpu "
            f"{self.accelerator}"
        )


@dataclass(frozen=True, slots=True)
class NoFp8(EstimateRefusal):
    code = "TSE022"
    flag = "--precision"
    summary = "--precision fp8 on a GPU without FP8 tensor cores"
    gpu: str

    def text(self) -> str:
        return (
            f"--precision fp8 needs a GPU with FP8 tensor cores, and {self.gpu} (--gpu) has "
            "none (FP8 training needs NVIDIA Ada, Hopper or Blackwell): use --precision bf16, or "
            "a GPU with FP8 such as H20, L20 or H100"
        )


@dataclass(frozen=True, slots=True)
class GpuRowUnusable(EstimateRefusal):
    code = "TSE023"
    flag = "--gpu"
    summary = "the catalog's row of the GPU has no usable peak or MFU"
    gpu: str
    message: str

    def text(self) -> str:
        return f"{self.gpu}: {self.message}"


@dataclass(frozen=True, slots=True)
class UnknownInstanceType(EstimateRefusal):
    code = "TSE024"
    flag = "--instance-type"
    summary = "an instance type (or Lingjun machine type) the catalog does not know"
    instance_type: str
    close: str  # did-you-mean, "" for none

    def text(self) -> str:
        return (
            f"unknown instance type '{self.instance_type}' for --instance-type; {self.close + ' ' if self.close else ''}"
            "trainstack catalog lists the GPU types of each region."
        )


@dataclass(frozen=True, slots=True)
class GpuNotOnInstanceType(EstimateRefusal):
    code = "TSE025"
    flag = "--gpu"
    summary = "--gpu names another GPU than the --instance-type has"
    gpu: str
    instance_type: str
    type_gpu: str

    def text(self) -> str:
        return (
            f"--gpu {self.gpu} is not the GPU of --instance-type {self.instance_type} ({self.type_gpu}): drop --gpu "
            "(the type's GPU is used), or give a type with that GPU."
        )


# -- notes (the result's warnings)


@dataclass(frozen=True, slots=True)
class UnevenPipeline(EstimateNote):
    code = "TSE101"
    summary = "pp does not divide the layers: memory is sized for the largest stage"
    pp: int
    layers: int
    middle_layers: int  # on each of the pp - 2 middle stages
    first_layers: int
    last_layers: int

    def text(self) -> str:
        return (
            f"pp={self.pp} does not divide the {self.layers} layers: {self.pp - 2} middle stages of "
            f"{self.middle_layers} layers and {self.first_layers} + {self.last_layers} on the first and last "
            "(Megatron-LM --decoder-first/last-pipeline-num-layers); memory is sized for the largest stage"
        )


@dataclass(frozen=True, slots=True)
class ZeroWithoutDataParallel(EstimateNote):
    code = "TSE102"
    summary = "a ZeRO stage with dp = 1 saves nothing"
    zero_stage: int

    def text(self) -> str:
        return f"ZeRO-{self.zero_stage} shards over the data-parallel group; with dp = 1 it saves nothing (give --gpus)"


@dataclass(frozen=True, slots=True)
class GpuNotOffered(EstimateNote):
    code = "TSE103"
    summary = "an NVIDIA GPU no Alibaba Cloud product offers (H100, H800, H200): compared from its published figures"
    gpu: str

    def text(self) -> str:
        return (
            f"{self.gpu} is not offered by Alibaba Cloud (trainstack catalog --gpu {self.gpu} says why and which GPUs "
            "are nearest): its published memory and BF16 peak are used for comparison only, at the efficiency "
            "fitted to published runs"
        )


@dataclass(frozen=True, slots=True)
class NoBf16(EstimateNote):
    code = "TSE104"
    summary = "bf16 on a GPU without bf16 (Volta): the run cannot train there"
    gpu: str

    def text(self) -> str:
        return (
            f"{self.gpu} has no bf16 support (Volta tensor cores do fp16 and fp32 only): a bf16 "
            f"run cannot train on it, and a spec with precision bf16 and this GPU is refused; use "
            f"--precision fp16 (the same bytes per value, with loss scaling), or a GPU with bf16; the "
            f"peak used for its hours is its fp16 tensor peak"
        )


@dataclass(frozen=True, slots=True)
class LoraComputeUpperBound(EstimateNote):
    code = "TSE105"
    summary = "6ND counts weight gradients LoRA skips: the FLOPs are an upper bound"

    def text(self) -> str:
        return (
            "6ND counts weight gradients for every parameter; LoRA skips them for the frozen base, "
            "so its compute is nearer 4ND (the figure is an upper bound)"
        )


@dataclass(frozen=True, slots=True)
class HostCpuAssumed(EstimateNote):
    code = "TSE106"
    summary = (
        "CPU offload without --instance-type (or a type without stated vCPUs): the host's vCPUs are assumed"
    )
    vcpus_per_gpu: int
    instance_type: str  # "" without --instance-type

    def text(self) -> str:
        where = f"{self.instance_type} states no vCPUs" if self.instance_type else "no --instance-type given"
        return (
            f"the CPU optimizer step assumes {self.vcpus_per_gpu} vCPUs per GPU ({where}; the ZeRO-Offload paper's "
            "DGX-2 host: 96 threads for 16 GPUs); give --instance-type for the type's own vCPUs and host memory"
        )


@dataclass(frozen=True, slots=True)
class HostMemoryShort(EstimateNote):
    code = "TSE107"
    summary = (
        "the offloaded states (or paged optimizer moments) of a node's GPUs exceed the share of its host memory "
        "the planner allows"
    )
    instance_type: str
    need_bytes: int  # host bytes for the node's GPUs
    memory_gib: float  # the type's host memory
    usable_share: float

    def text(self) -> str:
        return (
            f"the offloaded states (or paged optimizer moments) of one {self.instance_type} node need {self.need_bytes / 2**30:,.1f} GiB of host "
            f"memory, more than {self.usable_share:.0%} of its {self.memory_gib:g} GiB: the planner refuses this "
            "layout on it (more --gpus, a larger --zero stage, or a type with more memory)"
        )


def codes() -> list[type[EstimateEvent]]:
    """Every refusal and note class, in code order (what docs/codes.md lists)."""
    # the module's names, not __subclasses__(): slots=True replaces each class, and the replaced one lingers
    found = {v for v in globals().values() if isinstance(v, type) and issubclass(v, EstimateEvent) and v.code}
    return sorted(found, key=lambda c: c.code)
