"""Tests assert codes and fields, not prose (issue 27): the asserts that match English words of a message are
counted, and each test file is held to the count it has now (``CAP``), so the count can only fall.

An assert matches prose when it looks for words in a text: ``assert "some words" in out``, ``out.startswith("some
words")``, ``re.search("some words", err)``, ``err == "a whole sentence of words"`` or ``pytest.raises(X,
match="some words")``, where the words are two or more lower-case English words and the string holds none of the
marks of a command, a path, a table or code (``/ = $ | < > { }``, ``--``, a line break). A check of a value of a code
or of a field (``kind == "new stack"``) is not prose; neither is a word the product puts in a generated file.

What tests assert instead: the events' codes and typed fields (``generator/events.py``: warnings ``TSW``, refusals
``TSP``, spec problems ``TSS``/``TSC``/``TSH``, diff reasons and notes ``TSD``, lint findings' ``rule``), the
``--json`` outputs, plan.json, the exception objects. A test whose job is the wording a user reads (the file, line
and caret of an error, a message kind's one sentence) says so with a ``# wording`` comment on the assert, and is
not counted; keep one per message kind.

``python tests/test_prose_asserts.py [TESTS_FOLDER]`` prints the figures: all asserts, prose asserts and the share.
When a file's count falls, lower its ``CAP`` (or remove the file from it at 0)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# English: two lower-case words in a row; not a command, path, table, markup or code
_WORDS = re.compile(r"\b[a-z]{2,} [a-z]{2,}\b")
_CODE_MARKS = re.compile(r"[/=${}|<>]|--|\n")
_SENTENCE_WORDS = 4  # an equality is prose when the string is a sentence, not a value like "new stack"
_TEXT_METHODS = {"startswith", "endswith", "count", "find", "index", "search", "match", "fullmatch", "findall"}
WORDING = "# wording"

# Each test file's prose asserts today (issue 27): a file may hold at most this many; one not listed, none.
CAP: dict[str, int] = {
    "boot/test_boot.py": 18,
    "boot/test_boot_container.py": 2,
    "boot/test_boot_lingjun.py": 4,
    "e2e/test_cluster.py": 2,
    "live/test_failures.py": 8,
    "live/test_sdk_calls.py": 2,
    "test_bad_input.py": 3,
    "test_catalog.py": 1,
    "test_ci_workflow.py": 8,
    "test_cli.py": 9,
    "test_cluster.py": 4,
    "test_codes.py": 1,
    "test_container_image.py": 2,
    "test_context_parallel.py": 5,
    "test_cost.py": 8,
    "test_decision_texts.py": 10,
    "test_derive.py": 1,
    "test_diagram.py": 6,
    "test_diff.py": 15,
    "test_diff_cost.py": 2,
    "test_diff_grow.py": 2,
    "test_diff_picture.py": 2,
    "test_diff_summary.py": 3,
    "test_dlc.py": 2,
    "test_dlc_jobs.py": 14,
    "test_ecs_bisect.py": 1,
    "test_ecs_cure.py": 5,
    "test_ecs_jobs.py": 8,
    "test_escaping.py": 1,
    "test_estimate.py": 5,
    "test_estimated_prices.py": 3,
    "test_facts.py": 2,
    "test_fp8.py": 2,
    "test_frameworks.py": 2,
    "test_heal.py": 10,
    "test_hostile_input.py": 11,
    "test_interleaved.py": 3,
    "test_keep_last.py": 4,
    "test_keypair.py": 3,
    "test_limits.py": 2,
    "test_lingjun.py": 1,
    "test_lingjun_jobs.py": 9,
    "test_lint.py": 9,
    "test_live.py": 29,
    "test_milestones.py": 5,
    "test_moe.py": 4,
    "test_mountaddr.py": 12,
    "test_network_plan.py": 5,
    "test_network_time.py": 1,
    "test_pause.py": 6,
    "test_plan_markdown.py": 3,
    "test_planner.py": 8,
    "test_readme.py": 2,
    "test_reasons.py": 1,
    "test_schedule.py": 2,
    "test_sizing.py": 2,
    "test_spec_docs.py": 2,
    "test_stackdir.py": 6,
    "test_stock.py": 3,
    "test_unavailable.py": 4,
    "test_userdata.py": 4,
    "test_weights.py": 9,
    "test_weights_dlc.py": 13,
}


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    return []


def is_prose(text: str, words: int = 2) -> bool:
    """Two (or ``words``) English words and no mark of code."""
    if _CODE_MARKS.search(text) or not _WORDS.search(text):
        return False
    return len(re.findall(r"\b[A-Za-z]{2,}\b", text)) >= words


def _matches_prose(test: ast.AST) -> bool:
    for n in ast.walk(test):
        if isinstance(n, ast.Compare):
            for op, left, right in zip(n.ops, [n.left, *n.comparators], n.comparators):
                if isinstance(op, (ast.In, ast.NotIn)) and any(is_prose(s) for s in _strings(left)):
                    return True
                if isinstance(op, (ast.Eq, ast.NotEq)) and any(
                    is_prose(s, _SENTENCE_WORDS) for side in (left, right) for s in _strings(side)
                ):
                    return True
        method = n.func.attr if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) else ""
        if method in _TEXT_METHODS and any(is_prose(s) for a in n.args for s in _strings(a)):
            return True
    return False


def _is_raises_with_match(n: ast.AST) -> ast.expr | None:
    if not isinstance(n, ast.Call):
        return None
    name = n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id if isinstance(n.func, ast.Name) else ""
    if name not in ("raises", "warns"):
        return None
    return next((k.value for k in n.keywords if k.arg == "match"), None)


def _tables(tree: ast.Module) -> dict[str, list[str]]:
    """The strings of each module-level table (``NAME = {...}`` / ``[...]`` / ``(...)``), by name."""
    out = {}
    for n in tree.body:
        target = n.targets[0] if isinstance(n, ast.Assign) and len(n.targets) == 1 else getattr(n, "target", None)
        value = getattr(n, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
            out[target.id] = [s for v in ast.walk(value) for s in _strings(v) if isinstance(v, ast.Constant)]
    return out


def _searched(node: ast.AST) -> set[str]:
    """The names an assert looks for in a text (``assert NAME in out``)."""
    return {
        left.id
        for n in ast.walk(node)
        if isinstance(n, ast.Compare)
        for op, left in zip(n.ops, [n.left, *n.comparators])
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(left, ast.Name)
    }


def _table_rows(fn: ast.FunctionDef, tables: dict[str, list[str]]) -> tuple[int, int, int]:
    """Rows of a table of words that one assert of ``fn`` checks (``for fragment in TABLE[name]: assert fragment in
    err``, or a parametrized ``text`` in ``assert text in err``): (line, rows, prose rows); (0, 0, 0) for none."""
    for n in ast.walk(fn):
        if isinstance(n, ast.For) and isinstance(n.target, ast.Name):
            names = {m.id for m in ast.walk(n.iter) if isinstance(m, ast.Name)} & tables.keys()
            if names and any(n.target.id in _searched(a) for a in n.body if isinstance(a, ast.Assert)):
                rows = [s for name in sorted(names) for s in tables[name]]
                return n.lineno, len(rows), sum(is_prose(s) for s in rows)
    for deco in fn.decorator_list:
        if not (isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "parametrize" and len(deco.args) > 1):
            continue
        names = _strings(deco.args[0])
        params = [x.strip() for x in names[0].split(",")] if len(names) == 1 else names
        looked = {m for a in ast.walk(fn) if isinstance(a, ast.Assert) for m in _searched(a)}
        rows = deco.args[1].elts if isinstance(deco.args[1], (ast.List, ast.Tuple)) else []
        for i, param in enumerate(params):
            if param in looked and rows:
                values = [r.elts[i] if isinstance(r, ast.Tuple) and len(r.elts) > i else r for r in rows]
                prose = sum(any(is_prose(s) for s in _strings(v)) for v in values)
                return fn.lineno, len(values), prose
    return 0, 0, 0


def scan(path: Path) -> tuple[int, list[int]]:
    """All asserts of a test file (``assert`` statements, ``pytest.raises(match=...)`` and each row of a table of
    words an assert checks) and the lines of those that match prose (a line once per prose row), ``# wording`` ones
    left out."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    tables = _tables(tree)
    total, prose = 0, []
    for n in ast.walk(tree):
        match = _is_raises_with_match(n)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            line, rows, hits = _table_rows(n, tables)  # type: ignore[arg-type]
            total += max(rows - 1, 0)  # the assert itself is counted below
            prose += [line] * hits
            continue
        if isinstance(n, ast.Assert):
            total += 1
            hit = _matches_prose(n.test)
        elif match is not None:
            total += 1
            hit = any(is_prose(s) for s in _strings(match))
        else:
            continue
        span = lines[n.lineno - 1 : (n.end_lineno or n.lineno)]
        if hit and not any(WORDING in line for line in span):
            prose.append(n.lineno)
    return total, sorted(prose)


def figures(folder: Path = TESTS) -> tuple[int, dict[str, list[int]]]:
    """All asserts under ``folder``, and the prose asserts' lines by file (relative to ``folder``)."""
    total, by_file = 0, {}
    for path in sorted(folder.rglob("*.py")):
        count, prose = scan(path)
        total += count
        if prose:
            by_file[path.relative_to(folder).as_posix()] = prose
    return total, by_file


def test_no_file_holds_more_prose_asserts_than_its_cap() -> None:
    _, by_file = figures()
    over = [f"{f}: {len(lines)} > {CAP.get(f, 0)} (lines {', '.join(map(str, lines))})"
            for f, lines in sorted(by_file.items()) if len(lines) > CAP.get(f, 0)]
    assert not over, ("assert codes and fields, not words (or mark a wording test '# wording'):\n"
                      + "\n".join(over))


def test_the_scan_tells_prose_from_codes_and_fields(tmp_path: Path) -> None:
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import pytest\n"
        "def test_x(out, err, w, e):\n"
        "    assert 'is not honoured on' in out\n"  # prose
        "    assert err.startswith('no such file here')\n"  # prose
        "    with pytest.raises(ValueError, match='cannot both be empty'):\n"  # prose
        "        pass\n"
        "    assert w.code == 'TSW032' and dict(w.fields)['path'] == 'network.jumbo_frames'\n"
        "    assert 'trainstack diff \"$base\" --format json' in out\n"  # a command
        "    assert e.kind == 'new stack'\n"  # a field's value
        "    assert 'the wording a user reads' in err  # wording: the one sentence of this kind\n",
        encoding="utf-8",
    )
    assert scan(sample) == (7, [3, 4, 5])


def main(argv: list[str]) -> None:
    folder = Path(argv[1]) if len(argv) > 1 else TESTS
    total, by_file = figures(folder)
    prose = sum(len(v) for v in by_file.values())
    print(f"{folder}: {total} asserts, {prose} match prose ({prose / max(total, 1):.1%})")
    for f, lines in sorted(by_file.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {len(lines):4d}  {f}")


if __name__ == "__main__":
    main(sys.argv)
