"""Which input changes replace, reboot or are ignored by a resource: the replacement data, read and checked.

The knowledge is data: one CSV per provider family in ``generator/preview/data/replacement/`` (``ecs.csv``,
``vpc.csv``, ``nas.csv``, ``oss.csv``, ``ram.csv``, ``eflo.csv``), header ``type,property,effect,source``, one
row per (resource type, camelCase property) with a citation (the provider source or the pulumi_alicloud
docstring). Effects: ``replace`` (ForceNew), ``reboot`` (the update stops and restarts the instance),
``in-place`` and ``ignored`` (not ForceNew and no update code: the change is silently never applied).

A property without a row is **unknown**, never in place: :data:`UNKNOWN_RULE`. The diff reports it as a
possible replacement until the data says otherwise.
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from generator.preview.diff.model import DATA_EFFECTS, DiffError, Effect

REPLACEMENT_DATA = Path(__file__).resolve().parent.parent / "data" / "replacement"
_HEADER = ["type", "property", "effect", "source"]


@dataclass(frozen=True, slots=True)
class Rule:
    """What changing one input of one resource type does, and where that fact comes from."""

    effect: Effect
    source: str


UNKNOWN_RULE = Rule("unknown", "no row in generator/preview/data/replacement/: trainstack has no provider data "
                               "for this property")
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
        if effect not in DATA_EFFECTS:
            raise DiffError(f"{path}:{line}: effect '{effect}' is not one of {', '.join(DATA_EFFECTS)}")
        if not row["source"].strip():
            raise DiffError(f"{path}:{line}: every row cites its source")
        if key in rules:
            raise DiffError(f"{path}:{line}: {key[0]} {key[1]} is listed twice (first at {where[key]})")
        rules[key] = Rule(effect, row["source"].strip())  # type: ignore[arg-type]
        where[key] = f"{path.name}:{line}"


def rule_for(resource_type: str, prop: str, rules: Mapping[tuple[str, str], Rule] | None = None) -> Rule:
    """The effect of changing ``prop`` on ``resource_type``; a type or property without a row is unknown."""
    return (load_rules() if rules is None else rules).get((resource_type, prop), UNKNOWN_RULE)
