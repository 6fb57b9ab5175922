"""The engine port: the :class:`Engine` protocol and the values that cross it (targets, steps, events, change
summaries, outputs and state resources).

Everything that touches the cloud goes through this protocol; :mod:`generator.live.pulumi_engine` implements it
with the Pulumi Automation API, :mod:`generator.live.fake` in memory for tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

DEFAULT_SECRETS_PROVIDER = "passphrase"


# Ops that change something; "same", "read" and the halves of a replacement are not listed to the user.
CHANGE_OPS = ("create", "update", "replace", "delete", "import", "discard")
_SYMBOL = {"create": "+", "update": "~", "replace": "+-", "delete": "-", "import": "=", "discard": "<"}
_WORDS = {
    "create": "to create",
    "update": "to update",
    "replace": "to replace",
    "delete": "to delete",
    "import": "to import",
    "discard": "to forget",
}


def short_type(token: str) -> str:
    """``alicloud:ecs/instance:Instance`` -> ``ecs:Instance``; what a person scanning a progress log needs."""
    parts = token.split(":")
    if len(parts) != 3:
        return token
    package, module, name = parts
    if package == "pulumi" and module == "providers":
        return f"provider:{name}"
    module = module.split("/")[0]
    return f"{package}:{name}" if module in ("index", "") else f"{module}:{name}"


def urn_name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1] if "::" in urn else urn


@dataclass(frozen=True, slots=True)
class Step:
    """One resource operation the engine plans or performs."""

    op: str  # create, update, replace, delete, same, refresh, ... (Pulumi's OpType values)
    type: str  # full type token, e.g. alicloud:ecs/instance:Instance
    name: str
    urn: str = ""

    @property
    def short_type(self) -> str:
        return short_type(self.type)


@dataclass(frozen=True, slots=True)
class Event:
    """What an engine reports while it runs, independent of Pulumi's event classes."""

    kind: str  # "start", "done", "failed", "diagnostic" or "info"
    step: Step | None = None
    severity: str = ""  # diagnostics: "error" or "warning"
    message: str = ""


OnEvent = Callable[[Event], None]


def _ignore(_: Event) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ChangeSummary:
    """Counts per operation (as the engine reports them) and the changing steps, for review and progress."""

    counts: tuple[tuple[str, int], ...] = ()
    steps: tuple[Step, ...] = ()

    @classmethod
    def of(cls, counts: Mapping[str, int] | None, steps: Iterable[Step] = ()) -> ChangeSummary:
        steps = tuple(steps)
        if counts is None:  # derive counts from the steps when the engine gave none
            tally: dict[str, int] = {}
            for s in steps:
                tally[s.op] = tally.get(s.op, 0) + 1
            counts = tally
        clean = tuple(sorted((str(getattr(k, "value", k)), int(v)) for k, v in counts.items() if v))
        return cls(clean, steps)

    def count(self, op: str) -> int:
        return dict(self.counts).get(op, 0)

    @property
    def changes(self) -> tuple[Step, ...]:
        """The steps that change something, deletions and replacements first (they deserve the reader's eye)."""
        order = {"delete": 0, "replace": 1, "update": 2, "discard": 3, "import": 4, "create": 5}
        picked = [s for s in self.steps if s.op in CHANGE_OPS]
        return tuple(sorted(picked, key=lambda s: (order.get(s.op, 9), s.short_type, s.name)))

    @property
    def change_count(self) -> int:
        return sum(self.count(op) for op in CHANGE_OPS) or len(self.changes)

    @property
    def has_changes(self) -> bool:
        return self.change_count > 0

    def totals(self) -> str:
        parts = [f"{_SYMBOL[op]} {self.count(op)} {_WORDS[op]}" for op in CHANGE_OPS if self.count(op)]
        unchanged = self.count("same")
        if unchanged:
            parts.append(f"{unchanged} unchanged")
        return ", ".join(parts) if parts else "no changes"

    def text(self) -> str:
        lines = [f"  {_SYMBOL[s.op]:<2} {s.short_type:<28} {s.name}" for s in self.changes]
        lines.append(f"Resources: {self.totals()}")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class OutputValue:
    value: Any
    secret: bool = False


@dataclass(frozen=True, slots=True)
class UpResult:
    summary: ChangeSummary
    outputs: dict[str, OutputValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StateResource:
    """One resource in the stack's state, with what protection and deletion need to know."""

    urn: str
    type: str
    id: str = ""
    protect: bool = False
    retain_on_delete: bool = False
    dependencies: tuple[str, ...] = ()
    parent: str = ""
    status: str = (
        ""  # the resource's ``status`` output, if it has one (an ECS instance: Running, Stopped, ...)
    )

    @property
    def name(self) -> str:
        return urn_name(self.urn)

    @property
    def short_type(self) -> str:
        return short_type(self.type)

    @property
    def bookkeeping(self) -> bool:
        """The stack itself and provider instances: Pulumi's, not cloud resources a user pays for."""
        return self.type == "pulumi:pulumi:Stack" or self.type.startswith("pulumi:providers:")


@dataclass(frozen=True, slots=True)
class Target:
    """Everything an engine needs to find a stack: its program folder, names, state backend and secrets."""

    stack_dir: Path
    project: str  # Pulumi project name = the spec's name
    stack: str  # Pulumi stack name
    backend: str  # Pulumi backend URL
    secrets_provider: str = DEFAULT_SECRETS_PROVIDER
    spec_digest: str = ""
    shared_fs: str = ""  # the plan's shared file system: "cpfs", "extreme-nas" or "none" ("" when unknown)
    platform: str = ""  # the plan's compute.platform ("" when unknown: registry.DEFAULT_PLATFORM)

    @property
    def config_file(self) -> Path:
        return self.stack_dir / f"Pulumi.{self.stack}.yaml"


class Engine(Protocol):
    """What trainstack asks of a deployment engine. Every method may raise a :class:`LiveError`."""

    def preview(self, target: Target, on_event: OnEvent) -> ChangeSummary:
        """What ``up`` would change, without changing anything."""

    def up(self, target: Target, on_event: OnEvent, *, targets: Sequence[str] = ()) -> UpResult:
        """Create or update the cloud resources to match the program.

        With ``targets`` (URNs) only those resources and the ones that depend on them are touched (``pulumi up
        --target URN --target-dependents``); a targeted URN missing from the state is created.
        """

    def destroy(
        self,
        target: Target,
        on_event: OnEvent,
        *,
        exclude_protected: bool,
        preview_only: bool = False,
        targets: Sequence[str] = (),
    ) -> ChangeSummary:
        """Delete the stack's resources; with ``exclude_protected`` keep protected ones and what they need.

        With ``targets`` (URNs) only those and their dependents are deleted (``--target --target-dependents``).
        """

    def refresh(
        self, target: Target, on_event: OnEvent, *, preview_only: bool = False, targets: Sequence[str] = ()
    ) -> ChangeSummary:
        """Read the cloud's actual state into the stack's state (with ``targets``, of those URNs only)."""

    def outputs(self, target: Target) -> dict[str, OutputValue]:
        """The stack's outputs from its last update."""

    def resources(self, target: Target) -> list[StateResource]:
        """The resources recorded in the stack's state."""

    def unprotect_all(self, target: Target) -> None:
        """Clear the ``protect`` flag on every resource in the state (the cloud is not touched)."""

    def set_config(self, target: Target, key: str, value: str) -> None:
        """Set a plain (not secret) value in the stack's config, ``Pulumi.<stack>.yaml`` (the cloud is not touched)."""
