"""``diff``'s side cache (generator/preview/side_cache.py): a side whose inputs were seen is answered with its
stored plan and graph, and the diff is byte for byte the one without any cache, on every example and on resizes,
renames and type changes; a cached side is not planned, rendered or run and imports no Pulumi; a damaged entry is
ignored and rebuilt; the key covers what plan and render depend on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from generator.plan import pipeline
from generator.preview import cache, mockrun, side_cache
from generator.preview.diff import diff_sides, format_json, format_markdown, format_text
from tests.test_incremental import _spec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
PRETRAIN = ROOT / "examples" / "pretrain-70b.yaml"
SMALL = {"compute.max_nodes": 64, "model.global_batch_tokens": None, "compute.nodes": 4}


def _outputs(base: Path | str, head: Path | str) -> tuple[str, str, str]:
    result = diff_sides(str(base), str(head))
    return format_json(result), format_text(result), format_markdown(result)


def _uncached(monkeypatch: pytest.MonkeyPatch, base: Path, head: Path) -> tuple[str, str, str]:
    monkeypatch.setenv("TRAINSTACK_GRAPH_CACHE", "off")
    out = _outputs(base, head)
    monkeypatch.setenv("TRAINSTACK_GRAPH_CACHE", "on")
    return out


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The labels of the sides this test planned (a side cache hit plans nothing)."""
    seen: list[str] = []
    real = pipeline.plan_located

    def counting(located: Any, catalog: Any = None) -> Any:
        seen.append(str(located.spec.name))
        return real(located, catalog)

    monkeypatch.setattr(pipeline, "plan_located", counting)
    return seen


def _base_only(base: Path) -> None:
    """A cache that holds BASE's side only, as a runner's after the run that made BASE (``diff - BASE``)."""
    diff_sides("-", str(base))
    assert len(list((cache.cache_dir() / "sides").glob("*/*.side"))) == 1


def _check(monkeypatch: pytest.MonkeyPatch, planned: list[str], base: Path, head: Path) -> None:
    uncached = _uncached(monkeypatch, base, head)
    _base_only(base)
    planned.clear()
    assert _outputs(base, head) == uncached  # BASE from the side cache, HEAD planned and run
    assert len(planned) == 1
    planned.clear()
    assert _outputs(base, head) == uncached  # both sides from the side cache
    assert planned == []


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_a_cached_base_gives_the_uncached_diff_on_every_example(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planned: list[str]
) -> None:
    base = _spec(tmp_path, example, {}, "base")
    head = _spec(tmp_path, example, {"tags.reviewed-by": "ci"}, "head")
    _check(monkeypatch, planned, base, head)


CHANGES = {
    "grow": ({}, {"compute.nodes": 6}),
    "shrink": ({"compute.nodes": 6}, {}),
    "rename": ({}, {"name": "pretrain-renamed"}),
    "instance type": (
        {"compute.instance_types": ["ecs.ebmgn7ex.32xlarge"]},
        {"compute.instance_types": ["ecs.ebmgn8v.48xlarge"]},
    ),
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_cached_base_gives_the_uncached_diff_on_resizes_renames_and_type_changes(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planned: list[str]
) -> None:
    before, after = CHANGES[change]
    base = _spec(tmp_path, PRETRAIN, SMALL | before, "base")
    head = _spec(tmp_path, PRETRAIN, SMALL | after, "head")
    _check(monkeypatch, planned, base, head)


def test_a_cached_side_is_not_planned_rendered_or_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = _spec(tmp_path, PRETRAIN, SMALL, "base")
    head = _spec(tmp_path, PRETRAIN, SMALL | {"compute.nodes": 5}, "head")
    expected = _outputs(base, head)

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a cached side was planned, rendered or run")

    from generator.render import files

    for owner, name in ((pipeline, "plan_located"), (files, "render"), (mockrun, "run_program")):
        monkeypatch.setattr(owner, name, refused)
    assert _outputs(base, head) == expected


def test_a_cached_diff_imports_no_pulumi_code(tmp_path: Path) -> None:
    base = _spec(tmp_path, PRETRAIN, SMALL, "base")
    head = _spec(tmp_path, PRETRAIN, SMALL | {"compute.nodes": 5}, "head")
    code = (
        "import sys\nfrom generator.preview.diff import diff_sides, format_json\n"
        f"format_json(diff_sides({str(base)!r}, {str(head)!r}))\n"
        "print(len([m for m in sys.modules if m == 'pulumi' or m.startswith(('pulumi.', 'pulumi_alicloud'))]))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=dict(os.environ),
            check=False,
        )
        for _ in range(2)
    ]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr + runs[1].stderr
    assert int(runs[0].stdout) > 0 and int(runs[1].stdout) == 0


def _entry() -> Path:
    (entry,) = (cache.cache_dir() / "sides").glob("*/*.side")
    return entry


def _damage_plan(raw: bytes) -> bytes:
    """A plan document with a valid checksum whose plan does not read back (a field of the wrong type)."""
    import hashlib

    head, _, body = raw.partition(b"\n")
    graph_key, _, plan = body.partition(b"\n")
    body = graph_key + b"\n" + plan.replace(b'"nodes":4', b'"nodes":"4"', 1)
    return b" ".join(head.split(b" ")[:2]) + b" " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


DAMAGE = {
    "truncated": lambda raw: raw[: len(raw) // 2],
    "a flipped byte": lambda raw: raw[:-10] + bytes([raw[-10] ^ 1]) + raw[-9:],
    "empty": lambda raw: b"",
    "a plan that does not read back": _damage_plan,
}


@pytest.mark.parametrize("damage", [*DAMAGE, "graph entry gone", "graph entry damaged"])
def test_a_damaged_entry_is_ignored_and_rebuilt(
    damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planned: list[str]
) -> None:
    base = _spec(tmp_path, PRETRAIN, SMALL, "base")
    uncached = _uncached(monkeypatch, Path("-"), base)  # type: ignore[arg-type]
    _base_only(base)
    entry = _entry()
    good = entry.read_bytes()
    graph_entry = next(cache.cache_dir().glob("*/*.graph"))
    if damage == "graph entry gone":
        graph_entry.unlink()
    elif damage == "graph entry damaged":
        graph_entry.write_bytes(graph_entry.read_bytes()[:-5])
    else:
        entry.write_bytes(DAMAGE[damage](good))
        assert side_cache.load(entry.stem) is None and not entry.exists()  # ignored and removed
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_bytes(DAMAGE[damage](good))
    cache._LAST_HIT.clear()  # a new process
    planned.clear()
    assert _outputs("-", base) == uncached
    assert len(planned) == 1  # planned and run again
    assert entry.read_bytes() == good  # and the entry rebuilt as it was
    planned.clear()
    assert _outputs("-", base) == uncached and planned == []


def test_the_key_covers_the_spec_its_path_the_code_and_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from generator.catalog import load_catalog

    catalog = load_catalog()
    text = PRETRAIN.read_text()
    first = side_cache.key(text, "examples/pretrain-70b.yaml", catalog)
    assert first is not None and first == side_cache.key(text, "examples/pretrain-70b.yaml", catalog)
    others = {
        side_cache.key(text + "\n", "examples/pretrain-70b.yaml", catalog),
        side_cache.key(text, "examples/other.yaml", catalog),
    }
    env = cache.environment()
    monkeypatch.setattr(cache, "environment", lambda: {**env, "pulumi_alicloud": "4.0.1"})
    others.add(side_cache.key(text, "examples/pretrain-70b.yaml", catalog))
    monkeypatch.setattr(cache, "environment", lambda: env)
    monkeypatch.setattr(side_cache, "_code_digest", lambda: "0" * 64)  # any byte of generator/ changed
    others.add(side_cache.key(text, "examples/pretrain-70b.yaml", catalog))
    assert None not in others and first not in others and len(others) == 4


def test_another_catalog_or_the_cache_turned_off_caches_no_side(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from generator.catalog import load_catalog

    catalog = load_catalog()
    assert side_cache.key("x", "p", dataclasses.replace(catalog)) is None
    monkeypatch.setenv("TRAINSTACK_SIDE_CACHE", "off")
    assert side_cache.key("x", "p", catalog) is None
    monkeypatch.delenv("TRAINSTACK_SIDE_CACHE")
    monkeypatch.setenv("TRAINSTACK_GRAPH_CACHE", "off")
    assert side_cache.key("x", "p", catalog) is None


def test_the_code_digest_covers_the_templates_and_the_catalog(tmp_path: Path) -> None:
    import shutil

    from generator.render.files import templates_dir

    roots = side_cache.code_roots()
    assert any(any(root.rglob("*.csv")) for root in roots)
    assert any(
        templates_dir().resolve().is_relative_to(root) for root in roots
    )  # a checkout's top-level templates/
    copy = tmp_path / "templates"
    shutil.copytree(templates_dir(), copy)
    before = side_cache.code_digest([roots[0], copy])
    assert before == side_cache.code_digest([roots[0], copy]) and len(before) == 64
    script = copy / "stack" / "node-init.sh.j2"
    script.write_bytes(
        script.read_bytes() + b"#\n"
    )  # a template edited in a checkout plans the same, renders anew
    assert side_cache.code_digest([roots[0], copy]) != before


@pytest.mark.parametrize("command", ["preview", "render"])
def test_a_preview_or_a_render_leaves_its_side_for_the_next_diff(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planned: list[str]
) -> None:
    from generator import api

    base = _spec(tmp_path, PRETRAIN, SMALL, "base")
    head = _spec(tmp_path, PRETRAIN, SMALL | {"compute.nodes": 5}, "head")
    uncached = _uncached(monkeypatch, base, head)
    if command == "render":  # its lint runs the program
        rendered = api.render_stack(base, out_dir=tmp_path / "stack")
        assert rendered.lint is not None and not rendered.lint.failed
    else:
        previewed = api.preview(base)
        assert previewed.plan == api.plan(base)  # planned from the text it read once, as before
    assert len(list((cache.cache_dir() / "sides").glob("*/*.side"))) == 1
    cache._LAST_HIT.clear()  # a new process
    planned.clear()
    assert _outputs(base, head) == uncached  # BASE from the side left behind, HEAD planned and run
    assert len(planned) == 1


def test_a_preview_with_the_side_cache_off_records_no_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from generator import api

    monkeypatch.setenv("TRAINSTACK_SIDE_CACHE", "off")
    api.preview(_spec(tmp_path, PRETRAIN, SMALL, "base"))
    assert list(cache.cache_dir().glob("*/*.graph")) and not (cache.cache_dir() / "sides").exists()
