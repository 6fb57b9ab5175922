"""Writing stack folders: atomic, never over a folder trainstack did not make, keeps what Pulumi added."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from generator import api
from generator.render import stackdir

SPEC = "name: small-run\nregion: cn-wulanchabu\nmodel: {parameters: 7B}\ncompute: {nodes: 1}\n"


@pytest.fixture()
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    return path


def test_refuses_a_folder_trainstack_did_not_make(tmp_path: Path, spec: Path) -> None:
    dest = tmp_path / "precious"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    with pytest.raises(stackdir.StackDirError, match="not created by trainstack"):
        api.render_stack(spec, dest)
    assert (dest / "notes.txt").read_text() == "mine" and len(list(dest.iterdir())) == 1


def test_rerender_reports_identical_and_check_sees_edits(tmp_path: Path, spec: Path) -> None:
    dest = tmp_path / "stack"
    first = api.render_stack(spec, dest)
    assert {c.action for c in first.changes} == {"create"}
    again = api.render_stack(spec, dest)
    assert {c.action for c in again.changes} == {"identical"}
    (dest / "__main__.py").write_text("# hand edit\n")
    stale = api.render_stack(spec, dest, check=True)
    assert [(c.path, c.action) for c in stale.changed] == [("__main__.py", "update")]
    assert (dest / "__main__.py").read_text() == "# hand edit\n"  # --check writes nothing


def test_a_failed_write_leaves_the_previous_folder_intact(tmp_path: Path, spec: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    dest = tmp_path / "stack"
    api.render_stack(spec, dest)
    before = {p.name: p.read_bytes() for p in dest.iterdir() if p.is_file()}
    real_open = open

    def failing_open(file, *args, **kwargs):  # the disk fills up half-way through the new render
        if str(file).endswith("plan.json") and "pending" in str(file):
            raise OSError(28, "No space left on device")
        return real_open(file, *args, **kwargs)

    spec.write_text(SPEC.replace("7B", "8B"))
    monkeypatch.setattr("builtins.open", failing_open)
    with pytest.raises(stackdir.StackDirError, match="No space left on device"):
        api.render_stack(spec, dest)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in dest.iterdir() if p.is_file()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".stack.")]
    assert not (dest / ".trainstack" / "pending").exists()


def test_rerender_keeps_what_pulumi_and_users_added_to_the_stack_config(tmp_path: Path, spec: Path) -> None:
    dest = tmp_path / "stack"
    api.render_stack(spec, dest)
    config = dest / "Pulumi.dev.yaml"
    config.write_text(config.read_text() + textwrap.dedent("""\
          trainstack:imageId: m-abc123
        encryptionsalt: v1:abc:def
    """))
    assert not api.render_stack(spec, dest, check=True).changed
    spec.write_text(SPEC + "tags: {team: x}\n")
    api.render_stack(spec, dest)
    text = config.read_text()
    assert "trainstack:imageId: m-abc123" in text and "encryptionsalt: v1:abc:def" in text
    assert "alicloud:region: cn-wulanchabu" in text


# ----------------------------------------------------------------------------- same bytes from anywhere
def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "examples").mkdir()
    (repo / "examples" / "run.yaml").write_text(SPEC)
    return repo


def test_render_check_and_digest_agree_from_any_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from generator.cli import main

    repo = _repo(tmp_path)
    monkeypatch.chdir(repo)
    assert CliRunner().invoke(main, ["render", "examples/run.yaml"]).exit_code == 0
    dest = repo / "stacks" / "small-run"
    assert '"examples/run.yaml"' in (dest / ".trainstack" / "DO_NOT_EDIT").read_text()
    digests = set()
    for cwd, spec in ((repo, "examples/run.yaml"), (repo / "examples", "run.yaml"),
                      (tmp_path, str(repo / "examples" / "run.yaml")), (repo / "stacks", "../examples/run.yaml")):
        monkeypatch.chdir(cwd)
        out = CliRunner().invoke(main, ["render", "--check", spec])
        assert out.exit_code == 0 and "up to date" in out.output, (cwd, out.output)
        assert api.render_stack(spec, check=True).dest.resolve() == dest  # stacks/ of the repository
        digests.add(api.preview(spec).digest)
        digests.add(api.preview(dest).digest)
    assert len(digests) == 1
    assert not (repo / "examples" / "stacks").exists() and not (tmp_path / "stacks").exists()


def test_outside_a_repository_the_stack_goes_beside_the_spec(tmp_path: Path, spec: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = api.render_stack(spec)
    assert result.dest.resolve() == tmp_path / "stacks" / "small-run"
    assert '"spec.yaml"' in (result.dest / ".trainstack" / "DO_NOT_EDIT").read_text()


# ----------------------------------------------------------------------------- never delete what is not ours
def test_user_files_and_other_stacks_configs_survive_a_render(tmp_path: Path, spec: Path) -> None:
    dest = tmp_path / "stack"
    api.render_stack(spec, dest)
    (dest / "Pulumi.dev.yaml").write_text((dest / "Pulumi.dev.yaml").read_text() + "encryptionsalt: v1:dev\n")
    (dest / "NOTES.md").write_text("why we run this\n")
    (dest / "scripts").mkdir()
    (dest / "scripts" / "train.sh").write_text("#!/bin/sh\n")
    spec.write_text(SPEC + "stack: prod\n")
    result = api.render_stack(spec, dest)
    assert {c.path for c in result.kept} == {"NOTES.md", "scripts/train.sh"}
    assert "encryptionsalt: v1:dev" in (dest / "Pulumi.dev.yaml").read_text()  # the other stack's config
    assert (dest / "Pulumi.prod.yaml").is_file()
    assert (dest / "NOTES.md").read_text() == "why we run this\n" and (dest / "scripts" / "train.sh").is_file()
    assert not api.render_stack(spec, dest, check=True).changed  # kept files do not make the folder stale


def test_folder_modes_stay_as_they_were(tmp_path: Path, spec: Path) -> None:
    dest = tmp_path / "stack"
    api.render_stack(spec, dest)
    dest.chmod(0o750)
    spec.write_text(SPEC.replace("7B", "8B"))
    api.render_stack(spec, dest)
    assert dest.stat().st_mode & 0o777 == 0o750
    assert (dest / "node-init.sh").stat().st_mode & 0o777 == 0o755
    assert (dest / "plan.json").stat().st_mode & 0o777 == 0o644


# ----------------------------------------------------------------------------- filesystem errors
def test_filesystem_errors_are_one_sentence_naming_the_path(tmp_path: Path, spec: Path) -> None:
    from click.testing import CliRunner

    from generator.cli import main

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = CliRunner().invoke(main, ["render", str(spec), "-o", str(blocker / "stack")])
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert out.output.startswith(f"error: cannot create {blocker}") and out.output.count("\n") == 1


def test_an_unwritable_folder_leaves_nothing_behind(tmp_path: Path, spec: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    dest = tmp_path / "stack"
    api.render_stack(spec, dest)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    spec.write_text(SPEC.replace("7B", "8B"))
    real_makedirs = os.makedirs

    def read_only(path, *args, **kwargs):  # as a read-only folder answers (root ignores chmod, so simulate it)
        if "pending" in str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_makedirs(path, *args, **kwargs)

    monkeypatch.setattr(os, "makedirs", read_only)
    with pytest.raises(stackdir.StackDirError, match=r"cannot write .*pending.*: Permission denied"):
        api.render_stack(spec, dest)
    monkeypatch.undo()
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


# ----------------------------------------------------------------------------- one writer at a time
def test_a_second_writer_waits_and_then_gives_up_with_a_message(tmp_path: Path, spec: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl

    dest = tmp_path / "stack"
    files = api.render_files(api.plan(spec), "spec.yaml")
    fd = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another trainstack is writing in this folder
    try:
        monkeypatch.setattr(stackdir, "LOCK_TIMEOUT_SECONDS", 0.3)
        with pytest.raises(stackdir.StackDirError, match="another trainstack command has been writing"):
            stackdir.write(files, dest)
        assert not dest.exists()
    finally:
        os.close(fd)
    stackdir.write(files, dest)
    assert stackdir.is_stack_dir(dest)


def test_concurrent_renders_into_one_folder_are_serialized(tmp_path: Path, spec: Path) -> None:
    import subprocess
    import sys

    code = ("import sys\nfrom generator import api\n"
            "api.render_stack(sys.argv[1], sys.argv[2])\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(spec), str(tmp_path / "stack")],
                              cwd=Path(__file__).resolve().parents[1], stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    assert not api.render_stack(spec, tmp_path / "stack", check=True).changed
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".stack.")]


# ----------------------------------------------------------------------------- folders left by trainstack 0.1
def test_a_folder_renamed_away_by_an_interrupted_0_1_render_comes_back(tmp_path: Path, spec: Path) -> None:
    dest = tmp_path / "stack"
    api.render_stack(spec, dest)
    (dest / ".trainstack" / "state").mkdir()
    (dest / ".trainstack" / "state" / "stack.json").write_text("{}")
    os.rename(dest, tmp_path / ".stack.old-4242")  # killed between 0.1's two renames
    tmp = tmp_path / ".stack.abcd1234.tmp"
    (tmp / "venv").mkdir(parents=True)  # 0.1 had moved the venv into its temporary folder
    stackdir.settle(dest)
    assert (dest / ".trainstack" / "state" / "stack.json").read_text() == "{}"
    assert (dest / "venv").is_dir()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".stack.")]


def test_a_file_written_for_some_plans_only_is_removed_when_the_plan_no_longer_needs_it(tmp_path: Path) -> None:
    """Switching a stack from ECS to PAI-DLC drops node-init.sh; removing ModelScope weights on DLC drops weights.sh.
    trainstack's own left-over copy goes (journaled like any write); a user's file of the same name stays."""
    from generator.render import stackdir

    dest = tmp_path / "stack"
    marker = {".trainstack/DO_NOT_EDIT": "This folder was generated by trainstack\n"}
    head = '"""Training cluster "a" on Alibaba Cloud, generated by trainstack.\n"""\n'  # trainstack's header
    stackdir.write({**marker, "__main__.py": head + "x = 1\n",
                    "node-init.sh": "#!/bin/bash\n# trainstack node bootstrap for \"a\"\n",
                    "weights.sh": "#!/bin/bash\n# trainstack-weights: the base weights of \"a\"\n"}, dest)
    (dest / "notes.sh").write_text("#!/bin/bash\n# trainstack node bootstrap for \"a\"\n")  # not a name we write
    changes = {c.path: c.action for c in stackdir.write({**marker, "__main__.py": head + "x = 2\n"}, dest)}
    assert changes["node-init.sh"] == "delete" and changes["weights.sh"] == "delete" and changes["notes.sh"] == "kept"
    assert not (dest / "node-init.sh").exists() and not (dest / "weights.sh").exists() and (dest / "notes.sh").exists()
    (dest / "weights.sh").write_text("#!/bin/sh\necho my own script\n")  # the user's file of that name
    changes = {c.path: c.action for c in stackdir.write({**marker, "__main__.py": head + "x = 3\n"}, dest)}
    assert changes["weights.sh"] == "kept" and (dest / "weights.sh").read_text() == "#!/bin/sh\necho my own script\n"
