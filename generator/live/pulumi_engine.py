"""The :class:`PulumiEngine`: the :class:`~generator.live.engine.Engine` that deploys, over the Pulumi Automation
API and the ``pulumi`` CLI, with Pulumi's events and exceptions translated into trainstack's."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from generator.live.checks import INSTALL_PULUMI, require_pulumi_version
from generator.live.engine import (
    ChangeSummary,
    Event,
    OnEvent,
    OutputValue,
    StateResource,
    Step,
    Target,
    UpResult,
    _ignore,
    urn_name,
)
from generator.live.errors import (
    EngineFailed,
    LiveError,
    PassphraseMissing,
    PulumiMissing,
    StackLocked,
    StackNotDeployed,
)
from generator.live.redaction import display_backend

OPENED = False  # whether this process opened a stack with the Pulumi engine (set by PulumiEngine._open)


def engine_env(target: Target) -> dict[str, str]:
    """Environment for every pulumi CLI run: the chosen backend and no surprises.

    ``PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER`` lets Pulumi recover the secrets settings (the passphrase salt)
    from the state if a re-render ever drops them from Pulumi.<stack>.yaml.
    """
    return {
        "PULUMI_BACKEND_URL": target.backend,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER": "true",
    }


def _last_lines(text: str, n: int = 6) -> str:
    noise = (
        "warning: A new version of Pulumi",
        "You are currently using version",
        "To upgrade",
        "Resources:",
        "Duration:",
        "View Live:",
        "    ",
    )
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith(noise)]
    return " | ".join(lines[-n:])


def engine_error(e: BaseException, target: Target) -> LiveError:
    """Translate an Automation API exception into a trainstack error with one actionable sentence."""
    from pulumi.automation import errors as auto_errors

    if isinstance(e, auto_errors.ConcurrentUpdateError):
        return StackLocked(
            f"stack {target.stack} of {target.project} is locked by another update: wait for it to "
            f"finish, or if none is running (a crashed run), run `pulumi cancel --stack {target.stack}` "
            f"in {target.stack_dir} with PULUMI_BACKEND_URL={display_backend(target.backend)}, "
            'then run this command again (docs/live.md, "After a crash").'
        )
    if isinstance(e, auto_errors.StackNotFoundError):
        return StackNotDeployed(
            f"stack {target.stack} of {target.project} has no state in "
            f"{display_backend(target.backend)}: deploy it first with `trainstack up`, or pass "
            "the --backend it was deployed with."
        )
    if isinstance(e, auto_errors.InvalidVersionError):  # the Automation API's own check (after trainstack's)
        text = str(e)
        what = (
            "its version cannot be parsed"
            if "Could not parse" in text
            else "it is a newer major version than the pulumi SDK"
            if "Major version" in text
            else "it is too old for the pulumi SDK"
        )
        return PulumiMissing(f"the Automation API refuses the pulumi CLI: {what} ({text}): {INSTALL_PULUMI}")
    if isinstance(e, FileNotFoundError) or (
        isinstance(e, subprocess.CalledProcessError) and "version" in e.cmd
    ):
        return PulumiMissing(
            f"the pulumi CLI could not be started (`pulumi version` failed): {INSTALL_PULUMI}"
        )
    if isinstance(e, auto_errors.CommandError) and "incorrect passphrase" in str(e):
        return PassphraseMissing(
            f"PULUMI_CONFIG_PASSPHRASE is not the passphrase the secrets of stack {target.stack} "
            f"of {target.project} were encrypted with (Pulumi: incorrect passphrase): set the one "
            "used when the stack was created; it cannot be recovered from the state."
        )
    if isinstance(e, auto_errors.CommandError):
        # CommandError carries only str(CommandResult): "\n code: N\n stdout: ...\n stderr: ..."
        text = str(e.args[0]) if e.args else ""
        cut = text.rfind("\n stderr: ")
        stdout, stderr = (text[:cut], text[cut + len("\n stderr: ") :]) if cut >= 0 else (text, "")
        # the cause is usually in the stdout "Diagnostics:" block, stderr adds the verdict ("update failed")
        lines = [ln for ln in stdout.splitlines() if "error:" in ln] + stderr.splitlines()
        detail = _last_lines("\n".join(dict.fromkeys(ln.strip() for ln in lines)))
        return EngineFailed(
            f"the Pulumi engine failed for {target.project}/{target.stack}: {detail or 'no detail'}"
            " (rerun with --debug for the whole log)"
        )
    return EngineFailed(
        f"the Pulumi engine failed for {target.project}/{target.stack}: {type(e).__name__}: {e}"
    )


def _targeted(targets: Sequence[str], dependents: bool = True) -> dict[str, Any]:
    """Automation API arguments for a targeted run: ``--target URN ...`` (and ``--target-dependents``)."""
    if not targets:
        return {}
    return {"target": list(targets), "target_dependents": True} if dependents else {"target": list(targets)}


def _status(outputs: Any) -> str:
    """A resource's ``status`` output in an exported deployment (an ECS instance's Running, Stopped, ...)."""
    value = outputs.get("status") if isinstance(outputs, dict) else None
    return value if isinstance(value, str) else ""


class _Collector:
    """Translates Pulumi engine events into :class:`Event` and remembers the steps for the change summary."""

    HIDDEN_OPS = (
        "create-replacement",
        "delete-replaced",
        "read-replacement",
        "discard-replaced",
        "remove-pending-replace",
        "import-replacement",
    )

    def __init__(self, on_event: OnEvent):
        self.on_event = on_event
        self.steps: dict[str, Step] = {}
        self.counts: Mapping[Any, int] | None = None  # from the run's own summary event, when it sends one

    @staticmethod
    def _visible(meta: Any) -> bool:
        return meta.type != "pulumi:pulumi:Stack" and not (
            meta.type.startswith("pulumi:providers:") and urn_name(meta.urn).startswith("default")
        )

    def _step(self, meta: Any) -> Step:
        op = getattr(meta.op, "value", str(meta.op))
        return Step(op=op, type=meta.type, name=urn_name(meta.urn), urn=meta.urn)

    def __call__(self, ev: Any) -> None:
        try:
            self._handle(ev)
        except Exception:  # noqa: BLE001, S110 a display problem must never abort a deployment
            pass

    def _handle(self, ev: Any) -> None:
        summary = getattr(ev, "summary_event", None)
        if summary is not None:
            self.counts = summary.resource_changes
            return
        for attr, kind in (
            ("resource_pre_event", "start"),
            ("res_outputs_event", "done"),
            ("res_op_failed_event", "failed"),
        ):
            wrapped = getattr(ev, attr, None)
            if wrapped is None:
                continue
            meta = wrapped.metadata
            if not self._visible(meta):
                return
            step = self._step(meta)
            if step.op in self.HIDDEN_OPS:
                return
            if kind == "start":
                self.steps.setdefault(step.urn + "|" + step.op, step)
            self.on_event(Event(kind, step))
            return
        d = getattr(ev, "diagnostic_event", None)
        if d is not None and d.severity in ("error", "warning") and not d.ephemeral:
            where: Step | None = None
            if d.urn and "pulumi:pulumi:Stack" not in d.urn:
                parts = d.urn.split("::")  # urn:pulumi:STACK::PROJECT::[PARENT$]TYPE::NAME
                typ = parts[-2].rsplit("$", 1)[-1] if len(parts) >= 2 else ""
                where = Step("", typ, urn_name(d.urn), d.urn)
            self.on_event(Event("diagnostic", where, d.severity, d.message))

    def summary(self, counts: Mapping[Any, int] | None) -> ChangeSummary:
        """Counts from this run's summary event if it came, else the ones the Automation API returned."""
        return ChangeSummary.of(self.counts if self.counts is not None else counts, self.steps.values())


class PulumiEngine:
    """The :class:`Engine` that deploys: pulumi.automation over the ``pulumi`` CLI, one stack folder at a time.

    The program is the generated ``__main__.py`` in the stack folder (a "local program"); project and stack
    settings are never passed to the workspace because that would rewrite the rendered Pulumi.yaml.
    """

    def _open(self, target: Target, create: bool) -> Any:
        from pulumi import automation as auto

        global OPENED
        OPENED = True  # the process exits normally after this (generator.cli.entry skips teardown otherwise)
        if target.backend.startswith("file://"):
            Path(target.backend[len("file://") :]).mkdir(parents=True, exist_ok=True)
        opts = auto.LocalWorkspaceOptions(
            work_dir=str(target.stack_dir),
            env_vars=engine_env(target),
            secrets_provider=target.secrets_provider,
        )
        opener = auto.create_or_select_stack if create else auto.select_stack
        return opener(stack_name=target.stack, work_dir=str(target.stack_dir), opts=opts)

    @contextlib.contextmanager
    def _session(
        self, target: Target, on_event: OnEvent = _ignore, create: bool = False, program: bool = False
    ) -> Iterator[Any]:
        """Open the stack, install the program's venv on first use, and translate every failure."""
        require_pulumi_version()
        try:
            stack = self._open(target, create)
            if program and not (target.stack_dir / "venv").exists():
                on_event(
                    Event(
                        "info",
                        message="installing the program's Python dependencies into venv/ "
                        "(first run only; needs PyPI and the alicloud plugin download)",
                    )
                )
                stack.workspace.install()
            yield stack
        except LiveError:
            raise
        except Exception as e:
            raise engine_error(e, target) from e

    def preview(self, target: Target, on_event: OnEvent) -> ChangeSummary:
        collector = _Collector(on_event)
        with self._session(target, on_event, create=True, program=True) as stack:
            result = stack.preview(on_event=collector, color="never")
        return collector.summary(result.change_summary)

    def up(self, target: Target, on_event: OnEvent, *, targets: Sequence[str] = ()) -> UpResult:
        collector = _Collector(on_event)
        with self._session(target, on_event, create=True, program=True) as stack:
            result = stack.up(on_event=collector, color="never", show_secrets=False, **_targeted(targets))
        outputs = {k: OutputValue(v.value, bool(v.secret)) for k, v in (result.outputs or {}).items()}
        return UpResult(collector.summary(result.summary.resource_changes), outputs)

    def destroy(
        self,
        target: Target,
        on_event: OnEvent,
        *,
        exclude_protected: bool,
        preview_only: bool = False,
        targets: Sequence[str] = (),
    ) -> ChangeSummary:
        import inspect

        from pulumi import automation as auto

        if exclude_protected and "exclude_protected" not in inspect.signature(auto.Stack.destroy).parameters:
            raise EngineFailed(
                "this pulumi Python SDK cannot destroy while keeping protected data: upgrade it "
                "(pip install -U 'pulumi>=3.150,<4')."
            )
        collector = _Collector(on_event)
        with self._session(target, on_event) as stack:
            if preview_only:
                result = stack.preview_destroy(
                    on_event=collector,
                    color="never",
                    exclude_protected=exclude_protected,
                    **_targeted(targets),
                )
                return collector.summary(result.change_summary)
            result = stack.destroy(
                on_event=collector,
                color="never",
                show_secrets=False,
                exclude_protected=exclude_protected,
                **_targeted(targets),
            )
        return collector.summary(result.summary.resource_changes)

    def refresh(
        self, target: Target, on_event: OnEvent, *, preview_only: bool = False, targets: Sequence[str] = ()
    ) -> ChangeSummary:
        collector = _Collector(on_event)
        with self._session(target, on_event) as stack:
            if preview_only:
                result = stack.preview_refresh(on_event=collector, color="never", **_targeted(targets, False))
                return collector.summary(result.change_summary)
            result = stack.refresh(
                on_event=collector, color="never", show_secrets=False, **_targeted(targets, False)
            )
        return collector.summary(result.summary.resource_changes)

    def outputs(self, target: Target) -> dict[str, OutputValue]:
        with self._session(target) as stack:
            return {k: OutputValue(v.value, bool(v.secret)) for k, v in stack.outputs().items()}

    def resources(self, target: Target) -> list[StateResource]:
        with self._session(target) as stack:
            deployment = stack.export_stack().deployment or {}
        return [
            StateResource(
                urn=r.get("urn", ""),
                type=r.get("type", ""),
                id=str(r.get("id") or ""),
                protect=bool(r.get("protect")),
                retain_on_delete=bool(r.get("retainOnDelete")),
                dependencies=tuple(r.get("dependencies") or ()),
                parent=r.get("parent") or "",
                status=_status(r.get("outputs")),
            )
            for r in deployment.get("resources") or []
        ]

    def set_config(self, target: Target, key: str, value: str) -> None:
        from pulumi import automation as auto

        with self._session(target) as stack:
            stack.set_config(key, auto.ConfigValue(value=value, secret=False))

    def unprotect_all(self, target: Target) -> None:
        with self._session(target) as stack:
            ws = stack.workspace
            ws.pulumi_command.run(
                ["state", "unprotect", "--all", "--yes", "--stack", target.stack],
                ws.work_dir,
                dict(ws.env_vars),
            )
