"""Fixtures of tests/e2e: tests/live's real Pulumi CLI and program venv (the same session fixtures), and
:class:`E2E`, a :class:`Live` stack folder whose fake cloud boots nodes (tests/e2e/cloud.py). Marker ``e2e``.

Teardown stops every node and the bridge, whatever the test did; ``leftovers()`` then finds nothing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
LIVE = HERE.parent / "live"
sys.path.insert(0, str(LIVE))
_spec = importlib.util.spec_from_file_location("live_conftest", LIVE / "conftest.py")
assert _spec and _spec.loader
live_conftest = importlib.util.module_from_spec(_spec)
sys.modules["live_conftest"] = live_conftest
_spec.loader.exec_module(live_conftest)

# tests/live's session fixtures, shared (the CLI build is cached; the program venv is made once per session)
pulumi_home = live_conftest.pulumi_home
pulumi_bin = live_conftest.pulumi_bin
program_venv = live_conftest.program_venv
Live = live_conftest.Live


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


def why_not() -> str:
    """Why simulated nodes cannot run here ("" when they can)."""
    if os.geteuid() != 0:
        return "needs root (network, mount and PID namespaces)"
    for tool in ("unshare", "nsenter", "ip", "openssl", "curl", "systemd-tmpfiles", "pkill", "flock"):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    missing = [m for m in ("oss2", "torch") if importlib.util.find_spec(m) is None]  # the `boot` extra
    if missing:
        return f"needs {' and '.join(missing)} (pip install '.[boot]')"
    return ""


@pytest.fixture(scope="module")
def sandbox_ok() -> None:
    reason = why_not()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"tests/e2e cannot run on CI: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def e2e_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("e2e")
