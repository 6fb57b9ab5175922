"""The identity part's rules (TS008, TS009): what a RAM policy allows, read from its document (wildcard actions and
resources, NotAction, system FullAccess policies) and the OSS buckets it reaches."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from generator.preview.lint.graph import Index, Resource, check, input_of

# Resource type tokens (pulumi_alicloud 4.0.0).
RAM_POLICY = "alicloud:ram/policy:Policy"
RAM_ATTACHMENTS = (
    "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment",
    "alicloud:ram/userPolicyAttachment:UserPolicyAttachment",
    "alicloud:ram/groupPolicyAttachment:GroupPolicyAttachment",
)


def _policy_document(r: Resource) -> tuple[list[Mapping[str, Any]], str]:
    """The Allow statements of a RAM policy, or an explanation of why the document cannot be read."""
    raw = input_of(r, "policyDocument", input_of(r, "document"))
    if raw is None:
        statements = input_of(r, "statements")  # deprecated inline form: [{effect, actions, resources}]
        if isinstance(statements, list):
            return [
                {
                    "Effect": s.get("effect", "Allow"),
                    "Action": s.get("actions", []),
                    "Resource": s.get("resources", []),
                }
                for s in statements
                if isinstance(s, Mapping) and str(s.get("effect", "Allow")).lower() == "allow"
            ], ""
        return [], ""  # unknown until deploy (computed from another resource): nothing to check offline
    try:
        doc = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as e:
        return [], f"its policy document is not JSON ({e})"
    body = doc.get("Statement", []) if isinstance(doc, Mapping) else None
    if isinstance(body, Mapping):
        body = [body]
    if not isinstance(body, list):
        return [], "its policy document has no Statement list"
    return [s for s in body if isinstance(s, Mapping) and str(s.get("Effect", "")).lower() == "allow"], ""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []


def _service_wide(action: str) -> bool:
    """``ram:*``, ``oss:*``, ``*:*``: every action of a service (a product code, a colon, and only ``*`` after it)."""
    service, colon, verb = action.strip().partition(":")
    return bool(colon) and bool(service) and set(verb) == {"*"}


def _every_resource_of_service(resource: str) -> bool:
    """``acs:ram:*:*:*``, ``acs:ecs:*:*:*/*``, ``acs:*:*:*:*``: an ARN whose region, account and resource parts
    are all wildcards (or empty), so it names every resource of the service in every region and account. OSS is
    left to TS009, which reads its bucket."""
    parts = resource.strip().split(":", 4)
    if len(parts) < 5 or parts[0] != "acs" or parts[1] == "oss":  # OSS resources are TS009's (one bucket)
        return False
    return all(not part.strip("*/") for part in parts[2:])


@check("TS008")
def _ram_wildcards(ix: Index) -> Iterator[tuple[Resource, str]]:
    for r in ix.of(RAM_POLICY):
        statements, unreadable = _policy_document(r)
        if unreadable:
            yield r, f"policy {input_of(r, 'policyName', r.name)!s} cannot be checked: {unreadable}"
        for s in statements:
            policy = input_of(r, "policyName", r.name)
            for action in _strings(s.get("Action")):
                if action.strip() == "*":
                    yield r, f"policy {policy!s} allows every action ('*'); list the actions it needs"
                elif _service_wide(action):
                    yield (
                        r,
                        (
                            f"policy {policy!s} allows every action of a service ('{action}'); list the actions "
                            "it needs"
                        ),
                    )
            for resource in _strings(s.get("Resource")):
                if resource.strip() == "*":
                    yield r, f"policy {policy!s} allows every resource ('*'); name the resources"
                elif _every_resource_of_service(resource):
                    yield (
                        r,
                        (
                            f"policy {policy!s} allows every resource of a service ('{resource}'); name the "
                            "resources"
                        ),
                    )
            for key in ("NotAction", "NotResource"):
                if key in s:
                    yield (
                        r,
                        (
                            f"policy {input_of(r, 'policyName', r.name)!s} allows with {key}, which grants everything "
                            "not listed; use Action and Resource"
                        ),
                    )
    for r in ix.of(*RAM_ATTACHMENTS):
        name = str(input_of(r, "policyName", ""))
        if str(input_of(r, "policyType", "")).lower() == "system" and (
            name == "AdministratorAccess" or name.endswith("FullAccess")
        ):
            yield (
                r,
                f"attaches the system policy {name}, which allows every action of a service; write a custom policy",
            )


def _oss_buckets(resource: str) -> str:
    """The bucket an ``acs:oss:region:account:bucket[/object]`` resource names ('' if it is not OSS)."""
    parts = resource.split(":", 4)
    if len(parts) < 5 or parts[0] != "acs" or parts[1] != "oss":
        return ""
    return parts[4].split("/", 1)[0] or "*"


@check("TS009")
def _ram_one_bucket(ix: Index) -> Iterator[tuple[Resource, str]]:
    for r in ix.of(RAM_POLICY):
        statements, _ = _policy_document(r)
        buckets: list[str] = []
        for s in statements:
            for resource in _strings(s.get("Resource")):
                bucket = _oss_buckets(resource)
                if bucket and any(ch in bucket for ch in "*?$"):
                    yield (
                        r,
                        (
                            f"policy {input_of(r, 'policyName', r.name)!s} reaches every bucket matching '{resource}'; "
                            "name one bucket, e.g. acs:oss:*:*:<bucket>/<prefix>*"
                        ),
                    )
                elif bucket and bucket not in buckets:
                    buckets.append(bucket)
        if len(buckets) > 1:
            yield (
                r,
                (
                    f"policy {input_of(r, 'policyName', r.name)!s} reaches {len(buckets)} buckets "
                    f"({', '.join(buckets)}); give each bucket its own policy"
                ),
            )
