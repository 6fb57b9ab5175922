"""The identity part's rules (TS008, TS009): what a RAM policy allows, read from its document (wildcard
actions and resources, NotAction, system FullAccess policies) and the OSS buckets it reaches."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from generator.preview.lint.fact import LintFact
from generator.preview.lint.graph import Index, Resource, check, input_of

# Resource type tokens (pulumi_alicloud 4.0.0).
RAM_POLICY = "alicloud:ram/policy:Policy"
RAM_ATTACHMENTS = (
    "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment",
    "alicloud:ram/userPolicyAttachment:UserPolicyAttachment",
    "alicloud:ram/groupPolicyAttachment:GroupPolicyAttachment",
)


# -- facts


@dataclass(frozen=True, slots=True)
class PolicyUnreadable(LintFact):
    rule = "TS008"
    summary = "a RAM policy's document is not JSON, or has no Statement list: it cannot be checked"
    policy: str  # policy_name
    reason: Literal["not-json", "no-statement-list"]
    error: str  # the JSON parser's message ('' for no-statement-list)

    def text(self) -> str:
        why = f"is not JSON ({self.error})" if self.reason == "not-json" else "has no Statement list"
        return f"policy {self.policy} cannot be checked: its policy document {why}"


@dataclass(frozen=True, slots=True)
class EveryAction(LintFact):
    rule = "TS008"
    summary = "a RAM policy allows Action '*'"
    policy: str

    def text(self) -> str:
        return f"policy {self.policy} allows every action ('*'); list the actions it needs"


@dataclass(frozen=True, slots=True)
class ServiceActions(LintFact):
    rule = "TS008"
    summary = "a RAM policy allows every action of a service ('ram:*', 'oss:*')"
    policy: str
    action: str  # as written

    def text(self) -> str:
        return (
            f"policy {self.policy} allows every action of a service ('{self.action}'); list the actions it "
            "needs"
        )


@dataclass(frozen=True, slots=True)
class EveryResource(LintFact):
    rule = "TS008"
    summary = "a RAM policy allows Resource '*'"
    policy: str

    def text(self) -> str:
        return f"policy {self.policy} allows every resource ('*'); name the resources"


@dataclass(frozen=True, slots=True)
class ServiceResources(LintFact):
    rule = "TS008"
    summary = "a RAM policy allows every resource of a service outside OSS ('acs:ram:*:*:*')"
    policy: str
    resource: str  # as written

    def text(self) -> str:
        return (
            f"policy {self.policy} allows every resource of a service ('{self.resource}'); name the resources"
        )


@dataclass(frozen=True, slots=True)
class AllowsByExclusion(LintFact):
    rule = "TS008"
    summary = "a RAM policy's Allow is written with NotAction or NotResource"
    policy: str
    key: Literal["NotAction", "NotResource"]

    def text(self) -> str:
        return (
            f"policy {self.policy} allows with {self.key}, which grants everything not listed; use Action "
            "and Resource"
        )


@dataclass(frozen=True, slots=True)
class SystemPolicyAttached(LintFact):
    rule = "TS008"
    summary = "a RAM attachment uses the System policy AdministratorAccess or a *FullAccess policy"
    policy: str  # the system policy's name

    def text(self) -> str:
        return (
            f"attaches the system policy {self.policy}, which allows every action of a service; write a "
            "custom policy"
        )


@dataclass(frozen=True, slots=True)
class BucketWildcard(LintFact):
    rule = "TS009"
    summary = "a RAM policy's OSS resource names a wildcard bucket"
    policy: str
    resource: str  # as written

    def text(self) -> str:
        return (
            f"policy {self.policy} reaches every bucket matching '{self.resource}'; name one bucket, e.g. "
            "acs:oss:*:*:<bucket>/<prefix>*"
        )


@dataclass(frozen=True, slots=True)
class ManyBuckets(LintFact):
    rule = "TS009"
    summary = "a RAM policy's OSS resources name more than one bucket"
    policy: str
    buckets: tuple[str, ...]  # in the order the policy names them

    def text(self) -> str:
        return (
            f"policy {self.policy} reaches {len(self.buckets)} buckets ({', '.join(self.buckets)}); "
            "give each bucket its own policy"
        )


# -- checks


def _policy_document(r: Resource) -> tuple[list[Mapping[str, Any]], PolicyUnreadable | None]:
    """The Allow statements of a RAM policy, or why its document cannot be read."""
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
            ], None
        return [], None  # unknown until deploy (computed from another resource): nothing to check offline
    try:
        doc = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as e:
        return [], PolicyUnreadable(_policy(r), "not-json", str(e))
    body = doc.get("Statement", []) if isinstance(doc, Mapping) else None
    if isinstance(body, Mapping):
        body = [body]
    if not isinstance(body, list):
        return [], PolicyUnreadable(_policy(r), "no-statement-list", "")
    return [s for s in body if isinstance(s, Mapping) and str(s.get("Effect", "")).lower() == "allow"], None


def _policy(r: Resource) -> str:
    return str(input_of(r, "policyName", r.name))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []


def _service_wide(action: str) -> bool:
    """``ram:*``, ``oss:*``, ``*:*``: every action of a service (a product code, a colon, then only ``*``)."""
    service, colon, verb = action.strip().partition(":")
    return bool(colon) and bool(service) and set(verb) == {"*"}


def _every_resource_of_service(resource: str) -> bool:
    """``acs:ram:*:*:*``, ``acs:ecs:*:*:*/*``, ``acs:*:*:*:*``: an ARN whose region, account and resource
    parts are all wildcards (or empty), so it names every resource of the service in every region and account.
    OSS is left to TS009, which reads its bucket."""
    parts = resource.strip().split(":", 4)
    if len(parts) < 5 or parts[0] != "acs" or parts[1] == "oss":  # OSS resources are TS009's (one bucket)
        return False
    return all(not part.strip("*/") for part in parts[2:])


def _statement_wildcards(policy: str, s: Mapping[str, Any]) -> Iterator[LintFact]:
    """What one Allow statement of ``policy`` grants too widely."""
    for action in _strings(s.get("Action")):
        if action.strip() == "*":
            yield EveryAction(policy)
        elif _service_wide(action):
            yield ServiceActions(policy, action)
    for resource in _strings(s.get("Resource")):
        if resource.strip() == "*":
            yield EveryResource(policy)
        elif _every_resource_of_service(resource):
            yield ServiceResources(policy, resource)
    for key in ("NotAction", "NotResource"):
        if key in s:
            yield AllowsByExclusion(policy, key)


@check("TS008")
def _ram_wildcards(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(RAM_POLICY):
        statements, unreadable = _policy_document(r)
        if unreadable:
            yield r, unreadable
        for s in statements:
            yield from ((r, fact) for fact in _statement_wildcards(_policy(r), s))
    for r in ix.of(*RAM_ATTACHMENTS):
        name = str(input_of(r, "policyName", ""))
        if str(input_of(r, "policyType", "")).lower() == "system" and (
            name == "AdministratorAccess" or name.endswith("FullAccess")
        ):
            yield r, SystemPolicyAttached(name)


def _oss_buckets(resource: str) -> str:
    """The bucket an ``acs:oss:region:account:bucket[/object]`` resource names ('' if it is not OSS)."""
    parts = resource.split(":", 4)
    if len(parts) < 5 or parts[0] != "acs" or parts[1] != "oss":
        return ""
    return parts[4].split("/", 1)[0] or "*"


@check("TS009")
def _ram_one_bucket(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(RAM_POLICY):
        statements, _ = _policy_document(r)
        buckets: list[str] = []
        for s in statements:
            for resource in _strings(s.get("Resource")):
                bucket = _oss_buckets(resource)
                if bucket and any(ch in bucket for ch in "*?$"):
                    yield r, BucketWildcard(_policy(r), resource)
                elif bucket and bucket not in buckets:
                    buckets.append(bucket)
        if len(buckets) > 1:
            yield r, ManyBuckets(_policy(r), tuple(buckets))
