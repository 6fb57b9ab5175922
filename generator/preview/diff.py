"""``trainstack diff BASE HEAD``: an offline infrastructure diff between two specs, classified by impact.

A pull request changes a spec; reviewers need to know what that does to a running cluster *before* merging,
without cloud credentials or a Pulumi backend. Each side (a spec file, or ``GIT_REF:path`` read with
``git show``) is loaded, planned and rendered by *this* trainstack, and the rendered program is run under
Pulumi's mock runtime (:mod:`generator.preview.mockrun`). The two resource graphs are compared by (type, name):

* ``create`` / ``delete``: the resource exists on one side only;
* ``update``: inputs differ (nested values are compared structurally) or a resource option changed;
* ``replace``: a changed input forces a new resource. Which inputs do that is *data*, kept per resource type
  in ``generator/preview/data/replacement.csv`` with a citation per row (the pulumi_alicloud docstring, or the
  Terraform provider source when the docstring is silent). A property not listed is an in-place update.

A replacement changes the replaced resource's id, so resources that reference it change too; the mock
runtime cannot show that (it answers every id with ``<name>-id``), so it is propagated here: a reference to a
replaced resource counts as a changed input with that input's own effect, until nothing new is replaced.

Every change gets an impact class, worst first: ``data-at-risk`` (a NAS/CPFS file system, fileset or OSS
bucket is deleted or replaced, or loses its protection), ``replaces-nodes`` (a GPU node is created, deleted
or replaced: training is interrupted), ``restarts-nodes`` (an in-place node update that reboots it, e.g.
``userData``), ``safe`` (everything else). :func:`format_text`, :func:`format_markdown` (a pull-request
comment) and :func:`format_json` (``schema_version`` 1) render a :class:`DiffResult`.

What this does not see: drift between the cloud and the last deployment (use ``trainstack`` live commands
for that), and generator upgrades (both sides are rendered by the installed trainstack; a committed
``stacks/`` folder rendered by an older version shows up in ``trainstack render --check`` instead).
"""

from __future__ import annotations

import base64
import binascii
import csv
import difflib
import functools
import hashlib
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from generator.errors import TrainstackError

if TYPE_CHECKING:  # mockrun imports pulumi lazily; only its types are needed here
    from generator.catalog import Catalog
    from generator.plan.model import Plan
    from generator.preview.mockrun import Graph, Resource

SCHEMA_VERSION = 1
REPLACEMENT_DATA = Path(__file__).resolve().parent / "data" / "replacement.csv"

Action = Literal["create", "update", "replace", "delete"]
Impact = Literal["data-at-risk", "replaces-nodes", "restarts-nodes", "safe"]
Effect = Literal["replace", "reboot", "in-place"]

IMPACTS: tuple[Impact, ...] = ("data-at-risk", "replaces-nodes", "restarts-nodes", "safe")  # worst first
ACTIONS: tuple[Action, ...] = ("delete", "replace", "update", "create")  # most destructive first
EFFECTS: tuple[Effect, ...] = ("replace", "reboot", "in-place")

INSTANCE = "alicloud:ecs/instance:Instance"
NODE_TYPES = frozenset({INSTANCE, "alicloud:eflo/node:Node"})  # a GPU node: ECS instance or Lingjun node
# Resources whose deletion loses data: the shared file system, the dataset fileset, the checkpoint bucket.
DATA_TYPES = frozenset({"alicloud:nas/fileSystem:FileSystem", "alicloud:nas/fileset:Fileset",
                        "alicloud:oss/bucket:Bucket"})

IMPACT_TITLES: Mapping[Impact, str] = {
    "data-at-risk": "a file system, fileset or bucket and its data could be deleted",
    "replaces-nodes": "GPU nodes are created, deleted or replaced; training is interrupted",
    "restarts-nodes": "GPU nodes reboot in place; training is interrupted",
    "safe": "no data loss and no node interruption",
}
_IMPACT_MARKS: Mapping[Impact, str] = {"data-at-risk": "🔴", "replaces-nodes": "🟠", "restarts-nodes": "🟡",
                                       "safe": "🟢"}
_ACTION_SYMBOLS: Mapping[Action, str] = {"create": "+", "delete": "-", "update": "~", "replace": "+-"}
LONG_VALUE = 200  # characters; longer values (user data, policy documents) are shown as a digest


class DiffError(TrainstackError):
    """A side cannot be read (git, missing file) or the replacement data is malformed."""


# ------------------------------------------------------------------------------------------ replacement data
@dataclass(frozen=True, slots=True)
class Rule:
    """What changing one input of one resource type does, and where that fact comes from."""

    effect: Effect
    source: str


DEFAULT_RULE = Rule("in-place", "default: no replacement or reboot is documented for this property")


@functools.lru_cache(maxsize=4)
def load_rules(path: Path = REPLACEMENT_DATA) -> Mapping[tuple[str, str], Rule]:
    """``replacement.csv`` as {(type token, camelCase property): Rule}; a malformed row is an error, not a guess."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DiffError(f"cannot read the replacement data {path}: {e.strerror}") from None
    reader = csv.DictReader(text.splitlines())
    expected = ["type", "property", "effect", "source"]
    if reader.fieldnames != expected:
        found = ",".join(reader.fieldnames or [])
        raise DiffError(f"{path}: the header must be {','.join(expected)}, found {found}")
    rules: dict[tuple[str, str], Rule] = {}
    for line, row in enumerate(reader, start=2):
        key = (row["type"].strip(), row["property"].strip())
        effect = row["effect"].strip()
        if not key[0].startswith("alicloud:") or not key[1]:
            raise DiffError(f"{path}:{line}: a row needs a type token (alicloud:...) and a property")
        if effect not in EFFECTS:
            raise DiffError(f"{path}:{line}: effect '{effect}' is not one of {', '.join(EFFECTS)}")
        if not row["source"] or not row["source"].strip():
            raise DiffError(f"{path}:{line}: every row cites its source")
        if key in rules:
            raise DiffError(f"{path}:{line}: {key[0]} {key[1]} is listed twice")
        rules[key] = Rule(effect, row["source"].strip())  # type: ignore[arg-type]
    return rules


def rule_for(resource_type: str, prop: str, rules: Mapping[tuple[str, str], Rule] | None = None) -> Rule:
    """The effect of changing ``prop`` on ``resource_type``; unknown types and properties update in place."""
    return (load_rules() if rules is None else rules).get((resource_type, prop), DEFAULT_RULE)


# ------------------------------------------------------------------------------------------ result model
@dataclass(frozen=True, slots=True)
class PropertyChange:
    """One changed input (or resource option) of a resource present on both sides."""

    name: str  # camelCase input name, "protect"/"retainOnDelete" for options, "region" for the provider
    old: Any
    new: Any
    effect: Effect
    source: str
    summary: str  # short and human: "ecs.a -> ecs.b", or what changed inside user data
    cause: str = ""  # set when the value changes only because a referenced resource is replaced


@dataclass(frozen=True, slots=True)
class Change:
    """What happens to one resource, and how bad it is."""

    action: Action
    type: str
    name: str
    impact: Impact
    reason: str
    properties: tuple[PropertyChange, ...] = ()

    @property
    def short_type(self) -> str:
        return short_type(self.type)


@dataclass(frozen=True, slots=True)
class SideInfo:
    """Where one side came from and what it deploys to (empty when the graphs were given directly)."""

    label: str = ""
    project: str = ""
    stack: str = ""
    region: str = ""
    resources: int = 0


@dataclass(frozen=True)
class DiffResult:
    """Every change between two resource graphs, ordered worst impact first."""

    changes: tuple[Change, ...]
    unchanged: int
    base: SideInfo = field(default_factory=SideInfo)
    head: SideInfo = field(default_factory=SideInfo)
    notes: tuple[str, ...] = ()

    @property
    def has_changes(self) -> bool:
        return bool(self.changes)

    def counts(self) -> dict[str, int]:
        """Changes per action, every action present (zero included), in a stable order."""
        out = {a: 0 for a in ("create", "update", "replace", "delete")}
        for c in self.changes:
            out[c.action] += 1
        return out

    def impact_counts(self) -> dict[Impact, int]:
        out: dict[Impact, int] = {i: 0 for i in IMPACTS}
        for c in self.changes:
            out[c.impact] += 1
        return out

    @property
    def worst_impact(self) -> Impact | None:
        for impact in IMPACTS:
            if any(c.impact == impact for c in self.changes):
                return impact
        return None

    def of_impact(self, impact: Impact) -> list[Change]:
        return [c for c in self.changes if c.impact == impact]


def short_type(token: str) -> str:
    """``alicloud:ecs/instance:Instance`` -> ``ecs:Instance`` (what a reviewer reads)."""
    parts = token.split(":")
    if len(parts) == 3 and "/" in parts[1]:
        return f"{parts[1].split('/')[0]}:{parts[2]}"
    return token


# ------------------------------------------------------------------------------------------ comparing graphs
def diff_graphs(base: Graph, head: Graph, *, base_info: SideInfo | None = None, head_info: SideInfo | None = None,
                rules: Mapping[tuple[str, str], Rule] | None = None) -> DiffResult:
    """Compare two resource graphs keyed by (type, name) and classify every change.

    ``base_info``/``head_info`` only add labels and the provider region: the region is provider configuration,
    invisible in resource inputs, and changing it replaces every resource, so it is diffed here.
    """
    rules = load_rules() if rules is None else rules
    base_info = base_info or SideInfo(label="base", resources=len(base.resources))
    head_info = head_info or SideInfo(label="head", resources=len(head.resources))
    old = {(r.type, r.name): r for r in base.resources}
    new = {(r.type, r.name): r for r in head.resources}
    if _other_stack(base_info, head_info):
        old = {}  # HEAD deploys to a different Pulumi stack: all of it is new, BASE's stack is left alone
    region_changed = bool(base_info.region and head_info.region and base_info.region != head_info.region)

    props: dict[tuple[str, str], list[PropertyChange]] = {}
    for key in sorted(old.keys() & new.keys()):
        changed = _property_changes(old[key], new[key], rules)
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


def natural_key(name: str) -> tuple[Any, ...]:
    """Sort ``node-2`` before ``node-10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def _property_changes(old: Resource, new: Resource, rules: Mapping[tuple[str, str], Rule]) -> list[PropertyChange]:
    out: list[PropertyChange] = []
    for name in sorted(set(old.inputs) | set(new.inputs)):
        a, b = old.inputs.get(name), new.inputs.get(name)
        if a == b:
            continue
        rule = rules.get((new.type, name), DEFAULT_RULE)
        out.append(PropertyChange(name, a, b, rule.effect, rule.source, summarize(name, a, b)))
    for option, a, b in (("protect", old.protect, new.protect),
                         ("retainOnDelete", old.retain_on_delete, new.retain_on_delete)):
        if a != b:
            out.append(PropertyChange(option, a, b, "in-place", "Pulumi resource option (no cloud API call)",
                                      f"{_short(a)} -> {_short(b)}"))
    return out


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
                rule = rules.get((res.type, name), DEFAULT_RULE)
                cause = tokens[found]
                props.setdefault(key, []).append(PropertyChange(
                    name, value, value, rule.effect, rule.source,
                    f"(known after apply: {cause} is replaced)", cause=f"{cause} is replaced"))
                if rule.effect == "replace" and key not in replaced:
                    replaced.add(key)
                    frontier.add(key)


def _classify(action: Action, old: Resource | None, new: Resource | None, props: tuple[PropertyChange, ...],
              fresh_cluster: bool) -> Change:
    """Pick the impact class and say why, in words a reviewer can act on."""
    res = new or old
    assert res is not None
    kind = {"alicloud:nas/fileSystem:FileSystem": "file system", "alicloud:nas/fileset:Fileset": "fileset",
            "alicloud:oss/bucket:Bucket": "bucket"}.get(res.type, "")
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
              "replace": "a new one is created, then the old one is deleted.",
              "update": "updated in place."}[action]
    return Change(action, res.type, res.name, "safe", reason, props)


def _subject(props: Sequence[PropertyChange], effect: Effect) -> str:
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


# ------------------------------------------------------------------------------------------ value summaries
def summarize(name: str, old: Any, new: Any) -> str:
    """A one-line, human summary of a changed value; user data is decoded and diffed, not shown as base64."""
    if name == "userData":
        return _summarize_user_data(old, new)
    old, new = _json_document(old), _json_document(new)  # RAM policy documents are JSON text
    if isinstance(old, (Mapping, list)) and isinstance(new, (Mapping, list)):
        leaves = list(_leaf_diffs(old, new, name))
        shown = [f"{path}: {_short(a)} -> {_short(b)}" for path, a, b in leaves[:3]]
        more = f"; +{len(leaves) - 3} more" if len(leaves) > 3 else ""
        return "; ".join(shown) + more if shown else "reordered"
    return f"{_short(old)} -> {_short(new)}"


def _json_document(value: Any) -> Any:
    """A string holding a JSON object or array, parsed; anything else unchanged."""
    if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _leaf_diffs(old: Any, new: Any, path: str) -> Iterable[tuple[str, Any, Any]]:
    """(path, old, new) for every differing leaf; list items with an ``id`` (lifecycle rules) match by id."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            a, b = old.get(key), new.get(key)
            if a != b:
                yield from _leaf_diffs(a, b, f"{path}.{key}" if path else str(key))
        return
    if isinstance(old, list) and isinstance(new, list):
        if _all_have_ids(old) and _all_have_ids(new):
            olds, news = {i["id"]: i for i in old}, {i["id"]: i for i in new}
            for ident in list(olds) + [i for i in news if i not in olds]:
                a, b = olds.get(ident), news.get(ident)
                if a != b:
                    yield from _leaf_diffs(a, b, f"{path}[id={ident}]")
            return
        for i in range(max(len(old), len(new))):
            a = old[i] if i < len(old) else None
            b = new[i] if i < len(new) else None
            if a != b:
                yield from _leaf_diffs(a, b, f"{path}[{i}]")
        return
    yield path, old, new


def _all_have_ids(items: list[Any]) -> bool:
    ids = [i.get("id") for i in items if isinstance(i, Mapping)]
    return len(ids) == len(items) and all(isinstance(i, str) for i in ids) and len(set(ids)) == len(ids)


def _short(value: Any, limit: int = 60) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    if len(text) > LONG_VALUE:
        return digest(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def digest(text: str) -> str:
    """How a long value is shown: its hash prefix and length (stable, short, comparable)."""
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()[:12]} ({len(text):,} chars)"


def _decode_user_data(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def _summarize_user_data(old: Any, new: Any) -> str:
    """Which lines of the boot script change (the nodes reboot to run it), e.g. ``NNODES=1 -> NNODES=3``."""
    a, b = _decode_user_data(old), _decode_user_data(new)
    if a is None or b is None:
        return f"{_short(old)} -> {_short(new)}"
    old_lines, new_lines = a.splitlines(), b.splitlines()
    changed = added = removed = 0
    example = fallback = ""
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        paired = min(i2 - i1, j2 - j1)
        changed += paired
        added += (j2 - j1) - paired
        removed += (i2 - i1) - paired
        if not example and paired:
            example = f"{_short(old_lines[i1].strip(), 40)} -> {_short(new_lines[j1].strip(), 40)}"
        elif not fallback:
            fallback = (f"adds {_short(new_lines[j1].strip(), 40)}" if j2 > j1
                        else f"drops {_short(old_lines[i1].strip(), 40)}")
    if not (changed or added or removed):
        return "boot script: whitespace only"
    example = example or fallback
    counts = ", ".join(f"{n} {what}" for n, what in ((changed, "changed"), (added, "added"), (removed, "removed"))
                       if n)
    lines = "lines" if changed + added + removed != 1 else "line"
    return f"boot script: {counts} {lines}" + (f" ({example})" if example else "")


# ------------------------------------------------------------------------------------------ reading sides
@dataclass(frozen=True, slots=True)
class Side:
    """One side's spec text and how to name it: ``examples/x.yaml`` or ``origin/main:examples/x.yaml``."""

    label: str  # used in FILE:LINE messages
    text: str
    path: str  # the spec path recorded in the rendered files


EMPTY_SIDES = ("-", "/dev/null")  # BASE for a spec that does not exist yet (as in `git diff /dev/null file`)


def read_side(arg: str, cwd: str | Path | None = None) -> Side:
    """A spec file path, or ``GIT_REF:path`` read from git (the path relative to ``cwd`` or to the repository)."""
    from generator.render.stackdir import spec_record
    from generator.spec import loader

    local = Path(arg) if cwd is None else Path(cwd) / arg
    if local.exists() or ":" not in arg or re.match(r"^[A-Za-z]:[\\/]", arg):
        return Side(str(arg), loader.read_text(local), spec_record(local))
    cwd = Path(cwd) if cwd is not None else Path.cwd()
    ref, path = arg.split(":", 1)
    if not ref or not path:
        raise DiffError(f"'{arg}' is neither a spec file nor GIT_REF:path "
                        "(e.g. origin/main:examples/pretrain-70b.yaml)")
    return _read_git(ref, path, cwd)


def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=60, env=env, check=False)
    except FileNotFoundError:
        raise DiffError("git is not installed; it is needed to read GIT_REF:path sides") from None
    except subprocess.TimeoutExpired:
        raise DiffError(f"git {' '.join(args)} did not finish within 60 s") from None


def _read_git(ref: str, path: str, cwd: Path) -> Side:
    from generator.spec import loader

    what = f"{ref}:{path}"
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise DiffError(f"cannot read {what}: {cwd} is not inside a git repository")
    root = Path(top.stdout.decode().strip()).resolve()
    if _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd).returncode != 0:
        raise DiffError(f"cannot read {what}: git does not know the revision '{ref}' (a CI checkout may need "
                        f"the base branch fetched, e.g. 'git fetch origin main' or fetch-depth: 0)")
    candidates: list[str] = []
    relative = os.path.relpath(os.path.normpath(cwd.resolve() / path), root).replace(os.sep, "/")
    if not relative.startswith("../"):
        candidates.append(relative)  # relative to the working folder, like the other side's file path
    rooted = os.path.normpath(path).replace(os.sep, "/").lstrip("/")
    if rooted not in candidates and not rooted.startswith("../"):
        candidates.append(rooted)  # relative to the repository root, as `git show` reads it
    for candidate in candidates:
        kind = _git(["cat-file", "-t", f"{ref}:{candidate}"], cwd)
        if kind.returncode != 0:
            continue
        if kind.stdout.decode().strip() != "blob":
            raise DiffError(f"cannot read {what}: '{candidate}' is a folder in {ref}, not a spec file")
        shown = _git(["show", f"{ref}:{candidate}"], cwd)
        if shown.returncode != 0:
            raise DiffError(f"cannot read {what}: {shown.stderr.decode(errors='replace').strip()}")
        label = f"{ref}:{candidate}"
        return Side(label, loader.decode(shown.stdout, label), candidate)
    raise DiffError(f"cannot read {what}: '{path}' does not exist in {ref}")


@dataclass(frozen=True)
class _Planned:
    """A side checked, planned and rendered to files, ready to run (the slow part)."""

    side: Side
    plan: Plan
    files: Mapping[str, str]


def _plan_side(side: Side, catalog: Catalog) -> _Planned:
    """Load, check, plan and render one side; a bad spec raises SpecErrors with the side's label as FILE."""
    from generator.plan import pipeline
    from generator.render import files
    from generator.spec import loader

    located = pipeline.checked(loader.load_text(side.text, file=side.label), catalog)
    plan = pipeline.plan_located(located, catalog)
    return _Planned(side, plan, files.render(plan, side.path))


def _run_side(planned: _Planned) -> tuple[Graph, SideInfo]:
    """Write the rendered program to a temporary folder and run it under the mock runtime."""
    from generator.preview import mockrun
    from generator.render import stackdir

    plan = planned.plan
    with tempfile.TemporaryDirectory(prefix="trainstack-diff-") as tmp:
        dest = Path(tmp) / plan.name
        stackdir.write(planned.files, dest, durable=False)
        graph = mockrun.run_program(dest, project=plan.name, stack=plan.stack,
                                    config={"alicloud:region": plan.region})
    return graph, SideInfo(planned.side.label, plan.name, plan.stack, plan.region, len(graph.resources))


def render_side(side: Side, catalog: Catalog | None = None) -> tuple[Graph, SideInfo]:
    """Load, check, plan and render one side, then run its program under the mock runtime."""
    from generator.catalog import load_catalog

    return _run_side(_plan_side(side, catalog or load_catalog()))


def diff_sides(base: str, head: str, *, cwd: str | Path | None = None,
               catalog: Catalog | None = None) -> DiffResult:
    """Diff two sides given as spec paths or ``GIT_REF:path``.

    Both sides are read first (a bad ref fails fast), then both specs are checked and planned (a bad spec
    fails before anything slow), then both programs run; identical spec texts run once. A spec error raises
    :class:`~generator.errors.SpecErrors` with FILE:LINE, the FILE naming the side
    (``origin/main:examples/x.yaml:12:3: ...``).
    """
    from generator.catalog import load_catalog

    catalog = catalog or load_catalog()
    if head in EMPTY_SIDES:
        raise DiffError("HEAD cannot be empty: to preview removing a whole stack, use `trainstack destroy --help`")
    if base in EMPTY_SIDES:  # a spec new in this change: everything it declares is created
        head_graph, head_info = render_side(read_side(head, cwd), catalog)
        from generator.preview.mockrun import Graph

        return diff_graphs(Graph(), head_graph, base_info=SideInfo(label="(none)"), head_info=head_info)
    base_side, head_side = read_side(base, cwd), read_side(head, cwd)
    head_planned = _plan_side(head_side, catalog)
    base_planned = _plan_side(base_side, catalog) if base_side.text != head_side.text else None
    head_graph, head_info = _run_side(head_planned)
    if base_planned is None:  # the spec path only appears in comments of the rendered files
        base_graph, base_info = head_graph, SideInfo(base_side.label, head_info.project, head_info.stack,
                                                     head_info.region, head_info.resources)
    else:
        base_graph, base_info = _run_side(base_planned)
    return diff_graphs(base_graph, head_graph, base_info=base_info, head_info=head_info)


# ------------------------------------------------------------------------------------------ grouping
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
        key = (c.impact, c.action, c.type, c.reason, tuple((p.name, p.effect, bool(p.cause)) for p in c.properties))
        groups.setdefault(key, []).append(c)
    out = []
    for members in groups.values():
        members.sort(key=lambda c: natural_key(c.name))
        first = members[0]
        varies = frozenset(p.name for i, p in enumerate(first.properties)
                           if any(m.properties[i].summary != p.summary for m in members[1:]))
        out.append(Group(first.action, first.type, first.impact, first.reason, first.properties,
                         tuple(m.name for m in members), varies))
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
            runs = [str(a).zfill(width) if a == b else f"{str(a).zfill(width)}..{str(b).zfill(width)}"
                    for a, b in _runs(sorted({int(m.group(2)) for m in ms}))]
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
    return (f"{c['create']} to create, {c['update']} to update, {c['replace']} to replace, {c['delete']} to delete "
            f"({result.unchanged} unchanged)")


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
    if not result.has_changes:
        out.append(f"No changes: both sides declare the same {result.unchanged} resources.")
        out.extend(f"note: {n}" for n in result.notes)
        return "\n".join(out) + "\n"
    out.append(_headline(result))
    out.append(f"Worst impact: {result.worst_impact}")
    for impact in IMPACTS:
        changes = result.of_impact(impact)
        if not changes:
            continue
        out.append("")
        out.append(f"{impact} ({len(changes)}): {IMPACT_TITLES[impact]}")
        for g in group_changes(changes):
            out.append(f"  {_ACTION_SYMBOLS[g.action]:<2} {g.label}  {g.action}: {g.reason}")
            out.extend(f"       {_prop_line(p, g)}" for p in g.properties)
    if result.notes:
        out.append("")
        out.extend(f"note: {n}" for n in result.notes)
    return "\n".join(out) + "\n"


MARKDOWN_MARKER = "<!-- trainstack-diff -->"  # lets CI find and update its previous comment
_COLLAPSE_GROUPS = 10  # a section with more groups than this is folded
_COLLAPSE_PROPS = 3  # a change with more properties than this folds them


def _code(text: str) -> str:
    """An inline code span that survives backticks and newlines in the value."""
    return "`" + str(text).replace("`", "'").replace("\n", " ") + "`"


def format_markdown(result: DiffResult) -> str:
    """A pull-request comment: summary tables, then one section per impact, long lists folded."""
    worst = result.worst_impact
    base, head = result.base.label or "base", result.head.label or "head"
    out = [MARKDOWN_MARKER]
    if worst is None:
        out.append("### trainstack diff: no infrastructure changes")
    else:
        out.append(f"### trainstack diff: {_IMPACT_MARKS[worst]} {worst}")
    out.append("")
    where = f"{_code(base)} → {_code(head)}"
    if result.head.project:
        stack = _code(f"{result.head.project}/{result.head.stack}")
        where += f" · stack {stack} · region {_code(result.head.region)}"
    out.append(where)
    out.append("")
    if worst is None:
        out.append(f"Both sides declare the same {result.unchanged} resources.")
    else:
        c = result.counts()
        out += ["| create | update | replace | delete | unchanged |", "|---:|---:|---:|---:|---:|",
                f"| {c['create']} | {c['update']} | {c['replace']} | {c['delete']} | {result.unchanged} |", ""]
        out += ["| impact | changes | meaning |", "|---|---:|---|"]
        for impact, n in result.impact_counts().items():
            out.append(f"| {_IMPACT_MARKS[impact]} {impact} | {n} | {IMPACT_TITLES[impact]} |")
    for note in result.notes:
        out += ["", f"> **Note:** {note}"]
    for impact in IMPACTS:
        changes = result.of_impact(impact)
        if not changes:
            continue
        groups = group_changes(changes)
        out += ["", f"#### {_IMPACT_MARKS[impact]} {impact} ({len(changes)})", ""]
        body = [line for g in groups for line in _markdown_group(g)]
        if impact == "safe" or len(groups) > _COLLAPSE_GROUPS:
            summary = f"{_plural(len(changes), 'change')} in {_plural(len(groups), 'group')}"
            out += [f"<details><summary>{summary}</summary>", "", *body, "", "</details>"]
        else:
            out += body
    out += ["", ("<sub>Offline diff by trainstack: both specs rendered and run under Pulumi's mock runtime, no "
                 "cloud access. Which changes replace or reboot a resource comes from "
                 "generator/preview/data/replacement.csv.</sub>")]
    return "\n".join(out) + "\n"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


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
        return [*lines, f"  <details><summary>{len(props)} properties</summary>", "", *items, "", "  </details>"]
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
    """The ``--format json`` document (``schema_version`` 1; fields are only ever added, never renamed)."""
    def side(s: SideInfo) -> dict[str, Any]:
        return {"label": s.label, "project": s.project, "stack": s.stack, "region": s.region,
                "resources": s.resources}

    return {
        "schema_version": SCHEMA_VERSION,
        "base": side(result.base),
        "head": side(result.head),
        "summary": {**result.counts(), "unchanged": result.unchanged, "changed": result.has_changes,
                    "worst_impact": result.worst_impact, "by_impact": result.impact_counts()},
        "notes": list(result.notes),
        "changes": [{
            "action": c.action, "type": c.type, "name": c.name, "impact": c.impact, "reason": c.reason,
            "properties": [{"name": p.name, "old": _json_value(p.old), "new": _json_value(p.new),
                            "effect": p.effect, "source": p.source, "summary": p.summary, "cause": p.cause}
                           for p in c.properties],
        } for c in result.changes],
    }


def format_json(result: DiffResult) -> str:
    return json.dumps(to_dict(result), indent=2, sort_keys=True, default=str) + "\n"


FORMATTERS = {"text": format_text, "markdown": format_markdown, "json": format_json}

__all__ = [
    "IMPACTS", "SCHEMA_VERSION", "Change", "DiffError", "DiffResult", "PropertyChange", "Rule", "SideInfo",
    "diff_graphs", "diff_sides", "format_json", "format_markdown", "format_text", "group_changes", "load_rules",
    "name_span", "read_side", "render_side", "rule_for", "summarize", "to_dict",
]
