"""What ``trainstack catalog`` lists: the catalog rows each of its lists shows, and its JSON answers.

The command (:mod:`generator.cli`) parses options, checks the names and prints; the choice of rows (Lingjun machine
types, regions with the GPU families they offer, ECS or DLC worker types, and for an accelerator no Alibaba Cloud
product offers the nearest GPUs and the ones left out) is a catalog query, so it lives here and can be asked without
the command line. Standard library only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from generator.catalog.checks import source_tags
from generator.catalog.unavailable import (
    UnavailableAccelerator,
    distance,
    has_bf16,
    left_out,
    nearest_gpus,
    offered_gpus,
)


def lingjun_listed(cat, gpu, region: str | None) -> list:
    """The Lingjun machine types of ``region`` (every region when None) with ``gpu`` (a catalog GPU row, or None)."""
    return [
        t
        for t in cat.lingjun_types
        if (not region or region in t.regions) and (gpu is None or t.gpu == gpu.name)
    ]


def lingjun_json(cat, types: list) -> dict[str, object]:
    """``catalog --lingjun --json``: the catalog's version and date and the machine types listed."""
    return {
        "version": cat.version,
        "date": cat.date,
        "lingjun_machine_types": [dataclasses.asdict(t) for t in types],
    }


def regions_listed(cat, gpu, region: str | None) -> list[tuple]:
    """``(region, ECS GPU families offered, on Lingjun)`` for each region listed: ``region`` only when given, and with
    ``gpu`` the regions where an ECS family or a Lingjun machine type with that GPU is offered."""
    families = {t.family for t in cat.instance_types if gpu is None or t.gpu == gpu.name}
    lingjun_regions = {r for t in cat.lingjun_types if gpu is None or t.gpu == gpu.name for r in t.regions}
    out = []
    for r in cat.regions:
        offered = tuple(f for f in r.gpu_families if f in families)
        on_lingjun = r.lingjun and (gpu is None or r.id in lingjun_regions)
        if (region is None or r.id == region) and (gpu is None or offered or on_lingjun):
            out.append((r, offered, on_lingjun))
    return out


def types_listed(cat, gpu, region: str | None, dlc: bool) -> list:
    """The ECS instance types with ``gpu`` in ``region`` (either may be None); with ``dlc`` only DLC worker types."""
    types = list(cat.instance_types)
    if gpu is not None:
        types = [t for t in types if t.gpu == gpu.name]
    if region:
        names = {t.name for t in cat.types_in_region(region)}
        types = [t for t in types if t.name in names]
    if dlc:
        types = [t for t in types if cat.dlc_spec(t.name) is not None]
    return types


def types_json(cat, types: list, dlc: bool) -> dict[str, object]:
    """``catalog --json`` (and ``--dlc --json``, which adds the DLC worker specs of the types listed)."""
    data: dict[str, object] = {
        "version": cat.version,
        "date": cat.date,
        "instance_types": [dataclasses.asdict(t) for t in types],
    }
    if dlc:
        data["dlc_specs"] = [
            dataclasses.asdict(d) for d in cat.dlc_specs if any(t.name == d.name for t in types)
        ]
    return data


@dataclass(frozen=True)
class UnavailableAnswer:
    """``catalog --gpu Ascend-910B``: the accelerator, its sources, the nearest GPUs offered generally available,
    the closer ones left out, and the availabilities (``ga``, ...) each GPU of the scope is offered at."""

    accelerator: UnavailableAccelerator
    sources: list
    nearest: list
    skipped: list
    availability: dict[str, set[str]]


def unavailable_answer(
    cat, acc: UnavailableAccelerator, region: str | None, lingjun: bool = False, dlc: bool = False
) -> UnavailableAnswer:
    """Who offers ``acc`` instead and the nearest GPUs of ``region`` (the catalog when None; among Lingjun machine
    types with ``lingjun``, DLC worker types with ``dlc``)."""
    r = cat.region(region) if region else None
    near = nearest_gpus(acc, offered_gpus(cat, r, lingjun=lingjun, dlc=dlc), limit=5)
    types = (
        cat.instance_types
        if r is None
        else cat.dlc_types_in_region(r.id)
        if dlc
        else cat.lingjun_types_in_region(r.id)
        if lingjun
        else cat.types_in_region(r.id)
    )
    availability: dict[str, set[str]] = {}
    for t in types:
        availability.setdefault(t.gpu, set()).add(t.availability)
    skipped = [
        g
        for g in left_out(acc, near, [g for g in cat.gpus if g.name in availability])
        if "ga" not in availability[g.name]
    ]
    sources = [s for t in source_tags(acc.source) if (s := cat.source(t)) is not None]
    return UnavailableAnswer(acc, sources, near, skipped, availability)


def unavailable_json(cat, answer: UnavailableAnswer, region: str | None) -> dict[str, object]:
    """``catalog --gpu Ascend-910B --json``."""
    acc = answer.accelerator
    return {
        "version": cat.version,
        "date": cat.date,
        "unavailable": dataclasses.asdict(acc),
        "sources": [dataclasses.asdict(s) for s in answer.sources],
        "nearest": [
            {
                "gpu": g.name,
                "memory_gib": g.memory_gib,
                "bf16_tflops": g.bf16_tflops,
                "bf16": has_bf16(g),
                "distance": round(distance(acc.memory_gib, acc.bf16_tflops, g.memory_gib, g.bf16_tflops), 3),
            }
            for g in answer.nearest
        ],
        "left_out": [
            {"gpu": g.name, "availability": sorted(answer.availability[g.name])} for g in answer.skipped
        ],
        "region": region,
    }
