"""The changed properties of one resource present on both sides, each with its effect from the replacement data.

:mod:`generator.preview.diff.compare` matches the resources and follows replacements; this module says, for one
pair, which inputs and resource options changed and what each change does. A changed input's effect is its data
row's (:mod:`generator.preview.diff.replacement`); an input without a row is ``unknown``, never in place. A
resource option (``protect``, ``retainOnDelete``) changes in place. Two rows are resolved per change, by value: a
``grow-only`` input (a CPFS or Extreme NAS capacity, a system disk size) updates in place when it grows, is
``fails-at-apply`` when it shrinks (the cloud refuses it, so ``pulumi up`` stops part-way) and ``unknown`` when a
side is unset or not a number; an ECS instance type changes in place (a reboot) only within its family
(:func:`instance_type_rule`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from generator.preview.diff.expiry import number as _number
from generator.preview.diff.model import INSTANCE, Effect, Note, PropertyChange
from generator.preview.diff.replacement import UNKNOWN_RULE, Rule, Unset
from generator.preview.diff.values import _short, summarize

if TYPE_CHECKING:  # mockrun imports pulumi lazily; only its types are needed here
    from generator.preview.mockrun import Resource

OPTION_SOURCE = "Pulumi resource option (no cloud API call)"


def property_changes(
    old: Resource,
    new: Resource,
    rules: Mapping[tuple[str, str], Rule],
    unset: Mapping[tuple[str, str], Unset] | None = None,
) -> list[PropertyChange]:
    """Every changed input (by name) and then every changed resource option of one resource."""
    if old is new:  # a row answered from BASE's entry: one object on both sides, its values JSON's
        return []
    unset = {} if unset is None else unset
    out = [
        change
        for name in sorted(set(old.inputs) | set(new.inputs))
        if old.inputs.get(name) != new.inputs.get(name)
        for change in [
            _input_change(new.type, name, old.inputs.get(name), new.inputs.get(name), rules, unset)
        ]
        if change is not None
    ]
    for option, a, b in (
        ("protect", old.protect, new.protect),
        ("retainOnDelete", old.retain_on_delete, new.retain_on_delete),
    ):
        if a != b:
            out.append(PropertyChange(option, a, b, "in-place", OPTION_SOURCE, f"{_short(a)} -> {_short(b)}"))
    return out


def _input_change(
    type_: str,
    name: str,
    a: Any,
    b: Any,
    rules: Mapping[tuple[str, str], Rule],
    unset: Mapping[tuple[str, str], Unset],
) -> PropertyChange | None:
    """One input from ``a`` to ``b``, or None when the unset data says it is no change."""
    computed = unset.get((type_, name))
    if computed is not None and b is None:  # Optional + Computed, unset: the provider keeps the cloud's value
        if computed.computed_default and a == computed.computed_default:
            return None  # NoSpot -> (unset): what the cloud reports anyway
        return PropertyChange(
            name, a, b, "ignored", computed.source, f"{_short(a)} -> (unset)", "provider-keeps"
        )
    if computed is not None and a is None and computed.computed_default and b == computed.computed_default:
        return None  # (unset) -> NoSpot: the value the cloud already reports
    rule = rules.get((type_, name), UNKNOWN_RULE)
    if type_ == INSTANCE and name == "instanceType" and rule.effect == "reboot":
        rule = instance_type_rule(a, b, rule)
    effect = value_effect(rule.effect, a, b)
    note = "" if rule.effect != "grow-only" or effect == "in-place" else _grow_note(effect)
    return PropertyChange(name, a, b, effect, rule.source, summarize(name, a, b), note)


def _grow_note(effect: Effect) -> Note:
    return "smaller" if effect == "fails-at-apply" else "uncomparable"


# ECS changes a pay-as-you-go instance's type with ModifyInstanceSpec (the provider's update, stopping and
# starting the instance) only to a type DescribeResourcesModification offers. "Instance families that support
# instance type changes" lists the allowed targets: within a family any size, across families only the listed
# general-purpose generations; GPU (gn*, sccgn*) and ECS Bare Metal (ebm*) families are not in it.
MODIFY_SPEC_DOCS = (
    "https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-modifyinstancespec, "
    "https://www.alibabacloud.com/help/en/ecs/user-guide/instance-families-that-support-instance-type-changes"
)
_FIXED_FAMILIES = ("ebm", "gn", "sccgn", "scch", "ebmgn", "vgn")


def instance_family(instance_type: str) -> str:
    """``ecs.ebmgn7ex.32xlarge`` -> ``ecs.ebmgn7ex``; the family is everything before the size."""
    parts = str(instance_type).split(".")
    return ".".join(parts[:2]) if len(parts) >= 3 else str(instance_type)


def instance_type_rule(old: Any, new: Any, reboot: Rule) -> Rule:
    """Same family: the provider's stop, ModifyInstanceSpec, start (``reboot``). Another family: a GPU or
    bare-metal family has no allowed cross-family target, so ECS refuses it (``fails-at-apply``); between other
    families only DescribeResourcesModification knows (``unknown``)."""
    if not isinstance(old, str) or not isinstance(new, str) or instance_family(old) == instance_family(new):
        return reboot
    fixed = [t for t in (old, new) if instance_family(t).split(".")[-1].startswith(_FIXED_FAMILIES)]
    if fixed:
        return Rule(
            "fails-at-apply",
            (
                f"{instance_family(old)} -> {instance_family(new)} crosses instance families: ECS changes a type only "
                "to the targets DescribeResourcesModification returns, and GPU and bare-metal families offer none "
                f"outside their own family ({MODIFY_SPEC_DOCS}); `pulumi up` fails on ModifyInstanceSpec. "
                f"Provider update: {reboot.source}"
            ),
        )
    return Rule(
        "unknown",
        (
            f"{instance_family(old)} -> {instance_family(new)} crosses instance families: only "
            f"DescribeResourcesModification tells whether ECS allows it ({MODIFY_SPEC_DOCS}). "
            f"Provider update: {reboot.source}"
        ),
    )


def value_effect(effect: Effect, old: Any, new: Any) -> Effect:
    """A data row's effect for this change: ``grow-only`` becomes ``in-place`` (larger), ``fails-at-apply``
    (smaller) or ``unknown`` (a side unset or not a number: the cloud's default is not known offline)."""
    if effect != "grow-only":
        return effect
    a, b = _number(old), _number(new)
    if a is None or b is None:
        return "unknown"
    return "fails-at-apply" if b < a else "in-place"


def created_with(p: PropertyChange) -> PropertyChange:
    """On a replaced resource, a refused change (a smaller grow-only value, another instance family) or an unset
    computed input is in place: the new resource is created so."""
    if p.effect == "fails-at-apply":
        return replace(p, effect="in-place", note="set-on-new" if p.note == "smaller" else p.note)
    if p.note == "provider-keeps":
        return replace(p, effect="in-place", note="created-without")
    return p
