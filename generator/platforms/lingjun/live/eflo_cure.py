"""``trainstack heal --health`` on Lingjun: the action table for Lingjun nodes (pure), its reads and its actions over
the EFLO controller API (``eflo-controller`` 2022-12-15, ``alibabacloud-eflo-controller20221215``), and its dry run
(docs/operations.md, "heal --health on Lingjun").

Lingjun nodes are not ECS instances: there is no DescribeInstancesFullStatus, no system event and no
RedeployInstance. What the EFLO controller offers instead, and what this module uses:

* **ListClusterNodes** (``ClusterId``, ``MaxResults``, ``NextToken``) lists the cluster's nodes with their
  ``OperatingState`` (https://help.aliyun.com/zh/pai/developer-reference/api-eflo-controller-2022-12-15-listclusternodes).
  A node of the stack that it does not list is gone. The API reference gives no list of ``OperatingState`` values
  and no health field (checked 2026-12), so heal prints the state but never acts on it alone.
* **ListFaultReports** (``Nodes``, ``MaxResults``, ``NextToken``) lists the fault reports of the nodes; a report with
  no ``FinishTime`` is still open (https://www.alibabacloud.com/help/en/intelligent-computing-lingjun/api-eflo-controller-2022-12-15-listfaultreports).
  These are Lingjun's events: Alibaba is working on the node.
* **RebootNodes** (``ClusterId``, ``Nodes``, ``IgnoreFailedNodeTasks``) reboots nodes of a cluster
  (https://help.aliyun.com/zh/intelligent-computing-lingjun/api-eflo-controller-2022-12-15-rebootnodes).
* **ReportNodeStatus** (``NodeId``, ``DiagnosisType`` QUICK or COMPREHENSIVE, ``Description``) reports a fault of a
  node to Alibaba, who diagnoses the machine (https://help.aliyun.com/zh/intelligent-computing-lingjun/api-eflo-controller-2022-12-15-reportnodestatus).
  On Lingjun the node is the physical machine, so this is the hardware route: Alibaba repairs or swaps it.

ReimageNodes (a reinstall of the operating system) is not used: it keeps the same machine, so it does not help a
hardware fault, and it needs the node's bootstrap user data sent again, which ``trainstack up`` owns.

The table, first match wins:

============================================  ==========  ==================================================
situation                                     action      why
============================================  ==========  ==================================================
not listed by ListClusterNodes                replace     gone: ``trainstack up`` restores Lingjun nodes
healed less than the grace period ago         wait        a rebooted node needs minutes to boot and bootstrap
an open fault report (no FinishTime)          wait        Alibaba is handling the node
hardware XID (48, 63, 64, 74, 79, ...)        report      ReportNodeStatus COMPREHENSIVE: the machine
a failed check, first time                    reboot      RebootNodes: a software fault until proven otherwise
a failed check again after a reboot           report      the reboot did not help: suspect the machine
application XID only (13, 31, 43, 45)         none        the program's fault, not the node's
============================================  ==========  ==================================================

No stock is involved in a reboot or a fault report, so the stock cool-down of the ECS table has no Lingjun
counterpart; a node with a report of its own stays in ``wait`` until Alibaba closes it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from generator.live.errors import BadTarget
from generator.live.jobs.cluster import Cluster, Node
from generator.live.jobs.cure import GRACE_MINUTES, Action, _when

# trainstack's bound on node ids per call: the EFLO API reference names none for RebootNodes or ListFaultReports
# (checked 2026-12), so the ECS Cloud Assistant bound of 100 is kept
PER_CALL = 100
PAGE = 100
DIAGNOSIS = "COMPREHENSIVE"
HEAL_VERBS = "reboot or report"  # what heal --health does to a sick node here (its messages)


def _pages(api: Any, action: str, body: Mapping[str, Any], items: str) -> list[dict[str, Any]]:
    """Every item of a NextToken-paged EFLO list call."""
    out: list[dict[str, Any]] = []
    token = ""
    while True:
        request = {**body, "MaxResults": PAGE, **({"NextToken": token} if token else {})}
        answer = api.call(action, request)
        out.extend(dict(i) for i in answer.get(items) or () if isinstance(i, Mapping))
        token = str(answer.get("NextToken") or "")
        if not token or not answer.get(items):
            return out


def node_status(api: Any, cluster: Cluster, node_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per node id of the stack: ``{listed, state, reports: [{id, status, description}]}`` (open reports only)."""
    out: dict[str, dict[str, Any]] = {i: {"listed": False, "state": "", "reports": []} for i in node_ids}
    for n in _pages(api, "ListClusterNodes", {"ClusterId": cluster.cluster_id}, "Nodes"):
        entry = out.get(str(n.get("NodeId")))
        if entry is not None:
            entry["listed"], entry["state"] = True, str(n.get("OperatingState") or "")
    for start in range(0, len(node_ids), PER_CALL):
        chunk = list(node_ids[start : start + PER_CALL])
        for r in _pages(api, "ListFaultReports", {"Nodes": chunk}, "Reports"):
            entry = out.get(str(r.get("NodeId")))
            if entry is not None and not r.get("FinishTime"):
                entry["reports"].append(
                    {
                        "id": str(r.get("ReportId") or ""),
                        "status": str(r.get("Status") or ""),
                        "description": str(r.get("Description") or ""),
                    }
                )
    return out


def decide(
    node: Node,
    seen: Mapping[str, Any] | None,
    quarantined: Mapping[str, Any] | None,
    healed: Mapping[str, Any] | None,
    now: datetime.datetime,
    grace_minutes: int = GRACE_MINUTES,
) -> Action:
    """The action for one Lingjun node (the table of the module docstring)."""
    rank, nid = node.rank, node.instance_id
    if not nid or (seen is not None and not seen.get("listed")):
        return Action(rank, nid, "replace", "the cluster does not list the node: `trainstack up` restores it")
    last = _when(str((healed or {}).get("at") or ""))
    if last is not None and now - last < datetime.timedelta(minutes=grace_minutes):
        what = (healed or {}).get("action")
        return Action(
            rank,
            nid,
            "wait",
            f"{what} at {(healed or {}).get('at')}: in the {grace_minutes}-minute grace period",
        )
    reports = list((seen or {}).get("reports") or ())
    if reports:
        names = ", ".join(f"{r['id']} ({r['status'] or 'open'})" for r in reports)
        return Action(rank, nid, "wait", f"open fault report {names}: Alibaba is handling the node")
    if not quarantined:
        state = str((seen or {}).get("state") or "")
        return Action(rank, nid, "none", f"healthy (OperatingState {state})" if state else "healthy")
    xids = [int(x) for x in quarantined.get("hardware_xids") or ()]
    failed = ", ".join(quarantined.get("failed") or ()) or "a check"
    if xids:
        return Action(rank, nid, "report", f"hardware XID {', '.join(map(str, xids))}")
    if (healed or {}).get("action") in ("reboot", "report"):
        after = "a reboot" if (healed or {}).get("action") == "reboot" else "a closed fault report"
        return Action(rank, nid, "report", f"{failed} failed again after {after}")
    return Action(rank, nid, "reboot", f"{failed} failed (a software fault until a reboot says otherwise)")


def plan_actions(
    nodes: Sequence[Node],
    seen: Mapping[str, Mapping[str, Any]],
    quarantine: Mapping[str, Any],
    now: datetime.datetime,
    grace_minutes: int = GRACE_MINUTES,
) -> list[Action]:
    healed = quarantine.get("healed") or {}
    marked = quarantine.get("nodes") or {}
    return [
        decide(
            n, seen.get(n.instance_id), marked.get(str(n.rank)), healed.get(n.instance_id), now, grace_minutes
        )
        for n in nodes
    ]


def _description(cluster: Cluster, action: Action, quarantined: Mapping[str, Any] | None) -> str:
    details = "; ".join(str(d) for d in (quarantined or {}).get("details") or ())
    text = f"trainstack check on {cluster.name}/{cluster.stack} rank {action.rank}: {action.why}"
    return (f"{text}. {details}" if details else text)[:1000]


def action_requests(
    cluster: Cluster, actions: Sequence[Action], quarantine: Mapping[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """The EFLO requests of the actions: RebootNodes in batches, one ReportNodeStatus per reported node."""
    reboot = [a.instance_id for a in actions if a.kind == "reboot"]
    out: list[tuple[str, dict[str, Any]]] = [
        (
            "RebootNodes",
            {
                "ClusterId": cluster.cluster_id,
                "Nodes": reboot[i : i + PER_CALL],
                "IgnoreFailedNodeTasks": True,
            },
        )
        for i in range(0, len(reboot), PER_CALL)
    ]
    marked = quarantine.get("nodes") or {}
    for a in actions:
        if a.kind == "report":
            body = {
                "NodeId": a.instance_id,
                "DiagnosisType": DIAGNOSIS,
                "Description": _description(cluster, a, marked.get(str(a.rank))),
            }
            out.append(("ReportNodeStatus", body))
    return out


def health_actions(
    stack_dir: Path,
    cluster: Cluster,
    api: Any,
    nodes: Sequence[Node],
    quarantine: Mapping[str, Any],
    now: datetime.datetime,
    grace_minutes: int,
) -> tuple[list[Action], list[tuple[str, dict[str, Any]]]]:
    """``heal --health``'s reads and decisions on Lingjun: the actions by the EFLO controller's node list and fault
    reports, and their requests; the stack outputs must name the eflo cluster the node list is read from."""
    if not cluster.cluster_id:
        raise BadTarget(
            f"{stack_dir}: the stack outputs name no Lingjun cluster (cluster_id): run `trainstack up` first."
        )
    seen = node_status(api, cluster, [n.instance_id for n in nodes])
    actions = plan_actions(nodes, seen, quarantine, now, grace_minutes)
    return actions, action_requests(cluster, actions, quarantine)


def apply(
    api: Any,
    cluster: Cluster,
    actions: Sequence[Action],
    quarantine: dict[str, Any],
    now: datetime.datetime,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Send the requests of the actions; the quarantine with what was done (the grace period starts now)."""
    healed = dict(quarantine.get("healed") or {})
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    by_id = {a.instance_id: a for a in actions}
    for action, body in action_requests(cluster, actions, quarantine):
        answer = api.call(action, body)
        done = list(body["Nodes"]) if action == "RebootNodes" else [body["NodeId"]]
        ref = answer.get("TaskId") if action == "RebootNodes" else answer.get("ReportId")
        for nid in done:
            a = by_id[nid]
            healed[nid] = {"action": a.kind, "at": stamp, "why": a.why, **({"ref": str(ref)} if ref else {})}
            what = f"task {ref}" if action == "RebootNodes" else f"fault report {ref}"
            say(f"rank {a.rank} ({nid}): {a.kind} ({a.why}){f', {what}' if ref else ''}")
    return {**quarantine, "healed": healed}
