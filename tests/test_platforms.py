"""The platforms as data (generator/platforms/): the registry agrees with the spec language, every spec field a
platform does not honour is a real field and gets an error or a warning there (never silence), the honour table in
docs/platforms.md is the generated one, and each platform's program parts exist."""

from __future__ import annotations

import ast
import copy
import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest

from generator import api
from generator.errors import SpecErrors
from generator.plan import warns
from generator.plan.model import Plan
from generator.platforms.base import SLOTS, Capability, Level
from generator.platforms.contract import PlanParts, ViewParts
from generator.platforms.registry import (
    HOMES,
    PLATFORMS,
    honour_markdown,
    live_for,
    parts_for,
    platform_for,
    spec_fields,
    template_dirs,
)
from generator.spec.model import ComputeSpec, Spec

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "i190982651690986913088"  # the image id of the provider's eflo examples (tests/test_lingjun.py)
BASES: dict[str, dict[str, Any]] = {
    "ecs": {"name": "pf-run", "region": "cn-hangzhou", "model": {"preset": "llama-2-7b"}},
    "lingjun": {"name": "pf-run", "region": "cn-wulanchabu", "model": {"preset": "llama-2-7b"},
                "compute": {"platform": "lingjun", "image_id": IMAGE}},
    "pai-dlc": {"name": "pf-run", "region": "cn-hangzhou", "model": {"preset": "llama-2-7b"},
                "compute": {"platform": "pai-dlc"}},
}


def _spec(tmp_path: Path, platform: str, sets: dict[str, Any]) -> Path:
    data = copy.deepcopy(BASES[platform])
    for path, value in sets.items():
        node = data
        *parents, leaf = path.split(".")
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = value
    out = tmp_path / f"{platform}.yaml"
    out.write_text(json.dumps(data, indent=1) + "\n")  # JSON is YAML: the loader locates its lines as well
    return out


def _default(path: str) -> Any:
    model: Any = Spec
    *parents, leaf = path.split(".")
    for name in parents:
        model = next(a for a in (model.model_fields[name].annotation, *typing.get_args(
            model.model_fields[name].annotation)) if isinstance(a, type))
    value = model.model_fields[leaf].default
    return list(value) if isinstance(value, tuple) else value


def test_the_registry_is_the_spec_languages_list_of_platforms() -> None:
    literal = typing.get_args(ComputeSpec.model_fields["platform"].annotation)
    assert set(PLATFORMS) == set(literal)
    assert all(platform_for(name).name == name for name in literal)


def test_each_platform_names_its_behaviour_in_its_own_folder() -> None:
    for name, p in PLATFORMS.items():
        assert p.parts.startswith(f"generator.platforms.{p.parts.split('.')[2]}.") and ":" in p.parts, name
        parts = parts_for(name)
        assert parts is parts_for(name)  # built once
        for method in PLAN_METHODS | VIEW_METHODS:  # contract.PlanParts, contract.ViewParts
            assert callable(getattr(parts, method)), (name, method)
    assert {m for m in dir(PlanParts) if not m.startswith("_")} == PLAN_METHODS | VIEW_METHODS
    assert {m for m in dir(ViewParts) if not m.startswith("_")} == VIEW_METHODS


def test_each_platform_with_nodes_gives_heal_its_action_table() -> None:
    """heal --health asks the platform (generator/live/jobs/stack.py): each whose nodes trainstack creates has a live
    module with its reads and decisions, their calls and its verbs."""
    for name, p in PLATFORMS.items():
        if p.has(Capability.NODES):
            heal = live_for(name)
            assert callable(heal.health_actions) and callable(heal.apply), name
            assert isinstance(heal.HEAL_VERBS, str) and heal.HEAL_VERBS, name


PLAN_METHODS = {"rules", "gpu_refusals", "type_refusal", "eligible", "internode_gbps", "zone_decision", "place", "spot", "weights", "part"}
VIEW_METHODS = {"summary_lines", "summary_rows", "picture", "preview_boxes", "template_vars", "stack_files"}


def test_every_field_a_platform_does_not_honour_is_a_spec_field() -> None:
    fields = set(spec_fields())
    for p in PLATFORMS.values():
        assert set(p.unhonoured) <= fields, (p.name, set(p.unhonoured) - fields)
        assert all(u.when for u in p.unhonoured.values() if u.rule), p.name  # a rule says which values it refuses


def test_each_platforms_program_parts_and_slot_parts_exist_and_every_slot_part_is_someones() -> None:
    shared = ROOT / "templates" / "stack" / "parts"
    for p in PLATFORMS.values():
        own = HOMES[p.name] / "templates" / "stack"
        assert p.program_parts and all((shared / f"{name}.py.j2").is_file() or (own / "parts" / f"{name}.py.j2").is_file()
                                       for name in p.program_parts), p.name
        assert p.has(Capability.NODE_BOOTSTRAP) == (p.user_data_max_bytes > 0), p.name
        assert set(p.template_parts) <= set(SLOTS), (p.name, set(p.template_parts) - set(SLOTS))
        # its slot parts are its own: in its folder, and only there
        assert {f"{name}.j2" for name in p.template_parts.values()} == {f.name for f in (own / "slots").glob("*.j2")}
    assert not list((ROOT / "templates" / "stack").glob("slots/*.j2")), "a slot part outside its platform's folder"
    for f in sorted(f for d in template_dirs() for f in d.glob("stack/slots/*.j2")):  # each says what it holds
        first = f.read_text().splitlines()[0]
        assert first.startswith("{# The ") and first.endswith(" #}"), f.name
    # a platform's live job commands go one way at most (Lingjun's are refused: generator/live/jobs/stack.py)
    assert all(p.has(Capability.DLC_JOBS) + p.has(Capability.CLOUD_ASSISTANT_JOBS) + p.has(Capability.EFLO_JOBS) <= 1 for p in PLATFORMS.values())


def _own_parts() -> set[str]:
    """The template parts one platform alone lists (program_parts, template_parts): the platform's own text."""
    listed = [{f"{n}.py.j2" for n in p.program_parts} | {f"{n}.j2" for n in p.template_parts.values()}
              for p in PLATFORMS.values()]
    return {name for names in listed for name in names if sum(name in other for other in listed) == 1}


# A template tag that branches on which platform the plan is for: the platform's own part of the plan (plan.lingjun,
# plan.dlc, and the short names their views give them: lj, dl), its name, or compute.platform.
PLATFORM_BRANCH = re.compile(r"{%-?\s*(?:if|elif)\b[^%]*(?:plan\.(?:lingjun|dlc)\b|\b(?:lj|dl)\b|platform\b|"
                             + "|".join(re.escape(f'"{n}"') for n in PLATFORMS) + ")")


def test_shared_templates_branch_on_capabilities_never_on_the_platform() -> None:
    """The templates every platform renders ask ``caps`` (the platform's capabilities) or include the platform's part
    of a slot (``slots``); only a platform's own parts know which platform they are for."""
    own = _own_parts()
    wrong = []
    for path in sorted([*(ROOT / "templates").rglob("*.j2"), *(f for d in template_dirs() for f in d.rglob("*.j2"))]):
        if path.parent.name in ("parts", "slots") and path.name in own:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if PLATFORM_BRANCH.search(line):
                wrong.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not wrong, "branch on caps.X or add a slot part (generator/platforms/base.py SLOTS):\n" + "\n".join(wrong)


def test_docs_list_the_generated_honour_table() -> None:
    doc = (ROOT / "docs" / "platforms.md").read_text()
    start, end = "<!-- honour-table: generated -->\n", "<!-- /honour-table -->"
    assert start in doc and end in doc
    assert doc.split(start, 1)[1].split(end, 1)[0] == honour_markdown(), \
        "regenerate: python -c 'from generator.platforms.registry import honour_markdown; print(honour_markdown())'"


GENERIC = [(p.name, path, u.level) for p in PLATFORMS.values() for path, u in p.unhonoured.items() if not u.rule]


@pytest.mark.parametrize("platform, path, level", GENERIC, ids=[f"{p}-{f}" for p, f, _ in GENERIC])
def test_a_field_a_platform_ignores_is_an_error_or_a_warning_there(tmp_path: Path, platform: str, path: str,
                                                                    level: Level) -> None:
    """Set to its default, even: writing the field is what the user relies on."""
    spec = _spec(tmp_path, platform, {path: _default(path)})
    if level is Level.ERROR:
        with pytest.raises(SpecErrors) as e:
            api.load(spec)
        hits = [p for p in e.value.problems if p.dotted == path]
        assert hits and all(p.hint and p.line for p in hits), e.value.render()
    else:
        plan = api.plan(spec)
        assert [w for w in _ignored(plan, path) if w.platform == platform_for(platform).title]
        assert not _ignored(api.plan(_spec(tmp_path, platform, {})), path)


def _ignored(plan: Plan, path: str) -> list[warns.FieldIgnored]:
    """The plan's warnings that the spec sets ``path`` and its platform ignores it."""
    return [w for w in plan.warnings if isinstance(w, warns.FieldIgnored) and w.path == path]


# The values each platform rule refuses (or warns about), as its table entry's ``when`` says.
RULED = {
    ("lingjun", "compute.system_disk_gib"): {"compute.system_disk_gib": 200},
    ("lingjun", "compute.data_disk_gib"): {"compute.data_disk_gib": 100},
    ("lingjun", "storage.shared"): {"storage.shared": "extreme-nas"},
    ("lingjun", "storage.dataset"): {"storage.dataset": {"source": "oss://data-bucket/corpus/", "size": "2TB"}},
    ("lingjun", "spot.enabled"): {"spot.enabled": True},
    ("pai-dlc", "compute.image_id"): {"compute.image_id": "m-bp1g7004ksh0oeuc0000"},
    ("pai-dlc", "compute.data_disk_gib"): {"compute.data_disk_gib": 100},
    ("pai-dlc", "compute.paused"): {"compute.paused": True},
    ("pai-dlc", "network.admin_cidrs"): {"network.admin_cidrs": ["192.168.10.0/24"]},
    ("pai-dlc", "network.rdma"): {"network.rdma": True},
    ("pai-dlc", "spot.on_demand_base"): {"spot.enabled": True, "spot.on_demand_base": 1},
    ("pai-dlc", "spot.min_nodes"): {"spot.min_nodes": 1},
    ("pai-dlc", "spot.strategy"): {"spot.enabled": True, "spot.on_demand_base": 0, "spot.strategy": "SpotAsPriceGo"},
    ("pai-dlc", "spot.interruption"): {"spot.enabled": True, "spot.on_demand_base": 0, "spot.interruption": "stop"},
}


def test_every_ruled_entry_has_a_case() -> None:
    assert set(RULED) == {(p.name, path) for p in PLATFORMS.values() for path, u in p.unhonoured.items() if u.rule}


@pytest.mark.parametrize("platform, path", sorted(RULED), ids=[f"{p}-{f}" for p, f in sorted(RULED)])
def test_a_platform_rule_reports_the_field_its_table_entry_names(tmp_path: Path, platform: str, path: str) -> None:
    entry = PLATFORMS[platform].unhonoured[path]
    spec = _spec(tmp_path, platform, RULED[platform, path])
    if entry.level is Level.ERROR:
        with pytest.raises(SpecErrors) as e:
            api.load(spec)
        assert [p for p in e.value.problems if p.dotted == path], e.value.render()
    else:
        assert _ignored(api.plan(spec), path)


def test_jumbo_frames_warn_on_lingjun_and_dlc_and_stay_a_decision_on_ecs(tmp_path: Path) -> None:
    """The reproduced silence of issue #27: network.jumbo_frames: true was ignored without a word off ECS."""
    for platform in ("lingjun", "pai-dlc"):
        plan = api.plan(_spec(tmp_path, platform, {"network.jumbo_frames": True}))
        assert not plan.network.jumbo_frames
        assert _ignored(plan, "network.jumbo_frames"), platform
    ecs = api.plan(_spec(tmp_path, "ecs", {"network.jumbo_frames": True}))
    assert not _ignored(ecs, "network.jumbo_frames")


# Outside generator/platforms/, code that reads a platform's own part of the plan (``plan.lingjun``, ``plan.dlc``).
# Each is listed with why; anything else asks the platform (registry.parts_for: contract.ViewParts / PlanParts).
READS_A_PLATFORMS_PART = {
    "generator.catalog.checks": "Region.lingjun is the catalog's list of a region's Lingjun zones, not the plan's part",
    "generator.plan.check": "Region.lingjun, as above",
    "generator.catalog.listing": "Region.lingjun, as above (trainstack catalog --regions)",
}


PLATFORM_PART = re.compile(r"\bplan\.(?:lingjun|dlc)\b|\b(?:lj|dl)\.")  # in a template: a platform's part of the plan


def test_shared_code_asks_the_platform_instead_of_reading_its_part_of_the_plan() -> None:
    """The claim "adding a platform touches its own folder plus one registry line", checked on the code and the
    templates: no module outside generator/platforms/ reads a platform's own part of the plan (but the listed ones),
    no template outside a platform's folder is one platform's own part, and every platform part lives in its folder."""
    package = ROOT / "generator"
    parts = {"lingjun", "dlc"}  # Plan's platform parts (generator/plan/model.py)
    wrong = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        if rel.parts[1] == "platforms" or module in READS_A_PLATFORMS_PART:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in parts and isinstance(node.ctx, ast.Load):
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} reads .{node.attr}")
    assert not wrong, "ask registry.parts_for(plan) (contract.ViewParts) instead:\n" + "\n".join(wrong)
    folders = {home.name for home in HOMES.values()}
    for path in sorted((ROOT / "templates").rglob("*.j2")):  # the shared templates name no platform in their file name
        assert not any(path.name.split(".")[0].endswith(f"_{f}") for f in folders), path.relative_to(ROOT)
        # nor read a platform's part of the plan (a platform's view gives its own parts theirs: template_vars)
        assert not PLATFORM_PART.search(path.read_text()), path.relative_to(ROOT)
    shared = {p.name for p in (ROOT / "templates" / "stack" / "parts").glob("*.j2")}
    for p in PLATFORMS.values():
        others = {n for q in PLATFORMS.values() if q is not p for n in q.program_parts}
        for name in set(p.program_parts) - others - SHARED_BY_ONE:  # a part only it renders is in its own folder
            assert f"{name}.py.j2" not in shared, (p.name, name)
            assert (HOMES[p.name] / "templates" / "stack" / "parts" / f"{name}.py.j2").is_file(), (p.name, name)


# parts only one platform renders today that stay shared: facts (the cluster facts the nodes read at boot,
# Capability.CLUSTER_FACTS: a new platform whose nodes boot node-init.sh would list it too)
SHARED_BY_ONE = {"facts"}
