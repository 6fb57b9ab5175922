"""Accelerators no Alibaba Cloud product offers, and where they are offered instead (``unavailable_accelerators.csv``).

A spec that names one (``gpu: Ascend-910B``) gets a sourced answer instead of "unknown GPU": who offers it, the
sources checked and when, and the nearest GPUs the catalog has in the spec's region, ranked by how close their memory
and 16-bit tensor peak are (:func:`nearest_gpus`; BF16, or FP16 on a GPU without it: :func:`peak_label`), and the
closer ones left out as not generally available (:func:`left_out`). Standard library only; :mod:`generator.catalog.load` parses the file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

UNAVAILABLE_COLS = (
    "name",
    "aliases",
    "vendor",
    "memory_gib",
    "bf16_tflops",
    "offered_by",
    "alibaba",
    "checked",
    "source",
    "notes",
)

_SEPARATORS = re.compile(r"[\s_\-]+")


def accelerator_key(name: str) -> str:
    """A name compared without case, blanks, '-' or '_': "Ascend 910B", "ascend_910b" and "Ascend-910B" agree."""
    return _SEPARATORS.sub("", name.strip().lower())


@dataclass(frozen=True, slots=True)
class UnavailableAccelerator:
    """An accelerator a user may ask for that no Alibaba Cloud product offers (as of ``checked``)."""

    name: str
    aliases: tuple[str, ...]
    vendor: str
    memory_gib: float
    bf16_tflops: float  # dense FP16/BF16 peak; used only to rank the nearest GPUs
    offered_by: str  # who offers it instead
    alibaba: str  # what the Alibaba Cloud sources say
    checked: str  # YYYY-MM-DD: when the sources were read
    source: str  # TAG|TAG into sources.csv
    notes: str

    def keys(self) -> set[str]:
        return {accelerator_key(self.name), *(accelerator_key(a) for a in self.aliases)}


def find_unavailable(
    accelerators: tuple[UnavailableAccelerator, ...], name: str
) -> UnavailableAccelerator | None:
    key = accelerator_key(name)
    return next((a for a in accelerators if key in a.keys()), None)  # noqa: SIM118 (a method, not a dict)


def distance(
    memory_gib: float, bf16_tflops: float, other_memory_gib: float, other_bf16_tflops: float
) -> float:
    """How far two accelerators are: the sum of the absolute log ratios of their memory and of their BF16 peak.

    A ratio metric treats "a quarter more memory" the same at 40 GB as at 96 GB; memory and compute weigh the same
    (a trainstack choice: memory decides whether a model fits, compute how long it runs).
    """
    return abs(math.log(other_memory_gib / memory_gib)) + abs(math.log(other_bf16_tflops / bf16_tflops))


def offered_gpus(catalog, region=None, lingjun: bool = False, dlc: bool = False) -> list:
    """The GPUs (catalog :class:`GpuModel` rows) the region offers generally available (ECS types, Lingjun machine
    types, or DLC worker specs), or every generally available GPU of the catalog when ``region`` (a catalog
    :class:`Region`) is None; GPUs only offered by invitation or through sales count when nothing else is."""
    if region is None:
        ga = {t.gpu for t in catalog.instance_types if t.availability == "ga"}
        return [g for g in catalog.gpus if g.name in ga] or list(catalog.gpus)
    if dlc:
        types = catalog.dlc_types_in_region(region.id)
    elif lingjun:
        types = catalog.lingjun_types_in_region(region.id)
    else:
        types = catalog.types_in_region(region.id)
    names = {t.gpu for t in types}
    ga = {t.gpu for t in types if t.availability == "ga"}
    return [g for g in catalog.gpus if g.name in (ga or names)]


def unavailable_text(
    acc: UnavailableAccelerator,
    catalog,
    region=None,
    lingjun: bool = False,
    dlc: bool = False,
    bf16: bool = False,
) -> tuple[str, str]:
    """What to tell someone who asks for ``acc`` (a spec's ``compute.gpu``, ``estimate --gpu``): the message (no
    Alibaba Cloud product offers it as of the date the sources were read, with the first Alibaba Cloud source, and
    who offers it) and the hint (the nearest GPUs of the region, or of the catalog, by memory and 16-bit peak; with
    ``bf16`` only GPUs that have bf16)."""
    where = f"in {region.id}" if region is not None else "in the catalog"
    offered = offered_gpus(catalog, region, lingjun, dlc)
    if bf16:  # a bf16 run: suggest only GPUs it could use (model.precision: bf16 is refused on the others)
        offered = [g for g in offered if has_bf16(g)] or offered
    near = nearest_gpus(acc, offered)
    listed = ", ".join(f"{g.name} ({g.memory_gib:g} GB, {peak_label(g)})" for g in near)
    urls = [s.url for t in acc.source.split("|") if (s := catalog.source(t)) is not None and s.url]
    alibaba_urls = [u for u in urls if "aliyun.com" in u or "alibabacloud.com" in u]
    other_urls = [u for u in urls if u not in alibaba_urls]
    message = (
        f"{acc.name} ({acc.vendor.capitalize()}) is offered by no Alibaba Cloud product as of {acc.checked}: "
        f"{acc.alibaba} ({alibaba_urls[0] if alibaba_urls else acc.source}); it is offered by "
        f"{acc.offered_by}" + (f" ({other_urls[0]})" if other_urls else "")
    )
    hint = (
        f"nearest GPUs {where} by memory and 16-bit peak (vs {acc.memory_gib:g} GB, {acc.bf16_tflops:g} TFLOPS): "
        f"{listed or 'none'}"
    )
    return message, hint


def nearest_gpus(accelerator: UnavailableAccelerator, gpus, limit: int = 3) -> list:
    """The ``limit`` GPUs (catalog :class:`GpuModel` rows) closest to ``accelerator``, nearest first, ties by name."""
    scored = sorted(
        gpus,
        key=lambda g: (
            round(distance(accelerator.memory_gib, accelerator.bf16_tflops, g.memory_gib, g.bf16_tflops), 6),
            g.name,
        ),
    )
    return scored[:limit]


def has_bf16(gpu) -> bool:
    """Whether a catalog GPU has BF16 tensor cores: gpus.csv's ``bf16`` column (false on the Volta rows, whose
    ``bf16_tflops`` carries the FP16 tensor peak)."""
    return bool(gpu.bf16)


def peak_label(gpu) -> str:
    """The 16-bit peak a GPU actually has, named: "312 TFLOPS BF16", or "125 TFLOPS FP16 (no BF16)" for a GPU
    without BF16. Nearest GPUs are ranked by this peak against the accelerator's FP16/BF16 figure."""
    return f"{gpu.bf16_tflops:g} TFLOPS " + ("BF16" if has_bf16(gpu) else "FP16 (no BF16)")


def left_out(accelerator: UnavailableAccelerator, shown: list, every: list) -> list:
    """The GPUs of ``every`` (offered in the scope at any availability) that are not in ``shown`` (the generally
    available nearest) yet closer to ``accelerator`` than the farthest one shown, nearest first: the ones left out
    because they are not generally available (invitation or contact-sales only)."""
    if not shown:
        return nearest_gpus(accelerator, every, limit=len(every))
    far = distance(
        accelerator.memory_gib, accelerator.bf16_tflops, shown[-1].memory_gib, shown[-1].bf16_tflops
    )
    names = {g.name for g in shown}
    return [
        g
        for g in nearest_gpus(accelerator, every, limit=len(every))
        if g.name not in names
        and distance(accelerator.memory_gib, accelerator.bf16_tflops, g.memory_gib, g.bf16_tflops) < far
    ]
