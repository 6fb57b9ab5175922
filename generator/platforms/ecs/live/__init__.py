"""ECS's own live operations (the declaration's ``live``; reached through
:func:`generator.platforms.registry.live_for`): the action table of ``heal --health`` over ECS health and events
(:mod:`~generator.platforms.ecs.live.cure`: DescribeInstancesFullStatus, DescribeInstanceHistoryEvents,
RebootInstance, RedeployInstance). The job commands, the health gate and the re-creation of missing nodes are the
shared live engine's (:mod:`generator.live`), which drives ECS instances through Cloud Assistant and Pulumi.
"""

from __future__ import annotations

from generator.platforms.ecs.live.cure import HEAL_VERBS, action_requests, apply, health_actions

__all__ = ["HEAL_VERBS", "action_requests", "apply", "health_actions"]
