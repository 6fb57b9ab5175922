"""The diff's vocabulary and result types: actions, impact classes, effects, and the changes a diff reports.

:class:`DiffResult` holds every :class:`Change` between two resource graphs, worst impact first; each change
to a resource present on both sides lists its changed properties (:class:`PropertyChange`). Comparing graphs
is :mod:`generator.preview.diff.compare`'s job, pricing the two sides (:attr:`DiffResult.cost`)
:mod:`generator.preview.diff.cost`'s, and showing a result is
:mod:`generator.preview.diff.report`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from generator.errors import TrainstackError
from generator.events import Event
from generator.preview.diff.values import _short

if TYPE_CHECKING:
    from generator.preview.diff.cost import CostDelta
    from generator.preview.diff.notes import DiffNote

Action = Literal["create", "update", "replace", "delete"]
Impact = Literal[
    "data-at-risk", "replaces-nodes", "fails-at-apply", "never-applied", "unknown", "restarts-nodes", "safe"
]
Effect = Literal["replace", "reboot", "in-place", "ignored", "grow-only", "unknown", "fails-at-apply"]

# Worst first. Certain loss (data, then nodes) outranks everything. A change the cloud refuses comes next: it is
# certain, and `pulumi up` stops part-way (what it changed before the refusal stays changed). A change the
# provider never applies follows: the reviewed program and the cloud silently disagree, and the fix is a
# replacement by hand. An unknown property may be a replacement, so it outranks a known reboot; it stays below the
# classes that are known to destroy or fail something, and above safe, which it never is.
IMPACTS: tuple[Impact, ...] = (
    "data-at-risk",
    "replaces-nodes",
    "fails-at-apply",
    "never-applied",
    "unknown",
    "restarts-nodes",
    "safe",
)
ACTIONS: tuple[Action, ...] = ("delete", "replace", "update", "create")  # most destructive first
# What a data row may say. "grow-only": updated in place when the new value is larger, refused by the cloud when it
# is smaller (a CPFS/Extreme NAS capacity, a disk size); the diff resolves it per change, by value.
DATA_EFFECTS: tuple[Effect, ...] = ("replace", "reboot", "in-place", "ignored", "grow-only")
# What a changed property reports: a data effect other than grow-only, "unknown" (no row, or a grow-only value
# that cannot be compared) or "fails-at-apply" (a grow-only value that gets smaller).
EFFECTS: tuple[Effect, ...] = (*DATA_EFFECTS, "unknown", "fails-at-apply")

INSTANCE = "alicloud:ecs/instance:Instance"
NODE_TYPES = frozenset({INSTANCE, "alicloud:eflo/node:Node"})  # a GPU node: ECS instance or Lingjun node
# Resources whose deletion loses data: the shared file system, the dataset fileset, the checkpoint bucket.
DATA_TYPES = frozenset(
    {"alicloud:nas/fileSystem:FileSystem", "alicloud:nas/fileset:Fileset", "alicloud:oss/bucket:Bucket"}
)

IMPACT_TITLES: Mapping[Impact, str] = {
    "data-at-risk": "a file system, fileset or bucket and its data could be deleted",
    "replaces-nodes": "GPU nodes are created, deleted or replaced; training is interrupted",
    "fails-at-apply": (
        "a value the cloud can only grow (file system capacity, disk size) gets smaller: the cloud "
        "refuses it and `pulumi up` fails part-way; keep the old value"
    ),
    "never-applied": (
        "the change is recorded in the program but the provider will not apply it; replace the "
        "resource by hand (`pulumi up --replace URN`) or revert"
    ),
    "unknown": "trainstack has no provider data for this property; treat it as a possible replacement",
    "restarts-nodes": "GPU nodes reboot in place; training is interrupted",
    "safe": "no data loss and no node interruption",
}


Kind = Literal["new stack", "deleted stack", "pause", "resume", "replace", "grow", "shrink", "update", "none"]
KINDS: tuple[Kind, ...] = (
    "new stack",
    "deleted stack",
    "pause",
    "resume",
    "replace",
    "grow",
    "shrink",
    "update",
    "none",
)


@dataclass(frozen=True, slots=True)
class Fact:
    """One row of the table: what, base, head (``—`` where a side has none)."""

    label: str
    base: str
    head: str

    @property
    def changed(self) -> bool:
        return self.base != self.head


@dataclass(frozen=True)
class WhatChanged:
    """The spec-level change: the kind, a one-line headline, the facts, warnings and the gates it needs."""

    kind: Kind
    headline: str
    facts: tuple[Fact, ...]
    new_warnings: tuple[Event, ...] = ()  # the head plan's warnings the base's lacks (generator/plan/warns/)
    resolved_warnings: tuple[Event, ...] = ()  # the base plan's the head's lacks
    notes: tuple[DiffNote, ...] = ()  # what a reviewer must know about a new or deleted stack
    gates: tuple[str, ...] = ()  # "new-stack", "deleted-stack": need the same approval as data at risk

    def changed_facts(self) -> list[Fact]:
        return [f for f in self.facts if f.changed]


class DiffError(TrainstackError):
    """A side cannot be read (git, missing file) or the replacement data is malformed."""


# What is known about a changed property beyond its effect (the report's words for each are in
# :attr:`PropertyChange.summary`): "provider-keeps" an Optional + Computed input left unset
# (the provider keeps the cloud's value), "smaller" / "uncomparable" a grow-only value that shrinks / cannot be
# compared, "after-replacement" an input that changes only because a resource it references is replaced,
# "set-on-new" / "created-without" a smaller or unset value on a replaced resource (the new one is created so).
Note = Literal[
    "", "provider-keeps", "smaller", "uncomparable", "after-replacement", "set-on-new", "created-without"
]
NOTES: tuple[Note, ...] = (
    "",
    "provider-keeps",
    "smaller",
    "uncomparable",
    "after-replacement",
    "set-on-new",
    "created-without",
)


_NOTE_SUFFIX = {
    "smaller": " (smaller: the cloud only grows it)",
    "uncomparable": " (can only grow; cannot compare the values)",
    "set-on-new": " (set on the new resource)",
    "created-without": " (the new resource is created without it)",
}


@dataclass(frozen=True, slots=True)
class PropertyChange:
    """One changed input (or resource option) of a resource present on both sides.

    ``values`` is the value change in one line (``ecs.a -> ecs.b``, or what changed inside user data); ``note``
    and ``replaced`` are the facts the report adds to it, and :attr:`summary` is the line a reviewer reads.
    """

    name: str  # camelCase input name, "protect"/"retainOnDelete" for options, "region" for the provider
    old: Any
    new: Any
    effect: Effect
    source: str
    values: str
    note: Note = ""
    replaced: str = (
        ""  # the referenced resource whose replacement changes this value (note "after-replacement")
    )

    @property
    def summary(self) -> str:
        """Short and human: the values and what the note says about them."""
        if self.note == "after-replacement":
            return f"(known after apply: {self.replaced} is replaced)"
        if self.note == "provider-keeps":
            return f"{self.values}: the provider keeps {_short(self.old)}"
        return self.values + _NOTE_SUFFIX.get(self.note, "")

    @property
    def cause(self) -> str:
        """``node-1 is replaced`` when the value changes only because a referenced resource is replaced."""
        return f"{self.replaced} is replaced" if self.replaced else ""


@dataclass(frozen=True, slots=True)
class DiffReason(Event):
    """Why a change has its impact (the events are in :mod:`generator.preview.diff.reasons`): ``code`` and
    ``impact`` are the class's, the fields the instance's."""

    impact: ClassVar[Impact] = "safe"

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "impact": self.impact, "fields": self.fields(), "text": self.text()}


@dataclass(frozen=True, slots=True)
class Change:
    """What happens to one resource, and how bad it is."""

    action: Action
    type: str
    name: str
    impact: Impact
    reason: str  # rendered from ``reasons`` (generator.preview.diff.reasons)
    properties: tuple[PropertyChange, ...] = ()
    reasons: tuple[DiffReason, ...] = ()  # why this impact, as codes and fields, worst first

    @property
    def short_type(self) -> str:
        return short_type(self.type)


@dataclass(frozen=True, slots=True)
class SideInfo:
    """Where one side came from and what it deploys to (empty when the graphs were given directly)."""

    label: str = ""
    project: str = ""
    stack: str = ""
    region: str = ""
    resources: int = 0


@dataclass(frozen=True)
class DiffResult:
    """Every change between two resource graphs, ordered worst impact first."""

    changes: tuple[Change, ...]
    unchanged: int
    base: SideInfo = field(default_factory=SideInfo)
    head: SideInfo = field(default_factory=SideInfo)
    notes: tuple[DiffNote, ...] = ()  # another stack or region (generator/preview/diff/notes.py)
    cost: CostDelta | None = None  # both sides' cost and the change; None when the graphs were given directly
    picture: str = ""  # the change as one Mermaid diagram, boxes coloured by impact ("" without plans)
    what: WhatChanged | None = (
        None  # the spec-level change from the two plans; None when graphs were given directly
    )

    @property
    def has_changes(self) -> bool:
        return bool(self.changes)

    def counts(self) -> dict[str, int]:
        """Changes per action, every action present (zero included), in a stable order."""
        out = {a: 0 for a in ("create", "update", "replace", "delete")}
        for c in self.changes:
            out[c.action] += 1
        return out

    def impact_counts(self) -> dict[Impact, int]:
        out: dict[Impact, int] = {i: 0 for i in IMPACTS}
        for c in self.changes:
            out[c.impact] += 1
        return out

    @property
    def worst_impact(self) -> Impact | None:
        for impact in IMPACTS:
            if any(c.impact == impact for c in self.changes):
                return impact
        return None

    def of_impact(self, impact: Impact) -> list[Change]:
        return [c for c in self.changes if c.impact == impact]


def short_type(token: str) -> str:
    """``alicloud:ecs/instance:Instance`` -> ``ecs:Instance`` (what a reviewer reads)."""
    parts = token.split(":")
    if len(parts) == 3 and "/" in parts[1]:
        return f"{parts[1].split('/')[0]}:{parts[2]}"
    return token


def natural_key(name: str) -> tuple[Any, ...]:
    """Sort ``node-2`` before ``node-10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))
