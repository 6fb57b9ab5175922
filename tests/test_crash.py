"""Kill a stack write at every filesystem step and check that nothing is lost.

A child process writes a stack folder with :func:`generator.render.stackdir.write`; a hook counts its filesystem calls
and, at call number k, kills the process (SIGKILL: no cleanup at all) or interrupts it (SIGINT: Ctrl-C). For every
k until the write finishes, the Pulumi state, the venv and the user's own files must be intact, and after the next
command settles the folder (:func:`generator.render.stackdir.settle`) it must be exactly the old render or exactly the
new one, with no journal or sibling left behind. The last test does the same to the real ``trainstack render``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from generator import api
from generator.render import stackdir

ROOT = Path(__file__).resolve().parents[1]
SPEC = "name: crash-run\nregion: cn-wulanchabu\nmodel: {parameters: 7B}\ncompute: {nodes: 1}\n"
STATE = ".trainstack/state/.pulumi/stacks/crash-run/dev.json"
VENV = "venv/bin/python"

# Runs in the child: wrap the filesystem calls trainstack's writer makes, and act at call number K.
HOOK = textwrap.dedent("""
    import builtins, os, signal, shutil, sys
    K, HOW = int(sys.argv[1]), sys.argv[2]
    calls = [0]
    # as at a terminal: a job a non-interactive shell starts in the background inherits SIGINT ignored, and then
    # Python installs no KeyboardInterrupt handler, so the interrupt would never arrive
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def hooked(fn):
        def wrapper(*args, **kwargs):
            calls[0] += 1
            if calls[0] == K:
                if HOW == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                else:
                    os.kill(os.getpid(), signal.SIGINT)  # delivered at the next bytecode, mid-write
            return fn(*args, **kwargs)
        return wrapper

    def arm():
        for name in ("open", "rename", "replace", "unlink", "mkdir", "rmdir", "chmod", "fsync", "makedirs"):
            setattr(os, name, hooked(getattr(os, name)))
        builtins.open = hooked(builtins.open)
""")

WRITER = HOOK + textwrap.dedent("""
    import json
    from pathlib import Path
    from generator.render import stackdir
    files = json.loads(Path(sys.argv[3]).read_text())
    arm()
    try:
        stackdir.write(files, Path(sys.argv[4]), stack="dev")
    except KeyboardInterrupt:
        print("interrupted")
        sys.exit(130)
    print("finished", calls[0])
""")


def _render(tmp_path: Path, params: str) -> dict[str, str]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.replace("7B", params))
    return api.render_files(api.plan(spec), "spec.yaml")


def _owned(dest: Path, files: dict[str, str]) -> dict[str, str]:
    return {rel: (dest / rel).read_text() for rel in files if (dest / rel).is_file()}


def _leftovers(tmp_path: Path, dest: Path) -> list[str]:
    found = [p.name for p in tmp_path.iterdir() if p.name.startswith(f".{dest.name}.")]
    if (dest / stackdir.PENDING).exists():
        found.append(stackdir.PENDING)
    return found


def _run_writer(tmp_path: Path, k: int, how: str, files: dict[str, str], dest: Path) -> subprocess.CompletedProcess:
    payload = tmp_path / "files.json"
    payload.write_text(json.dumps(files))
    return subprocess.run([sys.executable, "-c", WRITER, str(k), how, str(payload), str(dest)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)


def _deployed_folder(tmp_path: Path, old: dict[str, str]) -> Path:
    dest = tmp_path / "stacks" / "crash-run"
    stackdir.write(old, dest, stack="dev")
    for rel, text in ((STATE, '{"checkpoint": "deployed"}'), (VENV, "#!venv"), ("NOTES.md", "mine\n"),
                      ("Pulumi.prod.yaml", "encryptionsalt: v1:prod\n")):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text)
    config = dest / "Pulumi.dev.yaml"
    config.write_text(config.read_text() + "encryptionsalt: v1:dev\n")  # what Pulumi adds on `stack init`
    return dest


@pytest.mark.parametrize("how", ["kill", "interrupt"])
def test_an_update_killed_at_any_step_loses_nothing(tmp_path: Path, how: str) -> None:
    old, new = _render(tmp_path, "7B"), _render(tmp_path, "8B")
    assert old != new
    k, finished = 0, False
    while not finished:
        k += 1
        assert k < 300, "the write never finished"
        case = tmp_path / f"case-{k}"
        case.mkdir()
        dest = _deployed_folder(case, old)
        old_owned = _owned(dest, old)
        proc = _run_writer(case, k, how, new, dest)
        finished = "finished" in proc.stdout
        assert "Traceback" not in proc.stderr, proc.stderr
        # Whatever happened, the state, the venv and the user's files are where they were.
        assert (dest / STATE).read_text() == '{"checkpoint": "deployed"}', f"state lost at step {k}"
        assert (dest / VENV).read_text() == "#!venv", f"venv lost at step {k}"
        assert (dest / "NOTES.md").read_text() == "mine\n" and (dest / "Pulumi.prod.yaml").is_file()
        assert oct(dest.stat().st_mode & 0o777) == oct(0o777 & ~_umask()), f"folder mode changed at step {k}"
        stackdir.settle(dest)  # what the next command does first
        assert not _leftovers(case, dest), f"leftovers after settling at step {k}"
        now = _owned(dest, new)
        assert now in (old_owned, _with_salt(new, dest)), f"a mix of old and new files after step {k}"
        assert "encryptionsalt: v1:dev" in (dest / "Pulumi.dev.yaml").read_text()
    assert k > 20  # every step of a real update was tried


def _with_salt(files: dict[str, str], dest: Path) -> dict[str, str]:
    return stackdir.keep_stack_config(files, dest, "dev")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_new_folder_killed_at_any_step_is_absent_or_complete(tmp_path: Path) -> None:
    new = _render(tmp_path, "8B")
    k, finished = 0, False
    while not finished:
        k += 1
        assert k < 300
        case = tmp_path / f"case-{k}"
        case.mkdir()
        dest = case / "stacks" / "crash-run"
        proc = _run_writer(case, k, "kill", new, dest)
        finished = "finished" in proc.stdout
        stackdir.settle(dest)
        assert not _leftovers(dest.parent, dest) if dest.parent.is_dir() else True
        if dest.exists():
            assert _owned(dest, new) == new, f"a half-written new folder after step {k}"
    assert k > 10


def test_trainstack_render_killed_mid_write_keeps_state(tmp_path: Path) -> None:
    """The real command, killed at several steps of its write to the stack folder (not of its lint run)."""
    (tmp_path / ".git").mkdir()
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    api.render_stack(spec)
    dest = tmp_path / "stacks" / "crash-run"
    (dest / STATE).parent.mkdir(parents=True)
    (dest / STATE).write_text("{}")
    (dest / VENV).parent.mkdir(parents=True)
    (dest / VENV).write_text("#!venv")
    spec.write_text(SPEC.replace("7B", "8B"))
    # Count only calls on paths inside the stacks folder, so step k is inside the write, not the lint run.
    code = HOOK.replace("calls[0] += 1\n        if calls[0] == K:",
                        "calls[0] += ('stacks' in str(args[0]) if args else False)\n        if calls[0] == K:")
    code += ("arm()\nfrom generator.cli import main\nmain(['render', sys.argv[3]])\n")
    for k in (1, 3, 6, 10, 15):
        proc = subprocess.run([sys.executable, "-c", code, str(k), "kill", str(spec)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
        assert proc.returncode == -signal.SIGKILL, (k, proc.stdout, proc.stderr)
        assert (dest / STATE).read_text() == "{}" and (dest / VENV).read_text() == "#!venv"
    result = subprocess.run([sys.executable, "-m", "generator.cli", "render", str(spec)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert result.returncode == 0, result.stderr
    assert not api.render_stack(spec, check=True).changed
    assert (dest / STATE).read_text() == "{}" and (dest / VENV).read_text() == "#!venv"
    assert not _leftovers(dest.parent, dest)
