"""How bad one change is: its impact class and the reasons for it (:mod:`generator.preview.diff.reasons`).

The rules are tables of small functions, one per kind of change. What is known about the resource comes first
(:data:`KNOWN`: data, then nodes, then any resource: exactly one reason). An update then adds what its inputs say
(:data:`DOUBTS`: a grow-only value that cannot be compared, one that shrinks, a refused instance family, an input
the provider never applies, an input without data); the change takes the worst class of all, and its reasons are
every one that is not ``safe``, worst first. A replaced resource is created anew with every new value, so its
ignored and unknown inputs do not matter. An input without data is never ``safe``: :class:`NoProviderData` is
``unknown``, above ``safe`` and ``restarts-nodes``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import generator.preview.diff.reasons as r
from generator.preview.diff.expiry import sooner_expiries
from generator.preview.diff.model import (
    DATA_TYPES,
    IMPACTS,
    NODE_TYPES,
    Action,
    Change,
    Effect,
    PropertyChange,
)

if TYPE_CHECKING:  # mockrun imports pulumi lazily; only its types are needed here
    from generator.preview.mockrun import Resource

Props = tuple[PropertyChange, ...]

_KINDS = {
    "alicloud:nas/fileSystem:FileSystem": r.FILE_SYSTEM,
    "alicloud:nas/fileset:Fileset": r.FILESET,
    "alicloud:oss/bucket:Bucket": r.BUCKET,
}  # what a reviewer calls each of DATA_TYPES


def classify(
    action: Action, old: Resource | None, new: Resource | None, props: Props, fresh_cluster: bool
) -> Change:
    """The change with its impact class and its reasons (worst first) and their text."""
    res = new or old
    assert res is not None
    found = [
        next(x for known in KNOWN for x in [known(action, old, new, props, fresh_cluster)] if x is not None)
    ]
    if action == "update":
        found += [x for doubt in DOUBTS for x in [doubt(res, props)] if x is not None]
    if len(found) > 1:
        found = sorted((x for x in found if x.impact != "safe"), key=lambda x: IMPACTS.index(x.impact))
    return Change(action, res.type, res.name, found[0].impact, r.render(found), props, tuple(found))


def _names(props: Sequence[PropertyChange], effect: Effect) -> tuple[str, ...]:
    return tuple(p.name for p in props if p.effect == effect)


# -- what is known about the resource: (action, old, new, properties, fresh cluster) -> the reason or None


def _data(
    action: Action, old: Resource | None, new: Resource | None, props: Props, _: bool
) -> r.DiffReason | None:
    """A file system, fileset or bucket: deleted, replaced, unprotected, or expiring sooner."""
    res = new or old
    if res is None or res.type not in DATA_TYPES:
        return None
    kind, guarded = _KINDS[res.type], old is not None and old.protect
    if action == "delete":
        return r.DataDeleted(kind, guarded)
    if action == "replace":
        return r.DataReplaced(kind, _names(props, "replace"), guarded)
    dropped = tuple(p.name for p in props if p.name in ("protect", "retainOnDelete") and p.old and not p.new)
    if dropped:
        return r.DataUnprotected(dropped)
    sooner = sooner_expiries(old, new) if action == "update" else ()
    return r.DataExpiresSooner(sooner) if sooner else None


def _node(
    action: Action, old: Resource | None, new: Resource | None, props: Props, fresh: bool
) -> r.DiffReason | None:
    """A GPU node: created, released, replaced, or rebooted by an update."""
    res = new or old
    if res is None or res.type not in NODE_TYPES:
        return None
    if action == "create":
        return r.NodeCreated(fresh)
    if action == "delete":
        return r.NodeReleased()
    if action == "replace":
        return r.NodeReplaced(_names(props, "replace"))
    rebooted = _names(props, "reboot")
    return r.NodeRebooted(rebooted) if rebooted else None


def _any(action: Action, old: Resource | None, new: Resource | None, props: Props, _: bool) -> r.DiffReason:
    """Any other resource, or a node or data change nothing worse is known about: safe."""
    if action == "create":
        return r.Created()
    if action == "delete":
        return r.Deleted()
    if action == "replace":
        return r.Replaced(bool(getattr(new or old, "delete_before_replace", False)))
    return r.Updated()


KNOWN: tuple[Callable[[Action, Resource | None, Resource | None, Props, bool], r.DiffReason | None], ...] = (
    _data,
    _node,
    _any,
)


# -- what an update's inputs add: (resource, properties) -> the reason or None


def _uncomparable(res: Resource, props: Props) -> r.DiffReason | None:
    names = tuple(p.name for p in props if p.effect == "unknown" and p.note == "uncomparable")
    return r.GrowUncomparable(names) if names else None


def _shrunk(res: Resource, props: Props) -> r.DiffReason | None:
    shrunk = [p for p in props if p.effect == "fails-at-apply" and p.name != "instanceType"]
    if not shrunk:
        return None
    keep = next((p for p in shrunk if (res.type, p.name) in r.KEEP_FIELDS), None)
    spec_field = "" if keep is None else r.KEEP_FIELDS[(res.type, keep.name)]
    return r.Shrunk(
        tuple((p.name, p.old, p.new) for p in shrunk), spec_field, None if keep is None else keep.old
    )


def _family(res: Resource, props: Props) -> r.DiffReason | None:
    refused = [p for p in props if p.effect == "fails-at-apply" and p.name == "instanceType"]
    return r.FamilyRefused(refused[0].old, refused[0].new) if refused else None


def _ignored(res: Resource, props: Props) -> r.DiffReason | None:
    names = _names(props, "ignored")
    return r.NeverApplied(names) if names else None


def _no_data(res: Resource, props: Props) -> r.DiffReason | None:
    names = tuple(p.name for p in props if p.effect == "unknown" and p.note != "uncomparable")
    if not names:
        return None
    stakes = "data" if res.type in DATA_TYPES else "node" if res.type in NODE_TYPES else ""
    return r.NoProviderData(names, stakes, _KINDS.get(res.type, ""))


DOUBTS: tuple[Callable[[Resource, Props], r.DiffReason | None], ...] = (
    _uncomparable,
    _shrunk,
    _family,
    _ignored,
    _no_data,
)


def paused(change: Change) -> Change:
    """A node released by ``compute.paused`` (a pause): it comes back on resume, so it does not lose a rank."""
    return replace(change, reason=r.NodePaused().text(), reasons=(r.NodePaused(),))
