"""Modules whose code runs when a name is first read from them, not when they are imported.

Start-up is most of what a side-cached ``diff``, a ``preview`` or a ``validate`` costs, and some modules on that path
are only ever read on a path it does not take: the planner's refusal classes (about 60 frozen dataclasses, some
50 ms to create) are needed only when a spec is refused, ``pulumi.automation`` and ``pulumi.dynamic`` (``import
pulumi`` loads both, with PyYAML and dill: some 45 ms) never by a mock run. :func:`defer` puts such a module in
``sys.modules`` (and on its package, if that is imported: a package imported later binds it itself, as pulumi's
``from . import automation`` does) before anything imports it; ``import`` and ``from package import module`` then
bind it without running it, and the first read of a name it does not hold yet (``refusals.UnknownRegion``, ``from
pulumi.automation import LocalWorkspace``) runs its code in that same module object, as ``importlib.util.LazyLoader``
does, so every reference ever taken sees the loaded module. A read while its code runs (a circular import) sees the
names set so far, as with any import; another thread waits for the run. A run that fails leaves no module behind, so
the next import tries again, as after a failed import. Only the names a module does not hold trigger it: the import
system's own reads (``__spec__``, ``__path__``, ``__name__``) do not.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
import types
from collections.abc import Sequence
from typing import Any

_LOCKS: dict[str, threading.RLock] = {}


class _Deferred(types.ModuleType):
    """A module not run yet (its class until it has run, then :class:`types.ModuleType`)."""

    def __getattr__(self, name: str) -> Any:
        spec = self.__spec__
        assert spec is not None and spec.loader is not None
        with _LOCKS.setdefault(spec.name, threading.RLock()):
            if "__builtins__" not in self.__dict__:  # exec sets it first: present once a run has begun
                try:
                    spec.loader.exec_module(self)
                except BaseException:
                    _forget(self)
                    raise
                object.__setattr__(self, "__class__", types.ModuleType)  # an ordinary module from now on
        return types.ModuleType.__getattribute__(self, name)


def _forget(module: types.ModuleType) -> None:
    """Drop a module whose code failed from ``sys.modules`` and its package, as the import system does."""
    name = module.__name__
    if sys.modules.get(name) is module:
        del sys.modules[name]
    parent, _, child = name.rpartition(".")
    if parent and getattr(sys.modules.get(parent), child, None) is module:
        delattr(sys.modules[parent], child)


def defer(name: str) -> types.ModuleType:
    """Put module ``name`` in ``sys.modules``, to run at the first read of a name it does not hold; a module already
    imported (or deferred) is returned as it is. Its package is found without being imported (``pulumi.automation``
    can be deferred before ``import pulumi``, which binds it)."""
    if name in sys.modules:
        return sys.modules[name]
    parent_name, _, child = name.rpartition(".")
    parent = sys.modules.get(parent_name) if parent_name else None
    spec = importlib.machinery.PathFinder.find_spec(name, _locations(parent_name) if parent_name else None)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _Deferred
    sys.modules[name] = module
    if parent is not None:
        setattr(parent, child, module)
    return module


def _locations(package: str) -> Sequence[str] | None:
    """Where the submodules of ``package`` are, without importing it or its own packages (``pulumi.runtime``'s
    folder, before ``import pulumi``)."""
    module = sys.modules.get(package)
    if module is not None:
        return getattr(module, "__path__", None)
    parent, _, _ = package.rpartition(".")
    if parent:
        spec = importlib.machinery.PathFinder.find_spec(package, _locations(parent))
    else:
        spec = importlib.util.find_spec(package)  # a top-level name: found without running anything
    return spec.submodule_search_locations if spec is not None else None


__all__ = ["defer"]
