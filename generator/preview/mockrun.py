"""Execute a generated Pulumi program offline, under Pulumi's mock runtime, with the real pulumi_alicloud SDK.

Nothing reaches a cloud or a Pulumi engine: every resource registration is answered by :class:`Recorder`,
which keeps what the program asked for (resources after the first of their type are recorded from the SDK's own
input translation without the runtime's registration, or reused from earlier runs: :mod:`generator.preview.memo`). A wrong argument name or type raises inside the SDK, so running a
program here is trainstack's compile check. Used by ``trainstack preview`` (offline), ``diff`` and the tests.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import io
import logging
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.errors import TrainstackError
from generator.preview.lean import gc_mode, light_runtime, light_settings, tuned_gc

MOCK_IMAGE_ID = "m-mockimage000000000"
LEAN_SDK_ENV = "TRAINSTACK_LEAN_SDK"  # "off": load whole pulumi_alicloud service packages, as `pulumi` does

# A CPFS program declares its nodes only once the NFS export's mount address is configured, which `trainstack up`
# does after its first pass (docs/live.md). Offline runs model the complete cluster with this placeholder instead;
# ".invalid" is reserved (RFC 2606), so it can never be a real address.
SHARED_FS_ADDRESS_KEY = "trainstack:sharedFsAddress"
PLACEHOLDER_SHARED_FS_ADDRESS = "cpfs-export.example.invalid"
PLACEHOLDER_NOTE = (
    f"{SHARED_FS_ADDRESS_KEY} is the placeholder {PLACEHOLDER_SHARED_FS_ADDRESS} in this offline run: "
    "`trainstack up` looks up the CPFS export's real mount address and fills it in"
)


class ProgramError(TrainstackError):
    """The generated program failed under the mock runtime (an SDK rejected an argument, or it raised)."""


@dataclass(frozen=True, slots=True)
class Resource:
    """One registered resource: its Pulumi type, logical name, inputs (camelCase as sent) and options."""

    type: str
    name: str
    inputs: Mapping[str, Any]
    protect: bool = False
    retain_on_delete: bool = False
    parent: str = ""
    delete_before_replace: bool = False

    @property
    def urn_key(self) -> str:
        return f"{self.type}::{self.name}"

    def get(self, key: str, default: Any = None) -> Any:
        """An input by its snake_case or camelCase name."""
        if key in self.inputs:
            return self.inputs[key]
        return self.inputs.get(_camel(key), default)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


@dataclass
class Graph:
    """What a program declares: resources in registration order, stack outputs, warnings it logged."""

    resources: list[Resource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # "type::name" -> the registration's key (generator.preview.memo), for resources whose inputs it could digest;
    # what later runs of the same stack reuse. Not part of what the program declares, so not compared.
    keys: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    reused: int = field(default=0, compare=False, repr=False)  # resources answered from earlier runs
    derived: int = field(default=0, compare=False, repr=False)  # resources derived without the runtime (memo)
    constructed: int = field(default=0, compare=False, repr=False)  # reused, at the constructor
    called: int = field(default=0, compare=False, repr=False)  # of those, reused at the row's call (calls.py)

    def of_type(self, token: str) -> list[Resource]:
        """Resources whose type token is ``token`` (``alicloud:ecs/instance:Instance``) or ends with ``:token``."""
        return [r for r in self.resources if r.type == token or r.type.endswith(":" + token)]

    def one(self, token: str) -> Resource:
        found = self.of_type(token)
        if len(found) != 1:
            raise AssertionError(f"expected one {token}, found {len(found)}")
        return found[0]

    def by_name(self, name: str) -> Resource:
        for r in self.resources:
            if r.name == name:
                return r
        raise KeyError(name)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.resources:
            out[r.type] = out.get(r.type, 0) + 1
        return dict(sorted(out.items()))


def _mock_classes() -> tuple[Any, Any]:
    import pulumi
    from pulumi.runtime import mocks

    from generator.preview import memo

    class Recorder(pulumi.runtime.Mocks):
        def __init__(self) -> None:
            self.seen: list[tuple[str, str, dict[str, Any]]] = []

        def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
            inputs = dict(args.inputs)
            self.seen.append((args.typ, args.name, inputs))
            outputs = dict(inputs)
            rid = memo.mock_id(args.name)
            # a few computed attributes the programs read back
            if args.typ == "alicloud:vpc/natGateway:NatGateway":
                outputs.setdefault("snatTableIds", f"stb-{args.name}")
            if args.typ == "alicloud:ecs/eipAddress:EipAddress":
                outputs.setdefault("ipAddress", "203.0.113.10")  # TEST-NET-3, documentation range
            if args.typ == "alicloud:nas/mountTarget:MountTarget":
                outputs.setdefault("mountTargetDomain", f"{args.name}.mock.nas.aliyuncs.com")
            if args.typ == "alicloud:nas/protocolService:ProtocolService":
                outputs.setdefault("protocolServiceId", f"ptc-{args.name}")
            if args.typ == "alicloud:nas/fileset:Fileset":
                outputs.setdefault("filesetId", f"fset-{args.name}")
            if args.typ == "alicloud:nas/protocolMountTarget:ProtocolMountTarget":
                outputs.setdefault("exportId", f"exp-{args.name}")
            if args.typ == "alicloud:eflo/subnet:Subnet":
                outputs.setdefault("subnetId", f"subnet-{args.name}")
            if args.typ == "alicloud:eflo/nodeGroup:NodeGroup":
                outputs.setdefault("nodeGroupId", f"ng-{args.name}")
            return rid, outputs

        def call(self, args: Any) -> Any:
            if args.token == "alicloud:ecs/getImages:getImages":
                return {
                    "images": [{"id": MOCK_IMAGE_ID, "name": "aliyun_3_x64_20G_alibase_mock.vhd"}],
                    "ids": [MOCK_IMAGE_ID],
                    "id": "images",
                }
            return {}

    class Monitor(mocks.MockMonitor):
        """Also records resource options (protect, retainOnDelete, deleteBeforeReplace) that Mocks do not see."""

        def __init__(self, recorder: Any) -> None:
            super().__init__(recorder)
            self.options: dict[tuple[str, str], tuple[bool, bool, str, bool]] = {}

        def RegisterResource(self, request: Any) -> Any:
            self.options[(request.type, request.name)] = (
                bool(request.protect),
                bool(getattr(request, "retainOnDelete", False)),
                request.parent,
                bool(getattr(request, "deleteBeforeReplace", False)),
            )
            return super().RegisterResource(request)

    return Recorder, Monitor


@contextlib.contextmanager
def _program_context(program_dir: Path) -> Iterator[None]:
    old_path, old_cwd = list(sys.path), Path.cwd()
    sys.path.insert(0, str(program_dir))
    os.chdir(program_dir)
    try:
        yield
    finally:
        os.chdir(old_cwd)
        sys.path[:] = old_path


_LOOP: asyncio.AbstractEventLoop | None = None
RAN = False  # a mock run happened in this process (the CLI then skips interpreter teardown, generator/cli)
_THREAD_LOOPS: list[asyncio.AbstractEventLoop] = []
_THREAD_LOOPS_LOCK = threading.Lock()


def _thread_loop() -> None:
    """Initializer of the mock runs' executor threads: each thread's own event loop, recorded for closing.

    Pulumi runs every resource registration and invoke in the event loop's default executor, and its mock
    monitor needs an event loop in that worker thread; without one set, it creates one per thread and nobody
    closes it. At interpreter exit the garbage collector then finalized such a loop after its self-pipe socket
    ("Exception ignored in BaseEventLoop.__del__ ... Invalid file descriptor: -1"), depending on timing.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    with _THREAD_LOOPS_LOCK:
        _THREAD_LOOPS.append(loop)


def _event_loop() -> asyncio.AbstractEventLoop:
    """One event loop per process for every mock run, with an executor whose threads have their own loops.

    Every loop is closed at exit (:func:`_close_loops`), before the interpreter starts finalizing objects, so
    none is left to the garbage collector.
    """
    global _LOOP
    if _LOOP is None or _LOOP.is_closed():
        _LOOP = asyncio.new_event_loop()
        executor = ThreadPoolExecutor(thread_name_prefix="trainstack-mockrun", initializer=_thread_loop)
        _LOOP.set_default_executor(executor)
        atexit.register(_close_loops, _LOOP, executor)
    return _LOOP


def _discard_loop() -> None:
    """Cancel what a failed run left on the shared loop and close it (a later run makes a new one)."""
    global _LOOP
    loop, _LOOP = _LOOP, None
    if loop is None or loop.is_closed():
        return
    # the abandoned run's futures failed on purpose (an unread output was read): nothing to report when they go
    loop.set_exception_handler(lambda _loop, _context: None)
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.close()


def _close_loops(loop: asyncio.AbstractEventLoop, executor: ThreadPoolExecutor) -> None:
    """Close ``loop``, wait for its executor's threads to end, then close the loops those threads made."""
    if not loop.is_closed():
        loop.close()
    executor.shutdown(wait=True)
    with _THREAD_LOOPS_LOCK:
        loops, _THREAD_LOOPS[:] = list(_THREAD_LOOPS), []
    for thread_loop in loops:
        if not thread_loop.is_running():
            thread_loop.close()


def import_sdk_modules(source: str) -> list[str]:
    """Before a program runs: make the pulumi_alicloud service packages its source names load only the modules it
    uses and its top package only what the runtime needs (:mod:`generator.preview.sdkload`), and load that top
    package, so both are frozen with the rest when the run starts (:func:`tuned_gc`). Returns the service packages
    named."""
    import importlib

    from generator.preview import sdkload

    names = sdkload.services(source)
    if lean_sdk():
        sdkload.lean_top()
        sdkload.lean_packages(names)
    importlib.import_module(sdkload.SDK)
    return names


def lean_sdk() -> bool:
    """Whether mock runs load only the SDK parts they use (``TRAINSTACK_LEAN_SDK``, default on)."""
    return os.environ.get(LEAN_SDK_ENV, "on").strip().lower() not in ("off", "0", "no", "false")


def effective_config(config: Mapping[str, str] | None) -> dict[str, str]:
    """The config a mock run gives the program: ``config`` over the placeholder CPFS mount address."""
    return {SHARED_FS_ADDRESS_KEY: PLACEHOLDER_SHARED_FS_ADDRESS, **(config or {})}


def run_program(
    program_dir: str | Path,
    project: str = "trainstack",
    stack: str = "dev",
    config: Mapping[str, str] | None = None,
    *,
    memo_salt: str = "",
    reuse: Mapping[str, Resource] | None = None,
    derive: bool | None = None,
) -> Graph:
    """Run ``program_dir/__main__.py`` under mocks and return what it declares.

    ``config`` is the stack config the program sees. Unless it names ``trainstack:sharedFsAddress`` (an empty value
    included), that key is :data:`PLACEHOLDER_SHARED_FS_ADDRESS`, so a CPFS program declares its nodes as it will
    after ``trainstack up``; a run that used the placeholder says so in :attr:`Graph.warnings`.

    With ``memo_salt`` (:func:`generator.preview.memo.salt`) every registration is keyed (:attr:`Graph.keys`), and
    one whose key is in ``reuse`` (key -> resource, from earlier graphs) is answered from there instead of the
    runtime (:mod:`generator.preview.memo`). If the program reads an output of a reused resource, the run is
    repeated without reusing that type; the graph is always the one a run without ``reuse`` gives.

    With ``derive`` (default: :func:`generator.preview.memo.derive_enabled`) every resource after the first of its
    type whose options are plain is recorded from the SDK's input translation without the runtime's registration; the
    graph is the same.
    """
    program_dir = Path(program_dir).resolve()
    main = program_dir / "__main__.py"
    if not main.is_file():
        raise ProgramError(f"{program_dir}: no __main__.py; is this a stack folder rendered by trainstack?")
    if lean_sdk():
        from generator.preview import sdkload

        sdkload.defer_unused()  # before anything imports pulumi
    skip: frozenset[str] = frozenset()
    known = dict(reuse or {}) if memo_salt else {}
    from generator.preview import memo

    derive = memo.derive_enabled() if derive is None else derive
    for _attempt in range(3):
        read: set[str] = set()
        try:
            graph = _run_once(main, project, stack, config, memo_salt, known, skip, read, derive)
        except ProgramError:
            if not read:
                raise
            graph = None
            _discard_loop()  # the failed run's tasks go with its loop; the next run starts on a new one
        if not read:
            assert graph is not None
            return graph
        skip |= frozenset(read)  # an output of a reused resource was read: run again, registering that type
    return _run_once(main, project, stack, config, memo_salt, {}, skip, set(), False)


def _run_once(
    main: Path,
    project: str,
    stack: str,
    config: Mapping[str, str] | None,
    memo_salt: str,
    known: Mapping[str, Resource],
    skip: frozenset[str],
    read: set[str],
    derive: bool,
) -> Graph:
    from pulumi.runtime import settings
    from pulumi.runtime import stack as stack_mod
    from pulumi.runtime.sync_await import _sync_await

    from generator.preview import calls
    from generator.preview.memo import Memo

    global RAN
    RAN = True
    program_dir = main.parent
    recorder_cls, monitor_cls = _mock_classes()
    recorder = recorder_cls()
    monitor = monitor_cls(recorder)
    log_stream = io.StringIO()
    values = effective_config(config)
    _install_runtime(recorder, monitor, project, stack, values, log_stream)
    root = settings.get_root_resource()
    graph = Graph()
    memo = Memo(memo_salt, known, skip, derive, log_stream.tell) if memo_salt or derive else None
    try:
        with _program_context(program_dir), _quiet_warnings():
            import_sdk_modules(main.read_text(encoding="utf-8", errors="replace"))
            with tuned_gc(gc_mode()):  # also while the graph is assembled: no collection walks the run's heap
                with light_runtime(**light_settings()), memo or contextlib.nullcontext():

                    def run_main() -> None:
                        calls.run_main(main, memo)  # runpy.run_path, its row calls answered from the memo

                    _sync_await(stack_mod.run_pulumi_func(run_main))
                    if memo is not None:
                        _sync_await(memo.settle())
                    graph.outputs = _resolve_outputs(root, _sync_await)
                _assemble(graph, recorder, monitor, memo, read)
    except TrainstackError:
        raise
    except Exception as e:  # the program or the SDK rejected something: say which resource, no traceback
        if memo is not None:
            read.update(memo.read_types)
            memo.cancel()
        _retrieve_failed_futures()
        raise ProgramError(_explain(e, recorder)) from e
    graph.warnings.extend(line for line in log_stream.getvalue().splitlines() if line.strip())
    if (
        values[SHARED_FS_ADDRESS_KEY] == PLACEHOLDER_SHARED_FS_ADDRESS
        and graph.outputs.get("shared_fs_mount_address") == PLACEHOLDER_SHARED_FS_ADDRESS
    ):
        graph.warnings.append(PLACEHOLDER_NOTE)
    return graph


def _install_runtime(
    recorder: Any, monitor: Any, project: str, stack: str, values: dict[str, str], log_stream: io.StringIO
) -> None:
    """Point Pulumi's process-wide runtime at this run's mocks: a fresh event loop, the config, a new root stack,
    empty bookkeeping, and a logger whose lines (the SDK's warnings) go to ``log_stream`` for
    :attr:`Graph.warnings`. Everything here is global state the previous run left, reset so runs in one process
    are independent."""
    import pulumi
    from pulumi.runtime import mocks, settings

    logger = logging.getLogger("trainstack.mockrun")
    logger.handlers[:] = [logging.StreamHandler(log_stream)]
    logger.propagate = False
    asyncio.set_event_loop(_event_loop())
    pulumi.runtime.set_all_config(values)
    settings.ROOT.set(None)  # a new root stack per run: else the last run's outputs (and its URN) carry over
    mocks.set_mocks(recorder, project=project, stack=stack, preview=True, logger=logger, monitor=monitor)
    settings.SETTINGS.rpc_manager.clear()
    settings.SETTINGS.outputs.clear()


def _retrieve_failed_futures() -> None:
    """After a failed run, mark the error of every future the runtime left failed as retrieved (ProgramError carries
    it). Left alone, each would log "Future exception was never retrieved" from its finaliser whenever the garbage
    collector next ran, at any later moment: inside an unrelated ``ast.parse``, CPython 3.11's traceback carets then
    re-enter the parser and it fails with ``SystemError: AST constructor recursion depth mismatch``. Only the error
    path walks the heap. The test is on ``type(obj)``: ``isinstance`` also reads ``obj.__class__`` when the type does
    not match, which runs the attribute hooks of whatever the heap holds (torch's deprecated module shims then warn)."""
    import gc

    for obj in gc.get_objects():
        if issubclass(type(obj), asyncio.Future) and obj.done() and not obj.cancelled():
            obj.exception()


def _assemble(graph: Graph, recorder: Any, monitor: Any, memo: Any, read: set[str]) -> None:
    """Fill ``graph.resources`` (sorted by type and name) from the recorded requests and the reused resources."""
    if memo is not None:
        read.update(memo.read_types)
        graph.keys, graph.reused, graph.derived = memo.keys, len(memo.reused), len(memo.derived)
        graph.constructed = memo.rows.hits
        graph.called = memo.calls.hits if memo.calls is not None else 0
    monitor.resources.clear()  # the monitor's own copy of every state, kept by the runtime until the next run
    seen, recorder.seen = recorder.seen, []
    recorded = []
    while (
        seen
    ):  # each request's inputs are dropped as their stripped copy is made: never two copies of the graph
        typ, name, inputs = seen.pop()
        recorded.append((typ, name, _strip_unknowns(inputs)))
    derived = memo.derived if memo else []
    while derived:
        typ, name, inputs, *flags = derived.pop()
        recorded.append((typ, name, Resource(typ, name, _strip_unknowns(inputs), *flags)))
    for typ, name, inputs in sorted(
        recorded + [(r.type, r.name, r) for r in (memo.reused if memo else [])], key=lambda x: (x[0], x[1])
    ):
        if isinstance(inputs, Resource):
            graph.resources.append(inputs)
            continue
        protect, retain, parent, first_delete = monitor.options.get((typ, name), (False, False, "", False))
        graph.resources.append(Resource(typ, name, inputs, protect, retain, parent, first_delete))
    monitor.options.clear()


@contextlib.contextmanager
def _quiet_warnings() -> Iterator[None]:
    """The SDK's import-time DeprecationWarnings are noise; argument deprecations reach the engine log instead."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def _resolve_outputs(root: Any, sync_await: Any) -> dict[str, Any]:
    import pulumi

    outputs = getattr(root, "outputs", None) or {}
    resolved: dict[str, Any] = {}
    for key, value in outputs.items():
        known = value if _plain_data(value) else _known_list(value, pulumi.Output)
        if known is not None:
            resolved[key] = known
            continue
        try:
            resolved[key] = sync_await(pulumi.Output.from_input(value).future())
        except Exception:  # noqa: BLE001 an unresolvable output stays unknown, as in a real preview
            resolved[key] = None
    return resolved


def _known_list(value: Any, output: type) -> list[Any] | None:
    """A list of Outputs already resolved to known plain values (``[instance.id for instance in instances]``), as
    ``Output.from_input(value).future()`` would give it, without an ``Output.all`` of thousands of items; else None."""
    if type(value) is not list or not value:
        return None
    out = []
    for item in value:
        data = getattr(item, "_data", None) if type(item) is output else None
        if not isinstance(data, asyncio.Future) or not data.done() or data.cancelled() or data.exception():
            return None
        got = data.result()
        if not got.is_known or type(got.value) not in _PLAIN_VALUES:
            return None
        out.append(got.value)
    return out


_PLAIN_VALUES = (str, int, float, bool, type(None))


def _plain_data(value: Any) -> bool:
    """Whether ``value`` is plain data (scalars in lists, tuples and str-keyed dicts), which
    ``Output.from_input(value).future()`` resolves to an equal value of the same types and order (no Output, no
    Unknown in it): an exported list of 1,000 addresses need not become 1,000 Outputs and an ``Output.all``."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is list or kind is tuple:
            stack.extend(item)
        elif kind is dict:
            if any(type(k) is not str for k in item):
                return False
            stack.extend(item.values())
        elif kind not in _PLAIN_VALUES:
            return False
    return True


def _strip_unknowns(value: Any) -> Any:
    """A recorded input as plain data: unknowns as None, whole doubles as ints, and every dict in key order (the
    protobuf Struct the request crosses has no order of its own, and its iteration order varies by process)."""
    if isinstance(value, dict):
        return {k: _strip_unknowns(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_strip_unknowns(v) for v in value]
    if type(value).__name__ == "Unknown":
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)  # protobuf Structs carry every number as a double
    return value


def _explain(e: Exception, recorder: Any) -> str:
    import traceback

    frames = traceback.extract_tb(e.__traceback__)
    where = ""
    for f in reversed(frames):
        if f.filename.endswith("__main__.py"):
            where = f" at __main__.py line {f.lineno}: {f.line}"
            break
    msg = str(e)
    if isinstance(e, TypeError) and "unexpected keyword argument" in msg:
        return f"the generated program passes an argument the SDK does not accept{where}: {msg}"
    return f"the generated program failed{where}: {type(e).__name__}: {msg}"
