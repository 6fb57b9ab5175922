"""No function over 60 lines without a reason: in every module of generator/, a longer function's docstring must say
why it is long in a paragraph that starts with ``Length:``. HELD names every top-level module and package, so a new
one is held from the start (issue 27 split the last long functions of present/ and estimate/)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "generator"
LIMIT = 60
HELD = ("spec", "sizing", "catalog", "render", "preview", "plan", "cli", "live", "platforms", "present", "estimate",
        "api.py", "errors.py", "events.py", "atomic.py", "deferred.py", "dists.py", "__init__.py", "__main__.py")


def _modules() -> list[Path]:
    out: list[Path] = []
    for part in HELD:
        path = ROOT / part
        out += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return out


def long_functions(path: Path) -> list[str]:
    """``file:line name (N lines)`` for each function over the limit whose docstring gives no ``Length:`` reason."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            doc = ast.get_docstring(node) or ""
            if lines > LIMIT and "\nLength: " not in f"\n{doc}":
                out.append(f"{os.path.relpath(path, ROOT.parent)}:{node.lineno} {node.name} ({lines} lines)")
    return out


def test_no_long_function_without_a_reason() -> None:
    found = [f for p in _modules() for f in long_functions(p)]
    assert not found, "split these, or say why they are long in a 'Length:' paragraph of the docstring:\n" + "\n".join(found)


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    bad = tmp_path / "bad.py"
    bad.write_text(f'def f():\n    """Short."""\n{body}\n', encoding="utf-8")
    ok = tmp_path / "ok.py"
    ok.write_text(f'def f():\n    """Short.\n\n    Length: one step per line.\n    """\n{body}\n', encoding="utf-8")
    assert long_functions(bad) and not long_functions(ok)


def test_every_module_of_the_package_is_held() -> None:
    # a new top-level module or package is held from the start: HELD names every one of them
    tops = {p.name for p in ROOT.iterdir() if (p.suffix == ".py" or (p / "__init__.py").is_file())}
    assert tops <= set(HELD), sorted(tops - set(HELD))

