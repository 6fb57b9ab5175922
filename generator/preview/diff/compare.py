"""Comparing two resource graphs: which resources change, how (create, update, replace, delete), how badly.

Resources are matched by (type, name). Which of a matched pair's properties changed, and each change's effect,
is :mod:`generator.preview.diff.properties`'s job; a new provider region replaces everything, so it is diffed
here. A replacement changes the replaced resource's id, so resources that reference it change too; the mock
runtime cannot show that (it answers every id with ``<name>-id``), so it is propagated here: a reference to a
replaced resource counts as a changed input with that input's own effect, until nothing new is replaced (only
a known ``replace`` propagates; an ``unknown`` input is reported, not followed). A replaced resource is created
with every new value, so a value the cloud would refuse to shrink is fine there
(:func:`~generator.preview.diff.properties.created_with`). Every change then gets its impact class and its
reasons from :mod:`generator.preview.diff.classify`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from generator.preview.diff.classify import classify
from generator.preview.diff.model import (
    ACTIONS,
    IMPACTS,
    NODE_TYPES,
    Action,
    Change,
    DiffResult,
    PropertyChange,
    SideInfo,
    natural_key,
)
from generator.preview.diff.notes import DiffNote, OtherStack, RegionChanged
from generator.preview.diff.properties import created_with, property_changes, value_effect
from generator.preview.diff.replacement import UNKNOWN_RULE, Rule, load_rules, load_unset
from generator.preview.diff.values import _decode_user_data

if TYPE_CHECKING:  # mockrun imports pulumi lazily; only its types are needed here
    from generator.preview.mockrun import Graph, Resource


def diff_graphs(
    base: Graph,
    head: Graph,
    *,
    base_info: SideInfo | None = None,
    head_info: SideInfo | None = None,
    rules: Mapping[tuple[str, str], Rule] | None = None,
) -> DiffResult:
    """Compare two resource graphs keyed by (type, name) and classify every change.

    ``base_info``/``head_info`` only add labels and the provider region: the region is provider configuration,
    invisible in resource inputs, and changing it replaces every resource, so it is diffed here.
    """
    rules = load_rules() if rules is None else rules
    unset = load_unset()
    base_info = base_info or SideInfo(label="base", resources=len(base.resources))
    head_info = head_info or SideInfo(label="head", resources=len(head.resources))
    old = {(r.type, r.name): r for r in base.resources}
    new = {(r.type, r.name): r for r in head.resources}
    if _other_stack(base_info, head_info):
        old = {}  # HEAD deploys to a different Pulumi stack: all of it is new, BASE's stack is left alone
    region_changed = bool(base_info.region and head_info.region and base_info.region != head_info.region)

    props: dict[tuple[str, str], list[PropertyChange]] = {}
    for key in sorted(old.keys() & new.keys()):
        changed = property_changes(old[key], new[key], rules, unset)
        if region_changed:
            changed.append(
                PropertyChange(
                    "region",
                    base_info.region,
                    head_info.region,
                    "replace",
                    REGION_SOURCE,
                    f"{base_info.region} -> {head_info.region}",
                )
            )
        if changed:
            props[key] = changed
    _propagate_replacements(new, old.keys() & new.keys(), props, rules)

    changes: list[Change] = []
    fresh_cluster = not any(k[0] in NODE_TYPES for k in old)
    for key, plist in props.items():
        action: Action = "replace" if any(p.effect == "replace" for p in plist) else "update"
        if action == "replace":  # the new resource is created with the smaller value: nothing is refused
            plist = [created_with(p) for p in plist]
        ordered = tuple(sorted(plist, key=lambda p: p.name))
        changes.append(classify(action, old[key], new[key], ordered, fresh_cluster))
    for key in new.keys() - old.keys():
        changes.append(classify("create", None, new[key], (), fresh_cluster))
    for key in old.keys() - new.keys():
        changes.append(classify("delete", old[key], None, (), fresh_cluster))
    changes.sort(key=_order)
    unchanged = len(old.keys() & new.keys()) - len(props)
    return DiffResult(tuple(changes), unchanged, base_info, head_info, tuple(_notes(base_info, head_info)))


REGION_SOURCE = (
    "the alicloud provider's region is provider configuration: a new region replaces every resource"
)


def _order(c: Change) -> tuple[int, int, str, tuple[Any, ...]]:
    return (IMPACTS.index(c.impact), ACTIONS.index(c.action), c.type, natural_key(c.name))


def _mock_outputs(name: str) -> frozenset[str]:
    """The values the mock runtime answers for a resource's id and computed outputs (see mockrun.Recorder).

    They stand for "the id of <name>" in the other resources' inputs; when <name> is replaced they change.
    """
    return frozenset(
        {
            f"{name}-id",
            f"stb-{name}",
            f"ptc-{name}",
            f"fset-{name}",
            f"exp-{name}",
            f"{name}.mock.nas.aliyuncs.com",
        }
    )


def _references(prop: str, value: Any, tokens: frozenset[str]) -> str | None:
    """The first mock output in ``value`` (nested), or None.

    Inside base64 user data only addresses are looked for (the boot script embeds the NAS mount address); an
    id-like token such as ``vpc-id`` could also be an unrelated word of the script.
    """
    if isinstance(value, str):
        if value in tokens:
            return value
        if prop == "userData":
            text = _decode_user_data(value)
            if text is not None:
                return next((t for t in sorted(tokens) if "." in t and t in text), None)
        return None
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            found = _references(prop, item, tokens)
            if found:
                return found
    return None


def _propagate_replacements(
    new: Mapping[tuple[str, str], Resource],
    common: Iterable[tuple[str, str]],
    props: dict[tuple[str, str], list[PropertyChange]],
    rules: Mapping[tuple[str, str], Rule],
) -> None:
    """Mark inputs that reference a replaced resource as changed, following replacements to a fixed point.

    Only resources on both sides matter: a created one gets the new ids anyway, a deleted one is gone.
    """
    keys = sorted(common)
    replaced = {k for k, plist in props.items() if any(p.effect == "replace" for p in plist)}
    frontier = set(replaced)
    while frontier:
        tokens = {t: k[1] for k in sorted(frontier) for t in _mock_outputs(k[1])}
        token_set = frozenset(tokens)
        frontier = set()
        for key in keys:
            res = new[key]
            if key in replaced:
                continue
            already = {p.name for p in props.get(key, [])}
            for name, value in res.inputs.items():
                if name in already:
                    continue
                found = _references(name, value, token_set)
                if not found:
                    continue
                rule = rules.get((res.type, name), UNKNOWN_RULE)
                cause = tokens[found]
                props.setdefault(key, []).append(
                    PropertyChange(
                        name,
                        value,
                        value,
                        value_effect(rule.effect, None, None),
                        rule.source,
                        "",
                        "after-replacement",
                        cause,
                    )
                )
                if rule.effect == "replace" and key not in replaced:
                    replaced.add(key)
                    frontier.add(key)


def _other_stack(base: SideInfo, head: SideInfo) -> bool:
    """Both sides name their Pulumi project and stack, and they differ: HEAD is a separate deployment."""
    return bool(
        base.project
        and head.project
        and base.stack
        and head.stack
        and (base.project, base.stack) != (head.project, head.stack)
    )


def _notes(base: SideInfo, head: SideInfo) -> list[DiffNote]:
    notes: list[DiffNote] = []
    if _other_stack(base, head):
        notes.append(
            OtherStack(f"{base.project}/{base.stack}", f"{head.project}/{head.stack}", base.resources)
        )
    elif base.region and head.region and base.region != head.region:
        notes.append(RegionChanged(base.region, head.region))
    return notes
