"""The plan as a Mermaid flowchart (generator/present/diagram.py): escaping, determinism, grouping, and the
syntax checked by the real Mermaid parser under Node (tests/mermaid/parse.mjs; skipped without node or
mermaid)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from test_lingjun import LINGJUN_SPEC

from generator import api
from generator.present import diagram

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
MERMAID_DIR = Path(os.environ.get("TRAINSTACK_MERMAID_DIR", Path.home() / ".cache" / "trainstack-mermaid"))
INSTALL = f'npm install --prefix "{MERMAID_DIR}" mermaid@11 jsdom@29'
# a node definition: an id at the start of a line, then a shape opening (an edge has a space after the id)
NODE_DEF = re.compile(r"^\s+(?!subgraph\b)([a-z][a-z0-9_]*)[\[\(]", re.MULTILINE)


def lingjun_spec(tmp_path: Path) -> Path:
    spec = tmp_path / "lj.yaml"
    spec.write_text(textwrap.dedent(LINGJUN_SPEC))
    return spec


def test_labels_are_escaped_for_mermaid() -> None:
    assert diagram.label('a "b" <c> #d; `e` %%f') == "a #quot;b#quot; #60;c#62; #35;d#59; #96;e#96; #37;#37;f"
    assert diagram.label("x\ny|z") == "x y#124;z"
    assert diagram.label("10.0.0.0/16 cn-wulanchabu-c") == "10.0.0.0/16 cn-wulanchabu-c"


def test_rank_ranges() -> None:
    assert diagram.rank_ranges([5, 0, 1, 2, 7, 8]) == "0-2, 5, 7-8"
    assert diagram.rank_ranges([]) == ""


@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda p: p.stem)
def test_every_label_is_quoted_and_ids_are_safe(spec: Path) -> None:
    text = diagram.flowchart(api.plan(spec))
    assert text == diagram.flowchart(api.plan(spec))  # deterministic
    assert text.startswith("flowchart LR\n") and text.endswith("\n") and "```" not in text
    for ident, in (m.groups() for m in NODE_DEF.finditer(text)):
        assert re.fullmatch(r"[a-z][a-z0-9_]*", ident)
    for line in text.splitlines()[1:]:
        for part in re.findall(r'"[^"]*"', line):
            assert "\n" not in part
        assert line.count('"') % 2 == 0, line


def test_the_64_node_example_is_drawn_in_groups_whose_count_does_not_follow_the_nodes(tmp_path: Path) -> None:
    spec = ROOT / "examples" / "pretrain-70b.yaml"
    big = api.plan(spec)
    assert big.compute.nodes == 64
    data = yaml.safe_load(spec.read_text())
    data["compute"]["nodes"] = 32
    small_spec = tmp_path / "small.yaml"
    small_spec.write_text(yaml.safe_dump(data))
    small = api.plan(small_spec)
    assert small.compute.nodes == 32
    big_nodes = NODE_DEF.findall(diagram.flowchart(big))
    small_nodes = NODE_DEF.findall(diagram.flowchart(small))
    assert big_nodes == small_nodes and len(big_nodes) < 20
    assert "ranks 0-63" in diagram.flowchart(big) and "4 deployment sets" in diagram.flowchart(big)


def test_lingjun_variant_draws_the_vpd_subnets_and_node_group(tmp_path: Path) -> None:
    plan = api.plan(lingjun_spec(tmp_path))
    text = diagram.flowchart(plan)
    assert f"Lingjun VPD {plan.lingjun.vpd_cidr}" in text
    assert f"node group {plan.lingjun.node_group}" in text
    assert all(sn.cidr in text for sn in plan.lingjun.subnets)
    # Lingjun nodes take no role; a RAM user holds the checkpoint policy
    assert "RAM user for checkpoints" in text and f"RAM role {plan.name}" not in text


HOSTILE = 'x"] --> evil[\"y\n%% end `z` <b>#amp; |w| ;end'


def hostile_plan() -> object:
    """The 70B example with hostile text in every name a label prints, paused, NAS, no egress, admin CIDRs."""
    import dataclasses

    p = api.plan(ROOT / "examples" / "pretrain-70b.yaml")
    n, s, k, c = p.network, p.storage, p.checkpoints, p.compute
    return dataclasses.replace(
        p, name=HOSTILE, region=HOSTILE,
        network=dataclasses.replace(n, egress="none", admin_cidrs=("203.0.113.0/24", HOSTILE),
                                    vswitches=tuple(dataclasses.replace(v, name=HOSTILE) for v in n.vswitches)),
        storage=dataclasses.replace(s, kind="extreme-nas", storage_type=HOSTILE, mount_path=HOSTILE,
                                    dataset=dataclasses.replace(s.dataset, source=HOSTILE)),
        checkpoints=dataclasses.replace(k, bucket=HOSTILE, prefix=HOSTILE),
        compute=dataclasses.replace(c, paused=True, deployment_sets=tuple(
            dataclasses.replace(d, name=HOSTILE, strategy=HOSTILE) for d in c.deployment_sets)))


def test_hostile_names_stay_inside_their_labels() -> None:
    text = diagram.flowchart(hostile_plan())
    assert "evil" not in NODE_DEF.findall(text) and "-->" not in diagram.label(HOSTILE)
    assert "%%" not in text and "`" not in text and "<b>" not in text and "nat" not in NODE_DEF.findall(text)
    assert text.count(diagram.label(HOSTILE)) >= 8


def _mermaid_parser() -> tuple[str, Path]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the Mermaid syntax check needs Node.js")
    modules = MERMAID_DIR / "node_modules"
    if not (modules / "mermaid").is_dir() or not (modules / "jsdom").is_dir():
        pytest.skip(f"mermaid is not installed in {MERMAID_DIR} (.ci/run installs it when npm is reachable; "
                    f"or run: {INSTALL})")
    return node, ROOT / "tests" / "mermaid" / "parse.mjs"


def test_mermaid_parses_every_example_a_lingjun_plan_and_hostile_names(tmp_path: Path) -> None:
    node, script = _mermaid_parser()
    files = []
    for spec in [*EXAMPLES, lingjun_spec(tmp_path)]:
        out = tmp_path / f"{spec.stem}.mmd"
        out.write_text(diagram.flowchart(api.plan(spec)))
        files.append(str(out))
    hostile = tmp_path / "hostile.mmd"
    hostile.write_text(diagram.flowchart(hostile_plan()))
    files.append(str(hostile))
    result = subprocess.run([node, str(script), str(MERMAID_DIR), *files], capture_output=True, text=True,
                            timeout=120, check=False)
    if result.returncode == 3:
        pytest.skip(f"mermaid could not be loaded from {MERMAID_DIR}: {result.stderr.strip()}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(": ok (flowchart") == len(files)


def test_the_parser_rejects_a_broken_diagram(tmp_path: Path) -> None:
    node, script = _mermaid_parser()
    bad = tmp_path / "bad.mmd"
    bad.write_text('flowchart LR\n  a["unclosed\n')
    result = subprocess.run([node, str(script), str(MERMAID_DIR), str(bad)], capture_output=True, text=True,
                            timeout=120, check=False)
    if result.returncode == 3:
        pytest.skip(f"mermaid could not be loaded from {MERMAID_DIR}: {result.stderr.strip()}")
    assert result.returncode == 1


def test_plan_format_mermaid_prints_the_diagram_and_json_still_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from generator.cli import main

    monkeypatch.chdir(ROOT)
    spec = "examples/pretrain-70b.yaml"
    result = CliRunner().invoke(main, ["plan", spec, "--format", "mermaid"])
    assert result.exit_code == 0 and result.output == diagram.flowchart(api.plan(spec))
    assert CliRunner().invoke(main, ["plan", spec, "--format", "text"]).output.startswith("Plan for pretrain-70b")
    assert CliRunner().invoke(main, ["plan", spec]).output.startswith("Plan for pretrain-70b")
    assert CliRunner().invoke(main, ["plan", spec, "--json"]).output.startswith("{")
    assert CliRunner().invoke(main, ["plan", spec, "--format", "svg"]).exit_code == 2


def test_the_readme_fence_refuses_a_body_that_would_close_it() -> None:
    from generator.render import escape

    assert escape.markdown_fence_body("flowchart LR\n  a[\"x\"]\n") == "flowchart LR\n  a[\"x\"]\n"
    for body in ("flowchart LR\n```\n", "flowchart LR\n  ~~~\n", "a\r\n"):
        with pytest.raises(escape.UnsafeValue):
            escape.markdown_fence_body(body)
    assert "```" not in diagram.label("```")


# --------------------------------------------------------------------------------------------- in the diff
def test_the_diff_markdown_draws_one_picture_of_the_change_not_the_topology(tmp_path: Path) -> None:
    from generator.preview import diff as d

    spec = ROOT / "examples" / "pretrain-70b.yaml"
    bigger = tmp_path / "pretrain-70b.yaml"
    bigger.write_text(spec.read_text().replace("max_days: 35", "max_days: 20"))
    result = d.diff_sides(str(spec), str(bigger))
    markdown = d.format_markdown(result)
    assert markdown.count("```mermaid") == 1  # the diff's picture (tests/test_diff_picture.py), drawn once
    block = markdown.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    # 20 days need more nodes than the 64 of 35 days (the deadline, then the global batch, sets the count)
    nodes = api.plan(bigger).compute.nodes
    assert nodes > 64
    assert f"64 -#62; {nodes} nodes" in block and "class nodes interrupt" in block and "ranks 0-" not in block
    same = d.format_markdown(d.diff_sides(str(spec), str(spec)))
    assert "```mermaid" not in same  # nothing changes: no picture
