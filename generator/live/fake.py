"""The :class:`FakeEngine`: an in-memory :class:`~generator.live.engine.Engine` with scripted plans and state,
so commands, checks and messages are tested without a CLI, credentials or a network."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from generator.live.engine import (
    ChangeSummary,
    Event,
    OnEvent,
    OutputValue,
    StateResource,
    Step,
    Target,
    UpResult,
)
from generator.live.errors import EngineFailed, LiveError, StackNotDeployed
from generator.live.redaction import display_backend


@dataclass
class FakeEngine:
    """An in-memory :class:`Engine` for tests: scripted plans and state, every call recorded.

    ``destroy(exclude_protected=True)`` keeps protected resources and everything they depend on (their parents
    and dependencies, transitively), exactly the set ``pulumi destroy --exclude-protected`` keeps.
    """

    plan_steps: list[Step] = field(default_factory=list)
    state: list[StateResource] | None = None  # None: the stack was never created
    stack_outputs: dict[str, OutputValue] = field(default_factory=dict)
    diagnostics: list[tuple[str, str]] = field(default_factory=list)  # (severity, message) from preview and up
    fail_with: LiveError | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)  # what set_config set

    def _record(self, name: str, **kwargs: Any) -> None:
        self.calls.append((name, kwargs))
        if self.fail_with is not None:
            raise self.fail_with

    def _require_state(self, target: Target) -> list[StateResource]:
        if self.state is None:
            raise StackNotDeployed(f"stack {target.stack} of {target.project} has no state in "
                                   f"{display_backend(target.backend)}: deploy it first with `trainstack up`.")
        return self.state

    def _diagnose(self, on_event: OnEvent) -> None:
        for severity, message in self.diagnostics:
            on_event(Event("diagnostic", None, severity, message))

    def preview(self, target: Target, on_event: OnEvent) -> ChangeSummary:
        self._record("preview", target=target)
        self._diagnose(on_event)
        return ChangeSummary.of(None, self.plan_steps)

    def up(self, target: Target, on_event: OnEvent) -> UpResult:
        self._record("up", target=target)
        self._diagnose(on_event)
        state = list(self.state or [])
        for step in self.plan_steps:
            on_event(Event("start", step))
            if step.op in ("create", "update", "replace", "same") and not any(r.urn == step.urn for r in state):
                state.append(StateResource(step.urn, step.type, id=f"id-{step.name}"))
            on_event(Event("done", step))
        self.state = state
        return UpResult(ChangeSummary.of(None, self.plan_steps), dict(self.stack_outputs))

    def _kept(self, state: list[StateResource]) -> set[str]:
        by_urn = {r.urn: r for r in state}
        kept: set[str] = set()
        todo = [r.urn for r in state if r.protect]
        while todo:
            urn = todo.pop()
            if urn in kept or urn not in by_urn:
                continue
            kept.add(urn)
            r = by_urn[urn]
            todo.extend(r.dependencies)
            if r.parent:
                todo.append(r.parent)
        return kept

    def destroy(self, target: Target, on_event: OnEvent, *, exclude_protected: bool,
                preview_only: bool = False) -> ChangeSummary:
        self._record("destroy", target=target, exclude_protected=exclude_protected, preview_only=preview_only)
        state = self._require_state(target)
        kept = self._kept(state) if exclude_protected else set()
        if not exclude_protected and any(r.protect for r in state):
            raise EngineFailed("the Pulumi engine failed: unable to delete resource: it is protected")
        doomed = [Step("delete", r.type, r.name, r.urn) for r in state if r.urn not in kept and not r.bookkeeping]
        if not preview_only:
            for step in doomed:
                on_event(Event("start", step))
                on_event(Event("done", step))
            self.state = [r for r in state if r.urn in kept]
        return ChangeSummary.of(None, doomed)

    def refresh(self, target: Target, on_event: OnEvent, *, preview_only: bool = False) -> ChangeSummary:
        self._record("refresh", target=target, preview_only=preview_only)
        state = self._require_state(target)
        return ChangeSummary.of({"same": len(state)}, ())

    def outputs(self, target: Target) -> dict[str, OutputValue]:
        self._record("outputs", target=target)
        self._require_state(target)
        return dict(self.stack_outputs)

    def resources(self, target: Target) -> list[StateResource]:
        self._record("resources", target=target)
        return list(self._require_state(target))

    def unprotect_all(self, target: Target) -> None:
        self._record("unprotect_all", target=target)
        self.state = [replace(r, protect=False) for r in self._require_state(target)]

    def set_config(self, target: Target, key: str, value: str) -> None:
        """Like ``pulumi config set``: recorded, and written into the folder's ``Pulumi.<stack>.yaml``."""
        self._record("set_config", target=target, key=key, value=value)
        self.config[key] = value
        _write_config(target.config_file, key, value)


def _write_config(path: Path, key: str, value: str) -> None:
    from ruamel.yaml import YAML

    yaml = YAML()  # round trip: the rendered comments stay, as they mostly do with Pulumi
    if not path.parent.is_dir():  # a target made up by a test, with no folder behind it
        return
    data = yaml.load(path.read_text(encoding="utf-8")) if path.is_file() else None
    data = data if data is not None else {}
    if data.get("config") is None:
        data["config"] = {}
    data["config"][key] = value
    with path.open("w", encoding="utf-8") as f:
        yaml.dump(data, f)
