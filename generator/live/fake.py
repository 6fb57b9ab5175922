"""The :class:`FakeEngine`: an in-memory :class:`~generator.live.engine.Engine` with scripted plans and state,
so commands, checks and messages are tested without a CLI, credentials or a network."""

from __future__ import annotations

from collections.abc import Sequence
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
    urn_name,
)
from generator.live.errors import EngineFailed, LiveError, StackNotDeployed
from generator.live.redaction import display_backend


@dataclass
class FakeEngine:
    """An in-memory :class:`Engine` for tests: scripted plans and state, every call recorded.

    ``destroy(exclude_protected=True)`` keeps protected resources and everything they depend on (their parents
    and dependencies, transitively), exactly the set ``pulumi destroy --exclude-protected`` keeps.

    ``cloud`` models what Alibaba Cloud really holds: a refresh (not a preview) replaces the state's entries with
    it, dropping what the cloud no longer has (a released instance) and taking its ``status`` (a stopped one). A
    targeted ``up`` creates or updates only the targeted URNs (plus plan steps on them), like ``--target``.
    """

    plan_steps: list[Step] = field(default_factory=list)
    state: list[StateResource] | None = None  # None: the stack was never created
    stack_outputs: dict[str, OutputValue] = field(default_factory=dict)
    diagnostics: list[tuple[str, str]] = field(
        default_factory=list
    )  # (severity, message) from preview and up
    fail_with: LiveError | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)  # what set_config set
    cloud: list[StateResource] | None = None  # what a refresh finds (None: the cloud matches the state)

    def _record(self, name: str, **kwargs: Any) -> None:
        self.calls.append((name, kwargs))
        if self.fail_with is not None:
            raise self.fail_with

    def _require_state(self, target: Target) -> list[StateResource]:
        if self.state is None:
            raise StackNotDeployed(
                f"stack {target.stack} of {target.project} has no state in "
                f"{display_backend(target.backend)}: deploy it first with `trainstack up`."
            )
        return self.state

    def _diagnose(self, on_event: OnEvent) -> None:
        for severity, message in self.diagnostics:
            on_event(Event("diagnostic", None, severity, message))

    def preview(self, target: Target, on_event: OnEvent) -> ChangeSummary:
        self._record("preview", target=target)
        self._diagnose(on_event)
        return ChangeSummary.of(None, self.plan_steps)

    def up(self, target: Target, on_event: OnEvent, *, targets: Sequence[str] = ()) -> UpResult:
        if targets:
            self._record("up", target=target, targets=tuple(targets))
        else:
            self._record("up", target=target)
        self._diagnose(on_event)
        state = list(self.state or [])
        steps = self.plan_steps
        if targets:
            planned = {s.urn for s in steps}
            steps = [s for s in steps if s.urn in targets] + [
                Step("create", _urn_type(urn), urn_name(urn), urn) for urn in targets if urn not in planned
            ]
        for step in steps:
            on_event(Event("start", step))
            if step.op in ("create", "update", "replace", "same") and not any(
                r.urn == step.urn for r in state
            ):
                state.append(StateResource(step.urn, step.type, id=f"id-{step.name}"))
            on_event(Event("done", step))
        self.state = state
        if self.cloud is not None:  # what was created now exists in the cloud too, running
            have = {r.urn for r in self.cloud}
            self.cloud = [
                *(r for r in self.cloud),
                *(replace(r, status="Running") for r in state if r.urn not in have and not r.bookkeeping),
            ]
        return UpResult(ChangeSummary.of(None, steps), dict(self.stack_outputs))

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

    def destroy(
        self,
        target: Target,
        on_event: OnEvent,
        *,
        exclude_protected: bool,
        preview_only: bool = False,
        targets: Sequence[str] = (),
    ) -> ChangeSummary:
        extra = {"targets": tuple(targets)} if targets else {}
        self._record(
            "destroy", target=target, exclude_protected=exclude_protected, preview_only=preview_only, **extra
        )
        state = self._require_state(target)
        kept = self._kept(state) if exclude_protected else set()
        if targets:  # the targets and what depends on them
            doomed_urns = set(targets)
            grew = True
            while grew:
                grew = False
                for r in state:
                    if r.urn not in doomed_urns and (
                        set(r.dependencies) & doomed_urns or r.parent in doomed_urns
                    ):
                        doomed_urns.add(r.urn)
                        grew = True
            kept |= {r.urn for r in state if r.urn not in doomed_urns}
        if not exclude_protected and any(r.protect for r in state):
            raise EngineFailed("the Pulumi engine failed: unable to delete resource: it is protected")
        doomed = [
            Step("delete", r.type, r.name, r.urn) for r in state if r.urn not in kept and not r.bookkeeping
        ]
        if not preview_only:
            for step in doomed:
                on_event(Event("start", step))
                on_event(Event("done", step))
            self.state = [r for r in state if r.urn in kept]
            if self.cloud is not None:
                gone = {s.urn for s in doomed}
                self.cloud = [r for r in self.cloud if r.urn not in gone]
        return ChangeSummary.of(None, doomed)

    def refresh(
        self, target: Target, on_event: OnEvent, *, preview_only: bool = False, targets: Sequence[str] = ()
    ) -> ChangeSummary:
        extra = {"targets": tuple(targets)} if targets else {}
        self._record("refresh", target=target, preview_only=preview_only, **extra)
        state = self._require_state(target)
        if self.cloud is None or preview_only:
            return ChangeSummary.of({"same": len(state)}, ())
        cloud = {r.urn: r for r in self.cloud}
        fresh, steps = [], []
        for r in state:
            if (targets and r.urn not in targets) or r.bookkeeping:
                fresh.append(r)
            elif r.urn not in cloud:
                steps.append(Step("delete", r.type, r.name, r.urn))
            else:
                fresh.append(cloud[r.urn])
                if cloud[r.urn] != r:
                    steps.append(Step("update", r.type, r.name, r.urn))
        self.state = fresh
        return ChangeSummary.of(None, steps)

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


def _urn_type(urn: str) -> str:
    """``urn:pulumi:STACK::PROJECT::[PARENT$]TYPE::NAME`` -> TYPE."""
    parts = urn.split("::")
    return parts[-2].rsplit("$", 1)[-1] if len(parts) >= 4 else ""


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
