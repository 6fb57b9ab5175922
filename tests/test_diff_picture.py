"""The diff's one picture: a small Mermaid diagram per spec, boxes coloured by the worst impact among their changes.

Built from hand-made graphs and the real example plans (no program run), and parsed by the real Mermaid parser
(tests/mermaid/parse.mjs, skipped without node and mermaid, as tests/test_diagram.py). The legibility at GitHub's
comment width was checked in headless Chromium (docs/gitops.md, "Reading the comment"); here the shape that keeps
it legible is asserted: no subgraph (multi-line subgraph titles are clipped), one-line titles, few boxes.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from test_diagram import MERMAID_DIR, _mermaid_parser
from test_diff import node

from generator import api
from generator.preview import diff as d
from generator.preview.diff import picture
from generator.preview.mockrun import Graph, Resource

ROOT = Path(__file__).resolve().parents[1]
FS = "alicloud:nas/fileSystem:FileSystem"


def _plan(name: str) -> object:
    return api.plan(ROOT / "examples" / f"{name}.yaml")


def _classes(text: str) -> dict[str, set[str]]:
    return {cls: set(boxes.split(",")) for boxes, cls in re.findall(r"^  class (\S+) (\S+)$", text, re.MULTILINE)}


def test_boxes_are_coloured_by_their_worst_impact_and_the_legend_lists_only_those() -> None:
    base = Graph([node(0), Resource(FS, "shared-fs", {"vswitchId": "a"})])
    head = Graph([node(0, instanceType="ecs.gn8is.8xlarge"), Resource(FS, "shared-fs", {"vswitchId": "b"})])
    result = d.diff_graphs(base, head)
    plan = _plan("pretrain-70b")
    text = picture.diagram(plan, plan, result)  # type: ignore[arg-type]
    classes = _classes(text)
    assert classes["risk"] == {"fs"} and classes["reboot"] == {"nodes"}
    assert "net" in classes["plain"] and "interrupt" not in classes and "safe" not in classes
    assert picture.legend(result) == "🔴 data at risk · 🟡 reboots nodes"
    assert "subgraph" not in text and all(line.count("<br/>") <= 1 for line in text.splitlines())


def test_an_unknown_change_is_never_drawn_safe() -> None:
    result = d.diff_graphs(Graph([node(0)]), Graph([node(0, someNewInput="x")]))
    assert result.worst_impact == "unknown"
    text = picture.diagram(_plan("finetune-7b"), _plan("finetune-7b"), result)  # type: ignore[arg-type]
    assert _classes(text)["refused"] == {"nodes"}


def test_a_new_stack_colours_every_box_and_no_plan_means_no_picture() -> None:
    head = _plan("finetune-7b")
    result = d.diff_graphs(Graph(), Graph([node(0)]))
    assert "class nodes interrupt" in picture.diagram(None, head, result)  # type: ignore[arg-type]
    assert picture.diagram(None, None, result) == ""


def test_mermaid_parses_the_diff_pictures(tmp_path: Path) -> None:
    node_bin, script = _mermaid_parser()
    files = []
    for i, (old, new) in enumerate([("pretrain-70b", "pretrain-70b"), ("finetune-7b", "finetune-7b"),
                                    ("foundation-1t", "foundation-1t"), ("finetune-dlc", "finetune-dlc")]):
        base = Graph([node(0), Resource(FS, "shared-fs", {"vswitchId": "a"})])
        head = Graph([node(0, instanceType="ecs.gn8is.8xlarge"), node(1), Resource(FS, "shared-fs", {"vswitchId": "b"})])
        text = picture.diagram(_plan(old), _plan(new), d.diff_graphs(base, head))  # type: ignore[arg-type]
        out = tmp_path / f"{i}.mmd"
        out.write_text(text)
        files.append(str(out))
    r = subprocess.run([node_bin, str(script), str(MERMAID_DIR), *files], capture_output=True, text=True,
                       timeout=120, check=False)
    if r.returncode == 3:
        pytest.skip(f"mermaid could not be loaded from {MERMAID_DIR}: {r.stderr.strip()}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(": ok (flowchart") == len(files)
