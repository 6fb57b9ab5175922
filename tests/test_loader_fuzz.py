"""Property tests: no input, however wrong, makes the loader, validator or planner crash.

(a) random YAML (generated data dumped with PyYAML or ruamel.yaml, YAML-ish text, arbitrary text and bytes) fed
    to ``loader.load_text`` either loads or raises ``SpecErrors``;
(b) random spec-shaped documents (random subsets of the real fields, with valid values, near misses and wrong
    types) through load -> ``validate.check`` -> ``planner.make_plan`` raise only ``SpecErrors``/``PlanningError``;
(c) every problem produced from text has a non-empty message and a real place (line >= 1, column >= 1) and
    renders as ``FILE:LINE:COL: ...``.

Runs are derandomized (the same examples every time, so CI is stable). For a deeper, random search:
``TRAINSTACK_FUZZ=deep pytest tests/test_loader_fuzz.py``.
"""

from __future__ import annotations

import io
import os
import re

import hypothesis
import pytest
import yaml as pyyaml
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from ruamel.yaml import YAML

from generator.catalog import load_catalog
from generator.errors import SpecErrors
from generator.plan import check as validate
from generator.plan import planner
from generator.plan.planner import PlanningError
from generator.sizing import PRESETS
from generator.spec import codes
from generator.spec.loader import decode, load_text

CATALOG = load_catalog()
FILE = "fuzz.yaml"
DEEP = os.environ.get("TRAINSTACK_FUZZ") == "deep"


def fuzz(examples: int):
    return settings(max_examples=examples * (50 if DEEP else 1), deadline=None, database=None, derandomize=not DEEP,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# ------------------------------------------------------------------------------------------------ checks (c)


def check_problems(e: SpecErrors, text: str) -> None:
    """Every problem from text is located in it, says something, and renders without a crash."""
    assert e.problems, "SpecErrors without a problem"
    n_lines = max(1, len(text.splitlines()))
    for p in e.problems:
        assert p.message.strip(), p
        assert p.file == FILE, p
        assert 1 <= p.line <= n_lines + 1, (p, n_lines)
        assert p.column >= 1, p
        assert re.match(rf"^{re.escape(FILE)}:{p.line}:{p.column}: .*\S", p.headline(),
                        flags=re.DOTALL), p.headline()
    assert e.render(show_source=True).startswith(FILE + ":")
    lines = [p.line for p in e.problems]
    assert lines == sorted(lines), "problems are not in line order"


# ------------------------------------------------------------------------------------------------ known bugs
# Crashes found by these tests whose fix belongs to another file. Each is detected at import time, so that once it
# is fixed the fuzz checks it again by itself, and each has a regression test below.


def _last_frame(exc: BaseException) -> tuple[str, str]:
    tb, last = exc.__traceback__, ("", "")
    while tb is not None:
        last = (tb.tb_frame.f_code.co_filename.replace("\\", "/"), tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return last


def _tag_crash(exc: BaseException) -> bool:
    """Bug 1: loader.parse_yaml catches only YAMLError, but ruamel's constructors raise plain exceptions on
    explicit tags such as '!!int x', '!!bool maybe', '!!int' with no value or '!!set' on a scalar."""
    return isinstance(exc, (AttributeError, IndexError, KeyError, TypeError, ValueError)) and "ruamel" in _last_frame(exc)[0]


def _label_crash(exc: BaseException) -> bool:
    """Bug 2: loader._clean_loc drops every location part that looks like a pydantic union label ('int', 'str',
    'function-...'), so an unknown top-level key named 'int' leaves an empty location: IndexError."""
    return isinstance(exc, IndexError) and _last_frame(exc)[1] == "pydantic_problems"


def _crashes(text: str, kind) -> bool:
    try:
        load_text(text, FILE)
    except SpecErrors:
        return False
    except Exception as e:  # noqa: BLE001 - detecting the bug
        return kind(e)
    return False


BASE = "name: fuzz-run\nregion: cn-wulanchabu\nmodel:\n  parameters: 7B\n"
TAG_CRASH_TEXTS = ["!!int x\n", "nodes: !!bool maybe\n", "!!int \n", "!!set \n", "a: !!float x\n"]
LABEL_KEYS = [(BASE + "int: 1\n", ("int",)), (BASE + "function-x: 1\n", ("function-x",)),
              (BASE + "compute: {str: 1}\n", ("compute", "str")),
              (BASE + "parallelism:\n  literal[x]: 1\n", ("parallelism", "literal[x]"))]
KNOWN_BUGS = [kind for kind, texts in ((_tag_crash, TAG_CRASH_TEXTS), (_label_crash, [t for t, _ in LABEL_KEYS]))
              if any(_crashes(t, kind) for t in texts)]


def load_or_problems(text: str) -> object:
    try:
        return load_text(text, FILE)
    except SpecErrors as e:
        check_problems(e, text)
        return None
    except Exception as e:
        if any(kind(e) for kind in KNOWN_BUGS):
            reject()  # a known bug, tracked by its own regression test below
        raise


def event(what: str) -> None:
    """Count outcomes (``--hypothesis-show-statistics``) when called under @given; a no-op in plain tests."""
    if currently_in_test_context():
        hypothesis.event(what)


def run_pipeline(text: str) -> None:
    """What ``trainstack validate`` does, minus the file: load -> catalog checks -> plan."""
    located = load_or_problems(text)
    if located is None:
        event("stopped by the loader")
        return
    problems = validate.check(located.spec, CATALOG)
    if problems:
        event("stopped by validate")
        check_problems(SpecErrors(located.locate(problems), located.lines), text)
        return
    try:
        planner.make_plan(located.spec, CATALOG)
    except PlanningError as e:
        event("stopped by the planner")
        check_problems(PlanningError(located.locate(list(e.problems)), located.lines), text)
    else:
        event("planned")


# ------------------------------------------------------------------------------------------------ (a) any YAML

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.sampled_from(["auto", "70B", "7B", "1Mi", "12TiB", "30m", "cn-hangzhou", "A100-80G", "2024-01-01", "~",
                     "null", "yes", "no", "0x1F", "1e400", ".nan", "-.inf", "0o17", "1_000"]),
)
keys = st.one_of(st.text(max_size=12), st.integers(), st.sampled_from(
    ["name", "region", "model", "compute", "parameters", "nodes", "zones", "storage", "tags", "waivers", "int",
     "function-after", "[key]", "\r", " "]))
data = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=4)), max_leaves=25)


def dump_pyyaml(obj: object, flow: bool | None) -> str:
    return pyyaml.safe_dump(obj, default_flow_style=flow, allow_unicode=True, sort_keys=False)


def dump_ruamel(obj: object) -> str:
    y = YAML(typ="safe", pure=True)
    out = io.StringIO()
    y.dump(obj, out)
    return out.getvalue()


@fuzz(150)
@given(data, st.sampled_from(["pyyaml-block", "pyyaml-flow", "ruamel"]))
def test_dumped_data_loads_or_says_why(obj: object, dumper: str) -> None:
    if dumper == "ruamel":
        text = dump_ruamel(obj)
    else:
        text = dump_pyyaml(obj, flow=dumper == "pyyaml-flow")
    load_or_problems(text)


YAML_TOKENS = ["name: x-run\n", "region: cn-hangzhou\n", "model:\n", "  parameters: 7B\n", ": ", "- ", "? ", "[", "]",
               "{", "}", ",", "&a ", "*a", "*b", "<<: *a\n", "!!str ", "!!binary ", "!!set ", "!!omap ", "!!python/tuple ",
               "!custom ", "%YAML 1.2\n", "%TAG ! tag:x,2000:\n", "---\n", "...\n", "|\n", ">-\n", "'", '"', "\\",
               "#", "\t", "\n", "  ", "    ", "\ufeff", "\r\n", "\u2028", "\x85", "\x07", "é", "🙂", "0", "1.5",
               "-3", ".inf", "null", "true", "2001-12-14t21:59:43.10-05:00", "\"\\x\"", "'it''s'", "key", "nodes"]


@fuzz(250)
@given(st.lists(st.sampled_from(YAML_TOKENS), max_size=40).map("".join))
def test_yaml_like_text_loads_or_says_why(text: str) -> None:
    load_or_problems(text)


@fuzz(100)
@given(st.text(max_size=300))
def test_arbitrary_text_loads_or_says_why(text: str) -> None:
    load_or_problems(text)


@fuzz(100)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_decode_or_say_why(raw: bytes) -> None:
    try:
        text = decode(raw, FILE)
    except SpecErrors as e:
        assert len(e.problems) == 1 and e.problems[0].line >= 1 and e.problems[0].message
        return
    load_or_problems(text)


# ------------------------------------------------------------------------------------------------ (b) spec-shaped

junk = st.one_of(st.none(), st.booleans(), st.integers(min_value=-5, max_value=10**13),
                 st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                 st.lists(st.integers(0, 3), max_size=2), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))

ZONES = sorted({z for r in CATALOG.regions for z in r.zones})
TYPES = [t.name for t in CATALOG.instance_types]
ARCH_OK = [{"layers": 32, "hidden": 4096, "heads": 32}, {"layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8},
           {"layers": 2, "hidden": 64, "heads": 1, "vocab": 1000, "ffn_hidden": 128}]
ARCH_BAD = [{"layers": 32, "hidden": 3840, "heads": 30}, {"layers": 0, "hidden": 1, "heads": 1},
            {"layers": 1, "hidden": 100, "heads": 7, "kv_heads": 3}, {"hidden": 4096}]

# section -> field -> (valid values, near misses and out-of-range values); junk of any type is added on top.
SCHEMA: dict[str, dict[str, tuple[list, list]]] = {
    "": {"name": (["fuzz-run", "abc"], ["Bad_Name", "ab", "a" * 50]),
         "stack": (["dev", "prod"], ["Prod!"]),
         "region": (list(CATALOG.region_ids()), ["cn-hangzou", ""]),
         "zones": ([[z] for z in ZONES[::4]] + [["cn-wulanchabu-b", "cn-wulanchabu-c"]],
                   [["cn-hangzhou-z"], ["cn-shanghai-l", "cn-shanghai-l"]])},
    "model": {"parameters": (["7B", "70B", "1.5B", "125M", "13B", 7e9, "1T"], ["70Q", "0", "-5B", "1e30", 0, -1, True, "1e400"]),
              "preset": (list(PRESETS), ["llama-9-7b"]),
              "architecture": (ARCH_OK, ARCH_BAD),
              "precision": (["bf16", "fp16", "fp32"], ["bf61"]),
              "optimizer": (["adamw", "sgd", "adamw-8bit", "adafactor"], ["adamx"]),
              "sequence_length": ([1, 2048, 4096, 131072], [-4096, 0]),
              "micro_batch_size": ([1, 2, 8], [0, 5000]),
              "global_batch_tokens": (["4Mi", "1M", 1000, "8Mi"], ["0", "x", "1e11", 1]),
              "tokens": (["2B", "300B", "10T", 1, "1000T"], ["-1", 1e30, False]),
              "finetune": ([{"method": "lora"}, {"method": "qlora", "lora_rank": 64}, {"method": "full"}],
                           [{"method": "qlora2"}, {"lora_rank": 0}])},
    "parallelism": {"tensor": ([1, 2, 4, 8, "auto"], [3, 16, 0]), "pipeline": ([1, 2, 4, "auto"], [3, 0, 1000]),
                    "data": ([1, 2, 8, 64, "auto"], [0]), "zero_stage": ([0, 1, 2, 3], [5, -1]),
                    "sequence_parallel": ([True, False], ["maybe"]),
                    "recompute": (["none", "selective", "full"], ["some"])},
    "compute": {"gpu": ([*CATALOG.gpu_names(), "a100", "h20", "auto"], ["X100", "A100-90G"]),
                "nodes": ([1, 2, 4, 16, "auto"], [0, -1, 100_001, True]), "max_nodes": ([1, 8, 64], [0]),
                "gpus_per_node": ([1, 2, 4, 8, "auto"], [3]),
                "bare_metal": (["any", "prefer", "require", "avoid"], ["never"]),
                "instance_types": ([[t] for t in TYPES[::3]] + [TYPES[:3]], [["ecs.nope.2xlarge"]]),
                "platform": (["ecs", "lingjun"], ["eks"]),
                "image_id": (["m-123", "i190982651690986913088"], ["m-1;x", "", "a b"]),
                "system_disk_gib": ([40, 200], [39]), "data_disk_gib": ([0, 500], [-1])},
    "network": {"vpc_cidr": (["10.0.0.0/16", "10.0.0.0/24", "172.16.0.0/12"],
                             ["192.168.0.0/30", "8.8.8.0/24", "::1/128", "10.0.0.1/16", "garbage"]),
                "rdma": ([True, False, "auto"], ["yes please", 1, 0]), "jumbo_frames": ([True, False, "yes"], [1]),
                "egress": (["nat", "none"], ["igw"]), "admin_cidrs": ([["1.2.3.0/24"], ["0.0.0.0/0"]],
                                [["x"], ["1.2.3.0/24", "1.2.3.0/255.255.255.0"]])},
    "storage": {"shared": (["auto", "cpfs", "extreme-nas", "none"], ["nfs"]),
                "capacity": (["auto", "3600GiB", "6000GiB", 100, "1TiB"],
                             ["5000GiB", "2PiB", 0, "12TB", "big", True, "1e400GiB", 1e12]),
                "storage_class": (["auto", "advance_100", "advance_200", "standard", "advance"], ["gold"]),
                "mount_path": (["/mnt/shared", "/data/", "/mnt//x/./y/"],
                               ["/etc", "relative", "/mnt/../etc", "/", "//lib64/x", "/etc/."]),
                "dataset": ([{"source": "oss://corpus-bucket/tok/", "size": "20TiB"},
                             {"source": "oss://corpus-bucket", "size": 1, "path": "/d/"}],
                            [{"source": "s3://x/y", "size": "1GiB"}, {"size": "1GiB"}, {"source": "oss://abc", "size": 0},
                             {"source": "oss://abc/$(x)/", "size": "1GiB"}, {"source": "oss://abc/d/", "size": "900TiB"},
                             {"source": "oss://abc/d/", "size": "1TiB", "path": "/a/../"}])},
    "checkpoints": {"enabled": ([True, False], []), "bucket": (["my-ckpt-bucket"], ["Bad Bucket", "-x-"]),
                    "region": (["cn-wulanchabu", "cn-hangzhou"], ["cn-shanghai"]),
                    "prefix": (["checkpoints/", "a/b/"], ["/abs", "noslash"]),
                    "interval": (["auto", "30m", "1d", 600], ["0s", "soon", "31d", True, ".inf"]),
                    "retention_days": ([1, 30], [0]), "transition_ia_days": ([1, 30, None], [0]),
                    "abort_multipart_days": ([3], [400])},
    "spot": {"enabled": ([True, False], []), "strategy": (["SpotAsPriceGo", "SpotWithPriceLimit"], ["cheap"]),
             "max_price_ratio": ([0.5, 1.0], [1.5, 0]), "on_demand_base": ([0, 1, 2], [100, -1]),
             "protection_hours": ([0, 1], [2]), "interruption": (["terminate", "stop"], ["pause"]),
             "interruptions_per_node_day": ([0, 0.1, 5.0], [-1]), "price_ratio": ([0.5, 0.1], [1.0, 0])},
    "budget": {"currency": (["CNY"], ["USD"]), "per_hour": ([1.0, 100.0, 10_000.0], [0]),
               "total": ([100.0, 1e6, 1e9], [-1, 1e13]), "max_days": ([0.1, 1, 30, 365], [0, 5000])},
    "tags": {"team": (["llm"], ["y" * 130, "a\tb", "x\x00", "https://x", "acs:x"]), "": ([], ["empty key"]),
             "k" * 65: (["too long for the bucket"], []), "a\nb": ([], ["control key"])},
}
WAIVERS_OK = [[{"rule": "TS001", "reason": "a reason long enough"}], [{"rule": "TS002", "reason": "another good reason"}]]
WAIVERS_BAD = [[{"rule": "TS999", "reason": "no such rule here"}], [{"rule": "ts1", "reason": "x"}], [{"rule": "TS001"}],
               [{"rule": "TS001", "reason": "two\nlines of reason"}], [{"rule": "TS001", "reason": "r" * 501}]]


@st.composite
def spec_documents(draw: st.DrawFn) -> dict:
    """A mostly valid spec (a random subset of fields with valid values), then 0-3 random mutations."""
    doc: dict = {key: draw(st.sampled_from(SCHEMA[""][key][0])) for key in ("name", "region")}
    for key in ("stack", "zones"):
        if draw(st.booleans()):
            doc[key] = draw(st.sampled_from(SCHEMA[""][key][0]))
    for sec, fields in SCHEMA.items():
        if not sec or (sec != "model" and not draw(st.booleans())):
            continue
        sizes = ("parameters", "preset", "architecture")
        body = {}
        for name, (good, _) in fields.items():
            if good and name not in sizes and not draw(st.sampled_from(range(4))):
                body[name] = draw(st.sampled_from(good))
        if sec == "model":  # exactly one way of giving the size
            size = draw(st.sampled_from(sizes))
            body[size] = draw(st.sampled_from(fields[size][0]))
        doc[sec] = body
    if draw(st.integers(0, 4)) == 0:
        doc["waivers"] = draw(st.sampled_from(WAIVERS_OK))
    for _ in range(draw(st.integers(0, 3))):
        sec = draw(st.sampled_from(list(SCHEMA) + ["waivers", "unknown"]))
        how = draw(st.sampled_from(["bad", "bad", "junk", "section-junk", "drop"]))
        if how == "drop":
            doc.pop(draw(st.sampled_from(sorted(doc))), None)
        elif sec == "unknown":
            doc[draw(st.sampled_from(["modle", "colour", "nodes", "str"]))] = draw(junk)
        elif sec == "waivers":
            doc["waivers"] = draw(st.sampled_from(WAIVERS_BAD) if how == "bad" else junk)
        elif how == "section-junk" and sec:
            doc[sec] = draw(junk)
        else:
            name = draw(st.sampled_from(sorted(SCHEMA[sec])))
            bad = SCHEMA[sec][name][1]
            value = draw(st.sampled_from(bad)) if how == "bad" and bad else draw(junk)
            target = doc if not sec else doc.setdefault(sec, {})
            if isinstance(target, dict):
                target[name] = value
    return doc


@fuzz(200)
@given(spec_documents(), st.booleans())
def test_spec_shaped_documents_plan_or_say_why(doc: dict, flow: bool) -> None:
    run_pipeline(dump_pyyaml(doc, flow=flow))


# ------------------------------------------------------------------------------------------------ examples


@pytest.mark.parametrize("text", [
    BASE,
    BASE + "compute: {nodes: 2, gpu: H20}\nnetwork: {rdma: true}\n",
    BASE + "budget: {max_days: 0.01}\nmodel2: 1\n",
    "name: x\n",
    "? [a, b]\n: c\n",                                   # a complex (list) key
    "base: &b {nodes: 1}\ncompute:\n  <<: *b\n",          # a merge key
    "name: !!binary aGVsbG8=\nregion: !!set {a, b}\nmodel: !custom {parameters: 7B}\n",
    "a: &a [*a]\n",                                      # a recursive alias
    "[" * 200 + "]" * 200,                               # nesting deeper than the loader's limit
    "name: x\nmodel: " + "[" * 5000 + "\n",                # deep and unclosed: refused before the full parse
    "a: " + "{b: " * 60 + "1" + "}" * 60 + "\n",
    "name: x\nname: y\n",
    "---\n" + BASE + "---\n" + BASE,                    # two documents
    "\t\n\t\n", "#\n", "---\n", "...\n", "%YAML 1.1\n---\n",
    "\ufeffname: bom-run\nregion: cn-hangzhou\nmodel: {parameters: 7B}\n",
    "model: {parameters: .nan}\nname: nan-run\nregion: cn-hangzhou\n",
    "model: {parameters: .inf, tokens: 1e400}\nname: inf-run\nregion: cn-hangzhou\n",
    "name: deep-run\nregion: cn-hangzhou\nmodel: {parameters: 7B}\ncompute: {nodes: 100000, max_nodes: 100000}\n",
])
def test_awkward_documents(text: str) -> None:
    run_pipeline(text)


@pytest.mark.xfail(_tag_crash in KNOWN_BUGS, strict=True, reason=_tag_crash.__doc__)
@pytest.mark.parametrize("text", TAG_CRASH_TEXTS)
def test_explicit_tags_are_problems_not_crashes(text: str) -> None:
    with pytest.raises(SpecErrors) as e:
        load_text(text, FILE)
    check_problems(e.value, text)


@pytest.mark.xfail(_label_crash in KNOWN_BUGS, strict=True, reason=_label_crash.__doc__)
@pytest.mark.parametrize(("text", "path"), LABEL_KEYS)
def test_keys_named_like_pydantic_labels_are_ordinary_keys(text: str, path: tuple[str, ...]) -> None:
    """'int', 'str', 'function-x' are unknown keys like any other (today: a crash, or 'compute: unknown field
    'compute'; did you mean 'compute'?')."""
    with pytest.raises(SpecErrors) as e:
        load_text(text, FILE)
    check_problems(e.value, text)
    assert [(p.path, p.code, dict(p.fields)["key"]) for p in e.value.problems] == [
        (path, codes.UNKNOWN_FIELD.code, path[-1])
    ]


def test_a_valid_base_really_plans() -> None:
    """The fuzz would prove little if nothing ever got as far as the planner."""
    located = load_text(BASE, FILE)
    assert validate.check(located.spec, CATALOG) == []
    assert planner.make_plan(located.spec, CATALOG).compute.nodes >= 1
