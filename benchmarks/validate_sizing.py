"""Print trainstack's sizing next to published runs, and keep the table in docs/sizing.md up to date.

Every ``benchmarks/validation_*.py`` module with a ``rows()`` function contributes its rows (keys ``quantity``,
``published``, ``trainstack``, ``unit``, ``tolerance``, ``source``; ``outside``: true for a row its module states does
not hold, which the table shows as not holding and which fails if it comes back inside). Run from the repository root:

    python benchmarks/validate_sizing.py                # print the table; exit 1 if a row is out of tolerance
    python benchmarks/validate_sizing.py --write-docs   # also rewrite it in docs/sizing.md between the markers
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "sizing.md"
BEGIN, END = "<!-- validation:begin -->", "<!-- validation:end -->"


def modules() -> list[Path]:
    return sorted((ROOT / "benchmarks").glob("validation_*.py"))


def all_rows() -> list[dict]:
    out: list[dict] = []
    for path in modules():
        spec = importlib.util.spec_from_file_location(f"trainstack_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out.extend({**row, "module": path.name} for row in module.rows())
    return out


def within(row: dict) -> bool:
    """Relative tolerance; a published 0 (a verdict such as "does not fit") must be matched exactly."""
    if row["published"] == 0:
        return row["trainstack"] == 0
    return abs(row["trainstack"] / row["published"] - 1) <= row["tolerance"]


def _ratio(row: dict) -> str:
    return "n/a" if row["published"] == 0 else f"{row['trainstack'] / row['published']:.3f}"


def _num(x: float) -> str:
    if abs(x) >= 1e7:
        return f"{x:.3e}"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:g}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: list[dict]) -> str:
    lines = ["| quantity | published | trainstack | unit | ratio | tolerance | holds | source |",
             "|---|---:|---:|---|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {_cell(r['quantity'])} | {_num(r['published'])} | {_num(r['trainstack'])} | "
                     f"{_cell(r['unit'])} | {_ratio(r)} | ±{r['tolerance']:.0%} | "
                     f"{_holds(r)} | {_cell(r['source'])} |")
    return "\n".join(lines) + "\n"


def _holds(row: dict) -> str:
    if within(row):
        return "yes"
    return "**no** (stated: section 7)" if row.get("outside") else "**no**"


def failures(rows: list[dict]) -> list[str]:
    """The rows out of tolerance that their module does not state are outside, and the rows stated outside that
    hold (the statement is stale)."""
    return [r["quantity"] for r in rows if within(r) == bool(r.get("outside"))]


def docs_section(text: str) -> str:
    """The table between the markers of docs/sizing.md."""
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def write_docs(table: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOCS.write_text(f"{head}{BEGIN}\n{table}{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true", help="rewrite the table in docs/sizing.md")
    args = parser.parse_args(argv)
    rows = all_rows()
    table = markdown_table(rows)
    print(table, end="")
    if args.write_docs:
        write_docs(table)
    bad = failures(rows)
    for q in bad:
        print(f"out of tolerance, or stated outside and holding: {q}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
