"""``trainstack up``, ``destroy``, ``refresh`` and ``outputs``: the commands that change or read the cloud (``heal``
is :mod:`generator.cli.heal`).

A thin shell over :mod:`generator.live`: it resolves the argument (SPEC or STACK_DIR), runs the preflight checks,
shows what will change, asks before changing anything (unless ``--yes``), and streams progress. The engine is
:class:`generator.live.PulumiEngine` unless the click context object carries another one under ``"engine"``
(that is how the tests run every command against :class:`generator.live.FakeEngine`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import click

from generator.cli.common import handle

BACKEND_HELP = (
    "Pulumi state backend URL (default: $TRAINSTACK_BACKEND, else file://STACK_DIR/.trainstack/state); "
    "e.g. s3://bucket?endpoint=oss-cn-hangzhou.aliyuncs.com&region=cn-hangzhou or https://api.pulumi.com."
)


SKIP_STOCK_HELP = (
    "Do not ask ECS DescribeAvailableResource whether the zone has stock of the instance type before "
    "creating nodes."
)
SKIP_KEY_PAIR_HELP = (
    "Do not ask ECS DescribeKeyPairs whether the admin key pair (compute.admin_key_pair) exists "
    "before creating nodes."
)


def _engine() -> Any:
    obj = click.get_current_context().find_root().obj
    if isinstance(obj, dict) and obj.get("engine") is not None:
        return obj["engine"]
    from generator.live import PulumiEngine

    return PulumiEngine()


def _say(text: str, err: bool = False, nl: bool = True) -> None:
    from generator.live import redact

    click.echo(redact(text), err=err, nl=nl)


def _emit(line: str, err: bool) -> None:
    click.echo(line, err=err)


def _diagnostics_only() -> Any:
    """An event sink for previews: warnings and errors are shown, per-resource planning lines are not."""
    from generator.live import ProgressPrinter

    printer = ProgressPrinter(_emit)
    return lambda event: printer(event) if event.kind in ("diagnostic", "info") else None


@contextlib.contextmanager
def _cloud_work() -> Iterator[None]:
    """Ctrl-C during an engine run gets its own message: cloud operations may be half done, unlike a render."""
    from generator.live import Interrupted

    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(
            "interrupted: Pulumi completes or abandons the resource operations in flight and records "
            "them in the stack's state; run the command again to continue (run `trainstack refresh` "
            "first if the engine was killed)."
        ) from None


def _header(target: Any, digest: str = "") -> None:
    from generator.live import display_backend

    _say(f"stack:        {target.project} (Pulumi stack {target.stack}) in {target.stack_dir}")
    _say(f"state:        {display_backend(target.backend)}")
    if digest:
        _say(f"stack digest: {digest}")
        _say(f"spec digest:  {target.spec_digest}")


def _confirm(question: str) -> None:
    from generator.live import Declined

    try:
        ok = click.confirm(question, default=False)
    except click.Abort:  # end of input (no terminal, no --yes)
        ok = False
    if not ok:
        raise Declined(
            "not confirmed, so nothing was changed (pass --yes to skip the question in pipelines)."
        )


def _print_outputs(values: dict[str, Any]) -> None:
    for key, value in values.items():
        if isinstance(value, str) and "\n" in value:
            _say(f"{key}:")
            for line in value.rstrip("\n").splitlines():
                _say(f"    {line}")
        else:
            _say(f"{key:<30} {value if isinstance(value, str) else json.dumps(value, default=str)}")


@click.command()
@click.argument("target", metavar="SPEC|STACK_DIR")
@click.option(
    "-y", "--yes", is_flag=True, help="Deploy without the preview and the question (for pipelines)."
)
@click.option("--backend", metavar="URL", help=BACKEND_HELP)
@click.option(
    "--expect-digest",
    metavar="HEX",
    help="Deploy only if the stack folder's digest is HEX (the one printed by a reviewed preview).",
)
@click.option("--skip-stock-check", is_flag=True, help=SKIP_STOCK_HELP)
@click.option("--skip-key-pair-check", is_flag=True, help=SKIP_KEY_PAIR_HELP)
@handle
def up(
    target: str,
    yes: bool,
    backend: str | None,
    expect_digest: str | None,
    skip_stock_check: bool,
    skip_key_pair_check: bool,
) -> None:
    """Deploy SPEC (rendered into stacks/<name> first) or STACK_DIR (as is) to Alibaba Cloud.

    A CPFS stack without trainstack:sharedFsAddress deploys in two passes: everything but the nodes, then, once the
    NAS API has given the export's mount address and it is set in the stack's config, the nodes.

    Before nodes are created, ECS DescribeAvailableResource is asked whether their zone has stock (docs/live.md).
    """
    from generator import live

    engine, resolver = _engine(), _mount_address_resolver()
    checker = None if skip_stock_check else _stock_checker()
    key_checker = None if skip_key_pair_check else _key_pair_checker()
    planned = live.planned_target(target, backend)
    live.preflight(planned)
    live.require_mount_address_sdk(planned, resolver)  # before anything is deployed, not between the passes
    prepared = live.prepare_up(target, backend)
    for change in prepared.rendered:
        _say(f"{change.action:>9}  {prepared.target.stack_dir / change.path}")
    for note in prepared.notes:
        _say(f"note: {note}", err=True)
    t = prepared.target
    _header(t, prepared.digest)
    live.check_digest(prepared, expect_digest)
    if checker is not None:
        live.stock_preflight(engine, t, checker, _say)
    if key_checker is not None:
        live.key_pair_preflight(engine, t, key_checker, _say)
    pending = _cpfs_needs_second_pass(engine, t, resolver)
    result = _deploy(engine, t, yes)
    if pending:
        outputs = result.outputs if result is not None else engine.outputs(t)
        with _cloud_work():
            live.resolve_mount_address(engine, t, outputs, resolver, _say)
        _say(f"stack digest: {live.stack_digest(t.stack_dir, t.stack)} (with {live.SHARED_FS_ADDRESS_KEY})")
        _say("second pass: deploying the nodes with the CPFS mount address")
        result = _deploy(engine, t, yes)
    if result is None:
        return
    values = live.format_outputs(result.outputs)
    if values:
        _say("Outputs:")
        _print_outputs(values)


def _cpfs_needs_second_pass(engine: Any, t: Any, resolver: Any) -> bool:
    """Whether ``up`` deploys a CPFS stack in two passes (the nodes after the export's mount address is known). When
    an earlier deploy already made the export, its address is looked up and set now, and one pass does."""
    from generator import live

    pending = live.needs_mount_address(t)
    earlier = live.deployed_export(engine, t) if pending else None
    if (
        earlier is not None
    ):  # an earlier deploy made the export (and perhaps nodes): one pass, with the address
        _say("CPFS: an earlier deploy created the export; its mount address is looked up before deploying")
        with _cloud_work():
            live.resolve_mount_address(engine, t, earlier, resolver, _say)
        _say(f"stack digest: {live.stack_digest(t.stack_dir, t.stack)} (with {live.SHARED_FS_ADDRESS_KEY})")
        return False
    if pending:
        _say(
            "CPFS: the nodes mount the file system at first boot, so they come in a second pass: this pass deploys "
            "everything else, then the export's mount address is looked up and set"
        )
    return pending


def _mount_address_resolver() -> Any:
    """The NAS API client for a CPFS stack's mount address; tests put a recorded one in the context object."""
    obj = click.get_current_context().find_root().obj
    if isinstance(obj, dict) and obj.get("mount_address_resolver") is not None:
        return obj["mount_address_resolver"]
    from generator.live import SdkMountAddressResolver

    return SdkMountAddressResolver()


def _stock_checker() -> Any:
    """The ECS API client of the stock preflight; tests put a recorded one in the context object."""
    obj = click.get_current_context().find_root().obj
    if isinstance(obj, dict) and obj.get("stock_checker") is not None:
        return obj["stock_checker"]
    from generator.live import SdkStockChecker

    return SdkStockChecker()


def _key_pair_checker() -> Any:
    """The ECS API client of the key pair preflight; tests put a recorded one in the context object."""
    obj = click.get_current_context().find_root().obj
    if isinstance(obj, dict) and obj.get("key_pair_checker") is not None:
        return obj["key_pair_checker"]
    from generator.live import SdkKeyPairChecker

    return SdkKeyPairChecker()


def _deploy(engine: Any, t: Any, yes: bool) -> Any:
    """One pass of ``up``: preview, list and ask (unless ``yes``), then deploy; None when nothing was to deploy."""
    from generator import live

    total = None
    if not yes:
        summary = engine.preview(t, _diagnostics_only())
        _say(summary.text(), nl=False)
        if not summary.has_changes:
            _say(
                "nothing to deploy: the stack's state already matches the program "
                "(`trainstack refresh` checks the cloud for drift)"
            )
            return None
        _confirm(f"Deploy these changes to {t.project} (stack {t.stack})?")
        total = len(summary.changes) or summary.change_count
    with _cloud_work():
        result = engine.up(t, live.ProgressPrinter(_emit, total))
    _say(f"Resources: {result.summary.totals()}")
    return result


@click.command()
@click.argument("target", metavar="SPEC|STACK_DIR")
@click.option(
    "-y", "--yes", is_flag=True, help="Destroy without the preview and the question (for pipelines)."
)
@click.option(
    "--delete-data",
    is_flag=True,
    help="Also release the protected data resources (file systems, buckets) from the stack; asks for the "
    "stack name even with --yes.",
)
@click.option(
    "--confirm-name",
    metavar="NAME",
    help="With --delete-data in pipelines: the stack name, instead of typing it.",
)
@click.option("--backend", metavar="URL", help=BACKEND_HELP)
@handle
def destroy(target: str, yes: bool, delete_data: bool, confirm_name: str | None, backend: str | None) -> None:
    """Destroy the cluster of SPEC or STACK_DIR; data (shared file system, checkpoint bucket) is kept."""
    from generator import live

    if confirm_name is not None and not delete_data:
        raise click.UsageError("--confirm-name is only used with --delete-data")
    engine = _engine()
    t = live.locate(target, backend)
    live.preflight(t)
    _header(t)
    try:
        before = engine.resources(t)
    except live.StackNotDeployed:
        _say(
            f"nothing to destroy: {t.project} (stack {t.stack}) has no state in {live.display_backend(t.backend)}"
        )
        return
    if not [r for r in before if not r.bookkeeping]:
        _say("nothing to destroy: the stack has no resources")
        return
    if delete_data:
        _destroy_everything(engine, t, before, target, confirm_name)
    else:
        _destroy_keeping_data(engine, t, before, target, yes)


def _destroy_keeping_data(engine: Any, t: Any, before: list[Any], target: str, yes: bool) -> None:
    from generator import live

    exposed = live.unkept_bucket_security(before)
    for r, bucket in exposed:
        _say(
            f"warning: the kept bucket {bucket.id or bucket.name} would lose its "
            f"{live.BUCKET_SECURING[r.type]} ({r.short_type} {r.name}): this stack was deployed before trainstack "
            f"protected it. `trainstack up {target}` first marks it protected (no cloud change), so it is kept.",
            err=True,
        )
    if exposed and yes:
        raise live.Declined(
            f"not destroying with --yes while a kept bucket would lose what secures it, so nothing "
            f"was changed: run `trainstack up {target}` first, or destroy without --yes to confirm."
        )
    total = None
    if not yes:
        plan = engine.destroy(t, _diagnostics_only(), exclude_protected=True, preview_only=True)
        doomed = {s.urn for s in plan.changes}
        _say(plan.text(), nl=False)
        kept = live.kept_report(r for r in engine.resources(t) if r.urn not in doomed)
        if kept:
            _say("Kept (protected data, what secures it, and what it needs):")
            for line in kept:
                _say(line)
        if not plan.has_changes:
            _say("nothing to destroy: only protected data and what it needs remain")
            return
        _confirm(f"Destroy {len(plan.changes)} resources of {t.project} (stack {t.stack})?")
        total = len(plan.changes)
    with _cloud_work():
        summary = engine.destroy(t, live.ProgressPrinter(_emit, total), exclude_protected=True)
    _say(f"Resources: {summary.totals()}")
    kept = live.kept_report(engine.resources(t))
    if kept:
        _say(
            f"Kept {len(kept)} resource{'s' if len(kept) != 1 else ''}, in Alibaba Cloud and in the stack's state "
            "(they are still billed):"
        )
        for line in kept:
            _say(line)
        _say(f"To release them as well: trainstack destroy {target} --delete-data")


def _destroy_everything(
    engine: Any, t: Any, before: list[Any], target: str, confirm_name: str | None
) -> None:
    from generator import live

    retained = [r for r in before if r.retain_on_delete and not r.bookkeeping]
    if confirm_name is not None:
        if confirm_name != t.project:
            raise live.Declined(
                f"--confirm-name {confirm_name!r} is not the stack name {t.project!r}, so nothing "
                "was changed."
            )
    else:
        _say(f"--delete-data destroys every resource of {t.project}, including these data resources:")
        for r in sorted(before, key=lambda r: r.urn):
            if r.protect or r.retain_on_delete:
                _say(f"  {r.short_type:<24} {r.name:<32} {r.id or '-'}")
        _say(
            "They are retain_on_delete: they leave the stack's state but stay in Alibaba Cloud until you delete "
            "them yourself (instructions follow)."
        )
        try:
            typed = click.prompt(
                f"Type the stack name ({t.project}) to confirm", default="", show_default=False
            )
        except click.Abort:
            typed = ""
        if typed.strip() != t.project:
            raise live.Declined("the name typed is not the stack name, so nothing was changed.")
    real = [r for r in before if not r.bookkeeping]
    with _cloud_work():
        engine.unprotect_all(t)
        summary = engine.destroy(t, live.ProgressPrinter(_emit, len(real)), exclude_protected=False)
    _say(f"Resources: {summary.totals()}")
    if retained:
        _say(
            "These data resources are no longer managed by the stack but were NOT deleted (retain_on_delete); "
            "Alibaba Cloud keeps and bills them until you delete them:"
        )
        for r in retained:
            _say(f"  - {live.how_to_delete(r)}")


@click.command()
@click.argument("target", metavar="SPEC|STACK_DIR")
@click.option(
    "-y", "--yes", is_flag=True, help="Write the refreshed state without the preview and the question."
)
@click.option("--backend", metavar="URL", help=BACKEND_HELP)
@handle
def refresh(target: str, yes: bool, backend: str | None) -> None:
    """Read what really exists in Alibaba Cloud into the stack's state (the cloud itself is not changed)."""
    from generator import live

    engine = _engine()
    t = live.locate(target, backend)
    live.preflight(t)
    _header(t)
    if not yes:
        drift = engine.refresh(t, _diagnostics_only(), preview_only=True)
        _say(drift.text(), nl=False)
        if not drift.has_changes:
            _say("no drift: the state matches Alibaba Cloud")
            return
        _confirm("Write these differences into the stack's state?")
    with _cloud_work():
        summary = engine.refresh(t, live.ProgressPrinter(_emit))
    _say(f"Resources: {summary.totals()}")


@click.command()
@click.argument("target", metavar="SPEC|STACK_DIR")
@click.option("--json", "as_json", is_flag=True, help="Print the outputs as a JSON object.")
@click.option("--show-secrets", is_flag=True, help="Print secret outputs instead of [secret].")
@click.option("--backend", metavar="URL", help=BACKEND_HELP)
@handle
def outputs(target: str, as_json: bool, show_secrets: bool, backend: str | None) -> None:
    """Print the outputs of the last deploy (node IPs, hostfile, bucket, ...)."""
    from generator import live

    t = live.locate(target, backend)
    live.preflight(t, credentials=False)  # reading state needs the passphrase, not cloud credentials
    values = live.format_outputs(_engine().outputs(t), show_secrets)
    if as_json:
        click.echo(
            json.dumps(values, indent=2, sort_keys=True, default=str)
            if show_secrets
            else live.redact(json.dumps(values, indent=2, sort_keys=True, default=str))
        )
    elif values:
        _print_outputs(values)
    else:
        _say("the stack has no outputs (has it been deployed?)")


COMMANDS = [up, destroy, refresh, outputs]
