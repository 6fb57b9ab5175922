"""Progress printing: engine events become one redacted line per resource step, with a running count."""

from __future__ import annotations

import threading
from collections.abc import Callable

from generator.live.engine import Event
from generator.live.redaction import redact

_VERBS = {
    "create": "creating",
    "update": "updating",
    "replace": "replacing",
    "delete": "deleting",
    "import": "importing",
    "discard": "forgetting",
    "refresh": "refreshing",
}


class ProgressPrinter:
    """Turns engine events into one line per resource step, e.g.
    ``creating ecs:Instance pretrain-70b-node-003 ... done (12/151)``; diagnostics go to stderr.

    ``emit(line, is_error)`` does the printing, so the library stays free of click and tests can collect lines.
    """

    def __init__(self, emit: Callable[[str, bool], None], total: int | None = None):
        self._emit = emit
        self.total = total
        self.done = 0
        self.failed = 0
        self._lock = threading.Lock()

    def _say(self, line: str, err: bool = False) -> None:
        self._emit(redact(line), err)

    def __call__(self, event: Event) -> None:
        with self._lock:
            s = event.step
            if event.kind == "info":
                self._say(event.message)
            elif event.kind == "diagnostic":
                where = f"{s.short_type} {s.name}: " if s else ""
                self._say(f"{event.severity}: {where}{event.message.strip()}", True)
            elif s is not None and s.op in _VERBS:
                head = f"{_VERBS[s.op]} {s.short_type} {s.name} ..."
                if event.kind == "start":
                    self._say(head)
                elif event.kind in ("done", "failed"):
                    self.done += 1
                    self.failed += event.kind == "failed"
                    of = f"/{max(self.total, self.done)}" if self.total else ""
                    word = "done" if event.kind == "done" else "failed"
                    self._say(f"{head} {word} ({self.done}{of})", event.kind == "failed")


def collect_lines() -> tuple[list[tuple[str, bool]], Callable[[str, bool], None]]:
    """A list and an ``emit`` that appends ``(line, is_error)`` to it: a ProgressPrinter sink for tests."""
    lines: list[tuple[str, bool]] = []
    return lines, lambda line, err: lines.append((line, err))
