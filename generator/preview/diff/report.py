"""Showing a diff: changes grouped for reading, as plain text, a Markdown pull-request comment, or JSON.

:func:`format_text` is for a terminal or a CI log, :func:`format_markdown` for a pull-request comment (folded
where long) and :func:`format_json` for tools (``schema_version`` 4; within a version fields are only ever
added). Every report names each impact class with its title, worst first, so ``fails-at-apply``,
``never-applied`` and ``unknown`` read as what they are and never as ``safe``. When the result carries the two
sides' cost (:mod:`generator.preview.diff.cost`), each report adds it (:mod:`generator.preview.diff.report_cost`
writes those sections).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from generator.preview.diff.cost import to_dict as cost_dict
from generator.preview.diff.model import (
    IMPACT_TITLES,
    IMPACTS,
    Action,
    Change,
    DiffResult,
    Impact,
    PropertyChange,
    SideInfo,
    natural_key,
    short_type,
)
from generator.preview.diff.report_cost import cost_bold, cost_headline, cost_markdown, cost_month, cost_text
from generator.preview.diff.summary import to_dict as what_dict
from generator.preview.diff.values import LONG_VALUE, digest

# Of the JSON report. 2: the impact classes never-applied and unknown, the effects ignored and unknown (a
# property without data was "in-place" under 1) and the top-level "impacts" list of classes with their titles.
# 3: the impact class and effect fails-at-apply (a grow-only value that gets smaller read "in-place" and "safe"
# under 2); a new value of an existing field, so a tool that matches every class must learn it.
# 4: "what_changed" (the spec-level change: kind, headline, base -> head facts, new and resolved warnings, notes,
# gates) and "summary.gates"; for a new stack beside the old one (a rename) "cost.head" is what both stacks bill
# while both exist (it was the new stack alone, so a rename read as free) and "cost.head_stack_alone" the new one;
# a deleted spec is a diff whose head is "(deleted)", every resource deleted. Added within 4: "changes[].reasons"
# (why the impact, as {code, impact, fields, text}: docs/codes.md lists the codes) and "properties[].note" and
# "properties[].replaced" (what "summary" and "cause" say, as data).
# 5: each of "notes" and "what_changed.notes" is {code, fields, text} (generator/preview/diff/notes.py, TSD019...),
# and each of "what_changed.new_warnings" and "resolved_warnings" the plan warning's {code, fields, text} (as in
# plan.json), not a sentence; the words are the same and read from "text".
SCHEMA_VERSION = 5

_IMPACT_MARKS: Mapping[Impact, str] = {
    "data-at-risk": "🔴",
    "replaces-nodes": "🟠",
    "fails-at-apply": "⛔",
    "never-applied": "🟣",
    "unknown": "❔",
    "restarts-nodes": "🟡",
    "safe": "🟢",
}
_ACTION_SYMBOLS: Mapping[Action, str] = {"create": "+", "delete": "-", "update": "~", "replace": "+-"}


@dataclass(frozen=True, slots=True)
class Group:
    """Changes that differ only in the resource name and per-resource values, shown once.

    ``64 x ecs:Instance pretrain-70b-node-000..063: instanceType ecs.a -> ecs.b``. Resources group when the
    same properties change with the same effects; a property whose summary differs between them (each node's
    private IP) shows the first resource's value and is listed in ``varies``.
    """

    action: Action
    type: str
    impact: Impact
    reason: str
    properties: tuple[PropertyChange, ...]
    names: tuple[str, ...]
    varies: frozenset[str] = frozenset()

    @property
    def label(self) -> str:
        count = f"{len(self.names)} x " if len(self.names) > 1 else ""
        return f"{count}{short_type(self.type)} {name_span(self.names)}"


def group_changes(changes: Iterable[Change]) -> list[Group]:
    """Merge changes with the same action, type, impact, reason and changed properties, keeping order."""
    groups: dict[tuple[Any, ...], list[Change]] = {}
    for c in changes:
        key = (
            c.impact,
            c.action,
            c.type,
            c.reason,
            tuple((p.name, p.effect, bool(p.cause)) for p in c.properties),
        )
        groups.setdefault(key, []).append(c)
    out = []
    for members in groups.values():
        members.sort(key=lambda c: natural_key(c.name))
        first = members[0]
        varies = frozenset(
            p.name
            for i, p in enumerate(first.properties)
            if any(m.properties[i].summary != p.summary for m in members[1:])
        )
        out.append(
            Group(
                first.action,
                first.type,
                first.impact,
                first.reason,
                first.properties,
                tuple(m.name for m in members),
                varies,
            )
        )
    return out


def name_span(names: Sequence[str]) -> str:
    """``node-000..063`` for numbered names (runs separated by commas), else the first names and a count."""
    if len(names) == 1:
        return names[0]
    matches = [re.fullmatch(r"(.*?)(\d+)(\D*)", n) for n in names]
    if all(matches):
        ms = [m for m in matches if m]
        frames = {(m.group(1), m.group(3)) for m in ms}
        widths = {len(m.group(2)) for m in ms}
        padded = len(widths) == 1
        if len(frames) == 1 and (padded or not any(m.group(2).startswith("0") for m in ms)):
            prefix, suffix = next(iter(frames))
            width = widths.pop() if padded else 0
            runs = [
                str(a).zfill(width) if a == b else f"{str(a).zfill(width)}..{str(b).zfill(width)}"
                for a, b in _runs(sorted({int(m.group(2)) for m in ms}))
            ]
            return f"{prefix}{','.join(runs)}{suffix}"
    shown = ", ".join(names[:3])
    return shown + (f", … (+{len(names) - 3} more)" if len(names) > 3 else "")


def _runs(nums: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive runs of sorted numbers: [1, 2, 3, 7] -> [(1, 3), (7, 7)]."""
    runs: list[tuple[int, int]] = []
    for n in nums:
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


# ------------------------------------------------------------------------------------------ formats
def _headline(result: DiffResult) -> str:
    c = result.counts()
    return (
        f"{c['create']} to create, {c['update']} to update, {c['replace']} to replace, {c['delete']} to delete "
        f"({result.unchanged} unchanged)"
    )


def prop_text(p: PropertyChange) -> str:
    """``name: summary``; a nested summary already starts with the property's path (``tags.team: a -> b``)."""
    if p.summary.startswith((p.name + ".", p.name + "[")):
        return p.summary
    return f"{p.name}: {p.summary}"


def _prop_line(p: PropertyChange, g: Group) -> str:
    varies = ", varies; first shown" if p.name in g.varies else ""
    return f"{prop_text(p)} [{p.effect}{varies}]"


def format_text(result: DiffResult) -> str:
    """Plain text for a terminal or a CI log."""
    base, head = result.base.label or "base", result.head.label or "head"
    out = [f"trainstack diff: {base} -> {head}"]
    if result.what is not None and result.has_changes:
        out.append(result.what.headline)  # it starts with its kind (grow:, replace:, new stack ...)
        out += [f"  {f.label}: {f.base} -> {f.head}" for f in result.what.changed_facts()]
        out += [f"  new warning: {w.text()}" for w in result.what.new_warnings]
        out += [f"  resolved warning: {w.text()}" for w in result.what.resolved_warnings]
        out += [f"  note: {n.text()}" for n in result.what.notes]
    if not result.has_changes:
        out.append(f"No changes: both sides declare the same {result.unchanged} resources.")
        if result.cost is not None:
            out += ["", *cost_text(result.cost)]
        out.extend(f"note: {n.text()}" for n in result.notes)
        return "\n".join(out) + "\n"
    out.append(_headline(result))
    out.append(f"Worst impact: {result.worst_impact}")
    if result.cost is not None:
        out.append(f"Cost: {cost_headline(result.cost)}")
    for impact in IMPACTS:
        changes = result.of_impact(impact)
        if not changes:
            continue
        out.append("")
        out.append(f"{impact} ({len(changes)}): {IMPACT_TITLES[impact]}")
        for g in group_changes(changes):
            out.append(f"  {_ACTION_SYMBOLS[g.action]:<2} {g.label}  {g.action}: {g.reason}")
            out.extend(f"       {_prop_line(p, g)}" for p in g.properties)
    if result.cost is not None:
        out += ["", *cost_text(result.cost)]
    if result.notes:
        out.append("")
        out.extend(f"note: {n.text()}" for n in result.notes)
    return "\n".join(out) + "\n"


MARKDOWN_MARKER = "<!-- trainstack-diff -->"  # lets CI find and update its previous comment
_COLLAPSE_GROUPS = 10  # a section with more groups than this is folded
_COLLAPSE_PROPS = 3  # a change with more properties than this folds them


def _code(text: str) -> str:
    """An inline code span that survives backticks and newlines in the value."""
    return "`" + str(text).replace("`", "'").replace("\n", " ") + "`"


def format_markdown(result: DiffResult, *, title: str = "") -> str:
    """A pull-request comment for one spec: what changed first, then the picture, the changes and the cost.

    The headline says what happens (grow, pause, new stack, ...) and the worst impact; the "what changed" table
    comes from the two plans (base -> head); the bold cost line counts what both stacks bill when HEAD is a new
    stack. The changes by impact, the cost tables and the price notes are folded. ``title`` replaces the heading's
    text (the workflow passes the spec path).

    Length: the comment's sections in the order a reviewer reads them; each is a few lines of Markdown.
    """
    worst = result.worst_impact
    base, head = result.base.label or "base", result.head.label or "head"
    what = result.what
    out = [MARKDOWN_MARKER]
    name = title or "trainstack diff"
    if worst is None:
        out.append(f"### {name}: ✅ no infrastructure changes")
    else:
        kind = f"{_KIND_MARKS.get(what.kind, '')} {what.kind} · " if what is not None else ""
        out.append(f"### {name}: {kind}{_IMPACT_MARKS[worst]} {worst}")
    out.append("")
    where = f"{_code(base)} → {_code(head)}"
    if result.head.project:
        stack = _code(f"{result.head.project}/{result.head.stack}")
        where += f" · stack {stack} · region {_code(result.head.region)}"
    out.append(where)
    out.append("")
    if what is not None and worst is not None:
        out += [f"**{_md_text(what.headline)}**", ""]
    if result.cost is not None and (worst is not None or result.cost.changed):
        bold = cost_bold(result.cost)
        if what is not None and what.kind == "deleted stack":
            bold = f"{bold} — only once the stack is destroyed; merging alone changes no bill"
        out += [f"💰 {bold}", ""]
    if what is not None and worst is not None:
        out += _what_changed_markdown(what)
    if worst is None:
        out.append(f"Both sides declare the same {result.unchanged} resources.")
    else:
        c = result.counts()
        out += [
            "| create | update | replace | delete | unchanged |",
            "|---:|---:|---:|---:|---:|",
            f"| {c['create']} | {c['update']} | {c['replace']} | {c['delete']} | {result.unchanged} |",
            "",
        ]
        out += ["| impact | changes | meaning |", "|---|---:|---|"]  # only the classes that occur
        out += [
            f"| {_IMPACT_MARKS[i]} {i} | {n} | {IMPACT_TITLES[i]} |"
            for i, n in result.impact_counts().items()
            if n
        ]
    for note in result.notes:
        out += ["", f"> **Note:** {_md_text(note.text())}"]
    if result.picture and worst is not None:
        out += ["", *_picture_markdown(result.picture, result)]
    for impact in IMPACTS:
        changes = result.of_impact(impact)
        if not changes:
            continue
        groups = group_changes(changes)
        body = [line for g in groups for line in _markdown_group(g)]
        summary = (
            f"{_IMPACT_MARKS[impact]} <b>{impact}</b> ({len(changes)}): {_md_text(IMPACT_TITLES[impact])}"
        )
        if impact in ("safe", "restarts-nodes") or len(groups) > _COLLAPSE_GROUPS:
            out += ["", f"<details><summary>{summary}</summary>", "", *body, "", "</details>"]
        else:
            out += [
                "",
                f"#### {_IMPACT_MARKS[impact]} {impact} ({len(changes)})",
                "",
                f"_{_md_text(IMPACT_TITLES[impact])}_",
                "",
                *body,
            ]
    if result.cost is not None and (
        worst is not None or result.cost.changed
    ):  # no change: one line, no tables
        out += ["", *cost_markdown(result.cost)]
    out += [
        "",
        (
            "<sub>Offline diff by trainstack: both specs rendered and run under Pulumi's mock runtime, no "
            "cloud access. Which changes replace or reboot a resource comes from "
            "generator/preview/data/replacement/; a property without data is unknown, never safe.</sub>"
        ),
    ]
    return "\n".join(out) + "\n"


_KIND_MARKS = {
    "new stack": "🆕",
    "deleted stack": "🗑️",
    "pause": "⏸️",
    "resume": "▶️",
    "replace": "🔁",
    "grow": "📈",
    "shrink": "📉",
    "update": "✏️",
    "none": "✅",
}


def _md_text(text: str) -> str:
    """Prose in a comment: backticks kept as code spans only when balanced, ``|`` escaped for tables."""
    text = str(text).replace("\n", " ").replace("|", "\\|")
    return text if text.count("`") % 2 == 0 else text.replace("`", "'")


def _what_changed_markdown(what: Any) -> list[str]:
    """The base -> head table (changed rows bold), then new and resolved warnings and the notes."""
    changed = what.changed_facts()
    out = []
    if changed:
        out += ["| what changed | base | head |", "|---|---|---|"]
        out += [f"| **{f.label}** | {_md_text(f.base)} | **{_md_text(f.head)}** |" for f in changed]
        out.append("")
    same = [f"{f.label} {f.base}" for f in what.facts if not f.changed and f.base != "—"]
    if same:
        out += [f"<sub>unchanged: {_md_text(' · '.join(same))}</sub>", ""]
    for n in what.notes:
        out += [f"> ⚠️ {_md_text(n.text())}", ""]
    if what.new_warnings:
        out += [
            f"**New warnings ({len(what.new_warnings)})**",
            "",
            *(f"- {_md_text(w.text())}" for w in what.new_warnings),
            "",
        ]
    if what.resolved_warnings:
        out += [
            f"<details><summary>Resolved warnings ({len(what.resolved_warnings)})</summary>",
            "",
            *(f"- {_md_text(w.text())}" for w in what.resolved_warnings),
            "",
            "</details>",
            "",
        ]
    return out


def _picture_markdown(picture: str, result: DiffResult) -> list[str]:
    """The change as one Mermaid diagram (GitHub and GitLab draw it), with a legend of the classes it uses."""
    from generator.preview.diff.picture import legend
    from generator.render.escape import markdown_fence_body

    return [
        "```mermaid",
        str(markdown_fence_body(picture)).rstrip("\n"),
        "```",
        "",
        f"<sub>{legend(result)}</sub>",
    ]


def _markdown_group(g: Group) -> list[str]:
    head = f"- **{g.action}** {_code(g.label)}"
    props = list(g.properties)
    if len(props) == 1:
        p = props[0]
        return [f"{head}: {_code(prop_text(p))} ({_effect_note(p, g)}) — {g.reason}"]
    lines = [f"{head} — {g.reason}"]
    if not props:
        return lines
    items = [f"  - {_code(prop_text(p))} ({_effect_note(p, g)})" for p in props]
    if len(props) > _COLLAPSE_PROPS:
        return [
            *lines,
            f"  <details><summary>{len(props)} properties</summary>",
            "",
            *items,
            "",
            "  </details>",
        ]
    return lines + items


def _effect_note(p: PropertyChange, g: Group) -> str:
    return f"{p.effect}, varies; first shown" if p.name in g.varies else p.effect


def _json_value(value: Any) -> Any:
    """Plain JSON values; long strings (user data, policy documents) become a digest to keep output small."""
    if isinstance(value, str) and len(value) > LONG_VALUE:
        return digest(value)
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return value


def to_dict(result: DiffResult) -> dict[str, Any]:
    """The ``--format json`` document (``schema_version`` 4; within a version fields are only ever added)."""

    def side(s: SideInfo) -> dict[str, Any]:
        return {
            "label": s.label,
            "project": s.project,
            "stack": s.stack,
            "region": s.region,
            "resources": s.resources,
        }

    return {
        "schema_version": SCHEMA_VERSION,
        "base": side(result.base),
        "head": side(result.head),
        "summary": {
            **result.counts(),
            "unchanged": result.unchanged,
            "changed": result.has_changes,
            "worst_impact": result.worst_impact,
            "by_impact": result.impact_counts(),
            "gates": _gates(result),
            "cost_month": cost_month(result),
        },
        "what_changed": None if result.what is None else what_dict(result.what),
        "impacts": [
            {"impact": impact, "title": IMPACT_TITLES[impact], "changes": n}
            for impact, n in result.impact_counts().items()
        ],  # every class, worst first
        "notes": [n.to_dict() for n in result.notes],
        "cost": None if result.cost is None else cost_dict(result.cost),
        "changes": [
            {
                "action": c.action,
                "type": c.type,
                "name": c.name,
                "impact": c.impact,
                "reason": c.reason,
                "reasons": [_json_value(r.to_dict()) for r in c.reasons],
                "properties": [
                    {
                        "name": p.name,
                        "old": _json_value(p.old),
                        "new": _json_value(p.new),
                        "effect": p.effect,
                        "source": p.source,
                        "summary": p.summary,
                        "cause": p.cause,
                        "note": p.note,
                        "replaced": p.replaced,
                    }
                    for p in c.properties
                ],
            }
            for c in result.changes
        ],
    }


def _gates(result: DiffResult) -> list[str]:
    """What must be approved before this merges: data at risk, a new or deleted stack, a refused change."""
    out = []
    if result.worst_impact == "data-at-risk":
        out.append("data-at-risk")
    if result.what is not None:
        out += list(result.what.gates)
    if result.impact_counts()["fails-at-apply"]:
        out.append("fails-at-apply")
    return out


def format_json(result: DiffResult) -> str:
    return json.dumps(to_dict(result), indent=2, sort_keys=True, default=str) + "\n"


FORMATTERS = {"text": format_text, "markdown": format_markdown, "json": format_json}
