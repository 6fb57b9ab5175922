"""Compiled templates kept between processes (generator/render/bytecode.py): a render from kept code is byte for byte
a render that compiles, on every example; a damaged or stale entry is ignored and compiled anew; a failed write loses
no entry; the folder's name changes with the compiler and the environment's options."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import jinja2
import pytest

from generator import api
from generator.render import bytecode, files

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Compiled templates kept under a fresh prefix (as ``PYTHONPYCACHEPREFIX``), bytecode written."""
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.delenv("TRAINSTACK_TEMPLATE_BYTECODE", raising=False)
    files._env.cache_clear()
    yield bytecode.folder(files.templates_dir(), Path(files.__file__))
    files._env.cache_clear()


def _render(example: Path, compiled: bool = True) -> dict[str, str]:
    """``example``'s files as a new process renders them (a new environment), keeping compiled code or not."""
    files._env.cache_clear()
    with pytest.MonkeyPatch.context() as mp:
        if not compiled:
            mp.setenv("TRAINSTACK_TEMPLATE_BYTECODE", "off")
        out = files.render(api.plan(example), api.spec_record(example))
    files._env.cache_clear()
    return out


def _compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = jinja2.Environment.compile

    def counting(
        self: jinja2.Environment, source: str, name: str | None = None, *args: Any, **kw: Any
    ) -> Any:
        seen.append(str(name))
        return real(self, source, name, *args, **kw)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    return seen


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_kept_code_renders_what_compiling_renders(
    example: Path, kept: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled = _compiles(monkeypatch)
    fresh = _render(example, compiled=False)
    assert compiled and not kept.exists()
    compiled.clear()
    assert _render(example) == fresh  # a miss: compiled and kept
    assert len(list(kept.glob("*.jbc"))) == len(compiled) > 0
    compiled.clear()
    assert _render(example) == fresh  # a hit: nothing compiled
    assert compiled == []


def _damaged(raw: bytes, how: str) -> bytes:
    if how == "truncated":
        return raw[: len(raw) // 2]
    if how == "a flipped byte":
        return raw[:-10] + bytes([raw[-10] ^ 1]) + raw[-9:]
    if how == "empty":
        return b""
    body = raw.partition(b"\n")[2]  # "an edited template": a valid entry of another source's checksum
    import hashlib

    body = b"0" * 40 + body[40:]
    return bytecode.HEADER + b" " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


@pytest.mark.parametrize("how", ["truncated", "a flipped byte", "empty", "an edited template"])
def test_a_damaged_or_stale_entry_is_compiled_anew(
    how: str, kept: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = ROOT / "examples" / "finetune-7b.yaml"
    fresh = _render(example, compiled=False)
    _render(example)
    entries = sorted(kept.glob("*.jbc"))
    good = {p: p.read_bytes() for p in entries}
    for path in entries:
        path.write_bytes(_damaged(good[path], how))
    compiled = _compiles(monkeypatch)
    assert _render(example) == fresh
    assert len(compiled) == len(entries)
    assert {p: p.read_bytes() for p in entries} == good  # written whole again


def test_a_failed_write_loses_no_entry_and_no_bytecode_is_written_when_python_writes_none(
    kept: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    example = ROOT / "examples" / "finetune-7b.yaml"
    fresh = _render(example)
    good = {p: p.read_bytes() for p in kept.glob("*.jbc")}
    for path in good:
        path.unlink()
    next(iter(good)).write_bytes(good[next(iter(good))])  # one entry left, the others to be written

    def crash(*args: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    assert _render(example) == fresh
    assert {p: p.read_bytes() for p in kept.iterdir()} == {
        next(iter(good)): good[next(iter(good))]
    }  # no .tmp
    monkeypatch.undo()
    monkeypatch.setattr(sys, "pycache_prefix", str(kept.parent.parent / "other"))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert _render(example) == fresh
    assert not (kept.parent.parent / "other").exists()


def test_the_folder_changes_with_the_compiler_and_the_options(
    kept: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = tmp_path / "files.py"
    options.write_bytes(Path(files.__file__).read_bytes())
    first = bytecode.folder(files.templates_dir(), options)
    assert first == kept and first == bytecode.folder(files.templates_dir(), options)
    options.write_bytes(options.read_bytes().replace(b"trim_blocks=True", b"trim_blocks=False"))
    others = {bytecode.folder(files.templates_dir(), options)}
    options.write_bytes(Path(files.__file__).read_bytes())
    monkeypatch.setattr(bytecode, "_version", lambda dist: "9.9.9")
    others.add(bytecode.folder(files.templates_dir(), options))
    monkeypatch.setattr(sys, "pycache_prefix", None)
    beside = bytecode.folder(files.templates_dir(), options)
    assert beside.parent == files.templates_dir() / "__pycache__"
    assert first not in others and len(others) == 2


def test_turned_off_nothing_is_kept(kept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINSTACK_TEMPLATE_BYTECODE", "off")
    _render(ROOT / "examples" / "finetune-7b.yaml")
    assert not kept.exists()
