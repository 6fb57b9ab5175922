"""Accelerators no Alibaba Cloud product offers, and where they are offered instead (``unavailable_accelerators.csv``).

A spec that names one (``gpu: Ascend-910B``) gets a sourced answer instead of "unknown GPU": who offers it, the
sources checked and when, and the nearest GPUs the catalog has in the spec's region, ranked by how close their memory
and BF16 peak are (:func:`nearest_gpus`). Standard library only; :mod:`generator.catalog.load` parses the file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

UNAVAILABLE_COLS = ("name", "aliases", "vendor", "memory_gib", "bf16_tflops", "offered_by", "alibaba", "checked",
                    "source", "notes")

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


def find_unavailable(accelerators: tuple[UnavailableAccelerator, ...], name: str) -> UnavailableAccelerator | None:
    key = accelerator_key(name)
    return next((a for a in accelerators if key in a.keys()), None)


def distance(memory_gib: float, bf16_tflops: float, other_memory_gib: float, other_bf16_tflops: float) -> float:
    """How far two accelerators are: the sum of the absolute log ratios of their memory and of their BF16 peak.

    A ratio metric treats "a quarter more memory" the same at 40 GB as at 96 GB; memory and compute weigh the same
    (a trainstack choice: memory decides whether a model fits, compute how long it runs).
    """
    return abs(math.log(other_memory_gib / memory_gib)) + abs(math.log(other_bf16_tflops / bf16_tflops))


def nearest_gpus(accelerator: UnavailableAccelerator, gpus, limit: int = 3) -> list:
    """The ``limit`` GPUs (catalog :class:`GpuModel` rows) closest to ``accelerator``, nearest first, ties by name."""
    scored = sorted(gpus, key=lambda g: (round(distance(accelerator.memory_gib, accelerator.bf16_tflops,
                                                        g.memory_gib, g.bf16_tflops), 6), g.name))
    return scored[:limit]
