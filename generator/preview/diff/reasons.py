"""Why a change has its impact class: one event class per reason, each with a stable code (``TSDnnn``), the impact
it gives and typed fields; the diff's English is rendered from them here only.

In the manner of the plan's warnings (:mod:`generator.plan.warns`) and dbt's events (``core/dbt/events/types.py``
in dbt-labs/dbt-core). :mod:`generator.preview.diff.classify` picks a change's reasons from the resource's kind and
its changed properties; :attr:`Change.reasons <generator.preview.diff.model.Change.reasons>` holds them worst
first, :attr:`Change.reason <generator.preview.diff.model.Change.reason>` is their text, and the JSON report carries
each as ``{"code", "impact", "fields", "text"}``, so a tool (and a test) reads the code and the fields, never the
words. What a changed property's own line says (``the provider keeps ...``) is rendered with its note
(:attr:`PropertyChange.summary <generator.preview.diff.model.PropertyChange.summary>`). ``docs/codes.md`` lists every code (``tests/test_codes.py`` checks it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from generator.preview.diff.model import DiffReason
from generator.preview.diff.values import _short

# What a reviewer calls each data resource kind (DataKind fields hold these)
FILE_SYSTEM, FILESET, BUCKET = "file system", "fileset", "bucket"


def _them(names: Sequence[Any]) -> str:
    return "it" if len(names) == 1 else "them"


def _subject(names: Sequence[str], verb: str) -> str:
    """``userData reboots`` / ``privateIp, userData reboot``."""
    return f"{', '.join(names)} {verb}{'s' if len(names) == 1 else ''}"


_GUARD = " It is protected: `pulumi up` refuses until the protection is removed."


# -- data: a file system, fileset or bucket


@dataclass(frozen=True, slots=True)
class DataDeleted(DiffReason):
    code = "TSD001"
    impact = "data-at-risk"
    summary = "a file system, fileset or bucket is removed from the program: it is deleted with its data"
    kind: str
    protected: bool

    def text(self) -> str:
        return f"deletes the {self.kind} and its data.{_GUARD if self.protected else ''}"


@dataclass(frozen=True, slots=True)
class DataReplaced(DiffReason):
    code = "TSD002"
    impact = "data-at-risk"
    summary = (
        "a changed input forces a new file system, fileset or bucket: the old one is deleted with its data"
    )
    kind: str
    properties: tuple[str, ...]  # the inputs that force the replacement
    protected: bool

    def text(self) -> str:
        return (
            f"{_subject(self.properties, 'force')} a new, empty {self.kind}; the old one is deleted with its data."
            f"{_GUARD if self.protected else ''}"
        )


@dataclass(frozen=True, slots=True)
class DataUnprotected(DiffReason):
    code = "TSD003"
    impact = "data-at-risk"
    summary = "protect or retainOnDelete is removed from a data resource"
    options: tuple[str, ...]

    def text(self) -> str:
        return f"{' and '.join(self.options)} removed: a later deletion or replacement would lose the data."


_EXPIRY_WORDS = {"expirations": "objects", "noncurrentVersionExpirations": "noncurrent versions"}


@dataclass(frozen=True, slots=True)
class DataExpiresSooner(DiffReason):
    code = "TSD004"
    impact = "data-at-risk"
    summary = "the bucket's lifecycle rules make objects or noncurrent versions expire sooner"
    expiries: tuple[tuple[str, float, float | None], ...]  # (lifecycle key, days, was: None for never)

    def text(self) -> str:
        said = "; ".join(
            f"{_EXPIRY_WORDS[key]} now expire after {days:g} days (was {'never' if was is None else f'{was:g} days'})"
            for key, days, was in self.expiries
        )
        return (
            f"lifecycleRules: {said}: the bucket deletes what is older at its next lifecycle run "
            "(checkpoints.keep_last, checkpoints.retention_days)."
        )


# -- GPU nodes


@dataclass(frozen=True, slots=True)
class NodeCreated(DiffReason):
    code = "TSD005"
    impact = "replaces-nodes"
    summary = "a new GPU node (the job restarts with a new world size unless the cluster has no node yet)"
    first: bool  # the cluster has no node yet

    def text(self) -> str:
        if self.first:
            return "new node (the cluster has none yet)."
        return "new node: the job restarts with a new world size."


@dataclass(frozen=True, slots=True)
class NodeReleased(DiffReason):
    code = "TSD006"
    impact = "replaces-nodes"
    summary = "a GPU node is removed: the job loses a rank and the node's local disks"

    def text(self) -> str:
        return "releases the node: the job loses a rank and its local disks."


@dataclass(frozen=True, slots=True)
class NodePaused(DiffReason):
    code = "TSD007"
    impact = "replaces-nodes"
    summary = "a GPU node is released by compute.paused; resuming creates it again"

    def text(self) -> str:
        return (
            "released by compute.paused: the job stops and the node's local disks are lost; resuming "
            "(compute.paused: false) creates it again with the same name and address."
        )


@dataclass(frozen=True, slots=True)
class NodeReplaced(DiffReason):
    code = "TSD008"
    impact = "replaces-nodes"
    summary = "a changed input forces a new GPU node: local disks are lost, training is interrupted"
    properties: tuple[str, ...]

    def text(self) -> str:
        return f"{_subject(self.properties, 'force')} a new node: local disks are lost and the job is interrupted."


@dataclass(frozen=True, slots=True)
class NodeRebooted(DiffReason):
    code = "TSD009"
    impact = "restarts-nodes"
    summary = "the provider's update of a changed input stops and restarts the GPU node"
    properties: tuple[str, ...]

    def text(self) -> str:
        return f"{_subject(self.properties, 'reboot')} the node: the job is interrupted."


# -- any other resource


@dataclass(frozen=True, slots=True)
class Created(DiffReason):
    code = "TSD010"
    summary = "a new resource that is not a GPU node"

    def text(self) -> str:
        return "new resource."


@dataclass(frozen=True, slots=True)
class Deleted(DiffReason):
    code = "TSD011"
    summary = "a resource that is neither a GPU node nor data is removed from the program"

    def text(self) -> str:
        return "removed from the program."


@dataclass(frozen=True, slots=True)
class Replaced(DiffReason):
    code = "TSD012"
    summary = "a resource that is neither a GPU node nor data is replaced (deleteBeforeReplace: gone a while)"
    delete_first: bool  # deleteBeforeReplace

    def text(self) -> str:
        if self.delete_first:
            return "the old one is deleted, then a new one is created (deleteBeforeReplace: it is gone for a while)."
        return "a new one is created, then the old one is deleted."


@dataclass(frozen=True, slots=True)
class Updated(DiffReason):
    code = "TSD013"
    summary = "an update whose inputs all change in place: no reboot, no doubt, no data at risk"

    def text(self) -> str:
        return "updated in place."


# -- what an update's inputs add: doubts and refusals


@dataclass(frozen=True, slots=True)
class GrowUncomparable(DiffReason):
    code = "TSD014"
    impact = "unknown"
    summary = (
        "a value the cloud only grows is unset or not a number on a side: growth or refused shrink unknown"
    )
    properties: tuple[str, ...]

    def text(self) -> str:
        return (
            f"{', '.join(self.properties)} can only grow and the old or new value is unset or not a number, so "
            "trainstack cannot tell a growth from a refused shrink: check the current value before merging."
        )


# The spec field that sets each grow-only value a spec controls, by (resource type, input)
KEEP_FIELDS = {
    ("alicloud:nas/fileSystem:FileSystem", "capacity"): "storage.capacity",
    ("alicloud:ecs/instance:Instance", "systemDiskSize"): "compute.system_disk_gib",
}


@dataclass(frozen=True, slots=True)
class Shrunk(DiffReason):
    code = "TSD015"
    impact = "fails-at-apply"
    summary = "a value the cloud only grows (capacity, disk size) gets smaller: `pulumi up` fails part-way"
    shrunk: tuple[tuple[str, Any, Any], ...]  # (input, old, new)
    spec_field: str = ""  # the spec field that keeps the old value (KEEP_FIELDS), "" when the spec sets none
    keep: Any = None  # that field's old value

    def text(self) -> str:
        what = ", ".join(f"{name} {_short(old)} -> {_short(new)}" for name, old, new in self.shrunk)
        verb = "is" if len(self.shrunk) == 1 else "are"
        return (
            f"{what} {verb} smaller: the cloud only grows {_them(self.shrunk)}, so `pulumi up` fails on this "
            f"resource and stops part-way; keep the old value{self._hint()}."
        )

    def _hint(self) -> str:
        if self.spec_field == "storage.capacity":
            return (
                f" (storage.capacity: {_short(self.keep)}GiB keeps it; with capacity auto the plan sizes a CPFS "
                "file system from the dataset, so a smaller dataset asks for a smaller one)"
            )
        if self.spec_field:
            return f" ({self.spec_field}: {_short(self.keep)} keeps it)"
        return ""


@dataclass(frozen=True, slots=True)
class FamilyRefused(DiffReason):
    code = "TSD016"
    impact = "fails-at-apply"
    summary = "instanceType crosses into or out of a GPU or bare-metal family: ModifyInstanceSpec is refused"
    old: str
    new: str

    def text(self) -> str:
        return (
            f"instanceType {_short(self.old)} -> {_short(self.new)} crosses instance families: ECS offers no such "
            "target for a GPU or bare-metal family (DescribeResourcesModification), so ModifyInstanceSpec is "
            "refused and `pulumi up` stops part-way; to change family the nodes must be replaced "
            "(`pulumi up --replace URN` per node, or a new stack)."
        )


@dataclass(frozen=True, slots=True)
class NeverApplied(DiffReason):
    code = "TSD017"
    impact = "never-applied"
    summary = "a changed input has no provider update: the cloud keeps the old value"
    properties: tuple[str, ...]

    def text(self) -> str:
        one = len(self.properties) == 1
        return (
            f"{', '.join(self.properties)} {'is' if one else 'are'} never applied: the provider has no update for "
            f"{_them(self.properties)}, so the cloud keeps the old value; replace the resource by hand "
            "(`pulumi up --replace URN`) or revert."
        )


@dataclass(frozen=True, slots=True)
class NoProviderData(DiffReason):
    code = "TSD018"
    impact = "unknown"
    summary = "a changed input has no replacement data: a possible replacement, never safe"
    properties: tuple[str, ...]
    stakes: str = ""  # "data" (the kind's data would be deleted), "node" (local disks, training) or ""
    kind: str = ""  # the data resource's kind when stakes is "data"

    def text(self) -> str:
        stakes = {
            "data": f", which would delete the {self.kind} and its data",
            "node": ", which would lose the node's local disks and interrupt training",
        }.get(self.stakes, "")
        return (
            f"no provider data for {', '.join(self.properties)}: treat {_them(self.properties)} as a possible "
            f"replacement{stakes}."
        )


def codes() -> list[type[DiffReason]]:
    """Every reason class, by code (docs/codes.md lists them)."""
    found = {
        v
        for v in globals().values()
        if isinstance(v, type) and issubclass(v, DiffReason) and v is not DiffReason
    }
    return sorted(found, key=lambda c: c.code)


def render(reasons: Sequence[DiffReason]) -> str:
    """A change's reason in words: its reasons' texts, worst first."""
    return " ".join(r.text() for r in reasons)
