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

from generator import api
from generator.cli import main
from generator.errors import Problem, SpecErrors
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

# The problems of every case, in the order reported: (code, the field it names, its short fields), read from the
# exception's objects. The words are each case's snapshot (tests/bad_specs/expected/), checked by test_bad_spec.
PROBLEMS: dict[str, tuple[tuple[str, str, dict[str, object]], ...]] = {
    "admin_cidrs_duplicate": (
        ('TSC032', 'network.admin_cidrs[2]', {'index': 2, 'what': 'network', 'item': '10.8.0.0/24', 'first': 0}),
    ),
    "alias_long_text": (('TSS028', '', {'max_chars': 2097152}),),
    "bf16_on_v100": (('TSC007', 'model.precision', {'gpu': 'V100-32G', 'source': 'compute.gpu'}),),
    "bf16_on_v100_instance_types": (
        ('TSC007', 'model.precision', {'gpu': 'V100-16G', 'source': 'compute.instance_types'}),
    ),
    "binary_file": (('TSS008', '', {}),),
    "checkpoint_other_region": (('TSC022', 'checkpoints.region', {'region': 'cn-wulanchabu', 'given': 'cn-shanghai'}),),
    "checkpoint_prefix_dotdot": (('TSS109', 'checkpoints.prefix', {'value': '../../'}),),
    "comment_only": (('TSS020', '', {}),),
    "cpfs_capacity_over_max": (('TSC016', 'storage.capacity', {'kind': 'cpfs', 'gib': 2097152.0, 'chosen': False}),),
    "cpfs_capacity_step": (('TSC016', 'storage.capacity', {'kind': 'cpfs', 'gib': 5000.0, 'chosen': False}),),
    "dataset_over_capacity": (
        ('TSP018', 'storage.capacity', {'dataset_bytes': 10995116277760, 'capacity_gib': 3600.0, 'fix_gib': 10800, 'largest_tib': 786}),
    ),
    "dataset_path_dotdot": (('TSS109', 'storage.dataset.path', {'value': '/datasets/../../'}),),
    "dataset_source_dotdot": (('TSS109', 'storage.dataset.source', {}),),
    "dataset_source_injection": (('TSS109', 'storage.dataset.source', {}),),
    "dataset_too_large_for_cpfs": (('TSC017', 'storage.dataset.size', {'size_bytes': 989560464998400}),),
    "deep_nesting": (('TSS022', '', {'max_depth': 50}),),
    "dlc_lingjun_and_ssh_fields": (
        ('TSA004', 'compute.image_id', {}),
        ('TSA009', 'network.rdma', {}),
        ('TSA008', 'network.admin_cidrs', {}),
        ('TSA010', 'spot.on_demand_base', {'on_demand_base': 1}),
    ),
    "duplicate_keys": (('TSS023', '', {'key': 'gpu'}),),
    "empty": (('TSS020', '', {}),),
    "empty_section": (('TSS104', 'network', {'kind': 'an empty value'}),),
    "extreme_nas_capacity_too_small": (
        ('TSC016', 'storage.capacity', {'kind': 'extreme-nas', 'gib': 50.0, 'chosen': False}),
    ),
    "framework_megatron_zero3": (('TSS109', 'parallelism.zero_stage', {'value': 3}),),
    "global_batch_below_sequence": (('TSC001', 'model.global_batch_tokens', {'tokens': 2048, 'sequence': 4096}),),
    "gpu_ascend_910b": (('TSC005', 'compute.gpu', {'gpu': 'Ascend-910B'}),),
    "gpu_not_in_region": (('TSC010', 'compute.gpu', {'gpu': 'H20', 'region': 'cn-hongkong'}),),
    "image_id_bad": (('TSS109', 'compute.image_id', {'value': "m-abc'; rm -rf /"}),),
    "infinite_values": (
        ('TSS109', 'model.tokens', {'value': '1e400'}),
        ('TSS109', 'storage.capacity', {'value': '1e400GiB'}),
        ('TSS109', 'checkpoints.interval', {'value': float("inf")}),
    ),
    "interval_too_long": (('TSS109', 'checkpoints.interval', {'value': '365d'}),),
    "large_file": (('TSS007', '', {'max_bytes': 1048576}),),
    "memory_headroom_too_large": (('TSS109', 'parallelism.memory_headroom', {'value': 20}),),
    "mount_path_root": (('TSS109', 'storage.mount_path', {'value': '/mnt/..'}),),
    "mount_path_system_dir": (('TSS109', 'storage.mount_path', {'value': '/mnt/../etc/'}),),
    "mount_path_under_lib": (('TSS109', 'storage.mount_path', {'value': '//lib64//nvidia'}),),
    "multiple_documents": (('TSS026', '', {}),),
    "negative_sequence_length": (('TSS107', 'model.sequence_length', {'value': -4096, 'bound': 'gt', 'limit': 0}),),
    "nodes_boolean": (
        ('TSS109', 'model.micro_batch_size', {'value': False}),
        ('TSS109', 'compute.nodes', {'value': True}),
    ),
    "non_utf8": (('TSS009', '', {}),),
    "numbers_too_large": (
        ('TSS109', 'model.parameters', {'value': 1e+20}),
        ('TSS109', 'model.global_batch_tokens', {'value': 4000000000000.0}),
        ('TSS109', 'model.tokens', {'value': 1e+30}),
        ('TSS109', 'storage.capacity', {'value': 1000000000000.0}),
        ('TSS109', 'budget.per_hour', {'value': 1000000000000.0}),
        ('TSS109', 'budget.total', {'value': 1000000000000000.0}),
    ),
    "paged_optimizer_megatron": (
        ('TSS303', 'model.finetune.paged_optimizer', {'method': 'full', 'framework': 'auto', 'zero_stage': 1}),
    ),
    "parameters_70q": (('TSS109', 'model.parameters', {'value': '70Q'}),),
    "pipeline_cannot_split": (('TSH010', 'parallelism.pipeline', {'pipeline': 30, 'layers': 32, 'stage_layers': 2}),),
    "pipeline_too_deep": (('TSH009', 'parallelism.pipeline', {'pipeline': 40, 'layers': 32}),),
    "rdma_number": (('TSS109', 'network.rdma', {'value': 1}), ('TSS109', 'network.jumbo_frames', {'value': 0}),),
    "rdma_without_eri": (('TSC014', 'compute.instance_types[0]', {'index': 0, 'name': 'ecs.gn7i-c8g1.2xlarge'}),),
    "repeated_list_items": (
        ('TSC032', 'zones[2]', {'index': 2, 'what': 'zone', 'item': 'cn-wulanchabu-c', 'first': 0}),
        ('TSC032', 'compute.instance_types[1]', {'index': 1, 'what': 'instance type', 'item': 'ecs.ebmgn7ex.32xlarge', 'first': 0}),
    ),
    "root_list": (('TSS021', '', {'kind': 'list'}),),
    "root_scalar": (('TSS021', '', {'kind': 'string'}),),
    "several_problems": (
        ('TSS106', 'name', {'value': 'Several_Problems'}),
        ('TSS103', 'model.precision', {'value': 'bf61', 'expected': "'bf16', 'fp16', 'fp32' or 'fp8'"}),
        ('TSS107', 'parallelism.zero_stage', {'value': 5, 'bound': 'le', 'limit': 3}),
        ('TSS101', 'compute.gpus', {'key': 'gpus'}),
    ),
    "spot_without_checkpoints": (('TSC023', 'spot.enabled', {}),),
    "syntax_error": (('TSS024', '', {'problem': "expected ',' or ']', but got ':'"}),),
    "tab_indent": (('TSS025', '', {}),),
    "tag_control_character": (
        ('TSS109', 'tags.team', {}),
        ('TSS109', "tags['owner\\x00']", {}),
        ('TSS109', 'tags.wiki', {'value': 'https://wiki.example.com/llm'}),
    ),
    "tag_invisible_characters": (
        ('TSS030', 'tags.team', {'character': 'U+202E (RIGHT-TO-LEFT OVERRIDE)', 'in_key': False}),
        ('TSS030', "tags['own\\u2066er']", {'character': 'U+2066 (LEFT-TO-RIGHT ISOLATE)', 'in_key': True}),
        ('TSS030', 'tags.cost-center', {'character': 'U+200D (ZERO WIDTH JOINER)', 'in_key': False}),
    ),
    "tag_key_too_long": (
        ('TSS109', "tags['kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk'...]", {}),
        ('TSS109', 'tags.aliyun-team', {'value': 'aliyun-team'}),
        ('TSS109', 'tags.cost-center', {'value': 'acs:reserved'}),
    ),
    "tag_key_too_long_for_bucket": (
        ('TSC033', "tags['kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk'...]", {'broken': 'length', 'bad': ''}),
        ('TSC033', 'tags.owner@example', {'key': 'owner@example', 'broken': 'character', 'bad': '@'}),
    ),
    "tags_every_problem_at_once": (
        ('TSS109', 'tags.team', {'value': 'see https://wiki.example/llm'}),
        ('TSS109', "tags.trainstack-k'ey", {'value': "trainstack-k'ey"}),
        ('TSS109', 'tags.managed-by', {'value': 'managed-by'}),
    ),
    "tags_too_many_and_bad": (
        ('TSS109', 'tags', {}),
        ('TSS109', 'tags.a', {'value': 'https://wiki.example/llm'}),
        ('TSS109', 'tags.trainstack-x', {'value': 'trainstack-x'}),
    ),
    "tensor_not_dividing_heads": (('TSH002', 'parallelism.tensor', {'tensor': 4, 'heads': 30, 'kv_heads': 30}),),
    "unknown_gpu": (('TSC006', 'compute.gpu', {'gpu': 'A100-90G', 'close': 'A100-80G'}),),
    "unknown_key_nested": (('TSS101', 'compute.gpus', {'key': 'gpus'}),),
    "unknown_key_top": (('TSS101', 'parallelsim', {'key': 'parallelsim'}),),
    "unknown_region": (('TSC003', 'region', {'region': 'cn-hangzou', 'close': 'cn-hangzhou'}),),
    "unknown_zone": (
        ('TSC004', 'zones[1]', {'index': 1, 'zone': 'cn-hangzhou-z', 'region': 'cn-hangzhou', 'close': 'cn-hangzhou-k', 'other': ''}),
    ),
    "waiver_reason_control": (('TSS109', 'waivers[0].reason', {}),),
    "waiver_reason_invisible": (
        ('TSS030', 'waivers[0].reason', {'character': 'U+202E (RIGHT-TO-LEFT OVERRIDE)', 'in_key': False}),
    ),
    "waiver_reason_too_long": (('TSS109', 'waivers[0].reason', {}),),
    "waiver_without_reason": (('TSS102', 'waivers[0].reason', {}),),
    "weights_bad_bucket": (('TSS109', 'model.weights', {'value': 'oss://My_Models/llama-2-7b/'}),),
    "weights_bad_revision": (('TSS109', 'model.weights', {}),),
    "weights_bad_scheme": (('TSS109', 'model.weights', {'value': 'hf://meta-llama/Llama-2-7b-hf'}),),
    "weights_missing_name": (('TSS109', 'model.weights', {'value': 'modelscope://Qwen'}),),
    "weights_shared_none_multinode": (('TSP010', 'storage.shared', {'nodes': 4, 'size_bytes': 138000000000}),),
    "weights_shell_injection": (('TSS109', 'model.weights', {}),),
    "wrong_type_list_for_mapping": (('TSS104', 'compute', {'kind': 'list'}),),
    "wrong_type_string_for_number": (('TSS108', 'model.micro_batch_size', {'value': 'four'}),),
    "zero_nodes": (('TSS107', 'compute.nodes', {'value': 0, 'bound': 'gt', 'limit': 0}),),
    "zero_stage_5": (('TSS107', 'parallelism.zero_stage', {'value': 5, 'bound': 'le', 'limit': 3}),),
    "zone_other_region": (
        ('TSC004', 'zones[0]', {'index': 0, 'zone': 'cn-shanghai-l', 'region': 'cn-hangzhou', 'close': 'cn-hangzhou-k', 'other': 'cn-shanghai'}),
    ),

}

# The cases whose problem is a planning refusal (TSP024-031: nothing fits, never finishes), raised by the planner
# rather than the loader or the checks: the field the message must name; their codes and fields are asserted in
# tests/test_unfit.py.
MUST_SAY: dict[str, tuple[str, ...]] = {
    "model_1t_one_node": ("compute.nodes",),  # TSP029 and its fields: tests/test_unfit.py
    "spot_never_finishes": ("spot.interruptions_per_node_day",),  # TSP026 and its fields: tests/test_unfit.py
    "interval_never_finishes": ("checkpoints.interval",),  # TSP024 and its fields: tests/test_unfit.py
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
    "paged_optimizer_megatron": (codes.PAGED_OPTIMIZER_MEGATRON,),
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
    assert sorted([*PROBLEMS, *MUST_SAY]) == ALL_CASES
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
    assert err.rstrip("\n").endswith(f"{n} problem{'s' if n != 1 else ''} found; nothing was written.")  # wording: the trailer of every error report
    for fragment in MUST_SAY.get(name, ()):
        assert fragment in err, f"{fragment!r} missing from:\n{err}"
    snapshot(EXPECTED / f"{name}.txt", err)


def _problems(name: str, tmp_path: Path) -> tuple[Problem, ...]:
    """The problems ``trainstack validate`` reports for a case (it calls ``api.preview``), as objects."""
    path = CORPUS / f"{name}.yaml"
    if name in GENERATED:
        path = tmp_path / f"{name}.yaml"
        path.write_bytes(GENERATED[name]())
    with pytest.raises(SpecErrors) as e:
        api.preview(str(path))
    return tuple(e.value.problems)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_bad_spec_problems_carry_codes_fields_and_the_field_they_name(name: str, tmp_path: Path) -> None:
    got = [(p.code, p.dotted, dict(p.fields)) for p in _problems(name, tmp_path)]
    assert [(code, at) for code, at, _ in got] == [(code, at) for code, at, _ in PROBLEMS[name]]
    for (_, _, fields), (_, _, want) in zip(got, PROBLEMS[name], strict=True):
        assert {k: fields[k] for k in want} == want


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
