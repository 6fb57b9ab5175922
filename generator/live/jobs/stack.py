"""The stack a job, check or ``heal --health`` acts on: its ``compute.platform``, its engine target and its
:class:`~generator.live.jobs.cluster.Cluster` with the instance ids of its outputs; and ``heal --health`` itself
(the platform's action table, reads and calls through :func:`~generator.platforms.registry.live_for`: ECS's
:mod:`~generator.platforms.ecs.live.cure`, Lingjun's :mod:`~generator.platforms.lingjun.live.eflo_cure`; the
quarantine update, the dry run's requests); and
:func:`jobs_api`, which picks ECS Cloud Assistant or, on Lingjun, the EFLO controller's (:mod:`~generator.platforms.lingjun.live.eflo`, through the registry).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from generator.live.checks import preflight
from generator.live.engine import Target
from generator.live.errors import BadTarget
from generator.live.jobs.client import EcsApi
from generator.live.jobs.cluster import (
    Cluster,
    cluster_from_plan,
    cluster_of,
    read_quarantine,
    write_quarantine,
)
from generator.live.jobs.cure import Action
from generator.live.target import default_backend, has_state, planned_target, stack_outputs
from generator.plan import pipeline
from generator.platforms.base import Capability
from generator.platforms.registry import DEFAULT_PLATFORM, live_for, platform_for


def platform_of(target: str) -> str:
    """The ``compute.platform`` of a SPEC or a STACK_DIR (its plan.json)."""
    p = Path(target)
    if p.is_dir():
        try:
            data = json.loads((p / "plan.json").read_text(encoding="utf-8"))
            return str(data["compute"].get("platform") or DEFAULT_PLATFORM)
        except (OSError, ValueError, KeyError, TypeError):
            raise BadTarget(f"{target}: not a stack folder (no plan.json)") from None
    return str(pipeline.plan_file(p).compute.platform)


def stack_cluster(
    target: str,
    backend: str | None,
    engine: Any,
    env: Mapping[str, str] | None = None,
) -> tuple[Target, Cluster]:
    """The stack's target and cluster; no instance ids when it was never deployed (a spec never rendered is
    planned in memory)."""
    env = os.environ if env is None else env
    t = planned_target(target, backend, env)
    if not (t.stack_dir / "plan.json").is_file():
        return t, cluster_from_plan(json.loads(pipeline.plan_file(Path(target)).to_json()), {}, target)
    outputs: dict[str, Any] = {}
    if t.backend != default_backend(t.stack_dir) or has_state(t.stack_dir, t.project, t.stack):
        preflight(t, credentials=False, env=env)
        outputs = stack_outputs(engine, t)
    return t, cluster_of(t.stack_dir, outputs)


def jobs_api(
    cluster: Cluster,
    stack_dir: Path,
    ecs: Any = None,
    eflo: Any = None,
    store: Any = None,
    warn: Callable[[str], None] | None = None,
) -> EcsApi:
    """The Cloud Assistant of the stack's nodes: ECS (``ecs``, default :class:`SdkEcsApi`) or, on Lingjun, the EFLO
    controller's (``eflo``, default its SDK client: ``live_for(...).jobs_api``) behind the same port, its invocations indexed in the
    checkpoint bucket through ``store`` (a :class:`~generator.live.jobs.logstore.LogStore`) when the stack has one."""
    if platform_for(cluster.platform).has(Capability.EFLO_JOBS):  # the platform's own port (Lingjun's live)
        return cast(EcsApi, live_for(cluster.platform).jobs_api(cluster, stack_dir, eflo, store, warn))
    if ecs is not None:
        return cast(EcsApi, ecs)
    from generator.live.jobs.client import SdkEcsApi

    return SdkEcsApi(cluster.region)


def health_plan(
    target: Target, cluster: Cluster, api: Any, now: Any, grace_minutes: int
) -> tuple[list[Action], list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """``heal --health``'s reads and decisions: the actions, the write requests they need (reboot, redeploy, fault
    report) and the quarantine, by the platform's own action table (``live_for(...).health_actions``: ECS nodes by
    ECS health and events, Lingjun nodes by the EFLO controller's node list and fault reports)."""
    nodes = [n for n in cluster.nodes if n.instance_id]
    quarantine = read_quarantine(target.stack_dir)
    if not platform_for(cluster.platform).has(
        Capability.NODES
    ):  # PAI-DLC: its workers are DLC's, none to heal
        return [], [], quarantine
    heal = live_for(cluster.platform)
    actions, writes = heal.health_actions(
        target.stack_dir, cluster, api, nodes, quarantine, now, grace_minutes
    )
    return actions, writes, quarantine


def heal_health(
    target: Target,
    cluster: Cluster,
    api: Any,
    say: Callable[[str], None],
    confirm: Callable[[str], None] | None,
    now: Any,
    grace_minutes: int,
    *,
    quiet_when_idle: bool = False,
) -> list[Action]:
    """``heal --health``: read the nodes' health and events, decide by the action table, reboot, redeploy or report
    (after ``confirm``, unless None), and record what was done in the quarantine file. Returns the actions decided;
    ``quiet_when_idle`` (a watch round after an idle one) says nothing when there is nothing to do. ``api`` is the
    ECS client, or on Lingjun the EFLO controller's (its action names)."""
    nodes = [n for n in cluster.nodes if n.instance_id]
    if not nodes:
        say("heal --health: the stack has no node instances in its outputs")
        return []
    api.check()
    actions, writes, quarantine = health_plan(target, cluster, api, now, grace_minutes)
    for a in actions:
        if a.kind != "none":
            say(f"rank {a.rank} ({a.instance_id or 'no instance'}): {a.kind}: {a.why}")
    verbs = live_for(cluster.platform).HEAL_VERBS
    if not writes:
        if not (quiet_when_idle and all(a.kind == "none" for a in actions)):
            say(f"heal --health: nothing to {verbs} among {len(nodes)} node(s)")
        return actions
    todo = len({a.instance_id for a in actions if a.kind in ("reboot", "redeploy", "report")})
    if confirm is not None:
        confirm(f"{verbs.capitalize()} {todo} node(s) of {cluster.name}?")
    done = live_for(cluster.platform).apply(api, cluster, actions, quarantine, now, say)
    write_quarantine(target.stack_dir, done)
    say("the nodes stay quarantined until `trainstack check` passes on them after the grace period")
    return actions
