"""The stack a job, check or ``heal --health`` acts on: its ``compute.platform``, its engine target and its
:class:`~generator.live.jobs.cluster.Cluster` with the instance ids of its outputs; and ``heal --health`` itself
(the ECS reads, the action table of :mod:`~generator.live.jobs.cure`, the calls, the quarantine update); and
:func:`jobs_api`, which picks ECS Cloud Assistant or, on Lingjun, the EFLO controller's (:mod:`~generator.live.jobs.eflo`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from generator.errors import BadInput
from generator.live.checks import preflight
from generator.live.dlc.jobs import stack_outputs
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
from generator.live.jobs.cure import Action, apply, instance_status, plan_actions
from generator.live.target import default_backend, has_state, planned_target
from generator.plan import pipeline
from generator.platforms.base import Capability
from generator.platforms.registry import platform_for

LINGJUN_SENTENCE = (
    "heal --health reads ECS instance health and events (DescribeInstancesFullStatus, "
    "DescribeInstanceHistoryEvents), and Lingjun nodes are not ECS instances: the EFLO controller API has no such "
    "calls that trainstack drives, so restore Lingjun nodes with `trainstack up`"
)


def platform_of(target: str) -> str:
    """The ``compute.platform`` of a SPEC or a STACK_DIR (its plan.json)."""
    p = Path(target)
    if p.is_dir():
        try:
            data = json.loads((p / "plan.json").read_text(encoding="utf-8"))
            return str(data["compute"].get("platform") or "ecs")
        except (OSError, ValueError, KeyError, TypeError):
            raise BadTarget(f"{target}: not a stack folder (no plan.json)") from None
    return str(pipeline.plan_file(p).compute.platform)


def stack_cluster(
    target: str,
    backend: str | None,
    engine: Any,
    env: Mapping[str, str] | None = None,
    *,
    ecs_only: bool = False,
) -> tuple[Target, Cluster]:
    """The stack's target and cluster; no instance ids when it was never deployed (a spec never rendered is
    planned in memory). With ``ecs_only`` (``heal --health``) a Lingjun stack is refused in one sentence (exit 2)."""
    env = os.environ if env is None else env
    t = planned_target(target, backend, env)
    platform = platform_for(t.platform or platform_of(str(t.stack_dir)))
    if ecs_only and not platform.has(Capability.ECS_INSTANCES):  # Lingjun: no ECS instance health or events
        raise BadInput(f"{target}: {LINGJUN_SENTENCE}.")
    if not (t.stack_dir / "plan.json").is_file():
        return t, cluster_from_plan(json.loads(pipeline.plan_file(Path(target)).to_json()), {}, target)
    outputs: dict[str, Any] = {}
    if t.backend != default_backend(t.stack_dir) or has_state(t.stack_dir, t.project, t.stack):
        preflight(t, credentials=False, env=env)
        outputs = stack_outputs(engine, t)
    return t, cluster_of(t.stack_dir, outputs)


def jobs_api(cluster: Cluster, stack_dir: Path, ecs: Any = None, eflo: Any = None) -> EcsApi:
    """The Cloud Assistant of the stack's nodes: ECS (``ecs``, default :class:`SdkEcsApi`) or, on Lingjun, the EFLO
    controller's (``eflo``, default :class:`SdkEfloApi`) behind the same port."""
    if platform_for(cluster.platform).has(Capability.EFLO_JOBS):
        from generator.live.jobs.eflo import EfloJobsApi, SdkEfloApi

        return EfloJobsApi(eflo if eflo is not None else SdkEfloApi(cluster.region), stack_dir)
    if ecs is not None:
        return cast(EcsApi, ecs)
    from generator.live.jobs.client import SdkEcsApi

    return SdkEcsApi(cluster.region)


def heal_health(
    target: Target,
    cluster: Cluster,
    api: EcsApi,
    say: Callable[[str], None],
    confirm: Callable[[str], None] | None,
    now: Any,
    grace_minutes: int,
    *,
    quiet_when_idle: bool = False,
) -> list[Action]:
    """``heal --health``: read ECS health and events, decide by the action table, reboot or redeploy (after
    ``confirm``, unless None), and record what was done in the quarantine file. Returns the actions decided;
    ``quiet_when_idle`` (a watch round after an idle one) says nothing when there is nothing to do."""
    nodes = [n for n in cluster.nodes if n.instance_id]
    if not nodes:
        say("heal --health: the stack has no node instances in its outputs")
        return []
    api.check()
    status = instance_status(api, cluster, [n.instance_id for n in nodes])
    quarantine = read_quarantine(target.stack_dir)
    actions = plan_actions(cluster, nodes, status, quarantine, now, grace_minutes)
    todo = [a for a in actions if a.kind in ("reboot", "redeploy")]
    for a in actions:
        if a.kind != "none":
            say(f"rank {a.rank} ({a.instance_id or 'no instance'}): {a.kind}: {a.why}")
    if not todo:
        if not (quiet_when_idle and all(a.kind == "none" for a in actions)):
            say(f"heal --health: nothing to reboot or redeploy among {len(nodes)} node(s)")
        return actions
    if confirm is not None:
        confirm(f"Reboot or redeploy {len(todo)} node(s) of {cluster.name}?")
    write_quarantine(target.stack_dir, apply(api, cluster, actions, quarantine, now, say))
    say("the nodes stay quarantined until `trainstack check` passes on them after the grace period")
    return actions
