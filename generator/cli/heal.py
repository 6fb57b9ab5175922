"""``trainstack heal``: re-create missing nodes, and with ``--health`` reboot, redeploy or (Lingjun) report nodes by
their health and events, then restart a running job at full size (docs/operations.md has the action table).

A thin shell over :mod:`generator.live` and :mod:`generator.live.jobs`, with the helpers of :mod:`generator.cli.live`
(the engine, the preview header, the question before a change).
"""

from __future__ import annotations

import json
from typing import Any

import click

from generator.cli.common import handle
from generator.cli.live import (
    BACKEND_HELP,
    SKIP_STOCK_HELP,
    _cloud_work,
    _confirm,
    _emit,
    _engine,
    _header,
    _say,
    _stock_checker,
)


@click.command()
@click.argument("target", metavar="SPEC|STACK_DIR")
@click.option(
    "--watch",
    metavar="SECONDS",
    type=click.IntRange(min=1),
    help="Check again every SECONDS until Ctrl-C, instead of once.",
)
@click.option("-y", "--yes", is_flag=True, help="Re-create nodes without asking (for cron, CI and --watch).")
@click.option("--backend", metavar="URL", help=BACKEND_HELP)
@click.option("--skip-stock-check", is_flag=True, help=SKIP_STOCK_HELP)
@click.option(
    "--health",
    is_flag=True,
    help="Also reboot, redeploy or (Lingjun) report nodes by their health, events and "
    "the last `trainstack check` (docs/operations.md, heal --health).",
)
@click.option(
    "--grace-minutes",
    default=15,
    show_default=True,
    type=click.IntRange(0, 1440),
    help="With --health: leave a node alone this long after heal rebooted, redeployed or reported it.",
)
@click.option(
    "--no-rejoin",
    is_flag=True,
    help="Leave running jobs alone: do not restart them at full size with the re-created nodes "
    "(ECS stacks; docs/operations.md, heal).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="With --health: read the nodes and print the reboot, redeploy or report "
    "requests as JSON without sending them (nothing is re-created).",
)
@handle
def heal(
    target: str,
    watch: int | None,
    yes: bool,
    backend: str | None,
    skip_stock_check: bool,
    health: bool,
    grace_minutes: int,
    no_rejoin: bool = False,
    dry_run: bool = False,
) -> None:
    """Re-create the GPU nodes of SPEC or STACK_DIR that are gone (released) or stopped, at their ranks and addresses.

    It refreshes the nodes from Alibaba Cloud, then re-creates exactly the missing or stopped ones with a targeted
    update; nothing else in the stack changes (docs/operations.md, "heal"). On Lingjun stacks only --health applies.
    """
    from generator import live
    from generator.errors import BadInput
    from generator.platforms.base import Capability
    from generator.platforms.registry import platform_for

    if dry_run and (not health or watch is not None):
        raise BadInput("--dry-run goes with --health and without --watch: it prints one round's requests")
    engine = _engine()
    t = live.locate(target, backend)
    live.preflight(t)
    platform = platform_for(t.platform)
    if health and not platform.has(Capability.NODES):  # PAI-DLC: the job's workers are DLC's, not the stack's
        _say(
            f"heal --health: {platform.title} runs and restarts the job's workers itself; the stack has no nodes to check"
        )
        return None
    if health and not platform.has(Capability.ECS_INSTANCES):
        return _heal_health_only(engine, target, backend, yes, grace_minutes, watch, dry_run)
    if dry_run:
        return _heal_dry_run(engine, target, backend, grace_minutes)
    checker = None if skip_stock_check else _stock_checker()
    if checker is not None:
        checker.check()
    fleet = live.require_healable(t)
    _header(t)
    _recreate(engine, t, fleet, checker, target, backend, yes, health, grace_minutes, watch, no_rejoin)


def _recreate(
    engine: Any,
    t: Any,
    fleet: Any,
    checker: Any,
    target: str,
    backend: str | None,
    yes: bool,
    health: bool,
    grace_minutes: int,
    watch: int | None,
    no_rejoin: bool,
) -> None:
    """``heal`` on an ECS stack once the checks passed: re-create the missing or stopped nodes once (then rejoin them
    and, with --health, check health), or every ``watch`` seconds until Ctrl-C."""
    from generator import live

    def confirm(sick: Any) -> None:
        _confirm(
            f"Re-create {len(sick)} node{'s' if len(sick) != 1 else ''} of {t.project} (stack {t.stack})?"
        )

    options = {
        "confirm": None if yes else confirm,
        "on_event": live.ProgressPrinter(_emit),
        "sleep": _sleep(),
    }
    with _cloud_work():
        if watch is None:
            healed = live.heal_once(engine, t, fleet, checker, _say, **options)
            if healed and not no_rejoin and _rejoins(t.platform):
                _rejoin(engine, target, backend, [s.node.rank for s in healed])
            if health:
                _heal_health(engine, target, backend, yes, grace_minutes)
        else:
            what = "nodes and their health" if health else "nodes"
            _say(f"heal: checking {len(fleet.nodes)} {what} every {watch} s; Ctrl-C stops")
            after = _health_rounds(engine, target, backend, yes, grace_minutes) if health else None
            live.watch(
                engine,
                t,
                fleet,
                checker,
                _say,
                watch,
                rounds=_obj_get("rounds"),
                after_round=after,
                **options,
            )


def _heal_health_only(
    engine: Any,
    target: str,
    backend: str | None,
    yes: bool,
    grace_minutes: int,
    watch: int | None,
    dry_run: bool,
) -> None:
    """``heal --health`` on a stack whose nodes are not ECS instances (Lingjun): no missing-node pass (``trainstack
    up`` restores those), the health part once or every ``watch`` seconds."""
    from generator.live import Interrupted

    if dry_run:
        return _heal_dry_run(engine, target, backend, grace_minutes)
    _say(
        "heal --health: nodes that are gone are restored by `trainstack up` (they are not ECS instances that heal "
        "re-creates); heal acts on the health of the nodes that are there"
    )
    with _cloud_work():
        if watch is None:
            _heal_health(engine, target, backend, yes, grace_minutes)
            return
        round_, rounds, done = (
            _health_rounds(engine, target, backend, yes, grace_minutes),
            _obj_get("rounds"),
            0,
        )
        while True:
            round_()
            done += 1
            if rounds is not None and done >= rounds:
                return
            try:
                _sleep()(watch)
            except KeyboardInterrupt:
                raise Interrupted(
                    "heal --watch stopped (Ctrl-C) between checks, with nothing in flight."
                ) from None


def _health_api(cluster: Any, t: Any) -> Any:
    """The client ``heal --health`` reads and acts with: ECS, or on Lingjun the EFLO controller's (tests: the
    context object's ``"ecs_api"`` / ``"eflo_api"``)."""
    from generator.live.jobs.client import SdkEcsApi
    from generator.platforms.base import Capability
    from generator.platforms.registry import live_for, platform_for

    if platform_for(cluster.platform).has(Capability.EFLO_JOBS):  # Lingjun's own client (registry.live_for)
        return _obj_get("eflo_api") or live_for(cluster.platform).SdkEfloApi(cluster.region)
    return _obj_get("ecs_api") or SdkEcsApi(cluster.region)


def _heal_dry_run(engine: Any, target: str, backend: str | None, grace_minutes: int) -> None:
    """``heal --health --dry-run``: the reads, the decisions (on stderr) and the write requests as JSON (stdout), each
    through the SDK's request model, nothing sent."""
    import os

    from generator import live
    from generator.live.jobs.stack import health_plan, stack_cluster

    t, cluster = stack_cluster(target, backend, engine)
    api = _health_api(cluster, t)
    api.check()
    live.require_credentials(os.environ)
    actions, writes, _ = health_plan(t, cluster, api, _clock(), grace_minutes)
    for a in actions:
        if a.kind != "none":
            _say(f"rank {a.rank} ({a.instance_id or 'no instance'}): {a.kind}: {a.why}", err=True)
    from generator.platforms.base import Capability
    from generator.platforms.registry import live_for, platform_for

    eflo = platform_for(cluster.platform).has(Capability.EFLO_JOBS)
    product = {"api": live_for(cluster.platform).API} if eflo else {}
    items = [
        {"action": a, "region": cluster.region, "request": api.request_map(a, b), "dry_run": True, **product}
        for a, b in writes
    ]
    _say(json.dumps(items, indent=2, sort_keys=True, ensure_ascii=False))


def _obj_get(key: str) -> Any:
    obj = click.get_current_context().find_root().obj
    return obj.get(key) if isinstance(obj, dict) else None


def _clock() -> Any:
    """The time ``heal --health`` decides by: the context object's ``"clock"`` (a callable) or ``"now"`` in tests."""
    import datetime

    clock = _obj_get("clock")
    if clock is not None:
        return clock()
    return _obj_get("now") or datetime.datetime.now(datetime.timezone.utc)


def _heal_health(
    engine: Any,
    target: str,
    backend: str | None,
    yes: bool,
    grace_minutes: int,
    say: Any = None,
    quiet: bool = False,
) -> Any:
    """``heal --health`` once (docs/operations.md); the client is the context object's ``"ecs_api"`` (or on Lingjun
    ``"eflo_api"``) in tests. Returns the actions decided."""
    import os

    from generator import live
    from generator.live.jobs.stack import heal_health, stack_cluster

    t, cluster = stack_cluster(target, backend, engine)
    api = _health_api(cluster, t)
    live.require_credentials(os.environ)
    return heal_health(
        t,
        cluster,
        api,
        say or _say,
        None if yes else _confirm,
        _clock(),
        grace_minutes,
        quiet_when_idle=quiet,
    )


def _health_rounds(engine: Any, target: str, backend: str | None, yes: bool, grace_minutes: int) -> Any:
    """The ``--health`` part of each ``heal --watch`` round: the action table on a fresh read of ECS health, events
    and the quarantine, each action printed as a timestamped event; the grace period and the stock cool-down carry
    over between rounds in the quarantine file. An ECS API error ends the round, not the watch."""
    from generator.live.jobs.client import EcsApiError

    state = {"idle": False}

    def round_() -> None:
        stamp = _clock().strftime("%Y-%m-%dT%H:%M:%SZ")

        def say(line: str) -> None:
            _say(f"{stamp} health: {line}")

        try:
            actions = _heal_health(engine, target, backend, yes, grace_minutes, say, quiet=state["idle"])
        except EcsApiError as e:
            say(f"{e} (trying again next round)")
            state["idle"] = False
            return
        state["idle"] = not any(a.kind != "none" for a in actions)

    return round_


def _rejoins(platform: str) -> bool:
    """Whether heal restarts the running jobs on re-created nodes: over ECS Cloud Assistant (generator/live/jobs)."""
    from generator.platforms.base import Capability
    from generator.platforms.registry import platform_for

    return platform_for(platform).has(Capability.CLOUD_ASSISTANT_JOBS)


def _rejoin(engine: Any, target: str, backend: str | None, ranks: list[int]) -> None:
    """The running jobs of the stack start on the re-created ranks (generator/live/jobs/rejoin.py)."""
    import os

    from generator import live
    from generator.live.jobs.client import SdkEcsApi, require_ecs_sdk
    from generator.live.jobs.rejoin import rejoin
    from generator.live.jobs.stack import stack_cluster

    obj = click.get_current_context().find_root().obj
    obj = obj if isinstance(obj, dict) else {}
    _, cluster = stack_cluster(target, backend, engine)
    if obj.get("ecs_api") is None:
        require_ecs_sdk("heal's rejoin of running jobs (--no-rejoin skips it)")
    api = obj.get("ecs_api") or SdkEcsApi(cluster.region)
    live.require_credentials(os.environ)
    rejoin(api, cluster, ranks, _say)


def _sleep() -> Any:
    """time.sleep, or what tests put in the context object under ``"sleep"`` (with ``"rounds"``)."""
    import time

    obj = click.get_current_context().find_root().obj
    return obj["sleep"] if isinstance(obj, dict) and obj.get("sleep") is not None else time.sleep


COMMANDS = [heal]
