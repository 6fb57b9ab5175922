"""The runtime settings of a mock run that change no byte of its graph (issue 28's "cheapest correct mock run"):
no stack traces, monitor calls answered inline, the collector tuned. Each is measured in benchmarks/README.md, and
tests/test_runtime.py checks that the graph is byte-identical with and without it; :mod:`generator.preview.mockrun`
applies them around every run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

# Two more runtime costs the mock monitor never uses. Each registration asks for the program's stack trace
# (`_get_stack_trace`: every frame's source position, turned into protobuf) and its source position, which the
# engine shows in its diagnostics; the mock monitor ignores both fields. And every registration and invoke crosses
# `loop.run_in_executor` to a worker thread, where the mock monitor answers at once: a thread hand-off, a second
# event loop and a futures wrap per call. "inline" answers it in the calling thread (the monitor is synchronous; its
# own `_sync_await` runs nested on the running loop, as Pulumi's synchronous invokes do). Neither changes a request
# the mock monitor records (tests/test_runtime.py compares the graphs). `TRAINSTACK_MOCK_STACK_TRACES=on` and
# `TRAINSTACK_MOCK_INLINE=off` restore Pulumi's behaviour; measured in benchmarks/README.md.
STACK_TRACES_ENV = "TRAINSTACK_MOCK_STACK_TRACES"
INLINE_ENV = "TRAINSTACK_MOCK_INLINE"


def _flag(name: str, default: bool) -> bool:
    value = os.environ.get(name, "").strip().lower()
    return default if not value else value not in ("off", "0", "no", "false")


def light_settings() -> dict[str, bool]:
    """The runtime settings of mock runs from the environment: stack traces off, inline monitor calls on."""
    return {"stack_traces": _flag(STACK_TRACES_ENV, False), "inline": _flag(INLINE_ENV, True)}


class _InlineExecutor(ThreadPoolExecutor):
    """Runs each submitted call at once, in the caller's thread (the mock monitor's calls return immediately); no
    thread is ever started (asyncio accepts only ThreadPoolExecutor subclasses as a loop's default executor)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 handed to the awaiting coroutine, as a worker thread would
            done.set_exception(e)
        return done


@contextlib.contextmanager
def light_runtime(stack_traces: bool = False, inline: bool = True) -> Iterator[None]:
    """Run the body without the stack traces (unless ``stack_traces``) and with inline monitor calls (if ``inline``);
    Pulumi's functions and the loop's executor come back after."""
    from pulumi.runtime import resource as runtime_resource

    loop = asyncio.get_event_loop()
    saved = runtime_resource._get_stack_trace, runtime_resource._get_source_position
    executor = getattr(loop, "_default_executor", None)
    if not stack_traces:
        from pulumi.runtime.proto import source_pb2

        runtime_resource._get_stack_trace = lambda: source_pb2.StackTrace()
        runtime_resource._get_source_position = lambda *_a, **_k: None
    from pulumi.runtime import mocks

    nested = mocks._sync_await
    if inline:
        loop.set_default_executor(_InlineExecutor())
        mocks._sync_await = _drive
    try:
        yield
    finally:
        runtime_resource._get_stack_trace, runtime_resource._get_source_position = saved
        if inline:
            loop._default_executor = executor  # type: ignore[attr-defined]
            mocks._sync_await = nested


def _drive(awaitable: Any) -> Any:
    """The mock monitor's ``_sync_await`` when it answers inline: run the coroutine (serializing plain values, which
    never waits) to its end in place. Pumping the running loop instead, as Pulumi's ``_sync_await`` does, would run
    the next registration inside this one, and so on: a recursion as deep as the cluster. If the coroutine does
    wait on a future, that one future is awaited the Pulumi way and the coroutine goes on."""
    from pulumi.runtime.sync_await import _sync_await

    if not asyncio.iscoroutine(awaitable):
        return _sync_await(awaitable)
    while True:
        try:
            waited = awaitable.send(None)
        except StopIteration as done:
            return done.value
        if waited is not None:
            waited._asyncio_future_blocking = False
            _sync_await(waited)


# The cyclic garbage collector costs a quarter to over a third of a large mock run: Pulumi's runtime allocates
# millions of short-lived objects (futures, Outputs, protobuf Structs), and every 700 allocations (CPython 3.11's
# default first threshold) a young collection walks them, and every hundredth a full one walks the whole heap.
# "tuned" freezes what is alive when the run starts (the interpreter, pulumi and the SDK modules the program uses:
# never garbage, never walked again; https://docs.python.org/3/library/gc.html#gc.freeze) and raises the first
# threshold, so collections are rare and small while memory stays bounded; "off" disables the collector for the run
# (a run creates little cyclic garbage); "default" leaves CPython's settings. Measured in benchmarks/README.md.
GC_MODES = ("tuned", "off", "default")
GC_ENV = "TRAINSTACK_MOCK_GC"
TUNED_THRESHOLDS = (1_000_000, 1000, 1000)


def gc_mode() -> str:
    """The collector mode of mock runs: ``$TRAINSTACK_MOCK_GC`` if it names one of :data:`GC_MODES`, else tuned."""
    mode = os.environ.get(GC_ENV, "tuned").strip().lower()
    return mode if mode in GC_MODES else "tuned"


@contextlib.contextmanager
def tuned_gc(mode: str) -> Iterator[None]:
    """Run the body with the collector in ``mode`` (see :data:`GC_MODES`); the previous settings come back after."""
    import gc

    if mode == "default":
        yield
        return
    was_enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.freeze()
    if mode == "off":
        gc.disable()
    else:
        gc.set_threshold(*TUNED_THRESHOLDS)
    try:
        yield
    finally:
        # what the run left in the young generations (up to the first threshold's million objects) joins the frozen
        # heap before the thresholds come back: restored first, the next allocation would walk it all in one young
        # collection (0.2 s at 1,000 nodes). It is collected with the old generation, by the usual rule.
        gc.freeze()
        gc.set_threshold(*thresholds)
        if was_enabled:
            gc.enable()
        gc.unfreeze()
