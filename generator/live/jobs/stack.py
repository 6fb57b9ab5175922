"""The stack a job, check or ``heal --health`` acts on: its ``compute.platform``, its engine target and its
:class:`~generator.live.jobs.cluster.Cluster` with the instance ids of its outputs; and ``heal --health`` itself
(the ECS reads, the action table of :mod:`~generator.live.jobs.cure`, the calls, the quarantine update).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

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
from generator.live.jobs.cure import apply, instance_status, plan_actions
from generator.live.target import default_backend, has_state, planned_target
from generator.plan import pipeline
from generator.platforms.base import Capability
from generator.platforms.registry import platform_for

LINGJUN_SENTENCE = (
    "jobs and checks run through ECS Cloud Assistant, and Lingjun nodes are not ECS instances: the EFLO controller "
    "has its own RunCommand API (2022-12-15) that trainstack does not drive yet, so start trainstack-launch on "
    "Lingjun nodes as docs/bootstrap.md shows"
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
    target: str, backend: str | None, engine: Any, env: Mapping[str, str] | None = None
) -> tuple[Target, Cluster]:
    """The stack's target and cluster; no instance ids when it was never deployed (a spec never rendered is
    planned in memory). A Lingjun stack is refused in one sentence (exit 2)."""
    env = os.environ if env is None else env
    t = planned_target(target, backend, env)
    platform = platform_for(t.platform or platform_of(str(t.stack_dir)))
    if not platform.has(Capability.CLOUD_ASSISTANT_JOBS) and not platform.has(Capability.DLC_JOBS):  # Lingjun
        raise BadInput(f"{target}: {LINGJUN_SENTENCE}.")
    if not (t.stack_dir / "plan.json").is_file():
        return t, cluster_from_plan(json.loads(pipeline.plan_file(Path(target)).to_json()), {}, target)
    outputs: dict[str, Any] = {}
    if t.backend != default_backend(t.stack_dir) or has_state(t.stack_dir, t.project, t.stack):
        preflight(t, credentials=False, env=env)
        outputs = stack_outputs(engine, t)
    return t, cluster_of(t.stack_dir, outputs)


def heal_health(
    target: Target,
    cluster: Cluster,
    api: EcsApi,
    say: Callable[[str], None],
    confirm: Callable[[str], None] | None,
    now: Any,
    grace_minutes: int,
) -> None:
    """``heal --health``: read ECS health and events, decide by the action table, reboot or redeploy (after
    ``confirm``, unless None), and record what was done in the quarantine file."""
    nodes = [n for n in cluster.nodes if n.instance_id]
    if not nodes:
        say("heal --health: the stack has no node instances in its outputs")
        return
    api.check()
    status = instance_status(api, cluster, [n.instance_id for n in nodes])
    quarantine = read_quarantine(target.stack_dir)
    actions = plan_actions(cluster, nodes, status, quarantine, now, grace_minutes)
    todo = [a for a in actions if a.kind in ("reboot", "redeploy")]
    for a in actions:
        if a.kind != "none":
            say(f"rank {a.rank} ({a.instance_id or 'no instance'}): {a.kind}: {a.why}")
    if not todo:
        say(f"heal --health: nothing to reboot or redeploy among {len(nodes)} node(s)")
        return
    if confirm is not None:
        confirm(f"Reboot or redeploy {len(todo)} node(s) of {cluster.name}?")
    write_quarantine(target.stack_dir, apply(api, cluster, actions, quarantine, now, say))
    say("the nodes stay quarantined until `trainstack check` passes on them after the grace period")
