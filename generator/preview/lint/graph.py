"""What the lint's checks read: a resource of the graph, the graph indexed by type, a resource's inputs, and
the registry of checks (one per rule id of :mod:`generator.spec.rules`).

A check takes the whole graph (some rules relate resources, e.g. a bucket and its ACL) and yields (resource,
fact) pairs (:mod:`generator.preview.lint.fact`); :func:`generator.preview.lint.lint_graph` runs every
registered check and turns its pairs into findings with the rule's severity. The checks themselves live in one
module per part of the cluster they check (``network``, ``checkpoints``, ``identity``, ``compute``,
``storage``: the parts of :data:`generator.spec.rules.PARTS`), so a rule, its facts, its check and the
resource types it reads are found under the part's name."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from generator.preview.lint.fact import LintFact
from generator.spec.rules import RULES


class Resource(Protocol):
    """What the checks read from a resource (``mockrun.Resource`` has it); read-only, so frozen types fit."""

    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def inputs(self) -> Mapping[str, Any]: ...
    @property
    def protect(self) -> bool: ...
    @property
    def retain_on_delete(self) -> bool: ...


# A check takes the whole graph (some rules relate resources, e.g. a bucket and its ACL) and yields
# (resource, fact) pairs; lint_graph turns them into Findings with the rule's severity.
Check = Callable[["Index"], Iterable[tuple[Resource, LintFact]]]
CHECKS: dict[str, Check] = {}


def check(rule_id: str) -> Callable[[Check], Check]:
    """Register the check of ``rule_id`` (a rule of :data:`generator.spec.rules.RULES`; one per rule)."""

    def register(fn: Check) -> Check:
        assert rule_id in RULES, rule_id
        CHECKS[rule_id] = fn
        return fn

    return register


class Index:
    """The graph's resources grouped by type, in registration order."""

    def __init__(self, resources: Iterable[Resource]) -> None:
        self.resources = list(resources)
        self.order = {id(r): i for i, r in enumerate(self.resources)}

    def of(self, *types: str) -> list[Resource]:
        return [r for r in self.resources if r.type in types]


def input_of(r: Resource, key: str, default: Any = None) -> Any:
    """Input ``key`` of ``r`` (camelCase, as the SDK sends it), ``default`` when unset or None."""
    value = r.inputs.get(key, default)
    return default if value is None else value


def not_kept(r: Resource) -> tuple[str, ...]:
    """The options that keep ``r`` through a destroy and that it lacks (``protect``, ``retain_on_delete``)."""
    return tuple(
        name for name, on in (("protect", r.protect), ("retain_on_delete", r.retain_on_delete)) if not on
    )
