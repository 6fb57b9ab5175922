"""``trainstack lint``: secure-by-default policy checks over the resources a generated program declares.

Why lint the *resources* and not the spec or the templates: the resource graph recorded under the mock runtime
(:mod:`generator.preview.mockrun`) is exactly what Pulumi would send to Alibaba Cloud, with the SDK's own
argument names. A check written against it catches a template regression, a hand-edited stack folder and a
future spec option alike, the way checkov checks a Terraform plan rather than the HCL that produced it.

Every rule has a stable id (``TS001``...) so a spec can waive it, and only with a written reason::

    waivers:
      - rule: TS002
        reason: "SSH from the office VPN is how we debug hung ranks"

A waived finding is still reported (with the reason) but does not fail the lint.

The rules themselves (ids, severities, titles, rationales) are spec vocabulary in :mod:`generator.spec.rules`,
and their checks are in this package, one module per part of the cluster they check (:mod:`.network`,
:mod:`.checkpoints`, :mod:`.identity`, :mod:`.compute`, :mod:`.storage`; :mod:`.graph` is what they read);
this module runs them and owns what comes out: findings, waivers and the report. :func:`lint_graph` is pure
and duck-typed over a ``mockrun.Graph``; running a program to get one is :func:`generator.api.lint_target`'s
job."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from generator.errors import EXIT_USAGE, TrainstackError
from generator.preview.lint import checkpoints, compute, identity, network, storage
from generator.preview.lint.fact import LintFact
from generator.preview.lint.graph import CHECKS, Index, Resource
from generator.spec.rules import RULES, Rule, Severity


@dataclass(frozen=True)
class Finding:
    """One violation of one rule by one resource (``resource`` is ``type::name``): what was found is ``fact``,
    a :class:`~generator.preview.lint.fact.LintFact` whose class names the rule and whose fields say what it
    found; the message is rendered from them."""

    resource: str
    fact: LintFact
    waived: bool = False
    waiver_reason: str = ""

    @property
    def rule(self) -> str:
        """The rule's id (``TS001``...): the finding's code."""
        return self.fact.rule

    @property
    def severity(self) -> Severity:
        return RULES[self.rule].severity

    @property
    def event(self) -> str:
        """The kind of finding (its fact's class name), which tells apart the findings of one rule."""
        return self.fact.event()

    @property
    def fields(self) -> dict[str, Any]:
        return self.fact.fields()

    @property
    def message(self) -> str:
        return self.fact.text()

    def line(self) -> str:
        """``SEVERITY RULE resource: message``, with the waiver reason when waived."""
        text = f"{self.severity.upper():<7} {self.rule} {self.resource}: {self.message}"
        if self.waived:
            text += f" [waived: {self.waiver_reason}]"
        return text

    def to_dict(self) -> dict[str, Any]:
        """The finding as ``trainstack lint --json`` prints it: rule, event, fields and the words."""
        return {
            "rule": self.rule,
            "severity": self.severity,
            "resource": self.resource,
            "event": self.event,
            "fields": self.fields,
            "message": self.message,
            "waived": self.waived,
            "waiver_reason": self.waiver_reason,
        }


class LintInputError(TrainstackError):
    """The lint target is not something trainstack can lint (bad input, exit code 2)."""

    exit_code = EXIT_USAGE


class _Graph(Protocol):
    """What :func:`lint_graph` reads from a graph (``mockrun.Graph`` has it)."""

    @property
    def resources(self) -> Sequence[Resource]: ...


def lint_graph(graph: _Graph, waivers: Mapping[str, str] = {}) -> list[Finding]:
    """Check every rule against ``graph``; findings of a waived rule carry the waiver's reason.

    Pure and offline: ``graph`` is anything with ``.resources`` whose items have ``.type``, ``.name``,
    ``.inputs`` (camelCase, as the SDK sends them), ``.protect`` and ``.retain_on_delete``. Findings are
    ordered by rule id, then by the order the graph lists the resources, so output is stable.
    """
    ix = Index(graph.resources)
    found: list[tuple[str, int, Finding]] = []
    for rule_id, check in sorted(CHECKS.items()):
        for resource, fact in check(ix):
            assert fact.rule == rule_id, (rule_id, fact)  # a check finds only its own rule's facts
            reason = waivers.get(rule_id, "")
            finding = Finding(
                f"{resource.type}::{resource.name}", fact, waived=bool(reason), waiver_reason=reason
            )
            found.append((rule_id, ix.order.get(id(resource), 0), finding))
    found.sort(key=lambda t: (t[0], t[1]))
    seen: set[Finding] = set()
    unique: list[Finding] = []
    for _, _, f in found:  # identical findings (same resource and fact) are reported once
        if f not in seen:
            seen.add(f)
            unique.append(f)
    return unique


@dataclass(frozen=True)
class LintReport:
    """The findings for one target, with the waivers that applied and the counts a CI gate needs."""

    target: str
    findings: tuple[Finding, ...]
    waivers: Mapping[str, str] = field(default_factory=dict)
    resources: int = 0

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error" and not f.waived]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning" and not f.waived]

    @property
    def waived(self) -> list[Finding]:
        return [f for f in self.findings if f.waived]

    @property
    def failed(self) -> bool:
        """True when an unwaived error remains: the lint gate (exit code 1) fails."""
        return bool(self.errors)

    @property
    def unused_waivers(self) -> list[str]:
        """Waived rules that matched nothing: a stale waiver silently pre-approves a future regression."""
        hit = {f.rule for f in self.findings}
        return sorted(r for r in self.waivers if r not in hit)

    def summary(self) -> str:
        def n(count: int, word: str) -> str:
            return f"{count} {word}{'' if count == 1 else 's'}"

        return (
            f"{self.target}: {n(self.resources, 'resource')} checked against {n(len(RULES), 'rule')}: "
            f"{n(len(self.errors), 'error')}, {n(len(self.warnings), 'warning')}, {len(self.waived)} waived"
        )

    def text(self) -> str:
        """The findings as ``SEVERITY RULE resource: message`` lines, notes on stale waivers, a summary."""
        lines = [f.line() for f in self.findings]
        lines += [
            f"note: the waiver for {r} matched no finding; remove it from the spec"
            for r in self.unused_waivers
        ]
        lines.append(self.summary())
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "resources": self.resources,
            "failed": self.failed,
            "summary": {
                "errors": len(self.errors),
                "warnings": len(self.warnings),
                "waived": len(self.waived),
            },
            "findings": [f.to_dict() for f in self.findings],
            "waivers": [{"rule": r, "reason": self.waivers[r]} for r in sorted(self.waivers)],
            "unused_waivers": self.unused_waivers,
        }


def waivers_of(items: Iterable[Any]) -> dict[str, str]:
    """``{rule: reason}`` from a plan's ``Waived`` tuple or plan.json's ``[{rule, reason}]`` list."""
    out: dict[str, str] = {}
    for w in items:
        rule = w.get("rule") if isinstance(w, Mapping) else getattr(w, "rule", None)
        reason = w.get("reason") if isinstance(w, Mapping) else getattr(w, "reason", None)
        if not isinstance(rule, str) or not isinstance(reason, str) or not reason.strip():
            raise LintInputError(f"a waiver needs a rule id and a written reason; got {w!r}")
        out[rule] = reason.strip()
    return out


def stack_waivers(stack_dir: Path) -> dict[str, str]:
    """The waivers recorded in a stack folder's plan.json (none when the folder has no plan.json)."""
    plan_file = stack_dir / "plan.json"
    if not plan_file.is_file():
        return {}
    try:
        data = json.loads(plan_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise LintInputError(f"{plan_file} cannot be read as JSON ({e}); re-render the stack") from None
    items = data.get("waivers", []) if isinstance(data, Mapping) else None
    if not isinstance(items, list):
        raise LintInputError(
            f"{plan_file}: 'waivers' must be a list of {{rule, reason}}; re-render the stack"
        )
    return waivers_of(items)


__all__ = [
    "CHECKS",
    "RULES",
    "Finding",
    "LintFact",
    "LintInputError",
    "LintReport",
    "Rule",
    "facts",
    "lint_graph",
    "stack_waivers",
    "waivers_of",
]

PARTS_CHECKED = (checkpoints, compute, identity, network, storage)  # importing them registers their checks


def facts() -> list[type[LintFact]]:
    """Every kind of finding, by rule then name (docs/lint.md lists them)."""
    # the modules' names, not __subclasses__(): slots=True replaces each class, and the replaced one lingers
    found = {
        v
        for part in PARTS_CHECKED
        for v in vars(part).values()
        if isinstance(v, type) and issubclass(v, LintFact) and v is not LintFact
    }
    return sorted(found, key=lambda c: (c.rule, c.__name__))
