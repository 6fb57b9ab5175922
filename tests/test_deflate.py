"""The deflate memo (generator/preview/deflate.py): ``zlib.compress`` answered from the newest run's compressions
gives zlib's bytes, so a run through the cache equals a full run byte for byte on every example and on resizes up
and down, renames, disk and instance-type changes and a changed node-init.sh (which compresses everything again);
the memo file is written atomically and ignored when it is truncated, altered or from another zlib."""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path
from typing import Any, ClassVar

import pytest

from generator.preview import cache, deflate, mockrun
from tests.test_incremental import (
    EXAMPLES,
    NODE_EXAMPLES,
    VARIANTS,
    _bytes,
    _cluster_specs,
    _full,
    _render,
)

SCRIPT = b"#!/bin/bash\n" + b"".join(b"echo line %d of a node-init script\n" % i for i in range(400))


def test_the_memo_gives_zlibs_bytes_and_restores_zlib() -> None:
    original = zlib.compress
    with deflate.Memo() as first:
        made = gzip.compress(SCRIPT, compresslevel=9, mtime=0)
        assert zlib.compress is not original
    assert zlib.compress is original
    assert made == gzip.compress(SCRIPT, compresslevel=9, mtime=0)
    assert first.misses == 1 and len(first.used) == 1
    with deflate.Memo(first.used) as second:
        again = gzip.compress(SCRIPT, compresslevel=9, mtime=0)
        other_level = zlib.compress(SCRIPT, 6)
        small = zlib.compress(b"short", 9)
    assert again == made and other_level == zlib.compress(SCRIPT, 6) and small == zlib.compress(b"short", 9)
    assert second.misses == 1  # level 6 is another key; the short input is not memoized
    assert set(second.used) > set(first.used) and second.changed()
    with deflate.Memo(second.used) as third:
        zlib.compress(SCRIPT, 6)
        gzip.compress(SCRIPT, compresslevel=9, mtime=0)
    assert third.misses == 0 and not third.changed()
    with deflate.Memo(), pytest.raises(TypeError):
        zlib.compress("not bytes")  # type: ignore[arg-type]


def test_the_memo_file_round_trips_and_is_ignored_when_damaged(tmp_path: Path) -> None:
    with deflate.Memo() as m:
        for i in range(3):
            zlib.compress(SCRIPT + b"%d" % i, 9, 31)
    assert deflate.store(tmp_path, "salt", m.used)
    assert deflate.load(tmp_path, "salt") == m.used
    assert deflate.load(tmp_path, "other") == {}
    path = tmp_path / "memo" / "salt.deflate"
    raw = path.read_bytes()
    head_end = raw.index(b"\n") + 1
    for damaged in (
        raw[: head_end + 10],  # the index cut off
        raw[: head_end + 40] + b"x" + raw[head_end + 41 :],  # the index altered
        raw.replace(zlib.ZLIB_RUNTIME_VERSION.encode(), b"0.0.0", 1),
        b"",
    ):
        path.write_bytes(damaged)
        assert deflate.load(tmp_path, "salt") == {}
    last = max(m.used)  # the index is in key order, so the last key's bytes end the file
    for damaged in (raw[:-1], raw[:-5] + b"xxxxx"):
        path.write_bytes(damaged)
        loaded = deflate.load(tmp_path, "salt")
        assert (
            len(loaded) == 3 and loaded.get(last) is None and last not in loaded
        )  # a miss: compressed again
        assert {k: loaded[k] for k in m.used if k != last} == {k: v for k, v in m.used.items() if k != last}
    path.write_bytes(raw)
    loaded = deflate.load(tmp_path, "salt")
    path.write_bytes(b"")  # replaced after the index was read: every record is a miss
    assert all(loaded.get(k) is None for k in m.used)
    assert not list((tmp_path / "memo").glob(".*.tmp"))  # the write left no temporary file


def test_only_the_newest_memo_files_are_kept(tmp_path: Path) -> None:
    for age, salt in enumerate(("newest", "newer", "oldest")):
        assert deflate.store(tmp_path, salt, {b"k" * 32: b"v"})
        os.utime(tmp_path / "memo" / f"{salt}.deflate", (1e9 - age, 1e9 - age))
    deflate.prune(tmp_path, 2)
    assert sorted(p.name for p in (tmp_path / "memo").iterdir()) == ["newer.deflate", "newest.deflate"]
    assert deflate.load(tmp_path, "newest") == {b"k" * 32: b"v"}


class _Seen(deflate.Memo):
    """The memo of each run through the cache, kept for the test to count its hits."""

    runs: ClassVar[list[deflate.Memo]] = []

    def __init__(self, known: Any = None) -> None:
        super().__init__(known)
        _Seen.runs.append(self)


@pytest.fixture
def seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[deflate.Memo]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TRAINSTACK_GRAPH_CACHE", "on")
    monkeypatch.delenv("TRAINSTACK_INCREMENTAL", raising=False)
    # every row's user data compressed in every run: a row call answered whole compresses nothing (test_calls.py)
    monkeypatch.setenv("TRAINSTACK_ROW_CALLS", "off")
    monkeypatch.setattr(cache.deflate, "Memo", _Seen)
    _Seen.runs = []
    return _Seen.runs


def _cached(folder: Path, plan: Any) -> mockrun.Graph:
    return cache.run_program(
        folder, project=plan.name, stack=plan.stack, config={"alicloud:region": plan.region}
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_with_its_compressions_reused_equals_a_full_run(
    example: Path, tmp_path: Path, seen: list[deflate.Memo]
) -> None:
    folder, plan = _render(example, tmp_path / "stack")
    first = _cached(folder, plan)
    (folder / "README.md").write_text("changed\n")  # another graph-cache entry: the program runs again
    again = _cached(folder, plan)
    assert _bytes(again) == _bytes(first) == _bytes(_full(folder, plan))
    assert len(seen) == 2 and seen[1].misses == 0 and set(seen[1].used) == set(seen[0].used)
    if plan.lingjun is not None or any(r.type.endswith("ecs/instance:Instance") for r in first.resources):
        assert seen[0].misses > 0  # every node's user data is compressed once, then reused


@pytest.mark.parametrize("variant", (*VARIANTS, "instance-type", "node-init"))
@pytest.mark.parametrize("example", sorted(NODE_EXAMPLES))
def test_a_changed_cluster_with_reused_compressions_equals_a_full_run(
    example: str, variant: str, tmp_path: Path, seen: list[deflate.Memo]
) -> None:
    base_spec, head_spec = _cluster_specs(tmp_path, example, variant)
    base_dir, base_plan = _render(base_spec, tmp_path / "base")
    head_dir, head_plan = _render(head_spec, tmp_path / "head")
    if variant == "node-init":  # a template change: every node's script differs, nothing can be reused
        script = head_dir / "node-init.sh"
        script.write_text(script.read_text() + "# changed\n")
    _cached(base_dir, base_plan)
    head = _cached(head_dir, head_plan)
    assert _bytes(head) == _bytes(_full(head_dir, head_plan))
    base_run, head_run = seen
    reused = len(head_run.used) - head_run.misses
    if variant in ("node-init", "rename", "instance-type"):
        # new scripts (the type's GPUs and NICs are in them); a renamed project is another salt, another memo
        assert head_run.misses == len(head_run.used) > 0
        assert reused == 0
    elif variant == "grow":  # the new nodes' scripts are compressed, every old one reused
        assert head_run.misses > 0 and reused == len(base_run.used)
    elif variant == "shrink":
        assert head_run.misses == 0 and 0 < reused == len(head_run.used) < len(base_run.used)
    else:  # the same scripts: only resources' other inputs changed
        assert head_run.misses == 0 and reused == len(base_run.used) > 0
