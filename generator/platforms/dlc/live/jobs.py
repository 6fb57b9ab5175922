"""What ``trainstack submit``, ``jobs``, ``logs`` and ``cancel`` do with a PAI-DLC stack, over the :class:`DlcClient`
port: read the stack outputs through the engine, build or send the request, and keep to the jobs of this stack.

A job "of this stack" carries the stack's tags (:func:`~generator.platforms.dlc.live.request.stack_tags`) and runs in the
stack's workspace; ``logs`` and ``cancel`` refuse any other job id, so a typo cannot stop someone else's job.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.errors import BadInput
from generator.live.checks import preflight
from generator.live.engine import Target
from generator.live.errors import StackNotDeployed
from generator.live.target import default_backend, has_state, stack_outputs, target_for
from generator.plan.model import Plan
from generator.platforms.dlc.live.client import DlcApiError, DlcClient
from generator.platforms.dlc.live.request import (
    JobRequest,
    create_job_request,
    is_stack_job,
    list_jobs_request,
    require_dlc,
)
from generator.render import stackdir

DEFAULT_LOG_LINES = 200
ACTIVE_STATUSES = (
    "Creating",
    "Queuing",
    "Bidding",
    "EnvPreparing",
    "SanityChecking",
    "Running",
    "Restarting",
    "Stopping",
)


class NotThisStacksJob(BadInput):
    """A job id that is not a job trainstack submitted for this stack (or does not exist): exit 2, nothing done."""


def stack_target(
    spec: str | Path, plan: Plan, backend: str | None = None, env: Mapping[str, str] | None = None
) -> Target | None:
    """The engine target of the spec's stack folder, or None when the folder or (in its default ``file://`` state)
    the stack does not exist yet: then there are no outputs, and no engine or passphrase is needed to say so."""
    env = os.environ if env is None else env
    dest = stackdir.default_stack_dir(Path(spec), plan.name, plan.stack)
    if not stackdir.is_stack_dir(dest):
        return None
    target = target_for(dest, backend, env)
    if target.backend == default_backend(dest) and not has_state(dest, target.project, target.stack):
        return None
    return target


def spec_drift(
    spec: str | Path, plan: Plan, backend: str | None = None, env: Mapping[str, str] | None = None
) -> str | None:
    """A warning when the deployed stack folder was rendered from another version of the spec (its plan.json's spec
    digest differs): the job then follows the spec while the workspace, datasets and role are the last ``up``'s."""
    target = stack_target(spec, plan, backend, env)
    if target is None or not target.spec_digest or target.spec_digest == plan.spec_digest:
        return None
    return (
        f"{target.stack_dir} was rendered from another version of {spec}: the job follows the spec, its "
        f"workspace, datasets and role are those of the last `trainstack up`; run `trainstack up {spec}` first "
        "if the change touches them"
    )


def read_outputs(
    engine: Any,
    spec: str | Path,
    plan: Plan,
    backend: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The stack outputs of the spec's deployed stack ({} when it was never deployed); reading a state runs the
    preflight a read needs (the pulumi CLI and the passphrase, not cloud credentials), like ``trainstack outputs``."""
    target = stack_target(spec, plan, backend, env)
    if target is None:
        return {}
    preflight(target, credentials=False, env=env)
    return stack_outputs(engine, target)


def workspace_id(plan: Plan, outputs: Mapping[str, Any]) -> str:
    """The stack's PAI workspace id, or :class:`StackNotDeployed` (one sentence) when the stack has none yet."""
    dlc = require_dlc(plan)
    name = dict(dlc.outputs).get("workspace_id", "workspace_id")
    value = outputs.get(name)
    if not value:
        raise StackNotDeployed(
            f"stack {plan.stack} of {plan.name} has no output {name} (its PAI workspace): run "
            "`trainstack up` first."
        )
    return str(value)


@dataclass(frozen=True, slots=True)
class Submission:
    request: JobRequest
    sdk_map: dict[str, Any]  # the request as the SDK model prints it (to_map()): what is, or would be, sent
    job_id: str = ""  # empty for a dry run


def submit(
    plan: Plan,
    outputs: Mapping[str, Any],
    command: Sequence[str],
    name: str,
    client: DlcClient,
    *,
    dry_run: bool,
) -> Submission:
    """Build the CreateJob request and, unless ``dry_run``, send it; a request with unresolved outputs is never sent."""
    try:
        request = create_job_request(plan, outputs, command, name)
    except ValueError as e:
        raise BadInput(str(e)) from None
    client.check()
    sdk_map = client.request_map("CreateJob", request.body)
    if dry_run:
        return Submission(request, sdk_map)
    if request.unresolved:
        raise StackNotDeployed(
            f"stack {plan.stack} of {plan.name} has no {', '.join(request.unresolved)} output yet, "
            "so no job was submitted: run `trainstack up` first (submit --dry-run shows the "
            "request with placeholders)."
        )
    answer = client.create_job(plan.region, request.body)
    job_id = str(answer.get("JobId") or "")
    if not job_id:
        raise DlcApiError(
            f"PAI-DLC CreateJob answered without a JobId (RequestId {answer.get('RequestId')})."
        )
    return Submission(request, sdk_map, job_id)


def submit_question(plan: Plan, job_name: str) -> str:
    """What ``submit`` asks before it sends the job (without ``--yes``): the job's name and workers."""
    d = require_dlc(plan)
    return f"Submit {job_name} ({d.worker_count} x {d.worker_instance_type}) to PAI-DLC?"


def job_summary(plan: Plan, body: Mapping[str, Any]) -> list[str]:
    """The lines ``submit`` prints about a CreateJob request ``body`` (before it asks, and on a dry run): the job,
    its workers and parallelism, its image and its command."""
    d = require_dlc(plan)
    spot = f", spot {d.spot.spot_strategy}" if d.spot else ""
    return [
        f"job:       {body['DisplayName']} ({body['JobType']}) in {plan.region}, workspace {body['WorkspaceId']}",
        (
            f"workers:   {d.worker_count} x {d.worker_instance_type} ({d.gpus_per_worker} x {d.gpu}){spot}; "
            f"tp={d.tp} pp={d.pp} dp={d.dp}"
        ),
        f"image:     {d.image}",
        f"command:   {body['UserCommand']}",
    ]


def stack_jobs(
    plan: Plan, outputs: Mapping[str, Any], client: DlcClient, *, limit: int = 50
) -> list[Mapping[str, Any]]:
    """The jobs trainstack submitted for this stack, newest first (ListJobs filtered by the stack's tags)."""
    ws = workspace_id(plan, outputs)
    client.check()
    body = client.list_jobs(plan.region, list_jobs_request(plan, ws, limit))
    return [j for j in body.get("Jobs") or () if isinstance(j, Mapping) and is_stack_job(plan, j, ws)]


def stack_job(plan: Plan, outputs: Mapping[str, Any], client: DlcClient, job_id: str) -> dict[str, Any]:
    """GetJob for ``job_id``, refused (exit 2) unless it is a job of this stack."""
    ws = workspace_id(plan, outputs)
    client.check()
    try:
        job = client.get_job(plan.region, job_id)
    except DlcApiError as e:
        if "NotFound" in str(e) or "NotExist" in str(e):
            raise NotThisStacksJob(
                f"no DLC job {job_id} in {plan.region}: `trainstack jobs` lists this stack's jobs."
            ) from None
        raise
    if not is_stack_job(plan, job, ws):
        raise NotThisStacksJob(
            f"DLC job {job_id} was not submitted by trainstack for stack {plan.stack} of "
            f"{plan.name} (its tags or workspace differ), so it was left alone: `trainstack jobs` "
            "lists this stack's jobs."
        )
    return job


@dataclass(frozen=True, slots=True)
class PodLogs:
    pod_id: str
    pod_type: str
    status: str
    lines: tuple[str, ...]


def job_logs(
    plan: Plan,
    outputs: Mapping[str, Any],
    client: DlcClient,
    job_id: str,
    *,
    pod: str | None = None,
    lines: int = DEFAULT_LOG_LINES,
) -> list[PodLogs]:
    """The last ``lines`` log lines of each pod of a job of this stack (or of ``pod`` only), from GetPodLogs."""
    job = stack_job(plan, outputs, client, job_id)
    pods = [p for p in job.get("Pods") or () if isinstance(p, Mapping) and p.get("PodId")]
    if pod is not None:
        pods = [p for p in pods if p.get("PodId") == pod]
        if not pods:
            raise BadInput(
                f"job {job_id} has no pod {pod}; its pods: "
                f"{', '.join(str(p.get('PodId')) for p in job.get('Pods') or ()) or 'none yet'}."
            )
    out = []
    for p in pods:
        body = client.get_pod_logs(plan.region, job_id, str(p["PodId"]), {"MaxLines": lines})
        out.append(
            PodLogs(
                str(p["PodId"]),
                str(p.get("Type") or ""),
                str(p.get("Status") or ""),
                tuple(str(x) for x in body.get("Logs") or ()),
            )
        )
    return out


def new_lines(printed: Sequence[str], window: Sequence[str]) -> list[str]:
    """The lines of ``window`` (the last N lines GetPodLogs returned) that come after what was ``printed`` already.

    The window overlaps the printed lines when the pod wrote fewer than N lines since the last call; the longest
    suffix of ``printed`` that is a prefix of ``window`` is the overlap. With no overlap (the pod wrote more than N
    lines between two calls) the whole window is new, and lines in between are not shown.
    """
    window = list(window)
    for k in range(min(len(printed), len(window)), 0, -1):
        if list(printed[-k:]) == window[:k]:
            return window[k:]
    return window


def follow_logs(
    plan: Plan,
    outputs: Mapping[str, Any],
    client: DlcClient,
    job_id: str,
    say: Callable[[str], None],
    *,
    pod: str | None = None,
    lines: int = DEFAULT_LOG_LINES,
    interval: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
    max_polls: int | None = None,
) -> str:
    """Print the job's pod logs as they grow, polling every ``interval`` seconds until the job ends; returns its
    last status. Each pod's new lines are found by :func:`new_lines` (GetPodLogs has no cursor)."""
    printed: dict[str, list[str]] = {}
    polls = 0
    while True:
        job = stack_job(plan, outputs, client, job_id)
        status = str(job.get("Status") or "")
        for p in job.get("Pods") or ():
            if (
                not isinstance(p, Mapping)
                or not p.get("PodId")
                or (pod is not None and p.get("PodId") != pod)
            ):
                continue
            pod_id = str(p["PodId"])
            body = client.get_pod_logs(plan.region, job_id, pod_id, {"MaxLines": lines})
            window = [str(x) for x in body.get("Logs") or ()]
            fresh = new_lines(printed.get(pod_id, []), window)
            if fresh and pod_id not in printed:
                say(f"==> {pod_id} ({p.get('Type') or 'pod'}) <==")
            for line in fresh:
                say(f"[{pod_id}] {line.rstrip()}")
            printed[pod_id] = (printed.get(pod_id, []) + fresh)[-lines:]
        polls += 1
        if status and status not in ACTIVE_STATUSES:
            say(f"job {job_id} is {status}")
            return status
        if max_polls is not None and polls >= max_polls:
            return status
        sleep(interval)


def cancel(plan: Plan, outputs: Mapping[str, Any], client: DlcClient, job_id: str) -> dict[str, Any]:
    """StopJob for a job of this stack; returns the job as GetJob saw it before the stop."""
    job = stack_job(plan, outputs, client, job_id)
    client.stop_job(plan.region, job_id)
    return job


def job_row(job: Mapping[str, Any]) -> list[str]:
    """A line of ``trainstack jobs``: id, name, status, workers x type, created, duration."""
    specs = [s for s in job.get("JobSpecs") or () if isinstance(s, Mapping)]
    workers = " + ".join(f"{s.get('PodCount')} x {s.get('EcsSpec') or s.get('Type') or '?'}" for s in specs)
    duration = job.get("Duration")
    return [
        str(job.get("JobId") or ""),
        str(job.get("DisplayName") or ""),
        str(job.get("Status") or ""),
        workers,
        str(job.get("GmtCreateTime") or ""),
        f"{int(duration) // 60} min" if duration not in (None, "") else "",
    ]
