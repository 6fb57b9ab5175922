"""Shared test fixtures.

``snapshot(path, actual)`` compares text with a golden file; ``pytest --update-snapshots`` rewrites the golden
files instead (review the diff before committing). Any test can use it: error-text snapshots, rendered stacks, ...
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-snapshots", action="store_true", default=False,
                     help="rewrite golden/snapshot files with the actual output instead of comparing")


@pytest.fixture
def snapshot(request: pytest.FixtureRequest) -> Callable[[Path, str], None]:
    """``snapshot(path, actual)``: assert ``actual`` equals the text in ``path`` (or rewrite it with --update-snapshots)."""
    update = request.config.getoption("--update-snapshots")

    def check(path: Path, actual: str) -> None:
        path = Path(path)
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text(encoding="utf-8") != actual:
                path.write_text(actual, encoding="utf-8", newline="\n")
            return
        if not path.exists():
            pytest.fail(f"no snapshot {path}; run pytest with --update-snapshots to create it, then review it")
        expected = path.read_text(encoding="utf-8")
        if actual != expected:
            diff = "".join(difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                                fromfile=f"{path} (snapshot)", tofile="actual"))
            pytest.fail(f"output differs from snapshot {path} (rerun with --update-snapshots if the change is "
                        f"intended):\n{diff}", pytrace=False)

    return check


@pytest.fixture(autouse=True)
def _own_graph_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets an empty mock-run graph cache (generator/preview/cache.py), never the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    monkeypatch.delenv("TRAINSTACK_GRAPH_CACHE", raising=False)
