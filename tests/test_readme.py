"""README.md stays true to the CLI (review P3-18): every live exit code is listed, the example count matches
examples/, and the render usage line matches what `render` accepts (-o takes one spec)."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from generator.cli import main
from generator.live import errors as live_errors

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def _exit_paragraph() -> str:
    start = README.index("Exit codes:")
    return README[start:README.index("\n\n", start)]


def test_every_live_exit_code_is_listed() -> None:
    codes = {v for k, v in vars(live_errors).items() if k.startswith("EXIT_") and 20 <= v < 100}
    listed = {int(n) for n in re.findall(r"\((\d\d)[:,)]", _exit_paragraph())}
    assert codes <= listed, sorted(codes - listed)


def test_the_example_count_is_the_number_of_examples() -> None:
    count = len(list((ROOT / "examples").glob("*.yaml")))
    assert f"There are {NUMBERS[count]}\nexamples" in README or f"There are {NUMBERS[count]} examples" in README
    for path in (ROOT / "examples").glob("*.yaml"):
        assert f"examples/{path.name}" in README


def test_render_usage_says_o_takes_one_spec(tmp_path: Path) -> None:
    assert "`trainstack render SPEC... [-o DIR]" not in README and "`trainstack render SPEC -o DIR`" in README
    specs = [str(ROOT / "examples" / "finetune-7b.yaml"), str(ROOT / "examples" / "pretrain-70b.yaml")]
    result = CliRunner().invoke(main, ["render", *specs, "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and "-o takes one spec" in result.output
