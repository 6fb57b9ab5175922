"""What ``trainstack heal --health`` does to an ECS node that is not healthy: the action table (pure) and its
execution over the :class:`~generator.live.jobs.client.EcsApi` port (docs/operations.md, "heal --health").

Inputs, per node: ECS's view of the instance (DescribeInstancesFullStatus: ``Status``, ``HealthStatus`` and the
scheduled system events; DescribeInstanceHistoryEvents: the events not yet executed), the quarantine of the last
``trainstack check`` (which checks failed, which hardware XIDs), and what heal already did (``healed``: the action and
its time, in the quarantine file) and the cool-down of an instance type after a stock failure.

The table, first match wins:

============================================  ==========  ==================================================
situation                                     action      why
============================================  ==========  ==================================================
no instance (released, reclaimed)             replace     ``trainstack heal`` re-creates it (heal.py)
healed less than the grace period ago         wait        a rebooted node needs minutes to boot and bootstrap
system event ``*.Redeploy`` / ``SystemFailure``  redeploy  the host is failing: move to another one now
system event ``*.Reboot``                     reboot      do the scheduled reboot now, between jobs
``HealthStatus`` Impaired                     redeploy    ECS reports the instance's host as impaired
hardware XID (48, 63, 64, 74, 79, 92, 94, 95,  redeploy    a GPU or NVLink fault of the host's hardware
119, 120)
a failed check, first time                    reboot      a software fault (driver, fabric manager, eRDMA,
                                                          bootstrap, slow NCCL): a reboot clears most
a failed check again after a reboot           redeploy    the reboot did not help: suspect the host
ECS refuses that redeploy (no system event)   replace     StopInstance; the next ``heal`` replaces the node
redeploy wanted, type in stock cool-down      wait        RedeployInstance needs stock of the type
application XID only (13, 31, 43, 45)         none        the program's fault, not the node's
============================================  ==========  ==================================================
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from generator.live.jobs.client import EcsApi, EcsApiError
from generator.live.jobs.cluster import Cluster, Node
from generator.live.jobs.cure import GRACE_MINUTES, Action, _when

COOLDOWN_MINUTES = 30
STOCK_CODES = ("NoStock", "OutOfStock", "ResourceNotAvailable", "InsufficientCapacity", "Zone.NotOnSale")
PER_CALL = 100  # DescribeInstancesFullStatus InstanceId: at most 100 ids per call (SDK docstring)
HEAL_VERBS = "reboot or redeploy"  # what heal --health does to a sick node here (its messages)


def instance_status(api: EcsApi, cluster: Cluster, instance_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """DescribeInstancesFullStatus and DescribeInstanceHistoryEvents for the ids: per id ``{status, health,
    events: [type, ...]}``."""
    out: dict[str, dict[str, Any]] = {i: {"status": "", "health": "", "events": []} for i in instance_ids}
    for start in range(0, len(instance_ids), PER_CALL):
        chunk = list(instance_ids[start : start + PER_CALL])
        body = api.call(
            "DescribeInstancesFullStatus", {"RegionId": cluster.region, "InstanceId": chunk, "PageSize": 100}
        )
        for item in (body.get("InstanceFullStatusSet") or {}).get("InstanceFullStatusType") or ():
            entry = out.setdefault(str(item.get("InstanceId")), {"status": "", "health": "", "events": []})
            entry["status"] = str((item.get("Status") or {}).get("Name") or "")
            entry["health"] = str((item.get("HealthStatus") or {}).get("Name") or "")
            for ev in (item.get("ScheduledSystemEventSet") or {}).get("ScheduledSystemEventType") or ():
                entry["events"].append(str((ev.get("EventType") or {}).get("Name") or ""))
        body = api.call(
            "DescribeInstanceHistoryEvents",
            {
                "RegionId": cluster.region,
                "ResourceType": "instance",
                "ResourceId": chunk,
                "InstanceEventCycleStatus": ["Scheduled", "Executing"],
                "PageSize": 100,
            },
        )
        for ev in (body.get("InstanceSystemEventSet") or {}).get("InstanceSystemEventType") or ():
            found = out.get(str(ev.get("InstanceId")))
            name = str((ev.get("EventType") or {}).get("Name") or "")
            if found is not None and name and name not in found["events"]:
                found["events"].append(name)
    return out


def decide(
    node: Node,
    ecs: Mapping[str, Any] | None,
    quarantined: Mapping[str, Any] | None,
    healed: Mapping[str, Any] | None,
    cooling: bool,
    now: datetime.datetime,
    grace_minutes: int = GRACE_MINUTES,
) -> Action:
    """The action for one node (the table of the module docstring)."""

    def act(kind: str, why: str) -> Action:
        if kind == "redeploy" and cooling:
            return Action(
                node.rank,
                node.instance_id,
                "wait",
                f"{why}, but the instance type is in its stock cool-down after a failed redeploy",
            )
        return Action(node.rank, node.instance_id, kind, why)

    if not node.instance_id or (ecs is not None and not ecs.get("status") and not ecs.get("health")):
        return Action(
            node.rank, node.instance_id, "replace", "the instance is gone: `trainstack heal` re-creates it"
        )
    last = _when(str((healed or {}).get("at") or ""))
    if last is not None and now - last < datetime.timedelta(minutes=grace_minutes):
        return Action(
            node.rank,
            node.instance_id,
            "wait",
            f"{(healed or {}).get('action')} at {(healed or {}).get('at')}: in the {grace_minutes}-minute grace period",
        )
    events = [str(e) for e in (ecs or {}).get("events") or ()]
    if any(e.endswith("Redeploy") or e.startswith("SystemFailure") for e in events):
        return act("redeploy", f"system event {', '.join(events)}")
    if any(e.endswith("Reboot") for e in events):
        return act("reboot", f"system event {', '.join(events)}")
    if str((ecs or {}).get("health")) == "Impaired":
        return act("redeploy", "ECS reports the instance Impaired (DescribeInstancesFullStatus)")
    if not quarantined:
        return Action(node.rank, node.instance_id, "none", "healthy")
    xids = [int(x) for x in quarantined.get("hardware_xids") or ()]
    failed = ", ".join(quarantined.get("failed") or ()) or "a check"
    if xids:
        return act("redeploy", f"hardware XID {', '.join(map(str, xids))}")
    if (healed or {}).get("action") == "reboot":
        return act("redeploy", f"{failed} failed again after a reboot")
    return act("reboot", f"{failed} failed (a software fault until a reboot says otherwise)")


def plan_actions(
    cluster: Cluster,
    nodes: Sequence[Node],
    ecs: Mapping[str, Mapping[str, Any]],
    quarantine: Mapping[str, Any],
    now: datetime.datetime,
    grace_minutes: int = GRACE_MINUTES,
) -> list[Action]:
    until = _when(str((quarantine.get("cooldown") or {}).get(cluster.instance_type) or ""))
    cooling = until is not None and now < until
    healed = quarantine.get("healed") or {}
    marked = quarantine.get("nodes") or {}
    return [
        decide(
            n,
            ecs.get(n.instance_id),
            marked.get(str(n.rank)),
            healed.get(n.instance_id),
            cooling,
            now,
            grace_minutes,
        )
        for n in nodes
    ]


def action_requests(
    cluster: Cluster, actions: Sequence[Action], quarantine: Mapping[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """The ECS requests of the actions (what the dry run prints): one RebootInstance or RedeployInstance each."""
    return [
        (
            "RebootInstance" if a.kind == "reboot" else "RedeployInstance",
            {"InstanceId": a.instance_id, "ForceStop": False},
        )
        for a in actions
        if a.kind in ("reboot", "redeploy")
    ]


def health_actions(
    stack_dir: Path,
    cluster: Cluster,
    api: EcsApi,
    nodes: Sequence[Node],
    quarantine: Mapping[str, Any],
    now: datetime.datetime,
    grace_minutes: int,
) -> tuple[list[Action], list[tuple[str, dict[str, Any]]]]:
    """``heal --health``'s reads and decisions on ECS: the actions by ECS health and events, and their requests."""
    status = instance_status(api, cluster, [n.instance_id for n in nodes])
    actions = plan_actions(cluster, nodes, status, quarantine, now, grace_minutes)
    return actions, action_requests(cluster, actions, quarantine)


def is_stock_error(error: BaseException) -> bool:
    return any(code in str(error) for code in STOCK_CODES)


def apply(
    api: EcsApi,
    cluster: Cluster,
    actions: Sequence[Action],
    quarantine: dict[str, Any],
    now: datetime.datetime,
    say: Any,
) -> dict[str, Any]:
    """RebootInstance / RedeployInstance for the actions that ask for one; the quarantine with what was done."""
    healed = dict(quarantine.get("healed") or {})
    cooldown = dict(quarantine.get("cooldown") or {})
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    for a in actions:
        if a.kind not in ("reboot", "redeploy"):
            continue
        action = "RebootInstance" if a.kind == "reboot" else "RedeployInstance"
        try:
            api.call(action, {"InstanceId": a.instance_id, "ForceStop": False})
        except EcsApiError as e:
            if a.kind == "redeploy" and is_stock_error(e):
                until = now + datetime.timedelta(minutes=COOLDOWN_MINUTES)
                cooldown[cluster.instance_type] = until.strftime("%Y-%m-%dT%H:%M:%SZ")
                say(
                    f"rank {a.rank}: {action} found no stock; no redeploy of {cluster.instance_type} before "
                    f"{cooldown[cluster.instance_type]}"
                )
                continue
            if a.kind == "redeploy":
                # ECS redeploys instances that have a system event and may refuse others: stop the instance
                # instead, and the next `trainstack heal` replaces the stopped node (destroy, create at its rank).
                say(f"rank {a.rank}: {e} Stopping the instance so that `trainstack heal` replaces it.")
                api.call("StopInstance", {"InstanceId": a.instance_id, "ForceStop": False})
                healed[a.instance_id] = {"action": "replace", "at": stamp, "why": a.why}
                continue
            raise
        healed[a.instance_id] = {"action": a.kind, "at": stamp, "why": a.why}
        say(f"rank {a.rank} ({a.instance_id}): {a.kind} ({a.why})")
    return {**quarantine, "healed": healed, "cooldown": cooldown}
