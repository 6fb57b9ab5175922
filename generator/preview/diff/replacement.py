"""Which input changes replace, reboot or are ignored by a resource: the replacement data, read and checked.

The knowledge is data: one CSV per provider family in ``generator/preview/data/replacement/`` (``ecs.csv``,
``vpc.csv``, ``nas.csv``, ``oss.csv``, ``ram.csv``, ``eflo.csv``), header ``type,property,effect,source``, one
row per (resource type, camelCase property) with a citation (the provider source or the pulumi_alicloud
docstring). Effects: ``replace`` (ForceNew), ``reboot`` (the update stops and restarts the instance),
``in-place`` and ``ignored`` (not ForceNew and no update code: the change is silently never applied).

A property without a row is **unknown**, never in place: :data:`UNKNOWN_RULE`. The diff reports it as a
possible replacement until the data says otherwise. A row may say ``unknown`` itself: the input is in
pulumi_alicloud but no stored provider source shows what a change does. A row that calls a change harmless
(``in-place``, ``ignored``, ``grow-only``) must cite the provider's file and line
(``alicloud/resource_alicloud_*.go:LINE``), else loading fails: no "safe" without a provider source.

What an *unset* input means is data too (``generator/preview/data/unset.csv``, :func:`load_unset`): an
Optional + Computed input left unset keeps what the cloud reports, so ``NoSpot -> (unset)`` is no change.
"""

from __future__ import annotations

import csv
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from generator.preview.diff.model import DATA_EFFECTS, DiffError, Effect

REPLACEMENT_DATA = Path(__file__).resolve().parent.parent / "data" / "replacement"
UNSET_DATA = Path(__file__).resolve().parent.parent / "data" / "unset.csv"
_HEADER = ["type", "property", "effect", "source"]
_UNSET_HEADER = ["type", "property", "computed_default", "source"]
# A row whose effect reads as harmless must cite the provider's file and line.
SOURCE_LINE = re.compile(r"alicloud/resource_alicloud_\w+\.go:\d+")
_ROW_EFFECTS = (*DATA_EFFECTS, "unknown")


@dataclass(frozen=True, slots=True)
class Rule:
    """What changing one input of one resource type does, and where that fact comes from."""

    effect: Effect
    source: str


UNKNOWN_RULE = Rule(
    "unknown",
    "no row in generator/preview/data/replacement/: trainstack has no provider data for this property",
)
DEFAULT_RULE = UNKNOWN_RULE  # the rule of a property without a row (it used to be "in-place")


@functools.lru_cache(maxsize=4)
def load_rules(path: Path = REPLACEMENT_DATA) -> Mapping[tuple[str, str], Rule]:
    """The replacement data as {(type token, camelCase property): Rule}.

    ``path`` is the folder (every ``*.csv`` in it, in name order) or one CSV file. A malformed row is an error
    that names ``file:line``, never a guess; so is a (type, property) listed twice, in one file or across files.
    """
    if path.is_dir():
        files = sorted(path.glob("*.csv"))
        if not files:
            raise DiffError(f"the replacement data folder {path} holds no *.csv file")
    else:
        files = [path]
    rules: dict[tuple[str, str], Rule] = {}
    where: dict[tuple[str, str], str] = {}
    for file in files:
        _load_file(file, rules, where)
    return rules


def _load_file(path: Path, rules: dict[tuple[str, str], Rule], where: dict[tuple[str, str], str]) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DiffError(f"cannot read the replacement data {path}: {e.strerror}") from None
    reader = csv.DictReader(text.splitlines())
    if reader.fieldnames != _HEADER:
        found = ",".join(reader.fieldnames or [])
        raise DiffError(f"{path}:1: the header must be {','.join(_HEADER)}, found {found}")
    for row in reader:
        line = reader.line_num
        if None in row or any(v is None for v in row.values()):
            raise DiffError(f"{path}:{line}: a row has exactly 4 fields: {','.join(_HEADER)}")
        key = (row["type"].strip(), row["property"].strip())
        effect = row["effect"].strip()
        if not key[0].startswith("alicloud:") or not key[1]:
            raise DiffError(f"{path}:{line}: a row needs a type token (alicloud:...) and a property")
        if effect not in _ROW_EFFECTS:
            raise DiffError(f"{path}:{line}: effect '{effect}' is not one of {', '.join(_ROW_EFFECTS)}")
        if not row["source"].strip():
            raise DiffError(f"{path}:{line}: every row cites its source")
        if effect == "unknown" and not row["source"].startswith(("UNVERIFIED", "UNCERTAIN")):
            raise DiffError(
                f"{path}:{line}: an 'unknown' row says why (its source starts with UNVERIFIED or "
                "UNCERTAIN); a property without data needs no row"
            )
        if effect in ("in-place", "ignored", "grow-only") and not SOURCE_LINE.search(row["source"]):
            raise DiffError(
                f"{path}:{line}: {key[0]} {key[1]} is '{effect}' without a provider source "
                "(alicloud/resource_alicloud_*.go:LINE); a change without one is 'unknown'"
            )
        if key in rules:
            raise DiffError(f"{path}:{line}: {key[0]} {key[1]} is listed twice (first at {where[key]})")
        rules[key] = Rule(effect, row["source"].strip())
        where[key] = f"{path.name}:{line}"


def rule_for(resource_type: str, prop: str, rules: Mapping[tuple[str, str], Rule] | None = None) -> Rule:
    """The effect of changing ``prop`` on ``resource_type``; a type or property without a row is unknown."""
    return (load_rules() if rules is None else rules).get((resource_type, prop), UNKNOWN_RULE)


@dataclass(frozen=True, slots=True)
class Unset:
    """An Optional + Computed input: left unset, the provider keeps what the cloud reports.

    ``computed_default`` is what the cloud reports when the input was never set ("" when it depends on the
    resource): an unset side and a side with that value are the same.
    """

    computed_default: str
    source: str


@functools.lru_cache(maxsize=2)
def load_unset(path: Path = UNSET_DATA) -> Mapping[tuple[str, str], Unset]:
    """``generator/preview/data/unset.csv`` as {(type token, camelCase property): Unset}; malformed rows fail."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DiffError(f"cannot read {path}: {e.strerror}") from None
    reader = csv.DictReader(text.splitlines())
    if reader.fieldnames != _UNSET_HEADER:
        raise DiffError(f"{path}:1: the header must be {','.join(_UNSET_HEADER)}")
    out: dict[tuple[str, str], Unset] = {}
    for row in reader:
        if None in row or any(v is None for v in row.values()):
            raise DiffError(
                f"{path}:{reader.line_num}: a row has exactly 4 fields: {','.join(_UNSET_HEADER)}"
            )
        key = (row["type"].strip(), row["property"].strip())
        if not SOURCE_LINE.search(row["source"]) or key in out:
            raise DiffError(
                f"{path}:{reader.line_num}: {key[0]} {key[1]} needs one row citing the provider source"
            )
        out[key] = Unset(row["computed_default"].strip(), row["source"].strip())
    return out
