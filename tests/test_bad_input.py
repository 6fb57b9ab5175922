"""A corpus of malformed specs: ``trainstack validate`` must exit 2 with a located, helpful message, never a traceback.

Each ``tests/bad_specs/<name>.yaml`` has its exact error text in ``tests/bad_specs/expected/<name>.txt``
(rewrite them with ``pytest --update-snapshots`` and review the diff). Binary, huge and non-UTF-8 files are made
at test time under ``tmp_path`` with the same relative path, so their snapshots read like the others.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.errors import SpecErrors
from generator.plan.pipeline import load
from generator.spec import codes
from generator.spec.loader import MAX_SPEC_BYTES

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "bad_specs"
EXPECTED = CORPUS / "expected"
REL = "tests/bad_specs"

COMMITTED = sorted(p.stem for p in CORPUS.glob("*.yaml"))


def _binary() -> bytes:
    # the start of a PNG: what a user gets when they pass the wrong file
    return b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00" + bytes(range(256))


def _large() -> bytes:
    head = b"name: large-file\nregion: cn-hangzhou\nmodel:\n  parameters: 7B\n"
    filler = b"# padding padding padding padding padding padding padding padding padding padding\n"
    return head + filler * (MAX_SPEC_BYTES // len(filler) + 10)


def _non_utf8() -> bytes:
    # saved as Latin-1 by an old editor: the e-acute is the single byte 0xE9
    return "name: non-utf8\nregion: cn-hangzhou\ntags:\n  owner: Ren\xe9\nmodel:\n  parameters: 7B\n".encode("latin-1")


def _alias_long_text() -> bytes:
    # one 400 KB anchor referenced 200 times (issue 26): it used to make every command print 161 MB
    big = "x" * 400_000
    return ("name: alias-long\nregion: cn-hangzhou\nmodel: {parameters: 7B}\nzones: [&a " + big + ", "
            + ", ".join(["*a"] * 200) + "]\n").encode()


GENERATED = {"binary_file": _binary, "large_file": _large, "non_utf8": _non_utf8, "alias_long_text": _alias_long_text}

# For every case: fragments the message must contain (the field it names, and what to change).
MUST_SAY: dict[str, tuple[str, ...]] = {
    "syntax_error": ("invalid YAML", "]"),
    "tab_indent": ("tab", "spaces"),
    "duplicate_keys": ("duplicate key 'gpu'", "remove or merge"),
    "multiple_documents": ("invalid YAML", "document"),
    "root_list": ("mapping of fields, not a list", "name: my-run"),
    "root_scalar": ("mapping of fields, not a string", "name: my-run"),
    "empty": ("empty", "name, region and model"),
    "comment_only": ("empty", "name, region and model"),
    "binary_file": ("binary file",),
    "large_file": (f"{MAX_SPEC_BYTES:,}",),
    "non_utf8": ("not UTF-8", "save it as UTF-8"),
    "wrong_type_string_for_number": ("model.micro_batch_size", "whole number", "'four'"),
    "empty_section": ("network:", "expected a mapping of fields"),
    "wrong_type_list_for_mapping": ("compute:", "mapping of fields, got list"),
    "unknown_key_top": ("unknown field 'parallelsim'", "did you mean 'parallelism'?"),
    "unknown_key_nested": ("compute.gpus", "did you mean 'gpu'?"),
    "zero_nodes": ("compute.nodes", "greater than 0", "'auto'"),
    "negative_sequence_length": ("model.sequence_length", "-4096", "greater than 0"),
    "zero_stage_5": ("parallelism.zero_stage", "less than or equal to 3"),
    "parameters_70q": ("model.parameters", "'70Q'", "70B"),
    "unknown_region": ("region", "unknown region 'cn-hangzou'", "did you mean 'cn-hangzhou'?"),
    "unknown_zone": ("zones[1]", "'cn-hangzhou-z'", "not in region cn-hangzhou"),
    "zone_other_region": ("zones[0]", "'cn-shanghai-l'", "it is in cn-shanghai"),
    "gpu_not_in_region": ("compute.gpu", "cn-hongkong offers no H20", "H20 is in:"),
    "unknown_gpu": ("compute.gpu", "unknown GPU 'A100-90G'", "did you mean"),
    "gpu_ascend_910b": ("compute.gpu", "Ascend-910B (Huawei) is offered by no Alibaba Cloud product as of",
                        "huaweicloud.com", "nearest GPUs in cn-hangzhou", "A100-80G"),
    "rdma_without_eri": ("compute.instance_types[0]", "ecs.gn7i-c8g1.2xlarge", "network.rdma"),
    "spot_without_checkpoints": ("spot.enabled", "checkpoints.enabled: true"),
    "cpfs_capacity_step": ("storage.capacity", "1200 GiB", "use 6000GiB"),
    "checkpoint_other_region": ("checkpoints.region", "cn-shanghai", "remove checkpoints.region"),
    "model_1t_one_node": ("compute.nodes",),  # TSP029 and its fields: tests/test_unfit.py
    "tensor_not_dividing_heads": ("30 attention heads", "parallelism.tensor"),
    "waiver_without_reason": ("waivers[0].reason", "required"),
    "several_problems": ("name:", "model.precision", "parallelism.zero_stage", "compute.gpus"),
    # limits (issue #9)
    "mount_path_system_dir": ("storage.mount_path", "normalizes to /etc", "system directory", "/mnt/shared"),
    "mount_path_under_lib": ("storage.mount_path", "under /lib64", "/mnt/shared"),
    "dataset_path_dotdot": ("storage.dataset.path", "'..' segment", "/datasets/"),
    "dataset_too_large_for_cpfs": ("storage.dataset.size", "1 PiB", "import at most 786TiB"),
    "cpfs_capacity_over_max": ("storage.capacity", "at most 1 PiB", "use 1047600GiB"),
    "dataset_over_capacity": ("storage.capacity", "does not fit", "use 10800GiB"),
    "numbers_too_large": ("model.parameters", "model.tokens", "model.global_batch_tokens", "storage.capacity",
                          "budget.per_hour", "budget.total", "at most 1,000T (10^15) tokens", "6 problems"),
    "interval_too_long": ("checkpoints.interval", "at most 30 days", "auto"),
    "nodes_boolean": ("compute.nodes", "expected a number (or auto), got true", "model.micro_batch_size",
                      "not numbers"),
    "rdma_number": ("network.rdma", "expected true or false, got 1", "network.jumbo_frames"),
    "admin_cidrs_duplicate": ("network.admin_cidrs[2]", "10.8.0.0/24 is listed twice", "remove the repeated"),
    "repeated_list_items": ("zones[2]", "compute.instance_types[1]", "listed twice"),
    "tag_control_character": ("tags.team", "tab (U+0009)", "NUL (U+0000)", "tags.wiki", "https://"),
    "tag_key_too_long_for_bucket": ("65 characters", "at most 64", "'@'", "checkpoint bucket"),
    "tag_key_too_long": ("129 characters", "at most 128", "tags.aliyun-team", "tags.cost-center", "acs:"),
    "tags_too_many_and_bad": ("16 tags; at most 15", "tags.a", "https://", "tags.trainstack-x", "3 problems found"),
    "tags_every_problem_at_once": ("tags.team", "https://", "tags.trainstack-k'ey", "tags.managed-by",
                                   "reserved for trainstack's own tags", "3 problems found"),
    "deep_nesting": ("nests deeper than 50 levels", "...", "bracket"),
    "image_id_bad": ("compute.image_id", "not an image id", "m-"),
    "dataset_source_injection": ("storage.dataset.source", "'$' is not allowed", "oss://my-corpus/tokenized/"),
    "waiver_reason_control": ("waivers[0].reason", "carriage return", ">-"),
    "infinite_values": ("model.tokens", "storage.capacity", "checkpoints.interval", "finite", "3 problems"),
    "extreme_nas_capacity_too_small": ("storage.capacity", "100 GiB to 256 TiB", "use 100GiB"),
    "mount_path_root": ("storage.mount_path", "root directory", "/mnt/shared"),
    "waiver_reason_too_long": ("waivers[0].reason", "at most 500", "a sentence or two"),
    "global_batch_below_sequence": ("model.global_batch_tokens", "less than one sequence", "use at least 4096"),
    # PAI-DLC (issue #16)
    "dlc_lingjun_and_ssh_fields": ("compute.image_id", "container image", "network.rdma", "network.admin_cidrs",
                                   "no node to SSH into", "spot.on_demand_base", "4 problems"),
    # framework-aware memory and pipelines (issue #13)
    "framework_megatron_zero3": ("parallelism.zero_stage", "framework megatron", "deepspeed or fsdp"),
    "paged_optimizer_full": ("model.finetune.paged_optimizer", "LoRA/QLoRA", "lora or qlora"),
    "memory_headroom_too_large": ("parallelism.memory_headroom", "not a share", "0.05"),
    "pipeline_cannot_split": ("parallelism.pipeline", "pipeline parallelism 30", "first and last", "pipeline: auto"),
    "pipeline_too_deep": ("parallelism.pipeline", "pipeline parallelism 40", "at most 32"),
    # base weights (issue #16)
    "weights_bad_scheme": ("model.weights", "'hf://'", "modelscope://ORG/NAME[@REVISION] or oss://BUCKET/PREFIX/"),
    "weights_missing_name": ("model.weights", "names no model", "modelscope://Qwen/Qwen2.5-7B-Instruct"),
    "weights_bad_revision": ("model.weights", "the revision '--local_dir=/etc'", "@master"),
    "weights_shell_injection": ("model.weights", "contains ';'", "shell or YAML characters are refused"),
    "weights_bad_bucket": ("model.weights", "'My_Models' is not an OSS bucket name", "bucket-naming-conventions"),
    # bf16 needs Ampere or newer (review P1-3)
    "bf16_on_v100": ("model.precision", "V100-32G (from compute.gpu) has no", "model.precision: fp16",
                     "compute.gpu: auto"),
    "bf16_on_v100_instance_types": ("model", "V100-16G (from compute.instance_types)", "model.precision: fp16"),
    # a run that never finishes is an error, not a sentinel (review P2-6)
    "spot_never_finishes": ("spot.interruptions_per_node_day",),  # TSP026 and its fields: tests/test_unfit.py
    "interval_never_finishes": ("checkpoints.interval",),  # TSP024 and its fields: tests/test_unfit.py
    "weights_shared_none_multinode": ("storage.shared", "on 4 nodes needs a shared file system",
                                      "storage.shared: auto"),
    # hostile input, round 3 (issue 26)
    "alias_long_text": ("expands to over 2,097,152 characters", "anchor"),
    "tag_invisible_characters": ("tags.team", "U+202E (RIGHT-TO-LEFT OVERRIDE)", "tags['own\\u2066er']",
                                 "U+2066 (LEFT-TO-RIGHT ISOLATE)", "tags.cost-center", "U+200D", "3 problems"),
    "waiver_reason_invisible": ("waivers[0].reason", "U+202E", "invisible formatting character"),
    "checkpoint_prefix_dotdot": ("checkpoints.prefix", "'..' segment", "checkpoints/"),
    "dataset_source_dotdot": ("storage.dataset.source", "'..' segment", "bucket's namespace"),
}

ALL_CASES = sorted(COMMITTED + list(GENERATED))

# The code of every problem of the cases whose problems are all the loader's (generator/spec/codes.py, TSS...), in
# the order reported: what a script or test reads instead of the words.
SPEC_CODES: dict[str, tuple[codes.SpecCode, ...]] = {
    "alias_long_text": (codes.EXPANDS_TOO_LONG,),
    "binary_file": (codes.BINARY,),
    "checkpoint_prefix_dotdot": (codes.REFUSED_VALUE,),
    "comment_only": (codes.EMPTY,),
    "dataset_path_dotdot": (codes.REFUSED_VALUE,),
    "dataset_source_dotdot": (codes.REFUSED_VALUE,),
    "dataset_source_injection": (codes.REFUSED_VALUE,),
    "deep_nesting": (codes.TOO_DEEP,),
    "duplicate_keys": (codes.DUPLICATE_KEY,),
    "empty": (codes.EMPTY,),
    "empty_section": (codes.EXPECTED_MAPPING,),
    "framework_megatron_zero3": (codes.REFUSED_VALUE,),
    "image_id_bad": (codes.REFUSED_VALUE,),
    "infinite_values": (codes.REFUSED_VALUE, codes.REFUSED_VALUE, codes.REFUSED_VALUE,),
    "interval_too_long": (codes.REFUSED_VALUE,),
    "large_file": (codes.TOO_LARGE,),
    "memory_headroom_too_large": (codes.REFUSED_VALUE,),
    "mount_path_root": (codes.REFUSED_VALUE,),
    "mount_path_system_dir": (codes.REFUSED_VALUE,),
    "mount_path_under_lib": (codes.REFUSED_VALUE,),
    "multiple_documents": (codes.SECOND_DOCUMENT,),
    "negative_sequence_length": (codes.OUT_OF_RANGE,),
    "nodes_boolean": (codes.REFUSED_VALUE, codes.REFUSED_VALUE,),
    "non_utf8": (codes.NOT_UTF8,),
    "numbers_too_large": (codes.REFUSED_VALUE, codes.REFUSED_VALUE, codes.REFUSED_VALUE, codes.REFUSED_VALUE, codes.REFUSED_VALUE, codes.REFUSED_VALUE,),
    "paged_optimizer_full": (codes.PAGED_OPTIMIZER_FULL,),
    "parameters_70q": (codes.REFUSED_VALUE,),
    "rdma_number": (codes.REFUSED_VALUE, codes.REFUSED_VALUE,),
    "root_list": (codes.TOP_NOT_MAPPING,),
    "root_scalar": (codes.TOP_NOT_MAPPING,),
    "several_problems": (codes.WRONG_FORM, codes.NOT_A_CHOICE, codes.OUT_OF_RANGE, codes.UNKNOWN_FIELD,),
    "syntax_error": (codes.INVALID_YAML,),
    "tab_indent": (codes.TAB,),
    "tag_control_character": (codes.REFUSED_VALUE, codes.REFUSED_VALUE, codes.REFUSED_VALUE,),
    "tag_invisible_characters": (codes.INVISIBLE, codes.INVISIBLE, codes.INVISIBLE,),
    "tag_key_too_long": (codes.REFUSED_VALUE, codes.REFUSED_VALUE, codes.REFUSED_VALUE,),
    "tags_every_problem_at_once": (codes.REFUSED_VALUE, codes.REFUSED_VALUE, codes.REFUSED_VALUE,),
    "tags_too_many_and_bad": (codes.REFUSED_VALUE, codes.REFUSED_VALUE, codes.REFUSED_VALUE,),
    "unknown_key_nested": (codes.UNKNOWN_FIELD,),
    "unknown_key_top": (codes.UNKNOWN_FIELD,),
    "waiver_reason_control": (codes.REFUSED_VALUE,),
    "waiver_reason_invisible": (codes.INVISIBLE,),
    "waiver_reason_too_long": (codes.REFUSED_VALUE,),
    "waiver_without_reason": (codes.MISSING_FIELD,),
    "weights_bad_bucket": (codes.REFUSED_VALUE,),
    "weights_bad_revision": (codes.REFUSED_VALUE,),
    "weights_bad_scheme": (codes.REFUSED_VALUE,),
    "weights_missing_name": (codes.REFUSED_VALUE,),
    "weights_shell_injection": (codes.REFUSED_VALUE,),
    "wrong_type_list_for_mapping": (codes.EXPECTED_MAPPING,),
    "wrong_type_string_for_number": (codes.WRONG_TYPE,),
    "zero_nodes": (codes.OUT_OF_RANGE,),
    "zero_stage_5": (codes.OUT_OF_RANGE,),
}


def test_corpus_is_complete() -> None:
    """Every case has a checklist, every committed spec has a snapshot, and no snapshot is orphaned."""
    assert sorted(MUST_SAY) == ALL_CASES
    assert not set(COMMITTED) & set(GENERATED)
    snapshots = sorted(p.stem for p in EXPECTED.glob("*.txt"))
    assert snapshots == ALL_CASES


def _validate(rel_path: str) -> tuple[int, str, str, BaseException | None]:
    result = CliRunner().invoke(main, ["validate", rel_path])
    exc = result.exception if not isinstance(result.exception, SystemExit) else None
    return result.exit_code, result.stdout, result.stderr, exc


@pytest.mark.parametrize("name", ALL_CASES)
def test_bad_spec(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, snapshot) -> None:
    if name in GENERATED:
        (tmp_path / REL).mkdir(parents=True)
        (tmp_path / REL / f"{name}.yaml").write_bytes(GENERATED[name]())
        monkeypatch.chdir(tmp_path)
    else:
        monkeypatch.chdir(ROOT)
    rel = f"{REL}/{name}.yaml"

    code, out, err, exc = _validate(rel)

    assert exc is None, f"validate raised {exc!r}"
    assert "Traceback" not in out + err
    assert code == 2, err
    assert out == ""
    first = err.splitlines()[0]
    assert re.match(rf"^{re.escape(rel)}:\d+:\d+: ", first), first
    n = len(re.findall(rf"^{re.escape(rel)}:\d+:\d+: ", err, flags=re.MULTILINE))
    assert err.rstrip("\n").endswith(f"{n} problem{'s' if n != 1 else ''} found; nothing was written.")
    for fragment in MUST_SAY[name]:
        assert fragment in err, f"{fragment!r} missing from:\n{err}"
    snapshot(EXPECTED / f"{name}.txt", err)


@pytest.mark.parametrize("name", sorted(SPEC_CODES))
def test_loader_problems_carry_their_codes_and_fields(name: str, tmp_path: Path) -> None:
    path = CORPUS / f"{name}.yaml"
    if name in GENERATED:
        path = tmp_path / f"{name}.yaml"
        path.write_bytes(GENERATED[name]())
    with pytest.raises(SpecErrors) as e:
        load(path)
    assert tuple(p.code for p in e.value.problems) == tuple(c.code for c in SPEC_CODES[name])
    for p, c in zip(e.value.problems, SPEC_CODES[name], strict=True):
        assert tuple(dict(p.fields)) == c.fields and p.line > 0


def test_several_problems_are_all_reported_in_line_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    rel = f"{REL}/several_problems.yaml"
    code, _, err, _ = _validate(rel)
    assert code == 2
    places = [(int(m[1]), int(m[2]), m[3]) for m in re.finditer(rf"^{re.escape(rel)}:(\d+):(\d+): ([\w.\[\]]+):",
                                                                   err, flags=re.MULTILINE)]
    assert [p[2] for p in places] == ["name", "model.precision", "parallelism.zero_stage", "compute.gpus"]
    assert places == sorted(places)
    assert "4 problems found" in err


def test_missing_file_and_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-folder.yaml").mkdir()
    code, _, err, exc = _validate("nope.yaml")
    assert exc is None and "Traceback" not in err
    assert (code, err) == (2, "nope.yaml: no such file\n1 problem found; nothing was written.\n")
    code, _, err, exc = _validate("a-folder.yaml")  # click's own check (dir_okay=False) catches this one
    assert exc is None and "Traceback" not in err
    assert code == 2 and "'a-folder.yaml' is a directory" in err


def test_a_well_formed_waiver_is_checked_against_the_lint_rules() -> None:
    """validate.check imports generator.preview.lint late; a waiver of a rule that does not exist is a located problem."""
    from generator.catalog import load_catalog
    from generator.plan.check import check
    from generator.spec.loader import load_text

    located = load_text(textwrap.dedent("""\
        name: waiver-ok
        region: cn-hangzhou
        model: {parameters: 7B}
        waivers:
          - {rule: TS999, reason: "no such rule, but the form is right"}
        """))
    problems = check(located.spec, load_catalog())
    assert [p.path for p in problems] == [("waivers", 0, "rule")]


_LAUGHS = """
import sys
from generator.errors import SpecErrors
from generator.spec.loader import load_text
lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * 10) + "]" for i in range(1, 8)]
try:
    load_text("\\n".join(lines) + "\\n")
except SpecErrors as e:
    print(e)
"""


def test_alias_bomb_is_refused_quickly() -> None:
    """Eight lines of anchors expand to 10^8 values; the loader must refuse them, not hang or eat the memory."""
    proc = subprocess.run([sys.executable, "-c", _LAUGHS], cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.startswith("<spec>:1:1: "), proc.stdout
