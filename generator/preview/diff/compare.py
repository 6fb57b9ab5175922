"""Comparing two resource graphs: which resources change, how (create, update, replace, delete), how badly.

Resources are matched by (type, name). A changed input's effect comes from the replacement data
(:mod:`generator.preview.diff.replacement`); an input without a row is ``unknown``, never in place. A change of
resource option (``protect``, ``retainOnDelete``) is in place, and a new provider region replaces everything.
A replacement changes the replaced resource's id, so resources that reference it change too; the mock
runtime cannot show that (it answers every id with ``<name>-id``), so it is propagated here: a reference to a
replaced resource counts as a changed input with that input's own effect, until nothing new is replaced (only
a known ``replace`` propagates; an ``unknown`` input is reported, not followed). Every change then gets its
impact class and a reason a reviewer can act on: an update with an ``ignored`` input is ``never-applied`` and
one with an ``unknown`` input is ``unknown``, unless something worse is known about the resource.

Some inputs can only grow (effect ``grow-only`` in the data: a CPFS or Extreme NAS capacity, a system disk size).
Their effect is decided by value: a larger number updates in place, a smaller one is ``fails-at-apply`` (the
cloud refuses it, so ``pulumi up`` stops part-way), and a value that cannot be compared (unset on one side, not a
number) is ``unknown``. A replaced resource is created with the new value, so there a smaller one is fine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from generator.preview.diff.expiry import expires_sooner
from generator.preview.diff.expiry import number as _number
from generator.preview.diff.model import (
    ACTIONS,
    DATA_TYPES,
    IMPACTS,
    INSTANCE,
    NODE_TYPES,
    Action,
    Change,
    DiffResult,
    Effect,
    Impact,
    PropertyChange,
    SideInfo,
    natural_key,
)
from generator.preview.diff.replacement import UNKNOWN_RULE, Rule, Unset, load_rules, load_unset
from generator.preview.diff.values import _decode_user_data, _short, summarize

if TYPE_CHECKING:  # mockrun imports pulumi lazily; only its types are needed here
    from generator.preview.mockrun import Graph, Resource


def diff_graphs(base: Graph, head: Graph, *, base_info: SideInfo | None = None, head_info: SideInfo | None = None,
                rules: Mapping[tuple[str, str], Rule] | None = None) -> DiffResult:
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
        changed = _property_changes(old[key], new[key], rules, unset)
        if region_changed:
            changed.append(PropertyChange(
                "region", base_info.region, head_info.region, "replace",
                "the alicloud provider's region is provider configuration: a new region replaces every resource",
                f"{base_info.region} -> {head_info.region}"))
        if changed:
            props[key] = changed
    _propagate_replacements(new, old.keys() & new.keys(), props, rules)

    changes: list[Change] = []
    fresh_cluster = not any(k[0] in NODE_TYPES for k in old)
    for key, plist in props.items():
        action: Action = "replace" if any(p.effect == "replace" for p in plist) else "update"
        if action == "replace":  # the new resource is created with the smaller value: nothing is refused
            plist = [_created_with(p) if p.effect == "fails-at-apply" or _kept(p) else p for p in plist]
        ordered = tuple(sorted(plist, key=lambda p: p.name))
        changes.append(_classify(action, old[key], new[key], ordered, fresh_cluster))
    for key in new.keys() - old.keys():
        changes.append(_classify("create", None, new[key], (), fresh_cluster))
    for key in old.keys() - new.keys():
        changes.append(_classify("delete", old[key], None, (), fresh_cluster))
    changes.sort(key=_order)
    unchanged = len(old.keys() & new.keys()) - len(props)
    return DiffResult(tuple(changes), unchanged, base_info, head_info, tuple(_notes(base_info, head_info)))


def _order(c: Change) -> tuple[int, int, str, tuple[Any, ...]]:
    return (IMPACTS.index(c.impact), ACTIONS.index(c.action), c.type, natural_key(c.name))



def _property_changes(old: Resource, new: Resource, rules: Mapping[tuple[str, str], Rule],
                      unset: Mapping[tuple[str, str], Unset] | None = None) -> list[PropertyChange]:
    out: list[PropertyChange] = []
    unset = {} if unset is None else unset
    for name in sorted(set(old.inputs) | set(new.inputs)):
        a, b = old.inputs.get(name), new.inputs.get(name)
        if a == b:
            continue
        computed = unset.get((new.type, name))
        if computed is not None and b is None:  # Optional + Computed, unset: the provider keeps the cloud's value
            if computed.computed_default and a == computed.computed_default:
                continue  # NoSpot -> (unset): what the cloud reports anyway
            out.append(PropertyChange(name, a, b, "ignored", computed.source,
                                      f"{_short(a)} -> (unset): the provider keeps {_short(a)}"))
            continue
        if computed is not None and a is None and computed.computed_default and b == computed.computed_default:
            continue  # (unset) -> NoSpot: the value the cloud already reports
        rule = rules.get((new.type, name), UNKNOWN_RULE)
        if new.type == INSTANCE and name == "instanceType" and rule.effect == "reboot":
            rule = _instance_type_rule(a, b, rule)
        effect = _value_effect(rule.effect, a, b)
        summary = summarize(name, a, b)
        if rule.effect == "grow-only" and effect != "in-place":
            summary += (" (smaller: the cloud only grows it)" if effect == "fails-at-apply"
                        else " (can only grow; cannot compare the values)")
        out.append(PropertyChange(name, a, b, effect, rule.source, summary))
    for option, a, b in (("protect", old.protect, new.protect),
                         ("retainOnDelete", old.retain_on_delete, new.retain_on_delete)):
        if a != b:
            out.append(PropertyChange(option, a, b, "in-place", "Pulumi resource option (no cloud API call)",
                                      f"{_short(a)} -> {_short(b)}"))
    return out


# ECS changes a pay-as-you-go instance's type with ModifyInstanceSpec (the provider's update, stopping and
# starting the instance) only to a type DescribeResourcesModification offers. "Instance families that support
# instance type changes" lists the allowed targets: within a family any size, across families only the listed
# general-purpose generations; GPU (gn*, sccgn*) and ECS Bare Metal (ebm*) families are not in it.
MODIFY_SPEC_DOCS = ("https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-modifyinstancespec, "
                    "https://www.alibabacloud.com/help/en/ecs/user-guide/instance-families-that-support-instance-type-changes")
_FIXED_FAMILIES = ("ebm", "gn", "sccgn", "scch", "ebmgn", "vgn")


def instance_family(instance_type: str) -> str:
    """``ecs.ebmgn7ex.32xlarge`` -> ``ecs.ebmgn7ex``; the family is everything before the size."""
    parts = str(instance_type).split(".")
    return ".".join(parts[:2]) if len(parts) >= 3 else str(instance_type)


def _instance_type_rule(old: Any, new: Any, reboot: Rule) -> Rule:
    """Same family: the provider's stop, ModifyInstanceSpec, start (``reboot``). Another family: a GPU or
    bare-metal family has no allowed cross-family target, so ECS refuses it (``fails-at-apply``); between other
    families only DescribeResourcesModification knows (``unknown``)."""
    if not isinstance(old, str) or not isinstance(new, str) or instance_family(old) == instance_family(new):
        return reboot
    fixed = [t for t in (old, new) if instance_family(t).split(".")[-1].startswith(_FIXED_FAMILIES)]
    if fixed:
        return Rule("fails-at-apply", (
            f"{instance_family(old)} -> {instance_family(new)} crosses instance families: ECS changes a type only "
            "to the targets DescribeResourcesModification returns, and GPU and bare-metal families offer none "
            f"outside their own family ({MODIFY_SPEC_DOCS}); `pulumi up` fails on ModifyInstanceSpec. "
            f"Provider update: {reboot.source}"))
    return Rule("unknown", (f"{instance_family(old)} -> {instance_family(new)} crosses instance families: only "
                            f"DescribeResourcesModification tells whether ECS allows it ({MODIFY_SPEC_DOCS}). "
                            f"Provider update: {reboot.source}"))


def _value_effect(effect: Effect, old: Any, new: Any) -> Effect:
    """A data row's effect for this change: ``grow-only`` becomes ``in-place`` (larger), ``fails-at-apply``
    (smaller) or ``unknown`` (a side unset or not a number: the cloud's default is not known offline)."""
    if effect != "grow-only":
        return effect
    a, b = _number(old), _number(new)
    if a is None or b is None:
        return "unknown"
    return "fails-at-apply" if b < a else "in-place"


_KEEPS = ": the provider keeps "


def _kept(p: PropertyChange) -> bool:
    """An Optional + Computed input left unset (the provider keeps the old value)."""
    return p.effect == "ignored" and _KEEPS in p.summary


def _created_with(p: PropertyChange) -> PropertyChange:
    """A smaller grow-only value, or an unset computed one, on a replaced resource: the new one is created so."""
    summary = p.summary.replace(" (smaller: the cloud only grows it)", " (set on the new resource)")
    if _kept(p):
        summary = summary.split(_KEEPS)[0] + " (the new resource is created without it)"
    return PropertyChange(p.name, p.old, p.new, "in-place", p.source, summary, p.cause)


def _mock_outputs(name: str) -> frozenset[str]:
    """The values the mock runtime answers for a resource's id and computed outputs (see mockrun.Recorder).

    They stand for "the id of <name>" in the other resources' inputs; when <name> is replaced they change.
    """
    return frozenset({f"{name}-id", f"stb-{name}", f"ptc-{name}", f"fset-{name}", f"exp-{name}",
                      f"{name}.mock.nas.aliyuncs.com"})


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


def _propagate_replacements(new: Mapping[tuple[str, str], Resource], common: Iterable[tuple[str, str]],
                            props: dict[tuple[str, str], list[PropertyChange]],
                            rules: Mapping[tuple[str, str], Rule]) -> None:
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
                props.setdefault(key, []).append(PropertyChange(
                    name, value, value, _value_effect(rule.effect, None, None), rule.source,
                    f"(known after apply: {cause} is replaced)", cause=f"{cause} is replaced"))
                if rule.effect == "replace" and key not in replaced:
                    replaced.add(key)
                    frontier.add(key)


_KINDS = {"alicloud:nas/fileSystem:FileSystem": "file system", "alicloud:nas/fileset:Fileset": "fileset",
          "alicloud:oss/bucket:Bucket": "bucket"}  # what a reviewer calls each of DATA_TYPES


def _classify(action: Action, old: Resource | None, new: Resource | None, props: tuple[PropertyChange, ...],
              fresh_cluster: bool) -> Change:
    """Pick the impact class and say why, in words a reviewer can act on.

    What is known about the resource (data, nodes) comes first; an update with ``ignored`` or ``unknown`` inputs
    then takes the worst class of all, and its reason says every part that is not ``safe``. A replaced resource
    is created anew with every new value, so its ignored and unknown inputs do not matter.
    """
    change = _classify_known(action, old, new, props, fresh_cluster)
    if action != "update":
        return change
    parts: list[tuple[Impact, str]] = [(change.impact, change.reason)]
    refused = [p for p in props if p.effect == "fails-at-apply" and p.name == "instanceType"]
    shrunk = [p for p in props if p.effect == "fails-at-apply" and p not in refused]
    ignored = [p.name for p in props if p.effect == "ignored"]
    unsure = [p.name for p in props if p.effect == "unknown" and "can only grow" in p.summary]  # grow-only
    unknown = [p.name for p in props if p.effect == "unknown" and p.name not in unsure]
    if unsure:
        parts.append(("unknown", (f"{', '.join(unsure)} can only grow and the old or new value is unset or not a "
                                 "number, so trainstack cannot tell a growth from a refused shrink: check the "
                                 "current value before merging.")))
    if shrunk:
        res = new or old
        assert res is not None
        keep = _keep_hint(res.type, shrunk)
        parts.append(("fails-at-apply", (f"{_shrink_text(shrunk)}: the cloud only grows "
                                        f"{'it' if len(shrunk) == 1 else 'them'}, so `pulumi up` fails on this "
                                        f"resource and stops part-way; keep the old value{keep}.")))
    if refused:
        p = refused[0]
        parts.append(("fails-at-apply", (f"instanceType {_short(p.old)} -> {_short(p.new)} crosses instance "
                                        "families: ECS offers no such target for a GPU or bare-metal family "
                                        "(DescribeResourcesModification), so ModifyInstanceSpec is refused and "
                                        "`pulumi up` stops part-way; to change family the nodes must be replaced "
                                        "(`pulumi up --replace URN` per node, or a new stack).")))
    if ignored:
        one = len(ignored) == 1
        parts.append(("never-applied",
                      (f"{', '.join(ignored)} {'is' if one else 'are'} never applied: the provider has no update for "
                      f"{'it' if one else 'them'}, so the cloud keeps the old value; replace the resource by hand "
                      "(`pulumi up --replace URN`) or revert.")))
    if unknown:
        res = new or old
        assert res is not None
        stakes = (f", which would delete the {_KINDS[res.type]} and its data" if res.type in DATA_TYPES
                  else ", which would lose the node's local disks and interrupt training" if res.type in NODE_TYPES
                  else "")
        parts.append(("unknown", (f"no provider data for {', '.join(unknown)}: treat "
                                 f"{'it' if len(unknown) == 1 else 'them'} as a possible replacement{stakes}.")))
    if len(parts) == 1:
        return change
    parts.sort(key=lambda part: IMPACTS.index(part[0]))
    reason = " ".join(why for impact, why in parts if impact != "safe")
    return Change(action, change.type, change.name, parts[0][0], reason, props)


def _shrink_text(shrunk: Sequence[PropertyChange]) -> str:
    """``capacity 27600 -> 14400 is smaller``: the grow-only values that get smaller."""
    what = ", ".join(f"{p.name} {_short(p.old)} -> {_short(p.new)}" for p in shrunk)
    return f"{what} {'is' if len(shrunk) == 1 else 'are'} smaller"


def _keep_hint(resource_type: str, shrunk: Sequence[PropertyChange]) -> str:
    """The spec field that keeps the old value, for the sizes a spec controls."""
    old = {p.name: p.old for p in shrunk}
    if resource_type == "alicloud:nas/fileSystem:FileSystem" and "capacity" in old:
        return (f" (storage.capacity: {_short(old['capacity'])}GiB keeps it; with capacity auto the plan sizes a CPFS "
                "file system from the dataset, so a smaller dataset asks for a smaller one)")
    if resource_type == INSTANCE and "systemDiskSize" in old:
        return f" (compute.system_disk_gib: {_short(old['systemDiskSize'])} keeps it)"
    return ""


def _classify_known(action: Action, old: Resource | None, new: Resource | None, props: tuple[PropertyChange, ...],
                    fresh_cluster: bool) -> Change:
    """The class the data and the resource's kind give (data, nodes, reboots), before any doubt is added."""
    res = new or old
    assert res is not None
    kind = _KINDS.get(res.type, "")
    if res.type in DATA_TYPES:
        guarded = old is not None and old.protect
        guard = (" It is protected: `pulumi up` refuses until the protection is removed." if guarded else "")
        if action == "delete":
            return Change(action, res.type, res.name, "data-at-risk", f"deletes the {kind} and its data.{guard}",
                          props)
        if action == "replace":
            return Change(action, res.type, res.name, "data-at-risk",
                          f"{_subject(props, 'replace')} a new, empty {kind}; the old one is deleted with its data."
                          f"{guard}", props)
        dropped = [p.name for p in props if p.name in ("protect", "retainOnDelete") and p.old and not p.new]
        if dropped:
            return Change(action, res.type, res.name, "data-at-risk",
                          f"{' and '.join(dropped)} removed: a later deletion or replacement would lose the data.",
                          props)
        sooner = expires_sooner(old, new) if action == "update" else ""
        if sooner:
            return Change(action, res.type, res.name, "data-at-risk", sooner, props)
    if res.type in NODE_TYPES:
        if action == "create":
            why = ("new node (the cluster has none yet)." if fresh_cluster
                   else "new node: the job restarts with a new world size.")
            return Change(action, res.type, res.name, "replaces-nodes", why, props)
        if action == "delete":
            return Change(action, res.type, res.name, "replaces-nodes",
                          "releases the node: the job loses a rank and its local disks.", props)
        if action == "replace":
            return Change(action, res.type, res.name, "replaces-nodes",
                          f"{_subject(props, 'replace')} a new node: local disks are lost and the job is "
                          "interrupted.", props)
        if any(p.effect == "reboot" for p in props):
            return Change(action, res.type, res.name, "restarts-nodes",
                          f"{_subject(props, 'reboot')} the node: the job is interrupted.", props)
    reason = {"create": "new resource.", "delete": "removed from the program.",
              "replace": ("the old one is deleted, then a new one is created (deleteBeforeReplace: it is gone "
                          "for a while)." if getattr(res, "delete_before_replace", False)
                          else "a new one is created, then the old one is deleted."),
              "update": "updated in place."}[action]
    return Change(action, res.type, res.name, "safe", reason, props)


def _subject(props: Sequence[PropertyChange], effect: Effect) -> str:  # effect: replace, reboot or in-place
    """``userData reboots`` / ``privateIp, userData reboot``: the properties with ``effect`` and the verb."""
    names = [p.name for p in props if p.effect == effect]
    verb = {"replace": "force", "reboot": "reboot", "in-place": "update"}[effect]
    return f"{', '.join(names)} {verb}{'s' if len(names) == 1 else ''}"


def _other_stack(base: SideInfo, head: SideInfo) -> bool:
    """Both sides name their Pulumi project and stack, and they differ: HEAD is a separate deployment."""
    return bool(base.project and head.project and base.stack and head.stack
                and (base.project, base.stack) != (head.project, head.stack))


def _notes(base: SideInfo, head: SideInfo) -> list[str]:
    notes = []
    if _other_stack(base, head):
        notes.append(f"HEAD deploys to another Pulumi stack ({base.project}/{base.stack} -> "
                     f"{head.project}/{head.stack}), so every resource is created there; the {base.resources} "
                     "resources of the old stack are not changed and keep running (and billing) until it is "
                     "destroyed.")
    elif base.region and head.region and base.region != head.region:
        notes.append(f"The region changes ({base.region} -> {head.region}): every resource is replaced, "
                     "data included.")
    return notes
