"""What ``trainstack submit``, ``jobs``, ``logs`` and ``cancel`` do on an ECS or bare-metal stack, over the
:class:`~generator.live.jobs.client.EcsApi` and :class:`~generator.live.jobs.logstore.LogStore` ports.

A job is one RunCommand per batch of at most 100 nodes, all tagged with the job's name; ``jobs`` groups this stack's
tagged invocations by that name, ``logs`` and ``cancel`` refuse a name that is not one of this stack's jobs. The logs
come from the checkpoint bucket (complete, and kept after ``destroy`` of the nodes) and, for a node that has not
copied its log yet, from Cloud Assistant's own output of the invocation (the last part only).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from generator.errors import BadInput
from generator.live.jobs.client import EcsApi, EcsApiError
from generator.live.jobs.cluster import Cluster, Node
from generator.live.jobs.logstore import LogStore, RankLog, job_names, rank_logs
from generator.live.jobs.request import (
    TAG_JOB,
    ApiRequest,
    describe_invocations_request,
    describe_results_request,
    is_stack_invocation,
    stop_invocation_request,
    tag_value,
)

Say = Callable[[str], None]
ACTIVE = frozenset({"Pending", "Scheduled", "Running", "Stopping"})
STARTED = frozenset(
    {
        "Running",
        "Finished",
        "Success",
        "Failed",
        "Stopped",
        "Stopping",
        "Terminated",
        "Error",
        "Timeout",
        "Cancelled",
    }
)
START_WAIT_SECONDS = 300.0


class NotThisStacksJob(BadInput):
    """A job name that is not a job trainstack submitted for this stack: exit 2, nothing done."""


def send(api: EcsApi, requests: Sequence[ApiRequest], say: Say) -> list[str]:
    """Send the RunCommand requests in order; the InvokeId of each. A failed batch stops the rest (and says which
    batches already run, so ``cancel`` can stop them)."""
    ids: list[str] = []
    for i, r in enumerate(requests):
        try:
            answer = api.call(r.action, r.request)
        except EcsApiError as e:
            if ids:
                raise EcsApiError(
                    f"{e} Batches 1-{len(ids)} already run ({', '.join(ids)}): `trainstack cancel` "
                    "stops them."
                ) from None
            raise
        invoke = str(answer.get("InvokeId") or "")
        if not invoke:
            raise EcsApiError(
                f"ECS {r.action} answered without an InvokeId (RequestId {answer.get('RequestId')})."
            )
        ids.append(invoke)
        say(
            f"batch {i + 1}/{len(requests)}: {len(r.request.get('InstanceId') or ())} node(s), invocation {invoke}"
        )
    return ids


def results(api: EcsApi, cluster: Cluster, invoke_id: str) -> list[dict[str, Any]]:
    """Every node's record of an invocation (DescribeInvocationResults, all pages)."""
    out: list[dict[str, Any]] = []
    page = 1
    while True:
        body = api.call(
            "DescribeInvocationResults", describe_results_request(cluster, invoke_id, page=page).request
        )
        inv = body.get("Invocation") or {}
        items = (inv.get("InvocationResults") or {}).get("InvocationResult") or []
        out.extend(dict(i) for i in items if isinstance(i, Mapping))
        total = int(inv.get("TotalCount") or len(out))
        if not items or len(out) >= total:
            return out
        page += 1


def wait_started(
    api: EcsApi,
    cluster: Cluster,
    invoke_ids: Sequence[str],
    nodes: Sequence[Node],
    say: Say,
    *,
    timeout: float = START_WAIT_SECONDS,
    interval: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, str]:
    """Poll until every node's record has left Pending (or ``timeout``); progress lines while nodes start. Returns
    the last status of each instance."""
    by_id = {n.instance_id: n for n in nodes}
    deadline = clock() + timeout
    last = ""
    status: dict[str, str] = {}
    while True:
        for invoke in invoke_ids:
            for r in results(api, cluster, invoke):
                status[str(r.get("InstanceId"))] = str(
                    r.get("InvokeRecordStatus") or r.get("InvocationStatus") or ""
                )
        started = [i for i in by_id if status.get(i) in STARTED]
        failed = [i for i in by_id if status.get(i) in ("Failed", "Error", "Timeout", "Terminated")]
        line = f"nodes started: {len(started)}/{len(by_id)}" + (f", {len(failed)} failed" if failed else "")
        if line != last:
            say(line)
            last = line
        if len(started) == len(by_id):
            return status
        if clock() >= deadline:
            waiting = sorted(by_id[i].rank for i in by_id if i not in started)
            say(
                f"still pending after {int(timeout)} s: rank(s) {', '.join(map(str, waiting))} (Cloud Assistant "
                "has not started the command there; `trainstack check` tells why)"
            )
            return status
        sleep(interval)


def finished_results(
    api: EcsApi,
    cluster: Cluster,
    invoke_ids: Sequence[str],
    nodes: Sequence[Node],
    *,
    timeout: float,
    interval: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, dict[str, Any]]:
    """Each instance's record once no node is active any more (or ``timeout``), by instance id."""
    deadline = clock() + timeout
    while True:
        records = {str(r.get("InstanceId")): r for i in invoke_ids for r in results(api, cluster, i)}
        if all(
            str((records.get(n.instance_id) or {}).get("InvokeRecordStatus")) not in ACTIVE for n in nodes
        ):
            return records
        if clock() >= deadline:
            return records
        sleep(interval)


@dataclass
class JobRecord:
    """This stack's invocations of one job, as DescribeInvocations lists them."""

    job: str
    kind: str = "job"
    invocations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def invoke_ids(self) -> list[str]:
        return [str(i.get("InvokeId")) for i in self.invocations if i.get("InvokeId")]

    @property
    def created(self) -> str:
        return min((str(i.get("CreationTime") or "") for i in self.invocations), default="")

    @property
    def nodes(self) -> int:
        return sum(
            len((i.get("InvokeInstances") or {}).get("InvokeInstance") or ()) for i in self.invocations
        )

    @property
    def status(self) -> str:
        states = [str(i.get("InvocationStatus") or i.get("InvokeStatus") or "") for i in self.invocations]
        if any(s in ACTIVE for s in states):
            return "Running" if any(s == "Running" for s in states) else states[0]
        if states and all(s in ("Success", "Finished") for s in states):
            return "Success"
        if any(s == "Stopped" for s in states):
            return "Stopped"
        return (
            "Failed"
            if any(s in ("Failed", "PartialFailed") for s in states)
            else (states[0] if states else "")
        )


def stack_invocations(
    api: EcsApi, cluster: Cluster, job: str | None = None, kind: str | None = "job", limit: int = 500
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    page = 1
    while len(out) < limit:
        body = api.call("DescribeInvocations", describe_invocations_request(cluster, job, kind, page).request)
        items = (body.get("Invocations") or {}).get("Invocation") or []
        out.extend(dict(i) for i in items if isinstance(i, Mapping) and is_stack_invocation(cluster, i))
        if not items or page * 50 >= int(body.get("TotalCount") or 0):
            break
        page += 1
    return out


def stack_jobs(api: EcsApi, cluster: Cluster, limit: int = 50) -> list[JobRecord]:
    """This stack's jobs, newest first."""
    jobs: dict[str, JobRecord] = {}
    for inv in stack_invocations(api, cluster):
        name = tag_value(inv, TAG_JOB) or str(inv.get("CommandName") or "")
        jobs.setdefault(name, JobRecord(name)).invocations.append(dict(inv))
    return sorted(jobs.values(), key=lambda j: (j.created, j.job), reverse=True)[:limit]


def stack_job(api: EcsApi, cluster: Cluster, job: str) -> JobRecord:
    found = [i for i in stack_invocations(api, cluster, job) if tag_value(i, TAG_JOB) == job]
    if not found:
        raise NotThisStacksJob(
            f"no job {job} of stack {cluster.stack} of {cluster.name} in Cloud Assistant's "
            "records: `trainstack jobs` lists this stack's jobs."
        )
    return JobRecord(job, invocations=found)


def node_results(api: EcsApi, cluster: Cluster, record: JobRecord) -> dict[int, dict[str, Any]]:
    """Each rank's Cloud Assistant record (status, exit code, output) of a job."""
    rank_of = {n.instance_id: n.rank for n in cluster.nodes if n.instance_id}
    out: dict[int, dict[str, Any]] = {}
    for invoke in record.invoke_ids:
        for r in results(api, cluster, invoke):
            rank = rank_of.get(str(r.get("InstanceId")))
            if rank is not None:
                out[rank] = dict(r)
    return out


def job_logs(
    cluster: Cluster, job: str, *, api: EcsApi | None, store: LogStore | None, rank: int | None = None
) -> list[RankLog]:
    """Each rank's log: the bucket's copy, else Cloud Assistant's output; ``api`` None after the nodes are gone.

    Raises :class:`NotThisStacksJob` when neither knows the job.
    """
    stored: dict[str, RankLog] = {}
    if store is not None and cluster.bucket:
        stored = {r.rank: r for r in rank_logs(store, cluster.bucket, cluster.log_prefix, job)}
    live: dict[int, dict[str, Any]] = {}
    if api is not None:
        try:
            live = node_results(api, cluster, stack_job(api, cluster, job))
        except NotThisStacksJob:
            if not stored:
                raise
    elif not stored:
        raise NotThisStacksJob(f"no log of job {job} in oss://{cluster.bucket}/{cluster.log_prefix}{job}/")
    out: list[RankLog] = []
    for r in sorted({int(k) for k in stored if k.isdigit()} | set(live)):
        if rank is not None and r != rank:
            continue
        s = stored.get(str(r))
        if s is not None and s.text:
            out.append(s)
        elif r in live:
            rec = live[r]
            status = {"state": rec.get("InvokeRecordStatus"), "exit_code": rec.get("ExitCode")}
            out.append(RankLog(str(r), str(rec.get("Output") or ""), s.status if s else status))
        elif s is not None:
            out.append(s)
    return out


def stored_jobs(store: LogStore, cluster: Cluster) -> list[str]:
    return job_names(store, cluster.bucket, cluster.log_prefix) if cluster.bucket else []


def follow(
    cluster: Cluster,
    job: str,
    say: Say,
    *,
    api: EcsApi | None,
    store: LogStore | None,
    rank: int | None = None,
    interval: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
    rounds: int | None = None,
) -> None:
    """Print new log lines until every rank has finished (or ``rounds`` polls, for tests)."""
    printed: dict[str, int] = {}
    n = 0
    while True:
        logs = job_logs(cluster, job, api=api, store=store, rank=rank)
        for r in logs:
            seen = printed.get(r.rank, 0)
            if len(r.text) > seen:
                for line in r.text[seen:].splitlines():
                    say(f"[rank {r.rank}] {line}")
                printed[r.rank] = len(r.text)
        done = logs and all(
            str(r.status.get("state")) in ("finished", "Finished", "Success", "Failed", "Stopped")
            for r in logs
        )
        n += 1
        if done or (rounds is not None and n >= rounds):
            return
        sleep(interval)


def cancel(api: EcsApi, cluster: Cluster, record: JobRecord) -> list[str]:
    """StopInvocation of each of the job's invocations still active; the ids stopped."""
    stopped = []
    for inv in record.invocations:
        status = str(inv.get("InvocationStatus") or inv.get("InvokeStatus") or "")
        if status in ACTIVE and inv.get("InvokeId"):
            api.call("StopInvocation", stop_invocation_request(cluster, str(inv["InvokeId"])).request)
            stopped.append(str(inv["InvokeId"]))
    return stopped
