"""The mock-run graph cache (issue #15, 3): one program run per distinct stack. A second validate, lint, preview or
diff of unchanged files is answered from the cache (and imports no Pulumi code); any changed byte, config or SDK
version runs the program again; a corrupt, truncated or half-written entry is ignored and rebuilt; concurrent
writers leave a valid entry."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator import api
from generator.cli import main
from generator.preview import cache, mockrun

ROOT = Path(__file__).resolve().parents[1]
FINETUNE = ROOT / "examples" / "finetune-7b.yaml"


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The program folders the mock runtime really ran, in order."""
    seen: list[Path] = []
    real = mockrun.run_program

    def counting(program_dir, *args, **kwargs):
        seen.append(Path(program_dir))
        return real(program_dir, *args, **kwargs)

    monkeypatch.setattr(mockrun, "run_program", counting)
    return seen


def _entries() -> list[Path]:
    return sorted(cache.cache_dir().glob("*/*.graph"))


def test_every_command_reuses_one_run_of_the_same_files(runs: list[Path]) -> None:
    first = api.preview(FINETUNE)
    assert len(runs) == 1 and len(_entries()) == 1
    again = api.preview(FINETUNE)
    assert again.graph == first.graph and again.digest == first.digest
    runner = CliRunner()
    for args in (["validate", str(FINETUNE)], ["lint", str(FINETUNE)], ["preview", str(FINETUNE)],
                 ["diff", str(FINETUNE), str(FINETUNE)], ["preview", str(ROOT / "stacks" / "finetune-7b")],
                 ["lint", str(ROOT / "stacks" / "finetune-7b")]):
        result = runner.invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
    # a spec runs with alicloud:region set, a folder with its own stack config: two keys, each run once
    assert [p.name for p in runs] == ["finetune-7b", "finetune-7b"] and runs[1] == ROOT / "stacks" / "finetune-7b"


def test_a_hit_prints_what_a_run_prints(runs: list[Path]) -> None:
    runner = CliRunner()
    cold = runner.invoke(main, ["preview", "--json", str(FINETUNE)])
    warm = runner.invoke(main, ["preview", "--json", str(FINETUNE)])
    assert cold.exit_code == warm.exit_code == 0 and cold.output == warm.output and len(runs) == 1


def test_one_changed_byte_of_the_program_runs_it_again(runs: list[Path], tmp_path: Path) -> None:
    dest = tmp_path / "stack"
    shutil.copytree(ROOT / "stacks" / "finetune-7b", dest)
    base = api.preview(dest).graph
    main_py = dest / "__main__.py"
    main_py.write_text(main_py.read_text().replace('NAME = "finetune-7b"', 'NAME = "finetune-7c"', 1))
    changed = api.preview(dest).graph
    assert len(runs) == 2 and changed != base
    assert any(r.name == "finetune-7c-vpc" or "finetune-7c" in str(r.inputs) for r in changed.resources)
    (dest / "node-init.sh").write_text((dest / "node-init.sh").read_text() + "\n")
    api.preview(dest)
    assert len(runs) == 3


def test_the_key_covers_config_versions_and_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    files = [("__main__.py", b"x = 1\n")]
    base = cache.key(files, "p", "dev", {"a": "1"})
    assert cache.key(files, "p", "dev", {"a": "1"}) == base
    assert cache.key(files, "p", "dev", {"a": "2"}) != base
    assert cache.key(files, "p", "prod", {"a": "1"}) != base
    assert cache.key([("__main__.py", b"x = 2\n")], "p", "dev", {"a": "1"}) != base
    assert cache.key([("__main__.py", b"x = 1\n"), ("extra.py", b"")], "p", "dev", {"a": "1"}) != base
    env = cache.environment()
    assert {"python", "trainstack", "pulumi", "pulumi_alicloud", "schema", "runner"} <= set(env)
    monkeypatch.setattr(cache, "environment", lambda: {**env, "pulumi_alicloud": "4.0.1"})
    assert cache.key(files, "p", "dev", {"a": "1"}) != base


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "header"])
def test_a_corrupt_entry_is_ignored_and_rebuilt(runs: list[Path], damage: str) -> None:
    good = api.preview(FINETUNE).graph
    [entry] = _entries()
    raw = entry.read_bytes()
    if damage == "flip":
        i = len(raw) // 2
        raw = raw[:i] + bytes([raw[i] ^ 0x01]) + raw[i + 1:]
    elif damage == "truncate":
        raw = raw[: len(raw) // 3]
    elif damage == "empty":
        raw = b""
    else:
        raw = b"trainstack-graph 999 0\n" + raw.partition(b"\n")[2]
    entry.write_bytes(raw)
    assert api.preview(FINETUNE).graph == good
    assert len(runs) == 2
    assert cache.load(entry.stem) == good  # rebuilt


def test_a_write_killed_before_its_rename_leaves_the_old_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = mockrun.Graph([mockrun.Resource("t:m:R", "r", {"a": 1})], {"o": "v"}, ["w"])
    assert cache.store("ab" * 32, graph)

    def killed(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(cache.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        cache.store("ab" * 32, mockrun.Graph())
    assert cache.load("ab" * 32) == graph
    assert not list(cache.cache_dir().glob("*/*.tmp"))
    (cache.cache_dir() / "ab" / ".stray.tmp").write_bytes(b"half")  # what a SIGKILL would leave: never read
    assert cache.load("ab" * 32) == graph


def test_concurrent_writers_leave_a_valid_entry() -> None:
    graphs = [mockrun.Graph([mockrun.Resource("t:m:R", f"r{i}", {"i": i, "big": "x" * 200_000})]) for i in range(8)]
    threads = [threading.Thread(target=cache.store, args=("cd" * 32, g)) for g in graphs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.load("cd" * 32) in graphs
    assert not list(cache.cache_dir().glob("*/*.tmp"))


def test_values_json_cannot_keep_are_not_cached() -> None:
    assert not cache.store("ef" * 32, mockrun.Graph(outputs={"t": (1, 2)}))
    assert cache.load("ef" * 32) is None


def test_a_write_walks_only_resources_not_read_back_from_an_entry() -> None:
    """``store(decoded=...)``: resources an entry gave (what ``reusable`` returns) are JSON's own; a fresh one is
    still checked, and a non-finite float (which JSON's reader accepts) is refused wherever it is."""
    ok = mockrun.Resource("t:m:T", "a", {"x": [1, "s", None, True, 1.5]})
    tuple_in = mockrun.Resource("t:m:T", "b", {"x": (1, 2)})
    nan_in = mockrun.Resource("t:m:T", "c", {"x": float("nan")})
    assert cache.store("ab" * 32, mockrun.Graph([ok]), decoded={id(ok): ok})
    assert cache.load("ab" * 32) == mockrun.Graph([ok])
    assert not cache.store("cd" * 32, mockrun.Graph([ok, tuple_in]), decoded={id(ok): ok})
    decoded = {id(nan_in): nan_in}
    assert not cache.store("ef" * 32, mockrun.Graph([nan_in]), decoded=decoded)
    other = mockrun.Resource("t:m:T", "b", {"x": (1, 2)})  # an equal resource is not the decoded one
    assert not cache.store("ef" * 32, mockrun.Graph([other]), decoded={id(tuple_in): tuple_in})
    assert cache.load("cd" * 32) is None and cache.load("ef" * 32) is None


def test_the_cache_can_be_turned_off(runs: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINSTACK_GRAPH_CACHE", "off")
    api.preview(FINETUNE)
    api.preview(FINETUNE)
    assert len(runs) == 2 and not _entries()


def test_the_cache_lives_outside_the_repository_and_the_stack_folder(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "trainstack" / "graphs"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: relative paths are invalid
    assert cache.cache_dir() == Path.home() / ".cache" / "trainstack" / "graphs"


def test_a_cache_hit_imports_no_pulumi_code() -> None:
    code = ("import sys\nfrom click.testing import CliRunner\nfrom generator.cli import main\n"
            f"r = CliRunner().invoke(main, ['validate', {str(FINETUNE)!r}])\n"
            "assert r.exit_code == 0, r.output\n"
            "loaded = sorted(m for m in sys.modules if m == 'pulumi' or m.startswith(('pulumi.', 'pulumi_alicloud')))\n"
            "print(len(loaded))\n")
    env = dict(os.environ)
    first = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    second = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert int(first.stdout) > 0 and int(second.stdout) == 0


def test_old_leftovers_of_killed_writers_are_removed_by_the_next_write() -> None:
    folder = cache.cache_dir() / "ab"
    folder.mkdir(parents=True)
    old, fresh = folder / ".old.tmp", folder / ".fresh.tmp"
    old.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(old, (1, 1))
    assert cache.store("ab" * 32, mockrun.Graph())
    assert not old.exists() and fresh.exists()


@pytest.mark.parametrize("where", ["write", "replace"])
def test_a_writer_killed_by_sigkill_leaves_no_entry_to_misread(where: str) -> None:
    code = ("import io, os, signal, sys\nfrom generator.preview import cache, mockrun\n"
            "g = mockrun.Graph([mockrun.Resource('t:m:R', 'r', {'big': 'x' * 500_000})])\n"
            "if sys.argv[1] == 'replace':\n"
            "    cache.os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)\n"
            "else:\n"
            "    real = io.BufferedWriter.write\n"
            "    class Killing(io.BufferedWriter):\n"
            "        def write(self, data):\n"
            "            real(self, data[: len(data) // 2]); self.flush(); os.kill(os.getpid(), signal.SIGKILL)\n"
            "    cache.os.fdopen = lambda fd, mode: Killing(io.FileIO(fd, 'w'))\n"
            "cache.store('ab' * 32, g)\n")
    proc = subprocess.run([sys.executable, "-c", code, where], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == -9, proc.stderr
    assert cache.load("ab" * 32) is None  # nothing, or a stray temporary file that is never read
    assert list(cache.cache_dir().glob("**/.*.tmp"))  # the entry's or its row blob's
    assert cache.store("ab" * 32, mockrun.Graph()) and cache.load("ab" * 32) == mockrun.Graph()
