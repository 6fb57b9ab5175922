"""What a pull request changes in spec terms, as the diff's first screen says it (issue 25).

Each test diffs examples/pretrain-70b.yaml against one realistic edit through the real pipeline (plan, render,
mock run; ~3 s each): a scale-up, spot turned off, a rename, a pause and a deleted spec. The headline says what
happens, the "what changed" table gives base -> head from the two plans, a rename bills both stacks and is gated,
and a deleted spec shows its stack's deletion and what keeps billing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from generator.plan import warns
from generator.preview import diff as d
from generator.preview.diff import notes
from generator.preview.diff import reasons as why

ROOT = Path(__file__).resolve().parents[1]
PRETRAIN = ROOT / "examples" / "pretrain-70b.yaml"


def _variant(tmp_path: Path, name: str, old: str, new: str) -> Path:
    text = PRETRAIN.read_text()
    assert old in text, old
    path = tmp_path / f"{name}.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def _facts(result: d.DiffResult) -> dict[str, tuple[str, str]]:
    assert result.what is not None
    return {f.label: (f.base, f.head) for f in result.what.facts}


def test_a_scale_up_is_headed_grow_with_the_layout_change_and_new_warnings(tmp_path: Path) -> None:
    result = d.diff_sides(str(PRETRAIN), str(_variant(tmp_path, "grow", "  nodes: auto  ", "  nodes: 96    ")))
    assert result.what is not None and result.what.kind == "grow"
    assert result.what.headline.startswith("grow: 64 -> 96 nodes (+32)")
    facts = _facts(result)
    assert facts["nodes"] == ("64", "96") and facts["GPUs"] == ("512 x A100-80G", "768 x A100-80G")
    assert facts["layout"][0] != facts["layout"][1] and "layout" in result.what.headline
    (reshard,) = [n for n in result.what.notes if n.code == notes.Reshard.code]
    assert (reshard.base_tp, reshard.base_pp) != (reshard.head_tp, reshard.head_pp)
    assert (reshard.base_layout, reshard.head_layout) == facts["layout"]
    throughput = [w.fields() for w in result.what.new_warnings if w.code == warns.CpfsThroughputShort.code]
    assert [f["nodes"] for f in throughput] == [96]
    assert not result.what.gates
    md = d.format_markdown(result)
    assert md.index("| what changed | base | head |") < md.index("```mermaid") < md.index("replaces-nodes (32)")
    assert "| **nodes** | 64 | **96** |" in md and "64 -#62; 96 nodes" in md  # the count in the node box


def test_spot_off_replaces_only_the_spot_ranks(tmp_path: Path) -> None:
    result = d.diff_sides(str(PRETRAIN), str(_variant(tmp_path, "spotoff", "spot:\n  enabled: true",
                                                       "spot:\n  enabled: false")))
    nodes = [c for c in result.changes if c.type == d.INSTANCE]
    # without spot reclaims fewer nodes meet the deadline (40, not 64: the time model of docs/sizing.md section 7),
    # so the ranks past 40 go; of the rest, only the spot ranks are replaced (on demand now), never 000 and 001
    assert {c.action for c in nodes} == {"replace", "delete"} and len(nodes) == 62
    assert sum(c.action == "delete" for c in nodes) == 24
    assert {c.name for c in nodes}.isdisjoint({"pretrain-70b-node-000", "pretrain-70b-node-001"})
    assert _facts(result)["spot"] == ("62 spot + 2 on demand", "off (all on demand)")
    assert result.what is not None and result.what.kind == "replace"


def test_a_rename_is_a_new_stack_that_bills_beside_the_old_one_and_is_gated(tmp_path: Path) -> None:
    result = d.diff_sides(str(PRETRAIN), str(_variant(tmp_path, "rename", "name: pretrain-70b\n",
                                                       "name: pretrain-70b-v2\n")))
    assert result.what is not None and result.what.kind == "new stack"
    assert result.what.gates == ("new-stack",)
    assert [(n.code, n.fields()) for n in result.what.notes] == [
        (notes.OldStackKept.code, {"old_stack": "pretrain-70b/dev"}),
        (notes.NewStackEmpty.code, {"stack": "pretrain-70b-v2/dev"}),
    ]
    cost = result.cost
    assert cost is not None and cost.changed and cost.base_stack_kept == "pretrain-70b/dev"
    old, new = cost.total("hour").old, cost.total("hour").new
    assert old is not None and new == pytest.approx(2 * old, abs=0.02)  # both stacks bill
    assert cost.head_alone.total_per_hour == cost.base.total_per_hour
    payload = json.loads(d.format_json(result))
    assert payload["summary"]["gates"] == ["new-stack"] and payload["cost"]["changed"] is True
    assert payload["what_changed"]["kind"] == "new stack"
    assert payload["summary"]["cost_month"].startswith("+6.78 M CNY/month (+100.0%)")


def test_a_pause_is_headed_pause_with_what_it_still_costs(tmp_path: Path) -> None:
    paused = _variant(tmp_path, "pause", "compute:\n", "compute:\n  paused: true\n")
    result = d.diff_sides(str(PRETRAIN), str(paused))
    assert result.what is not None and result.what.kind == "pause"
    assert result.what.headline.startswith("pause: 64 nodes released") and "CNY/day" in result.what.headline
    assert _facts(result)["nodes"] == ("64", "0 (paused; 64 when resumed)")
    released = [c for c in result.changes if c.type == d.INSTANCE]
    assert released and all(c.action == "delete" and c.reasons == (why.NodePaused(),) for c in released)
    back = d.diff_sides(str(paused), str(PRETRAIN))
    assert back.what is not None and back.what.kind == "resume"


def test_a_deleted_spec_shows_its_stacks_deletion_and_what_keeps_billing(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "specs").mkdir(parents=True)
    (repo / "specs" / "p.yaml").write_text(PRETRAIN.read_text())
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "base"], ["rm", "-q", "specs/p.yaml"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    r = subprocess.run([sys.executable, "-m", "generator.cli", "diff", "main:specs/p.yaml", "specs/p.yaml",
                        "--format", "json"], cwd=repo, text=True, capture_output=True, timeout=300, check=False)
    assert r.returncode == 2, r.stderr  # changes: the stack's deletion
    payload = json.loads(r.stdout)
    assert payload["what_changed"]["kind"] == "deleted stack"
    assert {c["action"] for c in payload["changes"]} == {"delete"}
    assert set(payload["summary"]["gates"]) == {"data-at-risk", "deleted-stack"}
    assert "keeps billing" in payload["what_changed"]["headline"] and "trainstack destroy" in payload["what_changed"]["headline"]


def test_expert_and_context_parallelism_show_when_a_plan_has_them() -> None:
    """Plans gain ``ep``/``cp`` with MoE and long-context layouts; the table reads them when present."""
    from types import SimpleNamespace

    from generator.preview.diff import summary

    dense = SimpleNamespace(compute=SimpleNamespace(tp=8, pp=2, dp=4))
    moe = SimpleNamespace(compute=SimpleNamespace(tp=8, pp=2, dp=4, ep=8, cp=2))
    ones = SimpleNamespace(compute=SimpleNamespace(tp=8, pp=2, dp=4, ep=1, cp=1))
    assert summary._layout(dense) == summary._layout(ones) == "tp=8 pp=2 dp=4"  # type: ignore[arg-type]
    assert summary._layout(moe) == "tp=8 pp=2 dp=4 ep=8 cp=2"  # type: ignore[arg-type]


def test_money_reads_in_thousands_and_millions() -> None:
    from generator.preview.diff.summary import money_change

    assert money_change(6_787_153.10, 10_032_083.40, "CNY/month") == "+3.24 M CNY/month (+47.8%)"
    assert money_change(0.0, 203_180.0) == "+203.18 k (new)"
    assert money_change(100.0, 100.0) == "unchanged" and money_change(None, 1.0) == "n/a"


def test_the_text_report_gives_the_headline_once_with_its_kind(tmp_path: Path) -> None:
    # the headline starts with its kind (grow:, replace:, new stack ...): the text report printed the kind again
    head = tmp_path / "pretrain-70b.yaml"
    head.write_text(PRETRAIN.read_text().replace("max_days: 35 ", "max_days: 22 "))
    result = d.diff_sides(str(PRETRAIN), str(head))
    assert result.what is not None and result.what.kind == "grow"
    line = d.format_text(result).splitlines()[1]
    assert line == result.what.headline and line.startswith("grow: ")
    assert not line.startswith("grow: grow")
