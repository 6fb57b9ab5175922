"""Writing stack folders: atomic, never over a folder trainstack did not make, keeps what Pulumi added."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from generator import api, stackdir

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
