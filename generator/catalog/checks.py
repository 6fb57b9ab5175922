"""Source tags (:func:`source_tags`: the tags a source field cites) and the catalog's cross-file checks: names
unique per file, every source tag defined, instance types and Lingjun machine types that name known GPUs and regions,
jumbo-frame rows that name known families. Each failure is a :class:`CatalogError` naming the file and line
(:mod:`generator.catalog.load` calls them after parsing).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from generator.catalog.model import (
    AVAILABILITIES,
    JUMBO_BASES,
    JUMBO_SUPPORT,
    LINGJUN_PAYMENT_TYPES,
    CatalogError,
    InstanceType,
    JumboFrames,
    LingjunMachineType,
    Region,
)

_TAG_IN_TEXT = re.compile(r"\[([^\[\]]+)\]")


def source_tags(field: str) -> tuple[str, ...]:
    """Source tags cited by a source field.

    A field is either ``TAG|TAG`` or a free-text ``estimate: <method> [TAG]`` whose tags sit in brackets.
    """
    text = field.strip()
    if text.startswith("estimate:"):
        return tuple(t.strip() for m in _TAG_IN_TEXT.findall(text) for t in m.split("|") if t.strip())
    return tuple(t.strip() for t in text.split("|") if t.strip())


_T = TypeVar("_T")


def unique(path: Path, items: Iterable[tuple[int, _T]], key: Callable[[_T], str]) -> None:
    seen: set[str] = set()
    for line, item in items:
        k = key(item)
        if k in seen:
            raise CatalogError(f"{path}:{line}: duplicate {k!r}")
        seen.add(k)


def check_tags(path: Path, line: int, tags: set[str], *fields: str) -> None:
    for field in fields:
        cited = source_tags(field)
        if not cited:
            raise CatalogError(f"{path}:{line}: source {field!r} cites no source tag")
        for tag in cited:
            if tag not in tags:
                raise CatalogError(f"{path}:{line}: unknown source tag {tag!r} (not in sources.csv)")


def check_instance(path: Path, line: int, t: InstanceType, gpus: set[str]) -> None:
    problems = []
    if t.gpu not in gpus:
        problems.append(f"gpu {t.gpu!r} is not in gpus.csv")
    if t.gpus < 1:
        problems.append("gpus must be >= 1")
    if t.availability not in AVAILABILITIES:
        problems.append(f"availability must be one of {', '.join(AVAILABILITIES)}")
    if t.scc != (t.roce_gbps is not None):
        problems.append("roce_gbps is set exactly when scc is true")
    if t.two_network_cards and t.eri_count < 2:
        problems.append("two_network_cards needs eri_count >= 2")
    if t.erdma_gbps is not None and t.eri_count == 0:
        problems.append("erdma_gbps is set but eri_count is 0")
    if problems:
        raise CatalogError(f"{path}:{line}: {t.name}: " + "; ".join(problems))


def check_lingjun(
    path: Path,
    line: int,
    t: LingjunMachineType,
    gpus: set[str],
    regions: dict[str, Region],
    ecs_names: set[str],
) -> None:
    problems = []
    if t.gpu not in gpus:
        problems.append(f"gpu {t.gpu!r} is not in gpus.csv")
    if t.gpus < 1:
        problems.append("gpus must be >= 1")
    if t.availability not in AVAILABILITIES:
        problems.append(f"availability must be one of {', '.join(AVAILABILITIES)}")
    if t.name in ecs_names:
        problems.append("the name is also an ECS instance type")
    if not t.payment_types or any(p not in LINGJUN_PAYMENT_TYPES for p in t.payment_types):
        problems.append(f"payment_types must be one or more of {', '.join(LINGJUN_PAYMENT_TYPES)}")
    for rid in t.regions:
        r = regions.get(rid)
        if r is None:
            problems.append(f"region {rid!r} is not in regions.csv")
        elif not r.lingjun:
            problems.append(f"region {rid} is not marked lingjun=true in regions.csv")
    for zone, _ in t.hpn_zones:
        if not any(zone in regions[rid].zones for rid in t.regions if rid in regions):
            problems.append(f"zone {zone!r} is not a zone of the type's regions")
    if t.regions and not t.hpn_zones:
        problems.append("a type offered in a region needs at least one zone:HPN-zone pair")
    if problems:
        raise CatalogError(f"{path}:{line}: {t.name}: " + "; ".join(problems))


def check_jumbo(path: Path, items: list[tuple[int, JumboFrames]], families: set[str]) -> None:
    """One row per ECS family of instance_types.csv, with a support value its basis allows."""
    for line, j in items:
        problems = []
        if j.family not in families:
            problems.append("the family is not in instance_types.csv")
        if j.support not in JUMBO_SUPPORT:
            problems.append(f"jumbo_frames must be one of {', '.join(JUMBO_SUPPORT)}")
        elif j.basis not in JUMBO_BASES:
            problems.append(f"basis must be one of {', '.join(JUMBO_BASES)}")
        elif j.support not in JUMBO_BASES[j.basis]:
            problems.append(
                f"basis {j.basis} allows jumbo_frames {' or '.join(JUMBO_BASES[j.basis])}, not {j.support}"
            )
        if problems:
            raise CatalogError(f"{path}:{line}: {j.family}: " + "; ".join(problems))
    missing = sorted(families - {j.family for _, j in items})
    if missing:
        raise CatalogError(
            f"{path}: no row for the families {missing} (use jumbo_frames unknown, basis not-listed)"
        )
