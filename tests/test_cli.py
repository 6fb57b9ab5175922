"""The CLI as a whole: a thin shell, light to start, and clear when a generated program is wrong."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator import api
from generator.cli import main
from generator.preview.mockrun import ProgramError, run_program

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("args", [
    ["plan", "examples/pretrain-70b.yaml"],
    ["catalog", "--gpu", "A100-80G"],
    ["schema"],
    ["estimate", "--params", "70B", "--gpus", "64", "--tp", "8", "--pp", "2"],
    ["cost", "examples/finetune-7b.yaml"],
    ["render", "--check", "examples/finetune-7b.yaml"],
])
def test_commands_that_run_no_program_do_not_import_pulumi(args: list[str]) -> None:
    code = ("import sys\nfrom click.testing import CliRunner\nfrom generator.cli import main\n"
            f"r = CliRunner().invoke(main, {args!r})\n"
            "assert r.exit_code == 0, r.output\n"
            "loaded = sorted(m for m in sys.modules if m == 'pulumi' or m.startswith(('pulumi.', 'pulumi_alicloud')))\n"
            "assert not loaded, loaded\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_plan_json_carries_integer_sizing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, ["plan", "--json", "examples/pretrain-70b.yaml"])
    assert result.exit_code == 0
    sizing = json.loads(result.output)["sizing"]
    for key in ("weights", "gradients", "optimizer_states", "activations", "total"):
        assert isinstance(sizing[key], int) and sizing[key] > 0
    assert sizing["total"] <= sizing["gpu_memory"]


def test_a_wrong_argument_name_is_a_clear_error_naming_the_resource(tmp_path: Path) -> None:
    monkeypatch_dir = tmp_path / "stack"
    api.render_stack(ROOT / "examples" / "finetune-7b.yaml", monkeypatch_dir)
    main_py = monkeypatch_dir / "__main__.py"
    main_py.write_text(main_py.read_text().replace("    cidr_block=", "    cidr_blocks=", 1))
    with pytest.raises(ProgramError) as e:
        run_program(monkeypatch_dir, project="finetune-7b", stack="dev")
    message = str(e.value)
    assert "does not accept" in message and "cidr_blocks" in message and "__main__.py line" in message
    # and through the CLI: one sentence, exit 1, no traceback
    result = CliRunner().invoke(main, ["preview", str(monkeypatch_dir)])
    assert result.exit_code == 1 and "Traceback" not in result.output and "cidr_blocks" in result.output


def test_schema_is_json_for_editors() -> None:
    result = CliRunner().invoke(main, ["schema"])
    schema = json.loads(result.output)
    assert schema["title"] == "trainstack training spec" and "model" in schema["properties"]


def test_previews_under_load_leave_no_event_loop_to_the_garbage_collector() -> None:
    """Pulumi's mock monitor needs an event loop in each executor thread; an unclosed one, finalized at exit after
    its self-pipe, printed "Exception ignored in BaseEventLoop.__del__" in about one preview in six under load.
    ResourceWarning shows every unclosed loop, so the check does not depend on that timing."""
    code = "import sys\nfrom generator.cli import main\nsys.argv[0] = 'trainstack'\nsys.exit(main())\n"
    command = [sys.executable, "-W", "always::ResourceWarning", "-c", code, "preview", "examples/finetune-7b.yaml"]
    for _ in range(2):  # two rounds of four previews at once: the CPU contention that exposed the bug
        procs = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(4)]
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            assert "would be created" in out
            assert "Exception ignored" not in err and "unclosed" not in err, err


# ------------------------------------------------------------------------------------------------ catalog
def test_catalog_unknown_gpu_says_so_and_lists_the_known_ones() -> None:
    result = CliRunner().invoke(main, ["catalog", "--gpu", "H2"])
    assert result.exit_code == 2
    assert "unknown GPU 'H2'; did you mean 'H20'?" in result.output
    assert "known GPUs: A10, A100-40G, A100-80G" in result.output
    assert "nothing was written" not in result.output
    result = CliRunner().invoke(main, ["catalog", "--lingjun", "--gpu", "nope"])
    assert result.exit_code == 2 and "unknown GPU 'nope'" in result.output
    result = CliRunner().invoke(main, ["catalog", "--regions", "--region", "cn-hangzou"])
    assert result.exit_code == 2 and "did you mean 'cn-hangzhou'?" in result.output


def test_catalog_gpu_filters_lingjun_machine_types_and_regions() -> None:
    from generator.catalog import load_catalog

    cat = load_catalog()
    result = CliRunner().invoke(main, ["catalog", "--lingjun", "--gpu", "a100", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["lingjun_machine_types"]
    assert rows and {r["gpu"] for r in rows} == {"A100-80G"}
    result = CliRunner().invoke(main, ["catalog", "--lingjun", "--gpu", "H20"])
    assert result.exit_code == 0 and "no Lingjun machine type with H20 GPUs" in result.output

    h20_families = {t.family for t in cat.instance_types if t.gpu == "H20"}
    expected = [r.id for r in cat.regions if h20_families & set(r.gpu_families)]
    result = CliRunner().invoke(main, ["catalog", "--regions", "--gpu", "H20", "--json"])
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in json.loads(result.output)] == expected
    assert expected and len(expected) < len(cat.regions)
    text = CliRunner().invoke(main, ["catalog", "--regions", "--gpu", "H20"]).output
    assert "GPU families with H20 GPUs" in text and "gn7e" not in text  # only the families that have the GPU


def test_catalog_regions_and_lingjun_are_separate_lists() -> None:
    result = CliRunner().invoke(main, ["catalog", "--regions", "--lingjun"])
    assert result.exit_code == 2 and "give one of them" in result.output


def test_validate_lists_each_warning_as_plan_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    p = api.plan("examples/pretrain-70b.yaml")
    assert p.warnings
    result = CliRunner().invoke(main, ["validate", "examples/pretrain-70b.yaml"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-1] == (f"examples/pretrain-70b.yaml: ok ({p.compute.nodes} x {p.compute.instance_type}, "
                         f"{len(p.warnings)} warning(s))")
    listed = [line for line in lines if line.startswith("  ! ")]
    assert listed == [f"  ! {w.text()}" for w in p.warnings]
    plan_out = CliRunner().invoke(main, ["plan", "examples/pretrain-70b.yaml"]).output
    assert all(line in plan_out.splitlines() for line in listed)


def test_validate_counts_the_lint_warnings_it_printed_and_fails_on_half_the_internet(tmp_path: Path) -> None:
    spec = (ROOT / "examples" / "finetune-7b.yaml").read_text()
    assert "admin_cidrs" not in spec and "\nnetwork:" not in spec
    named = tmp_path / "named.yaml"
    named.write_text(spec + 'network:\n  admin_cidrs: ["203.0.113.0/24"]\n')
    result = CliRunner().invoke(main, ["validate", str(named)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("WARNING TS002") for line in lines)
    plan_warnings = len(api.plan(str(named)).warnings)
    assert lines[-1].endswith(f"{plan_warnings + 1} warning(s): {plan_warnings} plan, 1 lint)"), lines[-1]

    half = tmp_path / "half.yaml"
    half.write_text(spec + 'network:\n  admin_cidrs: ["0.0.0.0/1"]\n')
    result = CliRunner().invoke(main, ["validate", str(half)])
    assert result.exit_code == 1 and "ERROR   TS001" in result.output, result.output
    assert ": ok (" not in result.output


@pytest.mark.parametrize("args", [["preview"], ["preview", "--json"], ["lint"], ["preview", "--live"], ["up"],
                                  ["destroy", "--yes"], ["refresh", "--yes"], ["outputs"]])
def test_a_folder_that_is_not_a_stack_folder_is_bad_input(args: list[str], tmp_path: Path) -> None:
    from generator.errors import not_a_stack_folder
    from generator.live import FakeEngine

    folder = tmp_path / "not-a-stack"
    folder.mkdir()
    (folder / "__main__.py").write_text("print('a Pulumi program trainstack did not render')\n")
    result = CliRunner().invoke(main, [*args, str(folder)], obj={"engine": FakeEngine()})
    assert result.exit_code == 2, result.output
    assert "not a stack folder rendered by trainstack" in result.stderr and "Traceback" not in result.output
    if args[0] in ("preview", "lint") and "--live" not in args:
        assert result.stderr == f"error: {not_a_stack_folder(folder)}\n"


@pytest.mark.parametrize("module", ["generator", "generator.cli"])
def test_python_dash_m_runs_the_command_as_the_console_script_does(module: str, tmp_path: Path) -> None:
    # exit code 2 and the file named for a missing spec, like `trainstack validate`
    missing = tmp_path / "missing.yaml"
    proc = subprocess.run([sys.executable, "-m", module, "validate", str(missing)], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and str(missing) in proc.stderr + proc.stdout
