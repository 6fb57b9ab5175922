"""Which input changes replace or reboot a resource: the replacement data, read and checked.

The knowledge is data (``generator/preview/data/replacement.csv``), kept per resource type with a citation
per row (the pulumi_alicloud docstring, or the Terraform provider source when the docstring is silent). A
property not listed is an in-place update.
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from generator.preview.diff.model import EFFECTS, DiffError, Effect

REPLACEMENT_DATA = Path(__file__).resolve().parent.parent / "data" / "replacement.csv"


@dataclass(frozen=True, slots=True)
class Rule:
    """What changing one input of one resource type does, and where that fact comes from."""

    effect: Effect
    source: str


DEFAULT_RULE = Rule("in-place", "default: no replacement or reboot is documented for this property")


@functools.lru_cache(maxsize=4)
def load_rules(path: Path = REPLACEMENT_DATA) -> Mapping[tuple[str, str], Rule]:
    """``replacement.csv`` as {(type token, camelCase property): Rule}; a malformed row is an error, not a guess."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DiffError(f"cannot read the replacement data {path}: {e.strerror}") from None
    reader = csv.DictReader(text.splitlines())
    expected = ["type", "property", "effect", "source"]
    if reader.fieldnames != expected:
        found = ",".join(reader.fieldnames or [])
        raise DiffError(f"{path}: the header must be {','.join(expected)}, found {found}")
    rules: dict[tuple[str, str], Rule] = {}
    for line, row in enumerate(reader, start=2):
        key = (row["type"].strip(), row["property"].strip())
        effect = row["effect"].strip()
        if not key[0].startswith("alicloud:") or not key[1]:
            raise DiffError(f"{path}:{line}: a row needs a type token (alicloud:...) and a property")
        if effect not in EFFECTS:
            raise DiffError(f"{path}:{line}: effect '{effect}' is not one of {', '.join(EFFECTS)}")
        if not row["source"] or not row["source"].strip():
            raise DiffError(f"{path}:{line}: every row cites its source")
        if key in rules:
            raise DiffError(f"{path}:{line}: {key[0]} {key[1]} is listed twice")
        rules[key] = Rule(effect, row["source"].strip())  # type: ignore[arg-type]
    return rules


def rule_for(resource_type: str, prop: str, rules: Mapping[tuple[str, str], Rule] | None = None) -> Rule:
    """The effect of changing ``prop`` on ``resource_type``; unknown types and properties update in place."""
    return (load_rules() if rules is None else rules).get((resource_type, prop), DEFAULT_RULE)
