"""Packs of graph rows (generator/preview/blobs.py): a hit gives the graph a run gives, byte for byte (every example,
and a resize answered from an earlier entry's pack); an entry sharing rows with an earlier one writes only its new
rows; a missing, truncated or altered pack is a miss; a writer killed between its pack and its entry leaves the old
entry readable; unreferenced packs are swept; a chain of small changes is compacted into one pack."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from generator import api
from generator.preview import blobs, cache, mockrun

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def _bytes(graph: mockrun.Graph) -> str:
    """The whole graph in its own order (dict order included), keys too."""
    return json.dumps(cache._to_json(graph))


def _blobs() -> list[Path]:
    return sorted((cache.cache_dir() / blobs.FOLDER).glob("*/*.pack"))


def _row(name: str, size: int = 4000) -> mockrun.Resource:
    return mockrun.Resource("t:m:Node", name, {"userData": name * (size // len(name)), "rank": len(name)})


def _graph(*names: str) -> mockrun.Graph:
    small = mockrun.Resource("t:m:Role", "role", {"a": 1})
    return mockrun.Graph([small, *(_row(n) for n in names)], {"o": "v"}, ["w"], {"t:m:Role::role": "k"})


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_a_hit_is_byte_identical_to_the_run_on_every_example(example: Path) -> None:
    ran = api.preview(example)
    key = cache.last_key()
    assert key is not None
    blobs._KNOWN.clear()  # a fresh process: every row is read back from its blob
    hit = cache.load(key)
    assert hit is not None and _bytes(hit) == _bytes(ran.graph)
    assert api.preview(example).graph == ran.graph


def test_a_resize_reuses_the_earlier_entry_s_blobs_and_reads_back_identically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    yaml = YAML(typ="safe", pure=True)
    data = yaml.load((ROOT / "examples" / "pretrain-70b.yaml").read_text())
    data["model"]["global_batch_tokens"] = None
    data["compute"].update({"nodes": 16, "max_nodes": 300})
    specs = []
    for nodes in (16, 20):
        data["compute"]["nodes"] = nodes
        spec = tmp_path / str(nodes) / "pretrain-70b.yaml"
        spec.parent.mkdir()
        with spec.open("w") as f:
            yaml.dump(data, f)
        specs.append(spec)
    base = api.preview(specs[0]).graph
    before = set(_blobs())
    grown = specs[1]
    ran = api.preview(grown)
    new = set(_blobs()) - before
    assert len(ran.graph.resources) > len(base.resources)
    written = sum(p.stat().st_size for p in new)  # the grown nodes' rows (and what their count changes), no others
    assert 0 < written < sum(p.stat().st_size for p in before) / 2
    key = cache.last_key()
    assert key is not None
    blobs._KNOWN.clear()
    hit = cache.load(key)
    assert hit is not None and _bytes(hit) == _bytes(ran.graph)
    monkeypatch.setenv("TRAINSTACK_GRAPH_CACHE", "off")
    full = api.preview(grown).graph  # a full run, no cache at all
    assert _bytes(mockrun.Graph(full.resources, full.outputs, full.warnings, hit.keys)) == _bytes(hit)


def test_an_entry_sharing_rows_writes_only_its_new_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache.store("ab" * 32, _graph("n0", "n1", "n2"))
    loaded = cache.load("ab" * 32)
    assert loaded is not None and len(_blobs()) == 1
    written: list[bytes] = []
    real = blobs.put

    def put(root: Path, data: bytes) -> str:
        written.append(data)
        return real(root, data)

    monkeypatch.setattr(blobs, "put", put)
    grown = mockrun.Graph([*loaded.resources, _row("n3")], loaded.outputs, loaded.warnings, loaded.keys)
    assert cache.store("cd" * 32, grown)
    assert [json.loads(data)[1] for data in written] == ["n3"] and len(_blobs()) == 2
    blobs._KNOWN.clear()
    assert _bytes(cache.load("cd" * 32) or mockrun.Graph()) == _bytes(grown)
    assert cache.load("ab" * 32) == loaded


def test_an_entry_body_is_the_json_encoding_of_its_data() -> None:
    """The body is put together from rows encoded once (small rows inline, large ones by place): it is byte for byte
    what json.dumps gives the whole entry."""
    graph = _graph("n0", "n1")
    graph.outputs.update(ids=["a", "é\u2028"], n=1.5)
    graph.resources.append(mockrun.Resource("t:m:Tag", "t", {"x": [1, None, True], "s": "ü"}))
    assert cache.store("ef" * 32, graph)
    packs, _, text = cache._entry("ef" * 32).read_bytes().partition(b"\n")[2].partition(b"\n")
    data = json.loads(text)
    assert text == json.dumps(data, separators=(",", ":"), allow_nan=False).encode()
    assert [type(item) for item in data["resources"]] == [list, str, str, list] and len(packs.split()) == 1
    assert data["outputs"] == graph.outputs and data["keys"] == graph.keys


def test_a_chain_of_small_changes_is_compacted_into_one_pack() -> None:
    graph = _graph("n0")
    for step in range(blobs.MAX_PACKS + 2):
        digest = f"{step:02x}" * 32
        assert cache.store(digest, graph)
        loaded = cache.load(digest)
        assert loaded == graph
        [entry] = cache.cache_dir().glob(f"{digest[:2]}/*.graph")
        assert 1 <= len(cache._named(entry)) <= blobs.MAX_PACKS
        graph = mockrun.Graph([*loaded.resources, _row(f"m{step}")], graph.outputs, graph.warnings, graph.keys)
    assert len(cache._named(entry)) < blobs.MAX_PACKS  # compacted once on the way


@pytest.mark.parametrize("damage", ["missing", "truncate", "flip"])
def test_a_missing_or_damaged_blob_is_a_miss(damage: str) -> None:
    assert cache.store("ab" * 32, _graph("n0", "n1"))
    blob = _blobs()[0]
    raw = blob.read_bytes()
    if damage == "missing":
        blob.unlink()
    elif damage == "truncate":
        blob.write_bytes(raw[: len(raw) // 2])
    else:
        blob.write_bytes(raw[:10] + bytes([raw[10] ^ 0x01]) + raw[11:])
    blobs._KNOWN.clear()
    assert cache.load("ab" * 32) is None
    assert not list(cache.cache_dir().glob("*/*.graph"))  # the entry is removed: the next run rebuilds it
    assert cache.store("ab" * 32, _graph("n0", "n1")) and cache.load("ab" * 32) == _graph("n0", "n1")


def test_a_damaged_blob_is_rewritten_not_trusted_by_a_later_entry() -> None:
    assert cache.store("ab" * 32, _graph("n0"))
    loaded = cache.load("ab" * 32)
    assert loaded is not None
    [blob] = _blobs()
    blob.unlink()  # gone after this process read it: a later entry must not name it
    assert cache.store("cd" * 32, loaded)
    assert _blobs() == [blob]
    blobs._KNOWN.clear()
    assert cache.load("cd" * 32) == loaded


def test_a_writer_killed_between_its_blobs_and_its_entry_leaves_the_old_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = _graph("n0")
    assert cache.store("ab" * 32, old)

    def killed(path: Path, body: bytes) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cache, "_write_entry", killed)
    with pytest.raises(KeyboardInterrupt):
        cache.store("ab" * 32, _graph("n1", "n2"))
    assert len(_blobs()) == 2  # the new rows' pack was written, no entry names it
    blobs._KNOWN.clear()
    assert cache.load("ab" * 32) == old


def test_packs_no_entry_names_are_swept_after_the_grace_period(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MAX_ENTRIES", 1)
    assert cache.store("ab" * 32, _graph("n0"))
    [first] = _blobs()
    assert cache.store("cd" * 32, _graph("n1"))
    assert len(_blobs()) == 2  # "ab"'s pack is unreferenced now, but young: it may be a live writer's
    for p in _blobs():
        os.utime(p, (1, 1))
    orphan = cache.cache_dir() / blobs.FOLDER / "zz" / ".half.tmp"
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"half")
    os.utime(orphan, (1, 1))
    [second] = cache.cache_dir().glob("cd/*.graph")
    os.utime(second, (2, 2))  # the oldest entry, whatever the clock's resolution
    assert cache.store("ef" * 32, _graph("n1"))  # removes "cd"'s entry: a sweep
    assert first not in _blobs() and len(_blobs()) == 1 and not orphan.exists()
    assert cache.load("ef" * 32) == _graph("n1")


def test_an_entry_of_the_previous_layout_is_a_clean_miss() -> None:
    assert cache.store("ab" * 32, _graph("n0"))
    [entry] = cache.cache_dir().glob("*/*.graph")
    body = json.dumps(cache._to_json(_graph("n0"))).encode()
    entry.write_bytes(b"trainstack-graph 2 " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    assert cache.load("ab" * 32) is None and not entry.exists()
