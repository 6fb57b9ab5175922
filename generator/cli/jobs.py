"""``trainstack check`` and the ECS / bare-metal side of ``submit``, ``jobs``, ``logs`` and ``cancel`` (the click
commands live in :mod:`generator.cli.dlc`, which dispatches here by the stack's ``compute.platform``).

A thin shell over :mod:`generator.live.jobs`. The click context object may carry ``"engine"`` (as for the live
commands), ``"ecs_api"`` and ``"log_store"`` (recorded answers in tests), ``"now"`` and ``"sleep"``.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from typing import Any

import click

from generator.cli.common import handle
from generator.cli.live import BACKEND_HELP, _engine, _say


def _obj(key: str) -> Any:
    obj = click.get_current_context().find_root().obj
    return obj.get(key) if isinstance(obj, dict) else None


def platform_of(target: str) -> str:
    """The ``compute.platform`` of a SPEC or a STACK_DIR (its plan.json)."""
    from generator.live.jobs.stack import platform_of as of

    return of(target)


def _api(t: Any, cluster: Any) -> Any:
    """The stack's Cloud Assistant: ECS, or the EFLO controller's on Lingjun, whose invocations are indexed in the
    checkpoint bucket (tests: ``"ecs_api"`` / ``"eflo_api"`` / ``"log_store"`` in the context object)."""
    from generator.live.jobs.stack import jobs_api

    store = _store(cluster.region) if cluster.bucket else None
    return jobs_api(
        cluster, t.stack_dir, _obj("ecs_api"), _obj("eflo_api"), store, warn=lambda s: _say(s, err=True)
    )


def _store(region: str) -> Any:
    store = _obj("log_store")
    if store is not None:
        return store
    from generator.live.jobs.logstore import OssLogStore

    return OssLogStore(region)


def _sleep() -> Any:
    return _obj("sleep") or time.sleep


def _stamp() -> str:
    now = _obj("now") or datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y%m%d-%H%M%S")


def _cluster(target: str, backend: str | None) -> tuple[Any, Any]:
    """The stack's target and cluster (instance ids from its outputs; none when it was never deployed)."""
    from generator.live.jobs.stack import stack_cluster

    return stack_cluster(target, backend, _engine())


def _cloud_ready(api: Any) -> None:
    from generator import live

    api.check()
    live.require_credentials(os.environ)


def _print_requests(region: str, maps: Any, extra: dict[str, Any] | None = None, api: Any = None) -> None:
    product = {"api": api.api} if isinstance(getattr(api, "api", None), str) else {}
    items = [{"action": a, "region": region, "request": m, **product, **(extra or {})} for a, m in maps]
    _say(json.dumps(items[0] if len(items) == 1 else items, indent=2, sort_keys=True, ensure_ascii=False))


def _report(cluster: Any, reps: Any) -> None:
    for r in reps:
        node = cluster.node(r.rank)
        if r.healthy:
            unrun = [f.check for f in r.findings if f.ok is None]
            _say(
                f"rank {r.rank:>3} {node.name} ({r.instance_id}): ok"
                + (f" (not run: {', '.join(unrun)})" if unrun else "")
            )
        else:
            for f in r.failed:
                _say(f"rank {r.rank:>3} {node.name} ({r.instance_id}): FAILED {f.check}: {f.detail}")


def run_check(t: Any, cluster: Any, nodes: Any, level: str, api: Any, say: Any, check_id: str) -> Any:
    """Run the health gate on ``nodes`` (at level full, bisect a cross-node NCCL failure down to the node), record
    the quarantine, return the node reports."""
    from generator.live.jobs import health, ops
    from generator.live.jobs.cluster import read_quarantine, write_quarantine

    exp = health.expectation(cluster)
    requests = health.check_requests(cluster, nodes, level, check_id, exp)
    invoke_ids = ops.send(api, requests, say)
    timeout = 900.0 if level == "quick" else 3900.0
    ops.wait_started(api, cluster, invoke_ids, nodes, say, sleep=_sleep())
    records = ops.finished_results(api, cluster, invoke_ids, nodes, timeout=timeout, sleep=_sleep())
    reps = health.reports(nodes, records, exp)
    found = None
    if level == "full":
        from generator.live.jobs.bisect import name_cross_node_fault

        found = name_cross_node_fault(api, cluster, nodes, reps, exp, check_id, say, _sleep())
    write_quarantine(t.stack_dir, health.update_quarantine(read_quarantine(t.stack_dir), reps, check_id))
    return reps, exp, found


@click.command()
@click.argument("target", metavar="SPEC|STACK_DIR")
@click.option(
    "--level",
    type=click.Choice(["quick", "full"]),
    default="quick",
    show_default=True,
    help="quick: GPUs, driver, XIDs, DCGM -r 1, fabric manager, eRDMA, bootstrap; full: also DCGM -r 3 "
    "and NCCL all-reduce inside and across the nodes.",
)
@click.option("--nodes", "ranks", metavar="RANKS", help="Only these ranks, e.g. 0-7,9 (default: every node).")
@click.option("--dry-run", is_flag=True, help="Print the RunCommand request(s) without sending them.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the report (or with --dry-run the requests) as JSON."
)
@click.option("--backend", metavar="URL", help=BACKEND_HELP)
@handle
def check(
    target: str, level: str, ranks: str | None, dry_run: bool, as_json: bool, backend: str | None
) -> None:
    """Check the health of every node of SPEC or STACK_DIR through Cloud Assistant, and quarantine the bad ones.

    Exit 1 when a node fails a check: the report names each failed node and check. A quarantined node is left
    out of the next `trainstack submit` until a check passes on it (docs/jobs.md).
    """
    from generator.errors import EXIT_FAILURE
    from generator.live.jobs import health
    from generator.live.jobs.cluster import parse_ranks, select, with_placeholders
    from generator.live.jobs.request import PLACEHOLDER, job_id

    t, cluster = _cluster(target, backend)
    wanted = parse_ranks(ranks, len(cluster.nodes)) if ranks else None
    check_id = job_id(f"{cluster.name}-check", _stamp())
    api = _api(t, cluster)
    if dry_run:
        nodes, _ = select(with_placeholders(cluster, PLACEHOLDER), wanted)
        exp = health.expectation(cluster)
        requests = health.check_requests(cluster, nodes, level, check_id, exp)
        api.check()
        maps = [(r.action, api.request_map(r.action, r.request)) for r in requests]
        if as_json:
            _print_requests(cluster.region, maps, {"dry_run": True}, api)
        else:
            _say(
                f"check {check_id} ({level}) on {len(nodes)} node(s) of {cluster.name}, in "
                f"{len(requests)} RunCommand call(s); dry run: nothing was sent"
            )
        return
    nodes, _ = select(cluster, wanted)
    _cloud_ready(api)
    say = (lambda s: _say(s, err=True)) if as_json else _say
    reps, exp, found = run_check(t, cluster, nodes, level, api, say, check_id)
    if as_json:
        summary = health.summary_json(cluster, level, check_id, reps, exp)
        if found is not None:
            summary["bisection"] = found.to_json()
        _say(json.dumps(summary, indent=2, sort_keys=True))
    else:
        _report(cluster, reps)
        bad = [r for r in reps if not r.healthy]
        _say(
            f"{len(reps) - len(bad)}/{len(reps)} node(s) healthy"
            + (
                f"; quarantined rank(s) {', '.join(str(r.rank) for r in bad)} (left out of `trainstack submit`; "
                f"`trainstack heal {target} --health` acts on them)"
                if bad
                else ""
            )
        )
    if any(not r.healthy for r in reps):
        raise SystemExit(EXIT_FAILURE)


def submit(
    target: str,
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
    from generator.errors import BadInput
    from generator.live.jobs import ops
    from generator.live.jobs.cluster import parse_ranks, quarantined_ranks, select
    from generator.live.jobs.request import check_job_id, job_id, submit_requests

    t, cluster = _cluster(target, backend)
    wanted = parse_ranks(ranks, len(cluster.nodes)) if ranks else None
    try:
        job = check_job_id(name) if name else job_id(cluster.name, _stamp())
    except ValueError as e:
        raise BadInput(f"--name: {e}") from None
    api = _api(t, cluster)
    say = (lambda s: _say(s, err=True)) if as_json else _say
    if dry_run:
        return _submit_dry_run(t, cluster, api, wanted, job, command, as_json, timeout_hours)
    nodes, left_out = select(cluster, wanted, quarantined_ranks(t.stack_dir))
    try:  # bad input before the cloud
        submit_requests(cluster, nodes, job, command, timeout_hours=timeout_hours)
    except ValueError as e:
        raise BadInput(str(e)) from None
    _cloud_ready(api)
    if not no_check:
        nodes, left_out = _gate(t, cluster, nodes, left_out, api, say)
    if left_out:
        say(
            f"left out of the job (quarantined): rank(s) {', '.join(str(n.rank) for n in left_out)}; the job "
            f"runs on {len(nodes)} node(s), rendezvous at rank {nodes[0].rank} ({nodes[0].private_ip})"
        )
    _enough(cluster, nodes)
    requests = submit_requests(cluster, nodes, job, command, timeout_hours=timeout_hours)
    if not yes:
        _confirm(
            f"Start {job} on {len(nodes)} node(s) of {cluster.name} (trainstack-launch {' '.join(command)})?",
            err=as_json,
        )
    ids = ops.send(api, requests, say)
    try:
        ops.wait_started(api, cluster, ids, nodes, say, sleep=_sleep())
    except KeyboardInterrupt:
        hint = f"`trainstack jobs`, `trainstack cancel {target} {job}`"
        return say(f"stopped watching the start; job {job} runs on ({hint})")
    if as_json:
        started = {"job": job, "invoke_ids": ids, "ranks": [n.rank for n in nodes]}
        _say(json.dumps({**started, "left_out": [n.rank for n in left_out]}, indent=2, sort_keys=True))
    else:
        _say(f"started {job}; follow it with: trainstack logs {target} {job} --follow")


def _submit_dry_run(
    t: Any,
    cluster: Any,
    api: Any,
    wanted: Any,
    job: str,
    command: tuple[str, ...],
    as_json: bool,
    timeout_hours: int,
) -> None:
    """``submit --dry-run``: the RunCommand requests for placeholder node ids, offline, through the SDK's model."""
    from generator.errors import BadInput
    from generator.live.jobs.cluster import quarantined_ranks, select, with_placeholders
    from generator.live.jobs.request import PLACEHOLDER, submit_requests

    nodes, left_out = select(with_placeholders(cluster, PLACEHOLDER), wanted, quarantined_ranks(t.stack_dir))
    try:
        _enough(cluster, nodes)
        requests = submit_requests(cluster, nodes, job, command, timeout_hours=timeout_hours)
    except ValueError as e:
        raise BadInput(str(e)) from None
    api.check()
    maps = [(r.action, api.request_map(r.action, r.request)) for r in requests]
    if as_json:
        _print_requests(cluster.region, maps, {"dry_run": True}, api)
        return
    _say(
        f"job {job}: trainstack-launch on {len(nodes)} node(s) of {cluster.name} in {len(requests)} "
        f"RunCommand call(s) (at most 100 instances each)"
    )
    if left_out:
        _say(f"left out (quarantined): rank(s) {', '.join(str(n.rank) for n in left_out)}")
    _say("dry run: nothing was sent, and the health gate was not run")


def _gate(t: Any, cluster: Any, nodes: Any, left_out: Any, api: Any, say: Any) -> tuple[Any, Any]:
    """The health gate before a job (``check --level quick`` on its nodes): the nodes that pass, and the left-out
    ones with those that failed (quarantined); no node passing is bad input, nothing started."""
    from generator.errors import BadInput
    from generator.live.jobs.request import job_id

    say(f"health gate: trainstack check --level quick on {len(nodes)} node(s) (skip it with --no-check)")
    reps, _, _ = run_check(t, cluster, nodes, "quick", api, say, job_id(f"{cluster.name}-gate", _stamp()))
    bad = {r.rank for r in reps if not r.healthy}
    for r in reps:
        for f in r.failed:
            say(f"rank {r.rank}: FAILED {f.check}: {f.detail} (quarantined)")
    if not bad:
        return nodes, left_out
    kept = tuple(n for n in nodes if n.rank not in bad)
    if not kept:
        raise BadInput("every node failed the health gate, so no job was started: see `trainstack check`")
    return kept, tuple(left_out) + tuple(n for n in nodes if n.rank in bad)


def _enough(cluster: Any, nodes: Any) -> None:
    """The job needs the plan's elastic minimum of nodes: fewer GPUs cannot hold the training state."""
    from generator.errors import BadInput

    if len(nodes) < cluster.min_nodes:
        raise BadInput(
            f"only {len(nodes)} node(s) would run the job, fewer than the plan's elastic minimum of "
            f"{cluster.min_nodes} (the fewest whose GPUs hold the training state), so nothing was started: "
            "`trainstack heal --health` the quarantined nodes and `trainstack check` again"
        )


def _confirm(question: str, err: bool = False) -> None:
    from generator.live import Declined

    try:
        ok = click.confirm(question, default=False, err=err)
    except click.Abort:
        ok = False
    if not ok:
        raise Declined(
            "not confirmed, so nothing was changed (pass --yes to skip the question in pipelines)."
        )


def jobs(target: str, as_json: bool, limit: int, backend: str | None) -> None:
    from generator.live.jobs import ops
    from generator.present import text as report

    t, cluster = _cluster(target, backend)
    if not any(n.instance_id for n in cluster.nodes) and cluster.bucket:
        # the nodes are gone (or never were): the jobs whose logs the checkpoint bucket keeps
        store = _store(cluster.region)
        store.check()
        from generator import live

        live.require_credentials(os.environ)
        names = ops.stored_jobs(store, cluster)[::-1][:limit]
        if as_json:
            _say(json.dumps([{"job": n, "status": "", "source": "oss"} for n in names], indent=2))
        elif not names:
            _say(
                f"no job logs of stack {cluster.stack} of {cluster.name} in oss://{cluster.bucket}/"
                f"{cluster.log_prefix}"
            )
        else:
            _say(f"the stack has no nodes; jobs with logs in oss://{cluster.bucket}/{cluster.log_prefix}:")
            for n in names:
                _say(f"  {n}")
        return
    api = _api(t, cluster)
    _cloud_ready(api)
    found = ops.stack_jobs(api, cluster, limit)
    if as_json:
        _say(
            json.dumps(
                [
                    {
                        "job": j.job,
                        "status": j.status,
                        "nodes": j.nodes,
                        "created": j.created,
                        "invoke_ids": j.invoke_ids,
                    }
                    for j in found
                ],
                indent=2,
                sort_keys=True,
            )
        )
    elif not found:
        _say(
            f"no job of stack {cluster.stack} of {cluster.name} in Cloud Assistant's records; start one with: "
            f"trainstack submit {target} -- COMMAND"
        )
    else:
        click.echo(
            report.table(
                ["job", "status", "nodes", "created", "invocations"],
                [[j.job, j.status, str(j.nodes), j.created, " ".join(j.invoke_ids)] for j in found],
            ),
            nl=False,
        )


def logs(target: str, job: str, rank: int | None, follow: bool, interval: int, backend: str | None) -> None:
    from generator.live.jobs import ops

    t, cluster = _cluster(target, backend)
    deployed = any(n.instance_id for n in cluster.nodes)
    api = _api(t, cluster) if deployed else None
    store = _store(cluster.region) if cluster.bucket else None
    if api is not None:
        _cloud_ready(api)
    if store is not None:
        store.check()
        if api is None:
            from generator import live

            live.require_credentials(os.environ)
    if follow:
        try:
            ops.follow(
                cluster,
                job,
                _say,
                api=api,
                store=store,
                rank=rank,
                interval=interval,
                sleep=_sleep(),
                rounds=_obj("rounds"),
            )
        except KeyboardInterrupt:
            _say("stopped following; the job keeps running")
        return
    for r in ops.job_logs(cluster, job, api=api, store=store, rank=rank):
        state = r.status.get("state") or "unknown"
        code = r.status.get("exit_code")
        _say(f"==> rank {r.rank} ({state}{'' if code is None else f', exit {code}'}) <==")
        for line in r.text.splitlines():
            _say(line)


def cancel(target: str, job: str, yes: bool, backend: str | None) -> None:
    from generator.live.jobs import ops

    t, cluster = _cluster(target, backend)
    api = _api(t, cluster)
    _cloud_ready(api)
    record = ops.stack_job(api, cluster, job)
    if record.status not in ops.ACTIVE:
        _say(f"job {job} is already {record.status or 'over'}; nothing to stop")
        return
    if not yes:
        _confirm(f"Stop job {job} ({record.nodes} node(s), {record.status})?")
    stopped = ops.cancel(api, cluster, record)
    _say(
        f"stop requested for {job} (StopInvocation {', '.join(stopped)}); `trainstack jobs {target}` shows when it "
        "has stopped"
    )


COMMANDS = [check]
