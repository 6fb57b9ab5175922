"""Load only the parts of pulumi_alicloud a program uses, for the mock runtime.

``pulumi_alicloud`` imports its service packages lazily, but the first attribute read from one (``alicloud.ecs.Instance``)
runs that package's ``__init__``, which imports every resource, function and type module it holds: 90 modules for
``ecs`` alone (``ecs.launch_template``, which no generated program uses, takes 61 ms by itself). :func:`lean_packages`
puts a light package object in their place: the real package (its ``__path__`` and spec, so relative imports and
``import pulumi_alicloud.ecs.instance`` work) without its ``__init__``, whose module ``__getattr__`` (PEP 562) imports
only the one module that defines the name asked for, on first use. Classes and functions are the SDK's own objects,
so the program runs exactly as with the full package; only what it never touches stays unloaded.

The top package is made light too (:func:`lean_top`): its ``__init__`` imports 18 modules of resources no program
names and binds 151 service packages lazily, then registers every resource module with the runtime; the light top
package makes that registration with the same arguments (read from its ``__init__``, whose generated layout is
checked line by line) and finds every other name at its first read, as the ``__init__`` binds it.

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

import builtins
import importlib
import importlib.util
import os
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, NamedTuple

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


# The SDK's top package __init__ (its generated layout): imports (its own modules' names, `outputs`, `_utilities`),
# the service packages bound lazily, then one call registering every resource module and the provider package for
# the runtime (what a resource reference is read back by). Any other line, and the real __init__ runs.
_TOP_LINE = re.compile(
    r"#.*|import builtins as _builtins|import typing|from \. import (?:_utilities|outputs)|from \.(\w+) import \*"
    r"|if typing\.TYPE_CHECKING:|else:|    import pulumi_alicloud\.\w+ as __\w+|    \w+ = __\w+"
    r"|    (\w+) = _utilities\.lazy_import\('pulumi_alicloud\.(\w+)'\)|"
)
_REGISTER = '_utilities.register(\n    resource_modules="""\n'
_PACKAGES = '\n""",\n    resource_packages="""\n'
_END = '\n"""\n)\n'


class _Top(NamedTuple):
    stars: list[str]  # the modules whose names it imports (`from .NAME import *`), in order
    subpackages: dict[str, str]  # name -> service package bound lazily
    modules: str  # the two JSON arguments of its `_utilities.register` call
    packages: str


def _top_layout(source: str) -> _Top | None:
    """The parts of the top package's __init__ source, or None when it is not the layout above."""
    at = source.find(_REGISTER)
    mid = source.find(_PACKAGES, at + 1)
    if at < 0 or mid < 0 or not source.endswith(_END) or source.count('"""') != 4:
        return None
    top = _Top([], {}, source[at + len(_REGISTER) : mid], source[mid + len(_PACKAGES) : -len(_END)])
    for line in source[:at].splitlines():
        m = _TOP_LINE.fullmatch(line)
        if m is None:
            return None
        if m.group(1):
            top.stars.append(m.group(1))
        if m.group(2):
            top.subpackages[m.group(2)] = m.group(3)
    return top


def lean_top() -> bool:
    """Put a light top package in place of ``pulumi_alicloud`` (not yet imported): what its __init__ leaves for the
    runtime, `_utilities` and the registration of every resource module, without importing its 18 modules (~40
    ms: a vector database, StarRocks and other resources no program names) or making 151 lazy service packages; each
    name is found at its first read (:func:`_top_getattr`). True when it was put; False, and nothing done, when the
    package is imported already or its __init__ is not the layout :func:`_top_layout` knows."""
    if SDK in sys.modules:
        return False
    spec = importlib.util.find_spec(SDK)
    if spec is None or spec.origin is None or not spec.submodule_search_locations:
        return False
    try:
        top = _top_layout(Path(spec.origin).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False
    if top is None:
        return False
    package = importlib.util.module_from_spec(spec)
    package.__dict__.update(_builtins=builtins, typing=typing)
    sys.modules[SDK] = package
    try:
        utilities = importlib.import_module(f"{SDK}._utilities")
        package.__getattr__ = _top_getattr(package, top)  # type: ignore[method-assign]  # PEP 562
        utilities.register(resource_modules=top.modules, resource_packages=top.packages)
    except BaseException:
        del sys.modules[SDK]
        raise
    return True


def _top_getattr(package: types.ModuleType, top: _Top) -> Any:
    """The top package's names as its __init__ binds them: a service package (bound last there, so it wins), then
    `outputs`, then its modules' names (a later module's over an earlier's; the first read of one imports all 18,
    as the __init__ does), then any other submodule."""
    stars: list[Any] = []

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in top.subpackages or name == "outputs":
            return importlib.import_module(f"{SDK}.{top.subpackages.get(name, name)}")
        if not stars:
            for module_name in top.stars:
                module = importlib.import_module(f"{SDK}.{module_name}")
                stars.append(module)
                public = getattr(module, "__all__", None)
                if public is None:
                    public = [n for n in vars(module) if not n.startswith("_")]
                for item in public:
                    if item not in top.subpackages and item != "outputs":
                        setattr(package, item, getattr(module, item))
            if name in package.__dict__:
                return package.__dict__[name]
        folder = Path(package.__spec__.submodule_search_locations[0])  # type: ignore[union-attr,index]
        if (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file():
            return importlib.import_module(f"{SDK}.{name}")
        raise AttributeError(f"module {SDK!r} has no attribute {name!r}")

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
