"""``trainstack plan --format markdown``: the sections a pull request needs, tables that parse, and hostile text escaped.

The Markdown helpers (:mod:`generator.present.md`) are shared with the rendered README
(:mod:`generator.render.escape`), whose own round trips are in ``tests/test_escaping.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.cli import main
from generator.present import md
from generator.render import escape

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = "a|b <script>alert(1)</script> [x](y) `tick` ``double`` *bold* _it_ #h &amp; ~~s~~ \\ done"


def _plan_md(*args: str) -> str:
    result = CliRunner().invoke(main, ["plan", "--format", "markdown", *args])
    assert result.exit_code == 0, result.output
    return result.output


def _cells(row: str) -> list[str]:
    """A GFM table row's cells: split at every ``|`` that is not backslash-escaped (also inside code spans)."""
    inner = row.strip()
    assert inner.startswith("|") and inner.endswith("|") and not inner.endswith("\\|"), row
    return re.split(r"(?<!\\)\|", inner[1:-1])


def _without_code_spans(text: str) -> str:
    return re.sub(r"(?<![\\`])(`+)(?!`).*?(?<!`)\1(?!`)", "", text)


def _tables(text: str) -> list[list[str]]:
    """Every block of consecutive lines starting with ``|``."""
    tables: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables


def _assert_tables_parse(text: str) -> int:
    tables = _tables(text)
    for rows in tables:
        assert len(rows) >= 2, rows
        width = len(_cells(rows[0]))
        assert all(re.fullmatch(r"\s*:?-{3,}:?\s*", c) for c in _cells(rows[1])), rows[1]
        for row in rows:
            assert len(_cells(row)) == width, f"{row!r} has {len(_cells(row))} cells, the header {width}"
    return len(tables)


# the committed plan's figure (stacks/ is golden and tests/test_examples checks it is current), so a refit of the
# time model moves the checkpoint bucket's cost without rewriting this test
_PRETRAIN = json.loads((ROOT / "stacks" / "pretrain-70b" / "plan.json").read_text())
_PRETRAIN_PER_HOUR = f"{_PRETRAIN['cost']['total_per_hour']:,.2f}"
_PRETRAIN_WALL = _PRETRAIN["schedule"]["wall_hours"]
_PRETRAIN_GIB = next(c["per_gpu_gib"] for c in _PRETRAIN["candidates"] if c["verdict"] == "chosen")


def test_pretrain_plan_as_markdown_has_the_sections_and_tables_parse() -> None:
    out = _plan_md("examples/pretrain-70b.yaml")
    assert out.startswith("<!-- trainstack-plan -->\n### trainstack plan: `pretrain-70b`")
    for heading in ("#### Cost per hour (CNY)", "#### Decisions", "#### Instance types considered", "#### Warnings",
                    "#### Tags"):
        assert f"\n{heading}\n" in out, heading
    summary = {_cells(r)[0].strip(): _cells(r)[1].strip() for r in _tables(out)[0][2:]}
    assert summary["instance type"] == "`ecs.ebmgn7ex.32xlarge` bare metal"
    assert summary["nodes"] == "64"
    assert summary["GPUs"].startswith("512 x A100-80G")
    assert summary["layout"].startswith("tp=8 pp=1 dp=64 ZeRO-1")
    # Megatron's fp32 main grads (auto); the committed plan's figure
    assert summary["memory per GPU"].startswith(f"{_PRETRAIN_GIB:.2f} GiB of 80.00 GiB")
    assert summary["cost per hour"] == f"{_PRETRAIN_PER_HOUR} CNY (ESTIMATE)"  # the node price is an estimate
    assert "| compute on demand | 555.86 | ESTIMATE |" in out and "| shared storage | 52.93 | list price |" in out
    assert "- **nodes**: 64  \n  set by the deadline: at least 48 nodes finish" in out
    assert "\n#### Schedule\n" in out and f"| wall-clock | {_PRETRAIN_WALL:.1f} | {_PRETRAIN_WALL / 24:.1f} |" in out
    assert f"| `ecs.ebmgn7ex.32xlarge` | 64 | 512 | 8/1/64 | {_PRETRAIN_GIB:.1f} | 9,171.69 | **chosen** |" in out
    assert "| no eRDMA or RoCE, and network.rdma is true |" in out  # a runner-up and why it lost
    assert "- :warning: before \\`trainstack up\\`, tag the dataset bucket" in out
    assert _assert_tables_parse(out) == 5  # summary, cost, schedule, candidates, tags


def test_json_and_text_are_unchanged_by_the_format_option() -> None:
    runner = CliRunner()
    text = runner.invoke(main, ["plan", "examples/finetune-7b.yaml"]).output
    assert text == runner.invoke(main, ["plan", "--format", "text", "examples/finetune-7b.yaml"]).output
    assert text.startswith("Plan for finetune-7b")
    as_json = runner.invoke(main, ["plan", "--json", "examples/finetune-7b.yaml"]).output
    assert as_json.startswith("{") and '"schema_version"' in as_json
    bad = runner.invoke(main, ["plan", "--format", "html", "examples/finetune-7b.yaml"])
    assert bad.exit_code == 2


def test_hostile_tags_and_waiver_reasons_are_escaped(tmp_path: Path) -> None:
    spec = tmp_path / "hostile.yaml"
    spec.write_text(
        # no checkpoint bucket: OSS limits bucket tags to letters, digits and a few signs
        "name: hostile-md\nregion: cn-wulanchabu\nmodel: {parameters: 7B}\ncompute: {nodes: 1}\n"
        "checkpoints: {enabled: false}\n"
        f"tags:\n  {json.dumps('k|<b>[x](y)`')}: {json.dumps(HOSTILE)}\n  team: 'a|b|c'\n"
        f"waivers:\n  - rule: TS001\n    reason: {json.dumps(HOSTILE)}\n")
    out = _plan_md(str(spec))
    prose = _without_code_spans(out)  # HTML and links inside a code span are shown as text
    own = r"<(?:!-- trainstack-plan -->|/?details>|/?summary>|/?sub>)"
    assert not re.search(r"(?<!\\)<(?!" + own[1:] + ")", prose), "raw HTML from the spec"
    assert not re.search(r"(?<!\\)\]\(", prose), "a link from the spec"
    assert "\\[x\\](y)" in out and "\\<script>" in out
    assert "a\\|b \\<script>" in out  # the waiver reason, pipes escaped inside the table
    assert "&amp;amp;" in out  # an entity in the text is shown, not decoded
    waived = _tables(out.split("#### Waived lint rules", 1)[1])[0]
    assert [len(_cells(r)) for r in waived] == [2, 2, 2]
    tags = _tables(out.split("#### Tags", 1)[1])[0]
    assert [len(_cells(r)) for r in tags] == [2, 2, 2, 2]
    assert "| `team` | `a\\|b\\|c` |" in out  # a code span in a cell: pipes escaped for the table
    _assert_tables_parse(out)
    # every backquote outside a code span is escaped, so the reason cannot open one
    reason_row = next(r for r in waived if "TS001" in r)
    assert not re.search(r"(?<!\\)`", _cells(reason_row)[1])


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_render_keeps_its_markdown_escaping_and_cells_stay_cells(value: str) -> None:
    assert escape.markdown(value) == md.text(value) and isinstance(escape.markdown(value), escape.Escaped)
    assert escape.markdown_code(value) == md.code(value) and isinstance(escape.markdown_code(value), escape.Escaped)
    row = md.table(["a", "b"], [[md.text(value), md.code(value, cell=True)]]).splitlines()[-1]
    assert len(_cells(row)) == 2


def test_paused_and_lingjun_plans_as_markdown(tmp_path: Path) -> None:
    paused = tmp_path / "paused.yaml"
    paused.write_text((ROOT / "examples" / "pretrain-70b.yaml").read_text().replace(
        "bare_metal: prefer", "bare_metal: prefer\n  paused: true"))
    out = _plan_md(str(paused))
    assert "| nodes | **PAUSED**: none declared; resumes as 64 |" in out
    assert f"| cost per hour once resumed | {_PRETRAIN_PER_HOUR} CNY (ESTIMATE) |" in out
    assert re.search(r"\| cost per hour while paused \| [\d,.]+ CNY \(ESTIMATE\); not priced: NAT gateway, EIP \|", out)
    assert "#### Cost per hour once resumed (CNY)" in out
    _assert_tables_parse(out)
    lingjun = tmp_path / "lj.yaml"
    lingjun.write_text("name: lj-run\nregion: cn-wulanchabu\nmodel: {preset: llama-2-70b, tokens: 20B}\n"
                       "compute: {platform: lingjun, image_id: i190982651690986913088, nodes: 4}\n")
    out = _plan_md(str(lingjun))
    assert "| instance type | `efg1.nvga8n` bare metal |" in out and "| compute spot | 0.00 | none |" in out
    _assert_tables_parse(out)
