"""The limits of issue #9: every bad input is a located spec error (exit 2 through the CLI, tests/test_bad_input.py),
and the rules hold as properties, not only for the corpus examples.

* a capacity the planner derives obeys the same limit as an explicit one, and every capacity hint names a value that
  itself passes;
* mount and fileset paths are normalized, and the normalized path is what the plan uses;
* booleans are not numbers (for every numeric field of the spec model) and numbers are not booleans;
* numbers have finite upper bounds; long runs and long checkpoint intervals get warnings;
* repeats in set-like lists, control characters and Alibaba's tag limits;
* deep nesting fails fast and the echoed source line is clipped.
"""

from __future__ import annotations

import json
import posixpath
import re
import typing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from generator.catalog import load_catalog
from generator.errors import ECHO_WIDTH, Problem, SpecErrors, clip_line, render_problem
from generator.plan import check as validate
from generator.plan import planner, refusals, spec_refusals, unfit_refusals, warns
from generator.plan.planner import PlanningError
from generator.spec import codes, limits
from generator.spec.fieldtypes import accepts as _accepts
from generator.spec.loader import MAX_DEPTH, load_text
from generator.spec.model import Spec, json_schema

CATALOG = load_catalog()
BASE = "name: limits-run\nregion: cn-wulanchabu\nmodel:\n  parameters: 7B\n"


def props(examples: int):
    return settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def problems_of(text: str) -> list[Problem]:
    """What `trainstack validate` reports before lint: load, then the catalog checks, then the planner."""
    try:
        located = load_text(text, "limits.yaml")
    except SpecErrors as e:
        return list(e.problems)
    found = validate.check(located.spec, CATALOG)
    if found:
        return located.locate(found)
    try:
        planner.make_plan(located.spec, CATALOG)
    except PlanningError as e:
        return located.locate(list(e.problems))
    return []


def plan_of(text: str):
    located = load_text(text, "limits.yaml")
    assert validate.check(located.spec, CATALOG) == []
    return planner.make_plan(located.spec, CATALOG)


def at(problems: list[Problem], *path: str | int) -> list[Problem]:
    return [p for p in problems if p.path == path]


# ------------------------------------------------------------------------------------------------ capacity


def _hint_gib(hint: str) -> int | None:
    m = re.search(r"use (\d+)GiB", hint)
    return int(m.group(1)) if m else None


@props(300)
@given(st.sampled_from(["cpfs", "extreme-nas"]),
       st.one_of(st.floats(min_value=1, max_value=4 * 2**20, allow_nan=False),
                 st.integers(1, 4 * 2**20).map(float),
                 st.integers(1, 900).map(lambda k: k * 1200.0)))
def test_every_capacity_hint_names_a_capacity_that_passes(kind: str, gib: float) -> None:
    wrong = limits.capacity_problem(kind, gib)
    if wrong is None:
        return
    suggested = _hint_gib(wrong[1])
    assert suggested is not None, wrong
    assert limits.capacity_problem(kind, suggested) is None, (gib, wrong, suggested)


@pytest.mark.parametrize(("shared", "capacity"), [
    ("cpfs", "5000GiB"), ("cpfs", "2PiB"), ("cpfs", "1048576GiB"), ("cpfs", "100GiB"), ("cpfs", "1048800GiB"),
    ("extreme-nas", "50GiB"), ("extreme-nas", "300TiB"), ("extreme-nas", "1PiB"),
])
def test_capacity_hints_pass_validation_end_to_end(shared: str, capacity: str) -> None:
    """For every capacity error the CLI would print, the suggested value, written into the spec, passes."""
    found = at(problems_of(BASE + f"storage: {{shared: {shared}, capacity: {capacity}}}\n"), "storage", "capacity")
    assert len(found) == 1
    suggested = _hint_gib(found[0].hint)
    assert suggested is not None, found[0]
    assert not at(problems_of(BASE + f"storage: {{shared: {shared}, capacity: {suggested}GiB}}\n"),
                  "storage", "capacity")


@pytest.mark.parametrize("capacity", ["5000GiB", "2PiB", "1048576GiB"])
def test_capacity_hints_of_an_auto_shared_file_system_pass_too(capacity: str) -> None:
    """shared: auto resolves to CPFS in the planner (a dataset); its capacity errors carry the same kind of hint."""
    ds = "  dataset: {source: oss://corpus-bucket/tok/, size: 1TiB}\n"
    found = at(problems_of(BASE + f"storage:\n  capacity: {capacity}\n" + ds), "storage", "capacity")
    assert len(found) == 1 and found[0].code == "TSC016"
    assert dict(found[0].fields)["kind"] == "cpfs" and dict(found[0].fields)["chosen"] is True
    suggested = _hint_gib(found[0].hint)
    assert problems_of(BASE + f"storage:\n  capacity: {suggested}GiB\n" + ds) == []


def test_a_900_tib_dataset_is_refused_like_the_same_explicit_capacity() -> None:
    derived = limits.cpfs_capacity_for_dataset(900 * 2**40)
    assert derived > limits.CPFS_MAX_GIB
    explicit = at(problems_of(BASE + f"storage: {{shared: cpfs, capacity: {derived}GiB}}\n"), "storage", "capacity")
    assert [(p.code, dict(p.fields)["gib"]) for p in explicit] == [(spec_refusals.CapacityOutOfRange.code, derived)]
    auto = problems_of(BASE + "storage:\n  dataset: {source: oss://corpus-bucket/tok/, size: 900TiB}\n")
    assert [p.path for p in auto] == [("storage", "dataset", "size")]
    assert "1 PiB" in auto[0].message and auto[0].line == 6


@props(40)
@given(st.integers(1, 1200))
def test_a_derived_capacity_passes_the_explicit_rule_or_is_an_error_at_the_dataset(tib: int) -> None:
    text = BASE + f"storage:\n  dataset: {{source: oss://corpus-bucket/tok/, size: {tib}TiB}}\n"
    try:
        plan = plan_of(text)
    except PlanningError as e:
        assert [p.path for p in e.problems] == [("storage", "dataset", "size")]
        fits = re.search(r"import at most (\d+)TiB", e.problems[0].hint)
        assert fits and int(fits.group(1)) < tib
        bigger = plan_of(BASE + f"storage:\n  dataset: {{source: oss://corpus-bucket/tok/, size: {fits.group(1)}TiB}}\n")
        assert limits.capacity_problem("cpfs", bigger.storage.capacity_gib) is None
        return
    assert plan.storage.kind == "cpfs"
    assert plan.storage.capacity_gib == limits.cpfs_capacity_for_dataset(tib * 2**40)
    assert limits.capacity_problem("cpfs", plan.storage.capacity_gib) is None


def test_the_largest_dataset_is_the_boundary() -> None:
    tib = limits.largest_cpfs_dataset_tib()
    assert limits.dataset_capacity_problem(tib * 2**40) is None
    assert limits.dataset_capacity_problem((tib + 1) * 2**40) is not None


def test_an_explicit_cpfs_capacity_must_hold_the_dataset() -> None:
    ds = "  dataset: {source: oss://corpus-bucket/tok/, size: 10TiB}\n"
    found = problems_of(BASE + "storage:\n  shared: cpfs\n  capacity: 3600GiB\n" + ds)
    assert [(p.code, p.path) for p in found] == [(refusals.DatasetOverCapacity.code, ("storage", "capacity"))]
    assert dict(found[0].fields)["capacity_gib"] == 3600 and dict(found[0].fields)["dataset_bytes"] == 10 * 2**40
    assert problems_of(BASE + f"storage:\n  shared: cpfs\n  capacity: {_hint_gib(found[0].hint)}GiB\n" + ds) == []


# ------------------------------------------------------------------------------------------------ paths


SEGMENTS = ["mnt", "shared", "data", "opt", ".", "..", "", "etc", "usr", "lib", "lib64", "libx32", "var", "run",
             "proc", "home", "srv", "root", "bin", "dev", "sys", "boot", "sbin"]


@props(300)
@given(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6), st.booleans())
def test_mount_path_is_normalized_or_refused_naming_the_system_directory(parts: list[str], trailing: bool) -> None:
    path = "/" + "/".join(parts) + ("/" if trailing else "")
    expected = posixpath.normpath("/" + path.lstrip("/"))
    top = "/" + expected.split("/")[1] if expected != "/" else "/"
    system = expected == "/" or top in limits.SYSTEM_DIRS or top.startswith("/lib")
    try:
        spec = load_text(BASE + f"storage: {{mount_path: '{path}'}}\n", "limits.yaml").spec
    except SpecErrors as e:
        assert system, (path, e.problems)
        assert [p.path for p in e.problems] == [("storage", "mount_path")]
        assert (top if top != "/" else "root directory") in e.problems[0].message
        assert "/mnt/shared" in e.problems[0].hint
        return
    assert not system, path
    assert spec.storage.mount_path == expected
    assert "//" not in expected and not expected.endswith("/")


def test_the_plan_uses_the_normalized_mount_path() -> None:
    plan = plan_of(BASE + "compute: {nodes: 2, gpu: A100-80G}\nstorage: {mount_path: /mnt//data/./x/../shared/}\n")
    assert plan.storage.kind != "none"
    assert plan.storage.mount_path == "/mnt/data/shared"


@pytest.mark.parametrize(("path", "system"), [
    ("/", "root"), ("/mnt/..", "root"), ("/etc/.", "/etc"), ("/mnt/../etc", "/etc"), ("//etc", "/etc"),
    ("/usr/local/shared", "/usr"), ("/lib", "/lib"), ("/lib32/x", "/lib32"), ("/libx32", "/libx32"),
    ("/proc/", "/proc"), ("/sys", "/sys"), ("/dev/shm", "/dev"), ("/run/x", "/run"), ("/boot", "/boot"),
    ("/bin", "/bin"), ("/sbin/", "/sbin"), ("/var/lib/x", "/var"), ("/root/data", "/root"),
])
def test_system_directories_are_refused(path: str, system: str) -> None:
    found = problems_of(BASE + f"storage: {{mount_path: '{path}'}}\n")
    assert [p.path for p in found] == [("storage", "mount_path")]
    assert system in found[0].message and found[0].hint == "use e.g. /mnt/shared"


@props(200)
@given(st.lists(st.sampled_from(["datasets", "corpus", ".", "..", "", "a-b_c.d"]), min_size=1, max_size=5))
def test_fileset_path_has_no_dot_segments_and_is_collapsed(parts: list[str]) -> None:
    path = "/" + "/".join(parts) + "/"
    text = BASE + f"storage:\n  dataset: {{source: oss://corpus-bucket/tok/, size: 1TiB, path: '{path}'}}\n"
    try:
        spec = load_text(text, "limits.yaml").spec
    except SpecErrors as e:
        assert [p.path for p in e.problems] == [("storage", "dataset", "path")]
        assert any(s in (".", "..") for s in parts) or not any(parts)
        return
    assert not any(s in (".", "..") for s in parts)
    got = spec.storage.dataset.path  # type: ignore[union-attr]
    assert got == "/" + "/".join(s for s in parts if s) + "/" and "//" not in got


# ------------------------------------------------------------------------------------------------ booleans


def _scalar_fields(model: type[BaseModel] = Spec, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], frozenset]:
    """Every scalar field of the spec model (not lists or mappings) -> the kinds of scalar it takes."""
    out: dict[tuple[str, ...], frozenset] = {}
    for name, info in model.model_fields.items():
        sub = next((a for a in [info.annotation, *typing.get_args(info.annotation)]
                    if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if sub is not None:
            out.update(_scalar_fields(sub, (*prefix, name)))
        elif typing.get_origin(info.annotation) not in (tuple, dict):
            out[(*prefix, name)] = _accepts(info.annotation)
    return out


def _doc_with(path: tuple[str, ...], value: object) -> str:
    doc: dict = {"name": "bool-run", "region": "cn-wulanchabu", "model": {"parameters": "7B"}}
    if path[:2] == ("model", "architecture"):
        doc["model"] = {"architecture": {"layers": 2, "hidden": 64, "heads": 2}}
    if path[:2] == ("storage", "dataset"):
        doc["storage"] = {"dataset": {"source": "oss://corpus-bucket/tok/", "size": "1TiB"}}
    if path == ("model", "parameters"):
        doc["model"] = {}
    node = doc
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value
    return json.dumps(doc)


NUMERIC = sorted(p for p, kinds in _scalar_fields().items() if "number" in kinds and "bool" not in kinds)
BOOLEAN = sorted(p for p, kinds in _scalar_fields().items() if "bool" in kinds and "number" not in kinds)


def test_the_walk_finds_the_numeric_and_boolean_fields() -> None:
    for path in [("compute", "nodes"), ("model", "tokens"), ("storage", "capacity"), ("checkpoints", "interval"),
                 ("spot", "max_price_ratio"), ("budget", "per_hour"), ("compute", "gpus_per_node"),
                 ("model", "architecture", "mlp_matrices"), ("storage", "dataset", "size")]:
        assert path in NUMERIC, path
    assert {("network", "rdma"), ("network", "jumbo_frames"), ("spot", "enabled"), ("checkpoints", "enabled"),
            ("model", "architecture", "tied_embeddings"), ("parallelism", "sequence_parallel")} <= set(BOOLEAN)
    assert len(NUMERIC) > 30


@pytest.mark.parametrize("path", NUMERIC, ids=".".join)
@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_is_not_a_number(path: tuple[str, ...], value: bool) -> None:
    with pytest.raises(SpecErrors) as e:
        load_text(_doc_with(path, value), "limits.yaml")
    found = at(list(e.value.problems), *path)
    assert found and found[0].message.startswith("expected a number"), e.value.problems
    assert f"got {str(value).lower()}" in found[0].message


@pytest.mark.parametrize("path", BOOLEAN, ids=".".join)
@pytest.mark.parametrize("value", [0, 1, 1.0, "1", "t"])
def test_a_number_is_not_a_boolean(path: tuple[str, ...], value: object) -> None:
    with pytest.raises(SpecErrors) as e:
        load_text(_doc_with(path, value), "limits.yaml")
    found = at(list(e.value.problems), *path)
    assert [(p.code, dict(p.fields)) for p in found] == [(codes.REFUSED_VALUE.code, {"value": value})], found


@pytest.mark.parametrize("word", ["true", "False", "yes", "NO", "on", "off"])
def test_yaml_1_1_boolean_words_still_work(word: str) -> None:
    spec = load_text(BASE + f"network: {{jumbo_frames: '{word}'}}\n", "limits.yaml").spec
    assert spec.network.jumbo_frames is (word.lower() in ("true", "yes", "on"))


# ------------------------------------------------------------------------------------------------ bounds


@pytest.mark.parametrize(("field", "ok", "too_large"), [
    ("  parameters: {}\n", "100T", "100.1T"),
    ("  tokens: {}\n", "1000T", "1001T"),
    ("  global_batch_tokens: {}\n", "10B", "10.1B"),
])
def test_counts_have_an_upper_bound(field: str, ok: str, too_large: str) -> None:
    base = BASE.replace("  parameters: 7B\n", "") if "parameters" in field else BASE
    load_text(base + field.format(ok), "limits.yaml")
    with pytest.raises(SpecErrors) as e:
        load_text(base + field.format(too_large), "limits.yaml")
    (p,) = e.value.problems
    assert (p.code, p.dotted, dict(p.fields)) == (codes.REFUSED_VALUE.code, f"model.{field.split(':')[0].strip()}",
                                                 {"value": too_large}) and p.hint


@pytest.mark.parametrize(("section", "ok", "too_large"), [
    ("storage: {{capacity: {}}}", "100PiB", "101PiB"),
    ("checkpoints: {{interval: {}}}", "30d", "721h"),
    ("budget: {{per_hour: {}}}", "1e8", "1.01e8"),
    ("budget: {{total: {}}}", "1e12", "2e12"),
])
def test_sizes_durations_and_money_have_an_upper_bound(section: str, ok: str, too_large: str) -> None:
    load_text(BASE + section.format(ok) + "\n", "limits.yaml")
    with pytest.raises(SpecErrors) as e:
        load_text(BASE + section.format(too_large) + "\n", "limits.yaml")
    (p,) = e.value.problems
    assert (p.code, p.dotted) == (codes.REFUSED_VALUE.code, section.replace(" ", "").replace(":{{", ".").split(":")[0])
    assert p.hint


@pytest.mark.parametrize("value", ["1e400", "'1e400'", ".inf", "'1e400d'", "1e400TiB"])
def test_infinite_quantities_are_spec_errors(value: str) -> None:
    for section in ("model:\n  parameters: {}\n", "storage: {{capacity: {}}}\n", "checkpoints: {{interval: {}}}\n"):
        text = BASE.replace("model:\n  parameters: 7B\n", "") + section.format(value)
        if "model" not in section:
            text += "model:\n  parameters: 7B\n"
        with pytest.raises(SpecErrors):
            load_text(text, "limits.yaml")


def test_the_json_schema_carries_the_count_bounds() -> None:
    model = json_schema()["$defs"]["ModelSpec"]["properties"]

    def maximum(prop: dict) -> int:
        branch = next(b for b in prop["anyOf"] if b.get("anyOf") or b.get("type") == "integer")
        branch = next(b for b in branch.get("anyOf", [branch]) if b.get("type") == "integer")
        return branch["maximum"]

    assert maximum(model["tokens"]) == limits.MAX_TOKENS
    assert maximum(model["parameters"]) == limits.MAX_PARAMETERS
    assert maximum(model["global_batch_tokens"]) == limits.MAX_GLOBAL_BATCH_TOKENS


def test_a_run_of_over_a_year_is_a_warning() -> None:
    plan = plan_of(BASE + "  tokens: 1000T\n")
    assert [w for w in plan.warnings if isinstance(w, warns.RunOverAYear) and w.wall_hours > 365 * 24], plan.warnings
    assert not [w for w in plan_of(BASE + "  tokens: 20B\n").warnings if isinstance(w, warns.RunOverAYear)]


def test_a_checkpoint_interval_longer_than_the_run_is_a_warning() -> None:
    plan = plan_of(BASE + "  tokens: 1B\ncheckpoints: {interval: 30d}\n")
    assert [w for w in plan.warnings if isinstance(w, warns.IntervalOverRun) and w.interval_seconds == 30 * 86400]


def test_a_checkpoint_interval_longer_than_the_cluster_mtbf_is_a_warning() -> None:
    # 256 nodes at the 6,300 h node MTBF (Llama 3's fleet): the cluster is interrupted every ~25 h
    plan = plan_of(BASE + "  tokens: 2T\ncompute: {nodes: 256, gpu: A100-80G}\ncheckpoints: {interval: 36h}\n")
    assert plan.checkpoints.cluster_mtbf_hours < 36 < (plan.cost.run_hours or 0)
    assert [w for w in plan.warnings if isinstance(w, warns.IntervalOverMtbf) and w.interval_seconds == 36 * 3600]
    # longer still, each failure loses more than the run makes between failures: an error, not a 1e9 h plan
    with pytest.raises(PlanningError) as e:
        plan_of(BASE + "  tokens: 2T\ncompute: {nodes: 256, gpu: A100-80G}\ncheckpoints: {interval: 3d}\n")
    [problem] = e.value.problems
    assert problem.code == unfit_refusals.NeverFinishesAtInterval.code and problem.dotted == "checkpoints.interval"
    assert dict(problem.fields)["interval_seconds"] == 3 * 86400


def test_a_global_batch_holds_at_least_one_sequence() -> None:
    found = problems_of(BASE + "  global_batch_tokens: 2048\n")
    assert [p.path for p in found] == [("model", "global_batch_tokens")]
    assert problems_of(BASE + "  global_batch_tokens: 4096\n") == []


# ------------------------------------------------------------------------------------------------ lists and text


@pytest.mark.parametrize("cidrs", [["10.8.0.0/24", "10.8.0.0/24"], ["10.8.0.0/24", "10.8.0.0/255.255.255.0"],
                                   ["0.0.0.0/0", "1.2.3.0/24", "0.0.0.0/0.0.0.0"]])
def test_repeated_admin_cidrs_are_errors_after_normalisation(cidrs: list[str]) -> None:
    found = problems_of(BASE + f"network: {{admin_cidrs: {json.dumps(cidrs)}}}\n")
    assert [p.path for p in found] == [("network", "admin_cidrs", len(cidrs) - 1)]
    assert found[0].code == "TSC032" and dict(found[0].fields)["first"] == 0


def test_distinct_admin_cidrs_pass() -> None:
    assert problems_of(BASE + "network: {admin_cidrs: [10.8.0.0/24, 10.8.0.0/16, 10.9.0.0/24]}\n") == []


CONTROL = st.characters(categories=["Cc"])


@props(150)
@given(CONTROL, st.sampled_from(["key", "value"]), st.integers(0, 5))
def test_control_characters_in_tags_are_errors(ch: str, where: str, at_: int) -> None:
    text_ = "team-x"[:at_] + ch + "team-x"[at_:]
    key, value = (text_, "llm") if where == "key" else ("team", text_)
    found = problems_of(BASE + f"tags: {{{json.dumps(key)}: {json.dumps(value)}}}\n")
    assert [p.path for p in found] == [("tags", key)], found
    assert "contains" in found[0].message and f"tag {where}" in found[0].message


@pytest.mark.parametrize(("key", "value", "checkpoints", "ok"), [
    ("k" * 64, "v", True, True), ("k" * 65, "v", True, False), ("k" * 65, "v", False, True),
    ("k" * 128, "v" * 128, False, True), ("k" * 129, "v", False, False), ("team", "v" * 129, False, False),
    ("owner@example", "ren", False, True), ("owner@example", "ren", True, False), ("acsteam", "x", True, False),
    ("acsteam", "x", False, True), ("Aliyun-x", "x", False, False), ("ACS:x", "x", False, False),
    ("team", "aliyun-ok", True, True), ("team", "ACS:x", True, False), ("link", "see http://x", True, False),
    ("https://x", "y", False, False), ("team name", "LLM 研究", True, True),
])
def test_alibaba_tag_limits(key: str, value: str, checkpoints: bool, ok: bool) -> None:
    text = BASE + f"checkpoints: {{enabled: {str(checkpoints).lower()}}}\n"
    found = problems_of(text + f"tags: {{{json.dumps(key)}: {json.dumps(value)}}}\n")
    assert (found == []) is ok, found
    if not ok:
        assert [p.path for p in found] == [("tags", key)]


@pytest.mark.parametrize(("image", "ok"), [
    ("m-bp1g7004ksh0oeuc0000", True), ("i190982651690986913088", True), ("aliyun_3_x64_20G_alibase_20240819.vhd", True),
    ("m-abc;rm", False), ("m abc", False), ("", False), ("x" * 128, True), ("x" * 129, False), ("m-'x'", False),
])
def test_image_ids(image: str, ok: bool) -> None:
    try:
        load_text(BASE + f"compute: {{image_id: {json.dumps(image)}}}\n", "limits.yaml")
    except SpecErrors as e:
        assert not ok and [p.path for p in e.problems] == [("compute", "image_id")]
    else:
        assert ok


@pytest.mark.parametrize(("source", "ok"), [
    ("oss://corpus-bucket", True), ("oss://corpus-bucket/", True), ("oss://corpus-bucket/tok/", True),
    ("oss://corpus-bucket/dt=2024-01-01/part(1)+x,y:z@w!*/", True),
    ("oss://corpus-bucket/$(x)/", False), ("oss://corpus-bucket/a`b`/", False), ("oss://corpus-bucket/it's/", False),
    ('oss://corpus-bucket/"q"/', False), ("oss://corpus-bucket/a\\b/", False), ("oss://corpus-bucket/a b/", False),
    ("oss://corpus-bucket/a\tb/", False), ("oss://corpus-bucket/a\nb/", False), ("oss://corpus-bucket//a/", False),
    ("oss://corpus-bucket/a;b/", False), ("oss://corpus-bucket/a|b/", False), ("oss://corpus-bucket/" + "a" * 1023, True),
    ("oss://corpus-bucket/" + "a" * 1024, False), ("oss://corpus-bucket/é/", False),
])
def test_dataset_sources(source: str, ok: bool) -> None:
    text = BASE + f"storage:\n  dataset: {{source: {json.dumps(source)}, size: 1TiB}}\n"
    try:
        load_text(text, "limits.yaml")
    except SpecErrors as e:
        assert not ok and [p.path for p in e.problems] == [("storage", "dataset", "source")], e.problems
    else:
        assert ok


def test_waiver_reasons() -> None:
    def reason(r: str) -> str:
        return BASE + f"waivers:\n  - rule: TS002\n    reason: {json.dumps(r)}\n"

    located = load_text(BASE + "waivers:\n  - rule: TS002\n    reason: >\n      a folded reason, long enough\n")
    assert located.spec.waivers[0].reason == "a folded reason, long enough"
    load_text(reason("r" * 500))
    for bad in ("r" * 501, "one line\nanother line", "a tab\there, long enough", "DEL \x7f long enough", "  short  "):
        with pytest.raises(SpecErrors) as e:
            load_text(reason(bad))
        assert [p.path for p in e.value.problems] == [("waivers", 0, "reason")]


# ------------------------------------------------------------------------------------------------ nesting and echo


def test_deep_nesting_fails_fast_with_a_short_error() -> None:
    """5,000 '[' took ruamel 5-9 s and echoed a 10,000-character line; now a short error at the 51st level."""
    text = "name: deep\nregion: cn-wulanchabu\nmodel: " + "[" * 5000 + "\n"
    with pytest.raises(SpecErrors) as e:
        load_text(text, "deep.yaml")
    (p,) = e.value.problems
    assert p.code == codes.TOO_DEEP.code and dict(p.fields) == {"max_depth": MAX_DEPTH} and p.hint
    assert (p.line, p.column) == (3, len("model: ") + MAX_DEPTH)
    rendered = e.value.render(show_source=True)
    assert max(len(line) for line in rendered.splitlines()) < ECHO_WIDTH + 40
    assert "..." in rendered


def test_fifty_levels_are_still_allowed() -> None:
    """The limit refuses nothing a spec could mean: 49 nested lists under a key load (and fail as a wrong type)."""
    with pytest.raises(SpecErrors) as e:
        load_text(BASE + "zones: " + "[" * 49 + "]" * 49 + "\n", "limits.yaml")
    assert "nests" not in e.value.problems[0].message


@props(300)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=400), st.integers(0, 450))
def test_an_echoed_source_line_is_clipped_around_the_caret(text: str, caret: int) -> None:
    window, at_ = clip_line(text, caret)
    assert len(window) <= ECHO_WIDTH
    assert "\n" not in window and all(ch.isprintable() or ch == " " for ch in window)
    if caret < len(text) and (text[caret].isprintable() or text[caret] == " "):
        assert window[at_] == text[caret]
    if len(text) <= ECHO_WIDTH:
        assert len(window) == len(text)


def test_render_problem_keeps_every_line_short() -> None:
    line = "x: " + "y" * 10_000
    out = render_problem(Problem(("x",), "too long", "a hint", "f.yaml", 1, 5000), [line])
    assert max(len(x) for x in out.splitlines()) <= ECHO_WIDTH + 10
    gutter, caret = out.splitlines()[1:3]
    assert gutter[caret.index("^")] == "y"


# ------------------------------------------------------------------------------------------------ JSON Schema


@pytest.mark.parametrize("patch", [
    {"model": {"parameters": "7B", "tokens": 10**16}}, {"model": {"parameters": 10**15}},
    {"compute": {"nodes": True}}, {"network": {"rdma": 1}}, {"spot": {"enabled": 0}},
    {"storage": {"mount_path": "/mnt/my data"}}, {"storage": {"capacity": 2 * 100 * 2**20}},
    {"storage": {"dataset": {"source": "oss://corpus-bucket/$(x)/", "size": "1TiB"}}},
    {"storage": {"dataset": {"source": "oss://corpus-bucket/tok/", "size": "1TiB", "path": "datasets"}}},
    {"compute": {"image_id": "m-1;reboot"}}, {"checkpoints": {"interval": 50_000}},
    {"budget": {"per_hour": 1e9}}, {"budget": {"total": 1e13}},
    {"tags": {"team": "a\tb"}}, {"tags": {"k" * 129: "x"}}, {"tags": {f"k{i}": "x" for i in range(16)}},
    {"waivers": [{"rule": "TS002", "reason": "r" * 501}]}, {"waivers": [{"rule": "TS002", "reason": "two\nlines, long"}]},
])
def test_the_schema_refuses_what_the_loader_refuses(patch: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    doc = {"name": "schema-run", "region": "cn-wulanchabu", "model": {"parameters": "7B"}, **patch}
    assert list(validator.iter_errors(doc)), patch
    with pytest.raises(SpecErrors):
        load_text(json.dumps(doc), "limits.yaml")
