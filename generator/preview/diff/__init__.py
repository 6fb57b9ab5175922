"""``trainstack diff BASE HEAD``: an offline infrastructure diff between two specs, classified by impact.

A pull request changes a spec; reviewers need to know what that does to a running cluster *before* merging,
without cloud credentials or a Pulumi backend. Each side (a spec file, or ``GIT_REF:path`` read with
``git show``) is loaded, planned and rendered by *this* trainstack, and the rendered program is run under
Pulumi's mock runtime (:mod:`generator.preview.mockrun`). The two resource graphs are compared by (type, name):

* ``create`` / ``delete``: the resource exists on one side only;
* ``update``: inputs differ (nested values are compared structurally) or a resource option changed;
* ``replace``: a changed input forces a new resource. Which inputs do that is *data*, one CSV per provider
  family in ``generator/preview/data/replacement/`` with a citation per row (the Terraform provider source the
  SDK is bridged from, or the pulumi_alicloud docstring). A row's effect is ``replace``, ``reboot``,
  ``in-place`` or ``ignored`` (the provider never applies the change); a property without a row is
  ``unknown``, never in place.

A replacement changes the replaced resource's id, so resources that reference it change too; the mock
runtime cannot show that (it answers every id with ``<name>-id``), so it is propagated here: a reference to a
replaced resource counts as a changed input with that input's own effect, until nothing new is replaced.

Every change gets an impact class, worst first: ``data-at-risk`` (a NAS/CPFS file system, fileset or OSS
bucket is deleted or replaced, or loses its protection), ``replaces-nodes`` (a GPU node is created, deleted
or replaced: training is interrupted), ``fails-at-apply`` (a value the cloud can only grow, such as a CPFS
capacity or a system disk size, gets smaller: ``pulumi up`` fails part-way), ``never-applied`` (an update of an ``ignored`` input: the provider will
not apply it), ``unknown`` (an update of an input without data: a possible replacement), ``restarts-nodes``
(an in-place node update that reboots it, e.g. ``userData``), ``safe`` (everything else).
:func:`format_text`, :func:`format_markdown` (a pull-request comment) and :func:`format_json`
(``schema_version`` 5) render a :class:`DiffResult`. :func:`diff_sides` also prices both sides from their plans
(:attr:`DiffResult.cost`, a :class:`CostDelta`): per hour, per month and for the whole run, old -> new, broken
down into on demand and spot, compute and storage, with the price notes and ESTIMATE flags.

What this does not see: drift between the cloud and the last deployment (use ``trainstack`` live commands
for that), and generator upgrades (both sides are rendered by the installed trainstack; a committed
``stacks/`` folder rendered by an older version shows up in ``trainstack render --check`` instead).
The stage is split by what each part owns; this package re-exports their public names, so
``from generator.preview import diff`` then ``diff.diff_sides(...)`` is the way in:

* :mod:`~generator.preview.diff.model`: the vocabulary (actions, impacts, effects) and the result types;
* :mod:`~generator.preview.diff.replacement`: the replacement data, read and checked;
* :mod:`~generator.preview.diff.values`: one-line summaries of changed values;
* :mod:`~generator.preview.diff.properties`: a resource's changed properties and each one's effect;
* :mod:`~generator.preview.diff.compare`: comparing two graphs, following replacements to what references them;
* :mod:`~generator.preview.diff.classify`: each change's impact class and its reasons;
* :mod:`~generator.preview.diff.reasons`: the reasons as events (a code ``TSDnnn``, an impact, fields) and their
  words, rendered in one place;
* :mod:`~generator.preview.diff.notes`: what the whole change means beside the reasons (another stack or region,
  a deleted, renamed or new stack, a layout to reshard), as events with a code ``TSDnnn`` and fields;
* :mod:`~generator.preview.diff.cost`: the cost delta between the two sides' plans (a new stack bills beside
  the old one);
* :mod:`~generator.preview.diff.summary`: what changed in spec terms, the headline by what happens (grow,
  pause, new stack, deleted stack, ...) and the gates (:attr:`DiffResult.what`);
* :mod:`~generator.preview.diff.picture`: the change as one small Mermaid diagram coloured by impact;
* :mod:`~generator.preview.diff.sides`: reading a side (file or ``GIT_REF:path``; a HEAD path that is gone is
  the stack's deletion) and running it;
* :mod:`~generator.preview.diff.report`: grouping changes and the text, Markdown and JSON reports;
* :mod:`~generator.preview.diff.report_cost`: the reports' cost sections.
"""

from __future__ import annotations

from generator.preview.diff.compare import diff_graphs
from generator.preview.diff.cost import CostDelta, SideCost, cost_delta
from generator.preview.diff.model import (
    ACTIONS,
    DATA_EFFECTS,
    DATA_TYPES,
    EFFECTS,
    IMPACT_TITLES,
    IMPACTS,
    INSTANCE,
    NODE_TYPES,
    Action,
    Change,
    DiffError,
    DiffResult,
    Effect,
    Impact,
    PropertyChange,
    SideInfo,
    natural_key,
    short_type,
)
from generator.preview.diff.replacement import (
    DEFAULT_RULE,
    REPLACEMENT_DATA,
    UNKNOWN_RULE,
    Rule,
    load_rules,
    rule_for,
)
from generator.preview.diff.report import (
    FORMATTERS,
    MARKDOWN_MARKER,
    SCHEMA_VERSION,
    Group,
    format_json,
    format_markdown,
    format_text,
    group_changes,
    name_span,
    prop_text,
    to_dict,
)
from generator.preview.diff.sides import EMPTY_SIDES, Side, diff_sides, read_side, render_side
from generator.preview.diff.values import LONG_VALUE, digest, summarize

__all__ = [
    "ACTIONS",
    "DATA_EFFECTS",
    "DATA_TYPES",
    "DEFAULT_RULE",
    "EFFECTS",
    "EMPTY_SIDES",
    "FORMATTERS",
    "IMPACTS",
    "IMPACT_TITLES",
    "INSTANCE",
    "LONG_VALUE",
    "MARKDOWN_MARKER",
    "NODE_TYPES",
    "REPLACEMENT_DATA",
    "SCHEMA_VERSION",
    "UNKNOWN_RULE",
    "Action",
    "Change",
    "CostDelta",
    "DiffError",
    "DiffResult",
    "Effect",
    "Group",
    "Impact",
    "PropertyChange",
    "Rule",
    "Side",
    "SideCost",
    "SideInfo",
    "cost_delta",
    "diff_graphs",
    "diff_sides",
    "digest",
    "format_json",
    "format_markdown",
    "format_text",
    "group_changes",
    "load_rules",
    "name_span",
    "natural_key",
    "prop_text",
    "read_side",
    "render_side",
    "rule_for",
    "short_type",
    "summarize",
    "to_dict",
]
