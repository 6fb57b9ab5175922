"""Load only the parts of pulumi_alicloud a program uses, for the mock runtime.

``pulumi_alicloud`` imports its service packages lazily, but the first attribute read from one (``alicloud.ecs.Instance``)
runs that package's ``__init__``, which imports every resource, function and type module it holds: 90 modules for
``ecs`` alone (``ecs.launch_template``, which no generated program uses, takes 61 ms by itself). :func:`lean_packages`
puts a light package object in their place: the real package (its ``__path__`` and spec, so relative imports and
``import pulumi_alicloud.ecs.instance`` work) without its ``__init__``, whose module ``__getattr__`` (PEP 562) imports
only the one module that defines the name asked for, on first use. Classes and functions are the SDK's own objects,
so the program runs exactly as with the full package; only what it never touches stays unloaded.

A package that is already fully loaded in this process is left as it is. A name the lookup cannot place raises
AttributeError, as the real package would for a name it does not have.

``import pulumi`` itself runs packages no mock run uses: ``pulumi.automation`` (the Automation API, which loads
PyYAML) and ``pulumi.dynamic`` (dynamic providers, which loads dill), some 45 ms together, gRPC (~20 ms: the mock
monitor is a plain object, no channel is opened) and, unless the environment asks pulumi to trace (``TRACEPARENT``),
its tracing module with OpenTelemetry's SDK (~12 ms). :func:`defer_unused` defers them (:mod:`generator.deferred`)
before pulumi is imported: ``import pulumi`` binds them without running them, and the first name read from one (the
live engine's ``pulumi.automation``, an ``except grpc.RpcError`` an error reaches, in the same process) runs it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import types
from pathlib import Path
from typing import Any

SDK = "pulumi_alicloud"
UNUSED_BY_MOCK_RUNS = ("pulumi.automation", "pulumi.dynamic")
# gRPC: pulumi's runtime imports it to talk to the engine, but under the mocks no channel or server is made (the mock
# monitor is a plain object); an `except grpc.RpcError` clause reached by an error, a transform's or hook's callback
# server, or the live engine in the same process run it at its first read. Some 20 ms of `import pulumi`.
GRPC = ("grpc", "grpc.aio")
# OpenTelemetry tracing: pulumi's __init__ imports this module for its side effect, which is to trace when the
# environment has a TRACEPARENT (as the pulumi CLI sets it when tracing); without one it does nothing but import
# OpenTelemetry's SDK (some 12 ms). So it is deferred only when TRACEPARENT is not set.
TRACING = "pulumi.runtime._instrumentation"
# `alicloud.NAME` or `pulumi_alicloud.NAME` after a word boundary: the regex finds the literal part (a 240 KB program
# in 0.2 ms, not the 7 ms of a pattern that starts with \b), services() checks the boundary; NAME is a lookahead, so
# every occurrence is seen, even one inside another's name
_SERVICE = re.compile(r"alicloud\.(?=([a-z][a-z0-9_]*)\b)")
_WORD = re.compile(r"\w")
_ALL = re.compile(r"^__all__\s*=\s*\[([^\]]*)\]", re.MULTILINE)
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def services(source: str) -> list[str]:
    """The pulumi_alicloud service packages a program's source names (``alicloud.ecs.Instance`` -> ``ecs``)."""
    found = set()
    for m in _SERVICE.finditer(source):
        start = m.start()
        if start >= 7 and source.startswith("pulumi_", start - 7):
            start -= 7
        if start == 0 or not _WORD.match(source, start - 1):
            found.add(m.group(1))
    return sorted(found)


def _snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


def _candidates(name: str) -> list[str]:
    """Modules of a service package that may define ``name``, the likeliest first (the SDK's generated layout:
    ``Instance`` and ``InstanceArgs`` in ``instance.py``, ``get_images`` in ``get_images.py``, nested argument types in
    ``_inputs.py``, results in ``outputs.py``)."""
    out = [_snake(name)]
    for suffix in ("ArgsDict", "Args", "Result"):
        if name.endswith(suffix):
            out.append(_snake(name[: -len(suffix)]))
    if name.startswith("Get") and name.endswith("Result"):
        out.append(_snake(name[: -len("Result")]))
    out += ["_inputs", "outputs", "_enums"]
    return list(dict.fromkeys(out))


def _index(folder: Path) -> dict[str, str]:
    """name -> module, from each module's ``__all__`` (the fallback when the layout does not place a name)."""
    index: dict[str, str] = {}
    for path in sorted(folder.glob("*.py")):
        if path.name == "__init__.py":
            continue
        m = _ALL.search(path.read_text(encoding="utf-8", errors="replace"))
        for item in re.findall(r"'([A-Za-z_][A-Za-z0-9_]*)'", m.group(1)) if m else ():
            index.setdefault(item, path.stem)
    return index


def _lean_getattr(package: types.ModuleType) -> Any:
    folder = Path(package.__spec__.submodule_search_locations[0])  # type: ignore[union-attr,index]
    index: dict[str, str] = {}

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        for module_name in [m for m in _candidates(name) if (folder / f"{m}.py").is_file()] + [""]:
            if not module_name:  # the layout did not place it: ask every module's __all__ (built once)
                if "" not in index:
                    index.update(_index(folder), **{"": ""})
                module_name = index.get(name, "")
                if not module_name:
                    break
            module = importlib.import_module(f"{package.__name__}.{module_name}")
            if hasattr(module, name):
                value = getattr(module, name)
                setattr(package, name, value)
                return value
            if module_name == name:  # the submodule itself, as the import system binds it once it has run:
                return module  # `from . import outputs` inside outputs.py, while it runs (no __all__ search)
        raise AttributeError(f"module {package.__name__!r} has no attribute {name!r}")

    return __getattr__


def lean_packages(names: list[str]) -> list[str]:
    """Put light packages in place of the named pulumi_alicloud service packages not yet loaded; returns those put."""
    root = importlib.import_module(SDK)
    put = []
    for name in names:
        full = f"{SDK}.{name}"
        current = sys.modules.get(full)
        if current is not None and type(current) is types.ModuleType:
            continue
        spec = importlib.util.find_spec(full)
        if spec is None or not spec.submodule_search_locations:
            continue
        package = importlib.util.module_from_spec(spec)
        package.__getattr__ = _lean_getattr(package)  # type: ignore[method-assign]  # PEP 562 module __getattr__
        sys.modules[full] = package
        setattr(root, name, package)
        put.append(name)
    return put


def defer_unused() -> None:
    """Defer the parts of pulumi no mock run uses (:data:`UNUSED_BY_MOCK_RUNS`, :data:`GRPC` and, without a
    ``TRACEPARENT``, :data:`TRACING`), unless pulumi is imported already (then they are loaded too), and import pulumi."""
    if "pulumi" in sys.modules:
        return
    from generator import deferred

    names = [*UNUSED_BY_MOCK_RUNS, *(() if "grpc" in sys.modules else GRPC)]
    if "TRACEPARENT" not in os.environ:
        names.append(TRACING)
    for name in names:
        deferred.defer(name)
    importlib.import_module("pulumi")
    # `from .runtime import _instrumentation` (pulumi's __init__) found the module in sys.modules, which binds no
    # attribute on its package: bound here, as the import system binds a submodule it runs
    package, _, child = TRACING.rpartition(".")
    if TRACING in sys.modules and not hasattr(sys.modules[package], child):
        setattr(sys.modules[package], child, sys.modules[TRACING])


__all__ = ["defer_unused", "lean_packages", "services"]
