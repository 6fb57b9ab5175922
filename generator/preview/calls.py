"""Answering a row's whole function call: an unchanged node row costs a digest of its row, not its arguments.

:mod:`generator.preview.rows` answers a node's constructor from the memo, but only once the program has built the
constructor's arguments: the user data (node-init.sh filled in, gzipped, base64-encoded), the tags, the nested
argument objects, and the digest of ~30 arguments, one of them 15 KB of user data. The rendered program declares
each node by calling a module-level function with the node's row (``node_instance(node)``), a function of that
row and of the module's values it reads, so the mock run can key the *call*.

:func:`compile_main` compiles ``__main__.py`` and finds the module-level functions that are *pure* by their text
(:class:`_Checker`): plain parameters with constant defaults; statements that only bind local names (no augmented
assignment: ``x += ...`` may change a module's list in place), branch, raise or return; calls only to pure functions
of the module, to builtins that touch nothing (:data:`BUILTINS`), to string and mapping methods that change nothing
(:data:`METHODS`), to the functions of the ``json``, ``gzip`` and ``base64`` modules and to the SDK's classes
(``alicloud.ecs.Instance``: a capitalised name, never an invoke); no loops, comprehensions, lambdas, nested
functions, ``global``, ``del`` or stores into objects. Each pure function that calls an SDK class is made by a
*trampoline*: in the compiled module only that function's code object is replaced, by one of the same name and
parameters that hands its arguments to :meth:`Calls.call` (:data:`WRAP`); the file, its other code and every line
number stay the program's.

A call gets a *call key*: the SHA-256 of the run's salt, the function's name, the text (``ast.dump``) of it and of
every pure function it calls, its arguments and the value of every module name those functions read when the call
is made (plain data by value, a long string by its SHA-256, a resource by its type, name and input digest as the
memo knows it, an ``Output`` by its origin, a module by its name once checked to be the module its ``import``
names, a pure function by the identity of the code object analysed, a builtin by its name). Those are all a pure
function's result can depend on. A call whose key an earlier graph holds (``call::TYPE::NAME``) does not run: the
resource is answered as :meth:`generator.preview.rows.Rows._answer` answers a known constructor call (urn and id
resolved, other outputs unread; a read repeats the run registering the type for real). A call that runs is recorded
only when it built exactly one resource, at a constructor :class:`~generator.preview.rows.Rows` keyed, registered
nothing else and returned it. ``TRAINSTACK_ROW_CALLS=off`` runs every call; ``tests/test_calls.py`` compares runs
answered at the call with full runs byte for byte.
"""

from __future__ import annotations

import ast
import hashlib
import operator
import os
import re
import runpy
import sys
import types
from pathlib import Path
from typing import Any, NamedTuple

ENV = "TRAINSTACK_ROW_CALLS"
CALL_PREFIX = "call::"  # a graph's keys: "call::TYPE::NAME" -> call key, beside the rows' and registrations'
WRAP = "__trainstack_call__"  # the decorator's name in the program's globals while its module body runs
BUILTINS = frozenset(
    [
        "str",
        "int",
        "float",
        "bool",
        "len",
        "repr",
        "abs",
        "min",
        "max",
        "round",
        "sorted",
        "dict",
        "list",
        "tuple",
        "set",
        "frozenset",
        "range",
        "zip",
        "enumerate",
        "any",
        "all",
        "sum",
        "isinstance",
        "ValueError",
        "TypeError",
        "KeyError",
    ]
)
METHODS = frozenset(
    [
        "replace",
        "encode",
        "decode",
        "lower",
        "upper",
        "capitalize",
        "title",
        "strip",
        "lstrip",
        "rstrip",
        "split",
        "join",
        "startswith",
        "endswith",
        "format",
        "zfill",
        "get",
        "items",
        "keys",
        "values",
    ]
)
MODULES = frozenset({"json", "gzip", "base64"})  # whose functions are pure (the salt fixes the interpreter)
SDK = "pulumi_alicloud"
_BANNED = (
    ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Yield, ast.YieldFrom, ast.Await,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Global, ast.Nonlocal, ast.Delete,
    ast.Import, ast.ImportFrom, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.AugAssign,
)  # fmt: skip
_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.Return, ast.If, ast.Raise, ast.Pass, ast.Expr)
_TABLE = 8  # a module dict of at least this many entries is checked by identity before it is walked again
_SCALARS = (str, int, float, bool, type(None))  # immutable: the same object, the same digest
_LONG = 64  # strings longer than this digest by their SHA-256 (node-init.sh is 34 KB)


def enabled() -> bool:
    """Whether a run answers known row calls (on by default)."""
    return os.environ.get(ENV, "on").strip().lower() not in ("off", "0", "no", "false")


class _Impure(Exception):
    """The function's text does something a call key cannot cover."""


_IMPORT = re.compile(
    r"^import ([A-Za-z_][A-Za-z0-9_]*)(?: as ([A-Za-z_][A-Za-z0-9_]*))?[ \t]*(?:#.*)?$", re.MULTILINE
)


def _imports(source: str) -> dict[str, str]:
    """Module-level ``import M`` / ``import M as A`` of the pure modules and the SDK: alias -> module (each call
    key checks that the alias is that module when the call runs)."""
    out: dict[str, str] = {}
    for m in _IMPORT.finditer(source):
        if m.group(1) in MODULES or m.group(1) == SDK:
            out[m.group(2) or m.group(1)] = m.group(1)
    return out


def _defs(code: types.CodeType, lines: list[str]) -> dict[str, tuple[types.CodeType, ast.FunctionDef]]:
    """The module's top-level functions: name -> (the code object its ``def`` makes, its parsed text). The text runs
    from the function's first line to the next line that starts a top-level statement; only a name defined once is
    kept, and only text that parses as that one ``def``."""
    out: dict[str, tuple[types.CodeType, ast.FunctionDef]] = {}
    seen: set[str] = set()
    for const in code.co_consts:
        if not isinstance(const, types.CodeType) or not const.co_name.isidentifier():
            continue
        name = const.co_name
        if name in seen:
            out.pop(name, None)
            continue
        seen.add(name)
        first = end = const.co_firstlineno
        while end < len(lines) and (not lines[end][:1].strip() or lines[end][:1] == "#"):
            end += 1
        try:
            body = ast.parse("".join(lines[first - 1 : end])).body
        except SyntaxError:
            continue
        if len(body) == 1 and isinstance(body[0], ast.FunctionDef) and body[0].name == name:
            out[name] = (const, body[0])
    return out


class _Checker:
    """The purity of the module's functions (:func:`pure_functions`)."""

    def __init__(self, defs: dict[str, ast.FunctionDef], imports: dict[str, str]) -> None:
        self.defs, self.imports = defs, imports
        self.done: dict[str, tuple[frozenset[str], frozenset[str], bool] | None] = {}

    def check(self, name: str) -> tuple[frozenset[str], frozenset[str], bool] | None:
        """(pure functions it calls, itself included; module names they read; whether it calls an SDK class)."""
        if name not in self.done:
            self.done[name] = None  # a recursive call is impure
            try:
                self.done[name] = self._check(self.defs[name])
            except _Impure:
                self.done[name] = None
        return self.done[name]

    def _check(self, fn: ast.FunctionDef) -> tuple[frozenset[str], frozenset[str], bool]:
        a = fn.args
        if fn.decorator_list or a.vararg or a.kwarg or a.posonlyargs or fn.returns:
            raise _Impure(fn.name)
        if any(not isinstance(d, ast.Constant) for d in [*a.defaults, *a.kw_defaults] if d is not None):
            raise _Impure(fn.name)
        local = {x.arg for x in [*a.args, *a.kwonlyargs]}
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                local.add(node.id)
        calls, reads, sdk = {fn.name}, set[str](), False
        for i, stmt in enumerate(fn.body):
            if not isinstance(stmt, _STATEMENTS) or (
                isinstance(stmt, ast.Expr) and not (i == 0 and isinstance(stmt.value, ast.Constant))
            ):
                raise _Impure(fn.name)
        for node in ast.walk(ast.Module(body=fn.body, type_ignores=[])):
            sdk = self._node(node, local, calls, reads) or sdk
        return frozenset(calls), frozenset(reads), sdk

    def _node(self, node: ast.AST, local: set[str], calls: set[str], reads: set[str]) -> bool:
        """Check one node of a function's body; True for a call of an SDK class."""
        if isinstance(node, _BANNED):
            raise _Impure(type(node).__name__)
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names = t.elts if isinstance(t, ast.Tuple) else [t]
                if not all(isinstance(x, ast.Name) for x in names):
                    raise _Impure("a store into an object")
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local:
            reads.add(node.id)
        if isinstance(node, ast.Call):
            return self._call(node.func, local, calls, reads)
        return False

    def _call(self, func: ast.expr, local: set[str], calls: set[str], reads: set[str]) -> bool:
        if isinstance(func, ast.Name):
            if func.id in local:
                raise _Impure(func.id)
            if func.id in self.defs:
                inner = self.check(func.id)
                if inner is None:
                    raise _Impure(func.id)
                calls.update(inner[0])
                reads.update(inner[1])
                return inner[2]
            if func.id in BUILTINS:  # a module value of that name is refused when the key is made
                return False
            raise _Impure(func.id)
        if not isinstance(func, ast.Attribute):
            raise _Impure("a call of an expression")
        if func.attr in METHODS:
            return False
        chain, root = [func.attr], func.value
        while isinstance(root, ast.Attribute):
            chain.append(root.attr)
            root = root.value
        module = self.imports.get(root.id) if isinstance(root, ast.Name) and root.id not in local else None
        if module in MODULES:
            return False
        if module == SDK and func.attr[:1].isupper():
            return True
        raise _Impure(func.attr)


class Row(NamedTuple):
    """A function whose calls are keyed: the digest of its text and its callees', the module names they read, the
    code each pure function read by name must have (its own: the trampoline), and its own code."""

    text: str
    reads: tuple[str, ...]
    codes: dict[str, types.CodeType]
    modules: dict[str, str]  # the module aliases read: alias -> module
    code: types.CodeType


def compile_main(source: str, filename: str) -> tuple[types.CodeType, dict[str, Row]]:
    """The program's code, each pure function that builds a resource made by a *trampoline* (a function of the same
    name and parameters that hands its arguments to :data:`WRAP`); nothing else of the code changes."""
    code = compile(source, filename, "exec", dont_inherit=True)
    defs = _defs(code, source.splitlines(keepends=True))
    imports = _imports(source)
    checker = _Checker({name: d for name, (_, d) in defs.items()}, imports)
    found: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
    for name in defs:
        got = checker.check(name)
        if got is not None and got[2]:
            found[name] = (got[0], got[1])
    if not found:
        return code, {}
    trampolines = {name: _trampoline(defs[name][1], defs[name][0], filename) for name in found}
    consts = tuple(
        trampolines.get(c.co_name, c) if c in [d[0] for d in defs.values()] else c for c in code.co_consts
    )
    own = {name: trampolines.get(name, c) for name, (c, _) in defs.items()}
    rows = {}
    for name, (called, reads) in found.items():
        text = "\x1f".join(f"{n}\x1e{ast.dump(defs[n][1])}" for n in sorted(called))
        digest = hashlib.sha256(text.encode()).hexdigest()
        modules = {r: imports[r] for r in reads if r in imports}
        rows[name] = Row(digest, tuple(sorted(reads)), {n: own[n] for n in called}, modules, defs[name][0])
    return code.replace(co_consts=consts), rows


def _trampoline(fn: ast.FunctionDef, code: types.CodeType, filename: str) -> types.CodeType:
    """``def NAME(a, b=..., *, c=...): return WRAP("NAME", (a, b), {"c": c})``: the module's ``def`` still makes
    the function (its defaults too), the call is answered by :meth:`Calls.call`."""
    a = fn.args
    pos = [x.arg for x in a.args]
    kw = [x.arg for x in a.kwonlyargs]
    params = ", ".join(pos + (["*"] + kw if kw else []))
    packed = f"({''.join(p + ', ' for p in pos)}), {{{', '.join(f'{k!r}: {k}' for k in kw)}}}"
    text = f"def {fn.name}({params}):\n    return {WRAP}({fn.name!r}, {packed})\n"
    made = compile(text, filename, "exec", dont_inherit=True)
    inner = next(c for c in made.co_consts if isinstance(c, types.CodeType))
    return inner.replace(co_firstlineno=code.co_firstlineno)


def run_main(main: Path, memo: Any) -> None:
    """Run ``main`` as ``runpy.run_path(main, run_name="__main__")`` does, its row calls answered by ``memo``."""
    if memo is None or not memo.salt or not enabled():
        runpy.run_path(str(main), run_name="__main__")
        return
    code, rows = compile_main(main.read_text(encoding="utf-8"), str(main))
    module = types.ModuleType("__main__")
    module.__dict__.update(
        __file__=str(main), __cached__=None, __loader__=None, __package__="", __spec__=None, __doc__=None
    )
    calls = Calls(memo, rows, module.__dict__)
    memo.calls = calls
    module.__dict__[WRAP] = calls.call
    saved_main, saved_argv = sys.modules.get("__main__"), sys.argv[0] if sys.argv else None
    sys.modules["__main__"] = module
    if saved_argv is not None:
        sys.argv[0] = str(main)
    try:
        exec(code, module.__dict__)  # noqa: S102 (the program runpy.run_path would run, compiled here)
    finally:
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
        if saved_argv is not None:
            sys.argv[0] = saved_argv


_MISSING = object()  # a name the module does not hold (a builtin, or a NameError to come)


def _unchanged(snapshot: list[tuple[Any, ...]]) -> bool:
    """Whether what :meth:`Calls._snapshot` recorded still holds."""
    for kind, value, *rest in snapshot:
        if kind == "f":
            if value.__code__ is not rest[0]:
                return False
        elif kind == "m":
            if sys.modules.get(rest[0]) is not value:
                return False
        elif kind == "d":
            if tuple(value) != rest[0] or not all(map(operator.is_, value.values(), rest[1])):
                return False
        elif len(value) != len(rest[1]) or not all(map(operator.is_, value, rest[1])):
            return False
    return True


class Calls:
    """The keyed row functions of one run (:data:`WRAP` in the program's globals)."""

    def __init__(self, memo: Any, rows: dict[str, Row], namespace: dict[str, Any]) -> None:
        self.memo, self.rows, self.namespace = memo, rows, namespace
        self.hits = 0
        self._impls = {name: types.FunctionType(row.code, namespace, name) for name, row in rows.items()}
        self._classes: dict[str, type] = {}  # function -> the class of the resource it returned
        self._made: set[str] = set()  # "TYPE::NAME" of every resource a keyed call gave
        self._tables: dict[int, tuple[dict[str, Any], tuple[str, ...], tuple[Any, ...], str]] = {}
        # function -> (the module values its last call read, what else must hold, their digest): _reads
        self._kept: dict[str, tuple[list[Any], list[tuple[Any, ...]], str]] = {}
        self._fixed: dict[
            int, tuple[Any, str]
        ] = {}  # id -> (value kept alive, its digest): long strings, origins

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One call of the row function ``name``: answered when its key is known, else run (and recorded)."""
        key = self._key(name, args, kwargs)
        if key is not None:
            got = self._answer(name, key)
            if got is not None:
                return got
        rows, memo = self.memo.rows, self.memo
        made, registered = rows.made, memo.registered
        result = self._impls[name](*args, **kwargs)
        res, row_key, hit = rows.last
        if rows.made == made + 1 and res is result and (memo.registered - registered) == (0 if hit else 1):
            ty, res_name = rows._types[type(res)], res._name
            self._made.add(f"{ty}::{res_name}")
            if key is not None and row_key is not None:
                self._classes[name] = type(res)
                memo.keys[f"{CALL_PREFIX}{ty}::{res_name}"] = key
        return result

    def _answer(self, name: str, key: str) -> Any:
        """The resource of a known call, as a known constructor call is answered; None when it must run."""
        memo = self.memo
        hit, cls = memo.known.get(key), self._classes.get(name)
        if hit is None or cls is None:
            return None
        rows = memo.rows
        ty, template, urn_key = rows._types.get(cls), rows._templates.get(cls), f"{hit.type}::{hit.name}"
        if template is None or ty != hit.type or ty in memo.skip_types or urn_key in self._made:
            return None
        if urn_key in memo.keys or f"row::{urn_key}" in memo.keys:  # a resource of that name exists
            return None
        res: Any = object.__new__(cls)  # what a class call makes before __init__ (resources have no __new__)
        rows._answer(res, ty, hit.name, template, hit)
        memo.keys[CALL_PREFIX + urn_key] = key
        self._made.add(urn_key)
        self.hits += 1
        return res

    def _key(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        """The call key (module docstring), or None when something the call reads has no digest."""
        row = self.rows[name]
        reads = self._reads(name, row)
        if reads is None:
            return None
        parts = [self.memo.salt, name, row.text, reads]
        try:
            self._walk(args, parts)
            self._walk(kwargs, parts)
        except self.memo.undigestable:
            return None
        return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()

    def _reads(self, name: str, row: Row) -> str | None:
        """The digest of the module values a call of ``name`` reads, or None when one has none (or is missing). The
        node loop reads the same values for every row, so the last call's digest is kept while each value read is
        the same object, each dict, list or tuple read holds the same keys and objects, each function read the same
        code and each module read is still that module (:meth:`_snapshot`; when a value read is none of those, such
        as a dict of dicts, the values are digested again at every call)."""
        namespace = self.namespace
        values = [namespace.get(read, _MISSING) for read in row.reads]
        kept = self._kept.get(name)
        if kept is not None and all(map(operator.is_, values, kept[0])) and _unchanged(kept[1]):
            return kept[2]
        parts: list[str] = []
        try:
            for read, value in zip(row.reads, values):
                parts.append(read)
                if value is _MISSING:
                    if read not in BUILTINS:
                        return None  # a NameError in the call: let it happen
                    parts.append("builtin")
                    continue
                code = row.codes.get(read)
                if code is not None:  # a pure function, its text in the key: the very function analysed
                    if type(value) is not types.FunctionType or value.__code__ is not code:
                        return None
                    parts.append("fn")
                elif read in row.modules:
                    if sys.modules.get(row.modules[read]) is not value:
                        return None
                    parts.append("module")
                elif type(value) is dict and len(value) >= _TABLE:
                    parts.append(self._table(value))
                else:
                    self._walk(value, parts)
        except self.memo.undigestable:
            return None
        digest = "\x1f".join(parts)
        snapshot = self._snapshot(row, values)
        if snapshot is not None:
            self._kept[name] = (values, snapshot, digest)
        return digest

    def _snapshot(self, row: Row, values: list[Any]) -> list[tuple[Any, ...]] | None:
        """What :func:`_unchanged` checks to keep a digest of ``values`` (besides their identity), or None when one
        of them may change without a new identity in a way it cannot see (a dict of dicts, an object)."""
        fixed = self._fixed
        snapshot: list[tuple[Any, ...]] = []
        for read, value in zip(row.reads, values):
            kind = type(value)
            if kind in _SCALARS or value is _MISSING or fixed.get(id(value), (None,))[0] is value:
                continue
            if read in row.codes:
                snapshot.append(("f", value, value.__code__))
            elif read in row.modules:
                snapshot.append(("m", value, row.modules[read]))
            elif kind is dict or kind is list or kind is tuple:
                items = tuple(value.values()) if kind is dict else tuple(value)
                if not all(type(v) in _SCALARS or fixed.get(id(v), (None,))[0] is v for v in items):
                    return None
                snapshot.append(
                    ("d" if kind is dict else "l", value, tuple(value) if kind is dict else None, items)
                )
            else:
                return None
        return snapshot

    def _walk(self, value: Any, out: list[str]) -> None:
        kind = type(value)
        if (
            kind is str
            and len(value) <= _LONG
            or kind is int
            or kind is float
            or kind is bool
            or value is None
        ):
            out.append(f"{kind.__name__}:{value!r}")
        elif kind is dict:
            out.append(f"dict[{len(value)}")
            fixed = self._fixed
            for k, v in value.items():
                if type(k) is not str:
                    raise self.memo.undigestable(k)
                out.append(f"k:{k!r}")
                known = fixed.get(
                    id(v)
                )  # inline: a table of resources (the deployment sets) is walked per call
                if known is not None and known[0] is v:
                    out.append(known[1])
                else:
                    self._walk(v, out)
            out.append("]")
        elif kind is list or kind is tuple:
            out.append(f"{kind.__name__}[{len(value)}")
            for item in value:
                self._walk(item, out)
            out.append("]")
        else:
            got = self._fixed.get(id(value))
            if got is None or got[0] is not value:
                got = (value, self._other(value))
                self._fixed[id(value)] = got
            out.append(got[1])

    def _table(self, value: dict[str, Any]) -> str:
        """The digest of a module's table (the deployment sets: one per 20 nodes, read by every call), walked again
        only when its keys or the identity of a value changed since the last call; it is kept only when every value
        digests by its identity alone (an immutable scalar, or a resource or Output digested once)."""
        kept = self._tables.get(id(value))
        if (
            kept is not None
            and kept[0] is value
            and kept[1] == tuple(value)
            and all(map(operator.is_, value.values(), kept[2]))
        ):
            return kept[3]
        parts: list[str] = []
        self._walk(value, parts)
        digest = "\x1f".join(parts)
        fixed = self._fixed
        if all(type(v) in _SCALARS or fixed.get(id(v), (None,))[0] is v for v in value.values()):
            self._tables[id(value)] = (value, tuple(value), tuple(value.values()), digest)
        return digest

    def _other(self, value: Any) -> str:
        """The digest of a long string, a resource or an Output: each fixed once made, so kept by identity."""
        import pulumi

        if type(value) is str:
            return f"str#{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()}"
        if isinstance(value, pulumi.Resource):
            urn = value.__dict__.get("urn")
            origin = self.memo._origin.get(id(urn))
            if origin is None or origin[0] is not urn:
                raise self.memo.undigestable("a resource the memo did not see")
            ty, res_name, digest = origin[
                1
            ]  # its outputs follow from these (the mock answers from its inputs)
            return f"res:{ty}\0{res_name}\0{digest}"
        if isinstance(value, pulumi.Output):
            parts: list[str] = []
            self.memo._walk(value, parts)
            return "\x1f".join(parts)
        raise self.memo.undigestable(type(value))


__all__ = ["CALL_PREFIX", "ENV", "Calls", "Row", "compile_main", "enabled", "run_main"]
