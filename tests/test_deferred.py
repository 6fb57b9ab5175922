"""generator/deferred.py: a deferred module runs at the first read of a name it does not hold, once, in the module
object every import bound; the import system's own reads do not run it; a failed run leaves nothing behind."""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator import deferred


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package ``pkg_deferred_test`` on sys.path (not imported) with a module ``counted`` that counts its runs in ``RUNS``, a
    subpackage ``sub`` with a module ``leaf``, and a module ``broken`` that fails the first time it runs."""
    root = tmp_path / "pkg_deferred_test"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("RUNS = []\n")
    (root / "counted.py").write_text(
        "from pkg_deferred_test import RUNS\nRUNS.append(__name__)\nVALUE = 42\n"
        "def twice(x):\n    return 2 * x\n"
    )
    (root / "sub" / "__init__.py").write_text("from pkg_deferred_test import RUNS\nRUNS.append(__name__)\nSUB = 2\n")
    (root / "sub" / "leaf.py").write_text("from pkg_deferred_test import RUNS\nRUNS.append(__name__)\nLEAF = 1\n")
    (root / "broken.py").write_text(
        "from pkg_deferred_test import RUNS\nRUNS.append(__name__)\n"
        "if RUNS.count(__name__) == 1:\n    raise RuntimeError('first run fails')\nOK = True\n"
    )
    (root / "circular.py").write_text(
        "from pkg_deferred_test import RUNS\nRUNS.append(__name__)\nimport pkg_deferred_test.circular as me\n"
        "EARLY = 1\nSEEN = (me.EARLY, hasattr(me, 'LATER'))\nLATER = 2\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "pkg_deferred_test"
    for name in [m for m in sys.modules if m == "pkg_deferred_test" or m.startswith("pkg_deferred_test.")]:
        del sys.modules[name]


def _runs() -> list[str]:
    return sys.modules["pkg_deferred_test"].RUNS


def test_imports_bind_the_deferred_module_without_running_it(package: str) -> None:
    module = deferred.defer(f"{package}.counted")
    import pkg_deferred_test.counted as bound
    from pkg_deferred_test import counted

    assert bound is module and counted is module and sys.modules[f"{package}.counted"] is module
    assert _runs() == []
    assert module.__name__ == f"{package}.counted" and module.__spec__ is not None and _runs() == []


def test_the_first_name_read_runs_it_once_in_the_same_object(package: str) -> None:
    module = deferred.defer(f"{package}.counted")
    from pkg_deferred_test import counted

    assert counted.VALUE == 42 and counted.twice(3) == 6
    from pkg_deferred_test.counted import VALUE

    assert VALUE == 42
    assert _runs() == [f"{package}.counted"]
    assert type(module) is types.ModuleType and sys.modules[f"{package}.counted"] is module
    with pytest.raises(AttributeError):
        counted.MISSING  # noqa: B018 a name the module does not define, once it has run


def test_a_read_while_it_runs_sees_the_names_set_so_far(package: str) -> None:
    module = deferred.defer(f"{package}.circular")
    assert module.LATER == 2 and module.SEEN == (1, False) and _runs() == [f"{package}.circular"]


def test_a_module_already_imported_is_returned_as_it_is(package: str) -> None:
    import pkg_deferred_test.counted

    assert deferred.defer(f"{package}.counted") is pkg_deferred_test.counted
    assert type(pkg_deferred_test.counted) is types.ModuleType and _runs() == [f"{package}.counted"]


def test_a_deferred_package_lets_its_submodules_be_imported_without_running(package: str) -> None:
    import pkg_deferred_test

    sub = deferred.defer(f"{package}.sub")
    assert pkg_deferred_test.sub is sub  # set on its package, as an import does
    import pkg_deferred_test.sub.leaf

    assert pkg_deferred_test.sub.leaf.LEAF == 1 and _runs() == [f"{package}.sub.leaf"]
    assert sub.leaf is pkg_deferred_test.sub.leaf  # set on the package by the import system: a name it holds
    assert _runs() == [f"{package}.sub.leaf"]
    assert sub.SUB == 2 and _runs() == [f"{package}.sub.leaf", f"{package}.sub"]
    assert sub.leaf is pkg_deferred_test.sub.leaf


def test_a_top_level_package_is_not_imported_when_a_module_of_it_is_deferred(package: str) -> None:
    module = deferred.defer(f"{package}.counted")  # the package is found by its spec, not run
    assert package not in sys.modules
    import pkg_deferred_test

    assert pkg_deferred_test.RUNS == [] and not hasattr(pkg_deferred_test, "counted")
    from pkg_deferred_test import counted  # how pulumi's __init__ binds automation and dynamic

    assert counted is module and _runs() == [] and counted.VALUE == 42


def test_a_module_of_a_subpackage_is_deferred_without_importing_either_package(package: str) -> None:
    module = deferred.defer(f"{package}.sub.leaf")  # as pulumi.runtime._instrumentation, before `import pulumi`
    assert package not in sys.modules and f"{package}.sub" not in sys.modules
    from pkg_deferred_test.sub import leaf

    assert leaf is module and _runs() == [f"{package}.sub"]  # the subpackage ran, its module did not
    assert leaf.LEAF == 1 and _runs() == [f"{package}.sub", f"{package}.sub.leaf"]


def test_a_failed_run_leaves_no_module_and_the_next_import_runs_it_again(package: str) -> None:
    deferred.defer(f"{package}.broken")
    from pkg_deferred_test import broken

    with pytest.raises(RuntimeError):
        broken.OK  # noqa: B018
    assert f"{package}.broken" not in sys.modules and not hasattr(sys.modules[package], "broken")
    from pkg_deferred_test import broken as again

    assert again is not broken and again.OK is True
    assert _runs() == [f"{package}.broken", f"{package}.broken"]


def test_an_unknown_module_is_refused(package: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        deferred.defer(f"{package}.no_such_module")
    assert f"{package}.no_such_module" not in sys.modules


def test_threads_reading_at_once_run_it_once(package: str) -> None:
    module = deferred.defer(f"{package}.counted")
    seen: list[int] = []
    start = threading.Barrier(4)

    def read() -> None:
        start.wait()
        seen.append(module.VALUE)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [42] * 4 and _runs() == [f"{package}.counted"]
