"""Incremental mock runs: a resource whose registration is exactly one made before is answered from that run.

A mock run's cost is Pulumi's runtime, not the program: every resource registration serializes its inputs, crosses
the mock monitor and resolves one future per property. For a cluster of 1,000 nodes that is 2,000 registrations
whose inputs differ only by each node's row. :class:`Memo` wraps the runtime's ``register_resource`` for one run
and gives every registration a key: the SHA-256 of the run's salt (:func:`salt`: the interpreter, the SDKs, the mock
runner's source, the project and the stack), the resource's type and name, and a digest of its inputs and options
*as the program passed them*. A plain value digests as itself; an ``Output`` digests by where it comes from (the
``id`` or ``urn`` of resource T/N, or property P of resource T/N together with that resource's own input digest),
which fixes its value, because the mock runtime answers a registration as a pure function of its request
(:func:`mock_id`, :class:`generator.preview.mockrun.Recorder`). Anything else (an ``Output`` made by ``apply``, a
provider, a parent, an unknown type) makes the registration undigestable: it runs, uncached.

When a key is in the memo (the graphs of earlier runs of the same project and stack, :mod:`generator.preview.cache`)
the registration is not sent: the recorded resource is taken from the memo, and the resource object gets its
``urn`` and ``id`` as the runtime would resolve them. Its other properties are *unread* outputs: if the program
reads one (a later resource uses it, or it is exported), the run is marked and :func:`generator.preview.mockrun.
run_program` runs it again without reusing that type, so the graph is always the one a full run gives. The first
resource of each type is always registered for real, so one-of-a-kind resources whose outputs feed others (a bucket,
a role) never need the second run. Keys never depend on a resource's position in the program, only on its inputs.

A registration that is not in the memo can still skip the runtime (``derive``, on unless
``TRAINSTACK_MOCK_DERIVE=off``): every resource after the first of its type, with plain options, gets its recorded
inputs from the SDK's own input translation, the same ``rpc.serialize_properties`` call the runtime's
``prepare_resource`` makes (names translated by the args type, Outputs awaited) and the ``rpc.deserialize_properties``
the mock monitor applies to the request. What the runtime adds around that (one Output and future per property, the
request, the monitor's answer serialized and read back, dependency bookkeeping) never reaches the recorded graph;
its urn, id and unread outputs are given as for a memo hit. ``tests/test_incremental.py`` checks derived graphs
against full runs.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import os
from collections.abc import Callable, Mapping
from typing import Any

ID_SUFFIX = "-id"
DERIVE_ENV = "TRAINSTACK_MOCK_DERIVE"


def derive_enabled() -> bool:
    """Whether resources after the first of their type are derived rather than registered (on by default)."""
    return os.environ.get(DERIVE_ENV, "on").strip().lower() not in ("off", "0", "no", "false")


def mock_id(name: str) -> str:
    """The id the mock runtime gives a resource named ``name`` (a pure function of the name)."""
    return f"{name}{ID_SUFFIX}"


def salt(environment: Mapping[str, str], project: str, stack: str) -> str:
    """What every key of a run shares: the environment (:func:`generator.preview.cache.environment`), project, stack."""
    h = hashlib.sha256()
    for part in (repr(sorted(environment.items())), project, stack):
        data = part.encode()
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


class _Undigestable(Exception):
    """An input whose value the digest cannot fix (the registration then runs for real)."""


_PLAIN = (str, int, float, bool, type(None))
_ID_OUTPUTS = {"urn": "\0urn", "id": "\0id"}  # marks that cannot be a property name
_ID_VALUES = frozenset(_ID_OUTPUTS.values())


class _Unread(asyncio.Future):
    """The future behind a reused resource's property output: reading it marks the run for a second, honest pass."""

    def __init__(self, memo: Memo, type_: str) -> None:
        super().__init__()
        self._memo, self._type = memo, type_

    def _touch(self) -> None:
        self._memo.read_types.add(self._type)
        if not self.done():
            self.set_exception(ReusedOutputRead(f"an output of a reused {self._type} was read"))
            self.exception()  # seen here: the run is repeated, so asyncio need not report it at exit

    def __await__(self) -> Any:
        self._touch()
        return super().__await__()

    def add_done_callback(self, fn: Any, *, context: Any = None) -> None:
        self._touch()
        super().add_done_callback(fn, context=context)

    def result(self) -> Any:
        self._touch()
        return super().result()


class ReusedOutputRead(Exception):
    """The program read a property of a resource answered from the memo; the run is repeated without reuse."""


class Memo:
    """Keys every registration of one run and answers those found in ``known`` (key -> recorded resource)."""

    def __init__(
        self,
        run_salt: str,
        known: Mapping[str, Any],
        skip_types: frozenset[str] = frozenset(),
        derive: bool = False,
        log_mark: Callable[[], int] | None = None,
    ) -> None:
        from generator.preview.rows import Rows

        self.salt, self.known, self.skip_types, self.derive = run_salt, known, skip_types, derive
        # constructors answered before the SDK builds their arguments (generator/preview/rows.py)
        self.rows = Rows(self, log_mark)
        self.calls: Any = None  # the run's row calls (generator/preview/calls.py), once the program runs
        self.registered = 0  # registrations the program made (a row call's check)
        self.undigestable = _Undigestable  # what a digest raises (rows.py does not import this module)
        self.prop_names: dict[str, tuple[str, ...]] = {}  # type -> property names of its first resource
        # (type, name, inputs as the monitor would read them, protect, retain_on_delete, parent,
        # delete_before_replace) of every derived resource, and the tasks still translating inputs
        self.derived: list[tuple[str, str, Any, bool, bool, str, bool]] = []
        self._pending: list[asyncio.Future[Any]] = []
        self.keys: dict[
            str, str
        ] = {}  # "type::name" -> key, for every resource registered for real with a key
        self.reused: list[Any] = []  # recorded resources answered from the memo
        self.read_types: set[str] = set()  # types of reused resources whose outputs the program read
        self._origin: dict[int, tuple[Any, tuple[str, str, str | None], str]] = {}  # id(Output) -> origin
        self._types_seen: set[str] = set()
        self._unread: dict[str, Any] = {}  # type -> the unread Output of its answered resources (_answer)
        self._loop: asyncio.AbstractEventLoop | None = None  # the run's loop, once a resource is answered
        self._urn_base = self._stack_urn = ""  # what every URN of the run starts with, the root stack's URN
        self._original: Callable[..., None] | None = None

    # ------------------------------------------------------------------------------------------ install
    def __enter__(self) -> Memo:  # noqa: PYI034 (a final class in practice)
        import pulumi.resource as resource_mod

        self._original = resource_mod.register_resource
        resource_mod.register_resource = self._register
        return self

    def __exit__(self, *exc: object) -> None:
        import pulumi.resource as resource_mod

        if self._original is not None:
            resource_mod.register_resource = self._original
        self.rows.restore()
        self._origin.clear()

    # ------------------------------------------------------------------------------------------ the hook
    def _register(
        self,
        res: Any,
        ty: str,
        name: str,
        custom: bool,
        remote: bool,
        new_dependency: Any,
        props: Mapping[str, Any],
        opts: Any,
        typ: Any = None,
        package_ref: Any = None,
    ) -> None:
        assert self._original is not None
        self.registered += 1
        first = ty not in self._types_seen
        if first:
            self._types_seen.add(ty)
            self.prop_names[ty] = tuple(props)
            if custom and not remote and self.salt:
                self.rows.watch(type(res), ty)
        props_digest = key = opts_digest = None
        if not remote and package_ref is None:
            try:
                opts_digest = self._options(opts)
                if self.salt:
                    props_digest = self._digest(dict(props))
                    key = self._key(ty, name, custom, props_digest, opts_digest)
            except _Undigestable:
                key = None
        hit = self.known.get(key) if key is not None else None
        if (
            hit is not None
            and key is not None
            and custom
            and not first
            and ty not in self.skip_types
            and hit.type == ty
            and hit.name == name
        ):
            self._answer(res, ty, name, props, hit)
            self.reused.append(hit)
            self.keys[f"{ty}::{name}"] = key
            return
        if self.derive and custom and not first and opts_digest is not None and ty not in self.skip_types:
            self._derive(res, ty, name, props, opts, typ)
            if key is not None:
                self.keys[f"{ty}::{name}"] = key
            return
        self._original(res, ty, name, custom, remote, new_dependency, props, opts, typ, package_ref)
        if key is not None:
            self.keys[f"{ty}::{name}"] = key
        self._remember(res, ty, name, props, props_digest)

    def _key(self, ty: str, name: str, custom: bool, props_digest: str, opts_digest: str) -> str:
        h = hashlib.sha256()
        for part in (self.salt, ty, name, "custom" if custom else "component", props_digest, opts_digest):
            data = part.encode()
            h.update(len(data).to_bytes(8, "big") + data)
        return h.hexdigest()

    def _remember(
        self, res: Any, ty: str, name: str, props: Mapping[str, Any], props_digest: str | None
    ) -> None:
        """Where each output of a resource registered for real comes from, for the digests of later inputs (one
        shared record per resource and one small tuple per output: thousands of nodes have tens of outputs each)."""
        d = res.__dict__
        info = (ty, name, props_digest)
        for attr in ("urn", "id"):
            if attr in d:
                self._origin[id(d[attr])] = (d[attr], info, _ID_OUTPUTS[attr])
        if props_digest is None:
            return
        for prop in props:
            out = d.get(prop)
            if out is not None and prop not in _ID_OUTPUTS:
                self._origin[id(out)] = (out, info, prop)

    def _derive(self, res: Any, ty: str, name: str, props: Mapping[str, Any], opts: Any, typ: Any) -> None:
        """Record ``res`` with the inputs the mock monitor would read from its request, without the runtime.

        The options are plain (:meth:`_options`), so the resource has no parent of its own: the runtime parents it to
        the root stack. Its inputs are translated in a task, since an input may be an Output still resolving."""
        if not self._stack_urn:
            from pulumi.runtime.mocks import get_project, get_stack

            self._stack_urn = _urn(
                "", "pulumi:pulumi:Stack", f"{get_project()}-{get_stack()}"
            )  # the root Stack
        parent = self._stack_urn
        self._answer(res, ty, name, props, None, parent)
        flags = (
            bool(getattr(opts, "protect", None)),
            bool(getattr(opts, "retain_on_delete", None)),
            parent,
            bool(getattr(opts, "delete_before_replace", None)),
        )
        self._pending.append(asyncio.ensure_future(self._translate(res, ty, name, dict(props), typ, flags)))

    async def _translate(
        self,
        res: Any,
        ty: str,
        name: str,
        props: dict[str, Any],
        typ: Any,
        flags: tuple[bool, bool, str, bool],
    ) -> None:
        """The SDK's translation of ``props`` as ``prepare_resource`` calls it (for a custom resource, not remote)
        and as the mock monitor reads the request back (``MockMonitor.RegisterResource``)."""
        from pulumi.runtime import rpc

        translate = None if typ is not None else res.translate_input_property
        struct = await rpc.serialize_properties(
            props, {}, res, translate, typ, keep_output_values=False, exclude_resource_refs_from_deps=False
        )
        inputs = rpc.deserialize_properties(struct)
        self.derived.append((ty, name, dict(inputs), *flags))

    async def settle(self) -> None:
        """Wait for every derived resource's inputs (the first failure is raised, as a failed registration's)."""
        while self._pending:
            pending, self._pending = self._pending, []
            await asyncio.gather(*pending)

    def cancel(self) -> None:
        """Drop the derivations of a run that failed."""
        for task in self._pending:
            task.cancel()
        self._pending.clear()

    def _answer(
        self, res: Any, ty: str, name: str, props: Mapping[str, Any], hit: Any, parent: str = ""
    ) -> None:
        """Give ``res`` what registering it would: its urn and id resolved, its other outputs unread.

        Thousands of rows are answered per run, so what is the same for all of them is made once: the event loop, the
        urn's prefix, and per type one unread Output shared by every property of every resource answered (reading any
        repeats the run registering that type, whichever resource it belongs to; none has an origin of its own, so
        an input made from one is undigestable: it registers and reads it)."""
        d = res.__dict__
        if not self._urn_base:
            self._urn_base = _urn_base()  # the mocks are set for the run before anything is answered
        urn = self._resolved(res, _urn(hit.parent if hit is not None else parent, ty, name, self._urn_base))
        rid = self._resolved(res, mock_id(name))
        d["urn"], d["id"] = urn, rid
        info = (ty, name, None)
        self._origin[id(urn)] = (urn, info, _ID_OUTPUTS["urn"])
        self._origin[id(rid)] = (rid, info, _ID_OUTPUTS["id"])
        out = self._unread.get(ty)
        if out is None:
            out = self._unread[ty] = object.__new__(_pulumi().Output)
            out._data = _Unread(self, ty)
        unread = dict.fromkeys(props, out)
        unread.pop("urn", None)
        unread.pop("id", None)
        d.update(unread)

    def _resolved(self, res: Any, value: str) -> Any:
        """An Output of ``res`` resolved to the string ``value``, as the runtime's resolution of a registration gives
        it (the _OutputData fields its constructor sets: a string holds no unknown, so it is known)."""
        if self._loop is None:
            self._loop = asyncio.get_event_loop()
        pulumi = _pulumi()
        data = object.__new__(pulumi.output._OutputData)
        data.__dict__.update(resources={res}, value=value, is_known=True, is_secret=False)
        fut = self._loop.create_future()
        fut.set_result(data)
        out = object.__new__(pulumi.Output)
        out._data = fut
        return out

    # ------------------------------------------------------------------------------------------ digests
    def _digest(self, value: Any) -> str:
        parts: list[str] = []
        self._walk(value, parts)
        return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()

    def _walk(self, value: Any, out: list[str]) -> None:
        kind = type(value)
        if kind in _PLAIN:
            out.append(f"{kind.__name__}:{value!r}")
        elif isinstance(value, enum.Enum):
            out.append(f"enum:{kind.__module__}.{kind.__qualname__}:{value.value!r}")
        elif kind is list or kind is tuple:
            out.append(f"{kind.__name__}[{len(value)}")
            for item in value:
                self._walk(item, out)
            out.append("]")
        elif kind is dict:
            out.append(f"dict[{len(value)}")
            for k, v in value.items():  # in order: the request keeps the program's order
                if type(k) is not str:
                    raise _Undigestable(k)
                vk = type(v)
                if vk in _PLAIN:  # inline, the common case (most of a resource's ~100 inputs): the same parts
                    out.append(f"k:{k!r}\x1f{vk.__name__}:{v!r}")
                else:
                    out.append(f"k:{k!r}")
                    self._walk(v, out)
            out.append("]")
        elif isinstance(value, _pulumi().Output):
            origin = self._origin.get(id(value))
            if origin is None or origin[0] is not value:
                raise _Undigestable("an Output of unknown origin")
            (ty, name, props_digest), prop = origin[1], origin[2]
            if prop in _ID_VALUES:  # the urn and the id follow from the type and name alone
                out.append(f"out:{prop}\0{ty}\0{name}")
            else:  # a property: the producer's inputs fix it (the mock answers from them)
                out.append(f"out:o\0{ty}\0{name}\0{prop}\0{props_digest}")
        elif _pulumi()._types.is_input_type(kind):
            out.append(f"input:{kind.__module__}.{kind.__qualname__}")
            self._walk(dict(value.__dict__), out)
        else:
            raise _Undigestable(kind)

    def _options(self, opts: Any) -> str:
        """The options' digest; only plain options (protect, retain_on_delete, delete_before_replace, version...)."""
        if opts is None:
            return "none"
        items = sorted(vars(opts).items())
        parts: list[str] = []
        for k, v in items:
            if isinstance(v, _PLAIN):
                parts.append(f"{k}={type(v).__name__}:{v!r}")
            elif isinstance(v, (list, tuple, dict)) and not v:
                parts.append(f"{k}=empty")
            elif isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
                parts.append(f"{k}={list(v)!r}")
            elif type(v).__name__ == "ResourceHookBinding" and not any(vars(v).values()):
                parts.append(f"{k}=no-hooks")  # the SDK's default: a binding with no hooks
            else:
                raise _Undigestable(k)
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


_PULUMI: Any = None


def _pulumi() -> Any:
    """The ``pulumi`` package, imported once (the digests run for every input of every registration)."""
    global _PULUMI
    if _PULUMI is None:
        import pulumi
        import pulumi._types

        _PULUMI = pulumi
    return _PULUMI


def _urn(parent: str, type_: str, name: str, base: str = "") -> str:
    """The URN the mock monitor gives (``MockMonitor.make_urn``), from the parent recorded with the resource;
    ``base`` is :func:`_urn_base`, when the caller has it."""
    if parent:
        type_ = parent.split("::")[2].split("$").pop() + "$" + type_
    return f"{base or _urn_base()}{type_}::{name}"


def _urn_base() -> str:
    """What every URN of the run starts with: its stack and project."""
    from pulumi.runtime.mocks import get_project, get_stack

    return f"urn:pulumi:{get_stack()}::{get_project()}::"


__all__ = ["DERIVE_ENV", "Memo", "ReusedOutputRead", "derive_enabled", "mock_id", "salt"]
