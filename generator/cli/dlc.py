"""``trainstack submit``, ``jobs``, ``logs`` and ``cancel``: PAI-DLC jobs of a ``compute.platform: pai-dlc`` stack.

A thin shell over PAI-DLC's live operations (:mod:`generator.platforms.dlc.live`, reached through
:func:`generator.platforms.registry.live_for`): it plans the spec, reads the stack outputs through the engine (the
click context object may carry ``"engine"``, as for the live commands, and ``"dlc_client"``: a recorded client in
tests), and prints. The PAI-DLC SDK is imported only when one of these commands runs (docs/live.md).
"""

from __future__ import annotations

import datetime
import json
import os
from typing import Any

import click

from generator.cli.common import handle
from generator.cli.live import BACKEND_HELP, _engine, _say


def _live(spec: str) -> Any:
    """The live operations of SPEC's platform (generator/platforms/dlc/live/, through the registry)."""
    from generator.cli.jobs import platform_of
    from generator.platforms.registry import live_for

    return live_for(platform_of(spec))


def _client(dlc: Any) -> Any:
    obj = click.get_current_context().find_root().obj
    if isinstance(obj, dict) and obj.get("dlc_client") is not None:
        return obj["dlc_client"]
    return dlc.SdkDlcClient()


def _now() -> datetime.datetime:
    obj = click.get_current_context().find_root().obj
    if isinstance(obj, dict) and obj.get("now") is not None:
        return obj["now"]
    return datetime.datetime.now(datetime.timezone.utc)


def _runs_dlc_jobs(spec: str) -> bool:
    """Whether SPEC's platform runs its jobs on PAI-DLC (else over ECS Cloud Assistant: generator.cli.jobs)."""
    from generator.cli.jobs import platform_of
    from generator.platforms.base import Capability
    from generator.platforms.registry import platform_for

    return platform_for(platform_of(spec)).has(Capability.DLC_JOBS)


def _dlc_plan(spec: str) -> Any:
    from generator import api
    from generator.errors import BadInput

    plan = api.plan(spec)
    try:
        _live(spec).require_dlc(plan)
    except ValueError as e:
        raise BadInput(f"{spec}: {e}.") from None
    return plan


def _cloud_ready(client: Any) -> None:
    """Before a call to the cloud: the SDK (exit 29), then credentials (exit 21), each one sentence."""
    from generator import live

    client.check()
    live.require_credentials(os.environ)


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("spec", metavar="SPEC|STACK_DIR")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the request(s) without sending them: CreateJob on PAI-DLC, "
    "RunCommand on ECS (placeholders for the ids of a stack that is not "
    "deployed yet).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the request (and the job id) as JSON.")
@click.option("--name", metavar="NAME", help="The job's display name (default: <spec name>-<UTC time>).")
@click.option("-y", "--yes", is_flag=True, help="Submit without the question (for pipelines).")
@click.option("--backend", metavar="URL", help=BACKEND_HELP)
@click.option(
    "--nodes", "ranks", metavar="RANKS", help="ECS: only these ranks, e.g. 0-7,9 (default: every node)."
)
@click.option(
    "--no-check", is_flag=True, help="ECS: start without the health gate (trainstack check --level quick)."
)
@click.option(
    "--timeout-hours",
    default=168,
    show_default=True,
    type=click.IntRange(1, 8760),
    help="ECS: Cloud Assistant stops the job after this many hours (RunCommand Timeout).",
)
@handle
def submit(
    spec: str,
    command: tuple[str, ...],
    dry_run: bool,
    as_json: bool,
    name: str | None,
    yes: bool,
    backend: str | None,
    ranks: str | None,
    no_check: bool,
    timeout_hours: int,
) -> None:
    """Start COMMAND (after --) as a job of SPEC or STACK_DIR: trainstack-launch on every node of an ECS stack
    (through Cloud Assistant, after the health gate), or a PAI-DLC PyTorch job on a pai-dlc stack.

    Several words after -- are the program and its arguments, each passed exactly (on ECS they reach
    trainstack-launch as data, never through a shell); on PAI-DLC one word is a shell command line used as written
    (trainstack submit SPEC -- 'torchrun train.py && echo done').
    """
    if not command:
        raise click.UsageError(
            "give the command the job runs after --, e.g. trainstack submit SPEC -- torchrun train.py"
        )
    if not _runs_dlc_jobs(spec):  # the platform's jobs go through Cloud Assistant (cli/jobs.py)
        from generator.cli import jobs as ecs

        ecs.submit(spec, command, dry_run, as_json, name, yes, backend, ranks, no_check, timeout_hours)
        return
    plan = _dlc_plan(spec)
    dlc = _live(spec)
    client = _client(dlc)
    outputs = dlc.read_outputs(_engine(), spec, plan, backend)
    drift = dlc.spec_drift(spec, plan, backend)
    if drift:
        _say(f"warning: {drift}", err=True)
    job_name = name or dlc.display_name(plan, _now().strftime("%Y%m%d-%H%M%S"))
    if not dry_run:
        _cloud_ready(client)
        if not yes:
            _confirm_submit(dlc, plan, outputs, command, job_name, as_json)
    result = dlc.submit(plan, outputs, command, job_name, client, dry_run=dry_run)
    _report_submit(dlc, spec, plan, result, job_name, dry_run, as_json)


def _confirm_submit(
    dlc: Any, plan: Any, outputs: Any, command: tuple[str, ...], job_name: str, as_json: bool
) -> None:
    """Without --yes: show the CreateJob request and ask before submitting (on stderr with --json, so stdout stays
    JSON). A request that cannot be built or is unresolved is not asked about: dlc.submit says why."""
    try:
        request = dlc.create_job_request(plan, outputs, command, job_name)
    except ValueError:
        request = None  # dlc.submit says why, in one sentence
    if request is not None and not request.unresolved:  # with --json, stdout stays JSON: ask on stderr
        _summary(dlc, plan, request.body, err=as_json)
        _confirm(dlc.submit_question(plan, job_name), err=as_json)


def _report_submit(
    dlc: Any, spec: str, plan: Any, result: Any, job_name: str, dry_run: bool, as_json: bool
) -> None:
    """What ``submit`` prints for a PAI-DLC job: the JSON answer, the dry run's request, or the job's id."""
    if as_json:
        data: dict[str, Any] = {"action": "CreateJob", "region": plan.region, "request": result.sdk_map}
        if dry_run:
            data.update(dry_run=True, unresolved=list(result.request.unresolved))
        else:
            data["job_id"] = result.job_id
        _say(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False))
        return
    if dry_run:
        _summary(dlc, plan, result.request.body)
        _say(json.dumps(result.sdk_map, indent=2, sort_keys=True, ensure_ascii=False))
        if result.request.unresolved:
            _say(
                f"unresolved (the stack is not deployed; run `trainstack up {spec}`): "
                f"{', '.join(result.request.unresolved)}"
            )
        _say("dry run: nothing was submitted")
        return
    _say(f"submitted {result.job_id} ({job_name}); follow it with: trainstack logs {spec} {result.job_id}")


def _summary(dlc: Any, plan: Any, body: dict[str, Any], err: bool = False) -> None:
    for line in dlc.job_summary(plan, body):
        _say(line, err=err)


def _confirm(question: str, err: bool = False) -> None:
    from generator.live import Declined

    try:
        ok = click.confirm(question, default=False, err=err)
    except click.Abort:  # end of input (no terminal, no --yes)
        ok = False
    if not ok:
        raise Declined(
            "not confirmed, so nothing was changed (pass --yes to skip the question in pipelines)."
        )


def _outputs(spec: str, plan: Any, backend: str | None) -> dict[str, Any]:
    return _live(spec).read_outputs(_engine(), spec, plan, backend)


@click.command()
@click.argument("spec", metavar="SPEC|STACK_DIR")
@click.option("--json", "as_json", is_flag=True, help="Print the jobs as the API returned them (JSON).")
@click.option(
    "--limit", default=50, show_default=True, type=click.IntRange(1, 100), help="At most this many jobs."
)
@click.option("--backend", metavar="URL", help=BACKEND_HELP)
@handle
def jobs(spec: str, as_json: bool, limit: int, backend: str | None) -> None:
    """List the jobs trainstack started for SPEC's stack (Cloud Assistant on ECS, PAI-DLC), newest first."""
    if not _runs_dlc_jobs(spec):  # the platform's jobs go through Cloud Assistant (cli/jobs.py)
        from generator.cli import jobs as ecs

        ecs.jobs(spec, as_json, limit, backend)
        return
    from generator.present import text as report

    plan = _dlc_plan(spec)
    dlc = _live(spec)
    outputs = _outputs(spec, plan, backend)
    dlc.workspace_id(plan, outputs)  # not deployed: one sentence before any SDK or credential check
    client = _client(dlc)
    _cloud_ready(client)
    found = dlc.stack_jobs(plan, outputs, client, limit=limit)
    if as_json:
        _say(json.dumps(found, indent=2, sort_keys=True, ensure_ascii=False))
    elif not found:
        _say(
            f"no job of stack {plan.stack} of {plan.name} in the last 7 days (DLC ListJobs' default window); "
            f"submit one with: trainstack submit {spec} -- COMMAND"
        )
    else:
        click.echo(
            report.table(
                ["job", "name", "status", "workers", "created", "ran"], [dlc.job_row(j) for j in found]
            ),
            nl=False,
        )


@click.command()
@click.argument("spec", metavar="SPEC|STACK_DIR")
@click.argument("job")
@click.option("--pod", metavar="POD_ID", help="Only this pod (default: every pod of the job).")
@click.option(
    "--lines",
    default=200,
    show_default=True,
    type=click.IntRange(1, 10000),
    help="The last this many lines of each pod (GetPodLogs MaxLines).",
)
@click.option(
    "-f",
    "--follow",
    is_flag=True,
    help="Keep printing new lines (polling GetPodLogs) until the job ends or Ctrl-C.",
)
@click.option(
    "--interval",
    default=10,
    show_default=True,
    type=click.IntRange(2, 3600),
    metavar="SECONDS",
    help="With --follow: seconds between two polls.",
)
@click.option("--rank", type=click.IntRange(min=0), help="ECS: only this node rank's log.")
@click.option("--backend", metavar="URL", help=BACKEND_HELP)
@handle
def logs(
    spec: str,
    job: str,
    pod: str | None,
    lines: int,
    follow: bool,
    interval: int,
    rank: int | None,
    backend: str | None,
) -> None:
    """Print the logs of JOB (a job trainstack started for SPEC's stack): each node's on ECS, read from the
    checkpoint bucket (also after the nodes are destroyed); each pod's on PAI-DLC."""
    if not _runs_dlc_jobs(spec):  # the platform's jobs go through Cloud Assistant (cli/jobs.py)
        from generator.cli import jobs as ecs

        ecs.logs(spec, job, rank, follow, interval, backend)
        return

    plan = _dlc_plan(spec)
    dlc = _live(spec)
    outputs = _outputs(spec, plan, backend)
    dlc.workspace_id(plan, outputs)
    client = _client(dlc)
    _cloud_ready(client)
    if follow:
        obj = click.get_current_context().find_root().obj
        sleep = obj.get("sleep") if isinstance(obj, dict) and obj.get("sleep") else None
        try:
            dlc.follow_logs(
                plan,
                outputs,
                client,
                job,
                _say,
                pod=pod,
                lines=lines,
                interval=interval,
                **({"sleep": sleep} if sleep else {}),
            )
        except KeyboardInterrupt:
            _say("stopped following; the job keeps running")
        return
    found = dlc.job_logs(plan, outputs, client, job, pod=pod, lines=lines)
    if not found:
        _say(f"job {job} has no pod yet (it may still be queuing): try again later")
        return
    for p in found:
        _say(f"==> {p.pod_id} ({p.pod_type or 'pod'}, {p.status or 'unknown'}) <==")
        for line in p.lines:
            _say(line.rstrip("\n"))


@click.command()
@click.argument("spec", metavar="SPEC|STACK_DIR")
@click.argument("job")
@click.option("-y", "--yes", is_flag=True, help="Stop the job without the question.")
@click.option("--backend", metavar="URL", help=BACKEND_HELP)
@handle
def cancel(spec: str, job: str, yes: bool, backend: str | None) -> None:
    """Stop JOB (StopInvocation on ECS, StopJob on PAI-DLC), a job trainstack started for SPEC's stack; any other
    job is refused."""
    if not _runs_dlc_jobs(spec):  # the platform's jobs go through Cloud Assistant (cli/jobs.py)
        from generator.cli import jobs as ecs

        ecs.cancel(spec, job, yes, backend)
        return

    plan = _dlc_plan(spec)
    dlc = _live(spec)
    outputs = _outputs(spec, plan, backend)
    dlc.workspace_id(plan, outputs)
    client = _client(dlc)
    _cloud_ready(client)
    found = dlc.stack_job(plan, outputs, client, job)
    status = str(found.get("Status") or "")
    if status and status not in dlc.ACTIVE_STATUSES:
        _say(f"job {job} ({found.get('DisplayName')}) is already {status}; nothing to stop")
        return
    if not yes:
        _confirm(f"Stop DLC job {job} ({found.get('DisplayName')}, {status or 'status unknown'})?")
    dlc.cancel(plan, outputs, client, job)
    _say(
        f"stop requested for {job} ({found.get('DisplayName')}); `trainstack jobs {spec}` shows when it has stopped"
    )


COMMANDS = [submit, jobs, logs, cancel]
