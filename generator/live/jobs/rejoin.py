"""``trainstack heal`` after it re-created nodes: each running job of the stack is restarted at its full size, on
its nodes that remain and the re-created ones, and resumes from its newest checkpoint.

Why a restart and not an elastic join: torchrun's agents would restart every worker anyway when a node joins, and
on the simulated cluster of tests/e2e (torch 2.15, c10d rendezvous) the joining round timed out in the store and
ended every agent; a stop and a start is the path that works every time, at the price of the agents' restart.

1. StopInvocation of the job's running invocations (TerminationMode ProcessTree: torchrun and its workers);
2. RunCommand of the job's own script (DescribeInvocations ``CommandContent``) on the job's nodes that are still
   there and the re-created ones, with one assignment put first: ``TRAINSTACK_JOB_BOOT_WAIT``, the seconds job.sh
   waits for a fresh node's bootstrap to end (Cloud Assistant's agent runs commands before cloud-init has
   finished). Its world size (``TRAINSTACK_JOB_NNODES``) and rendezvous host stay the job's; a new instance is not
   in the job's instance-to-rank list, so job.sh takes the node's rank from its launch.env. Each call has a
   ClientToken of its own (the job, the instances), so a retried heal does not start the job twice, and the job's
   tags, so ``trainstack jobs`` and ``logs`` show it as the same job.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable, Sequence

from generator.live.jobs.client import EcsApi
from generator.live.jobs.cluster import Cluster
from generator.live.jobs.ops import cancel, send, stack_jobs
from generator.live.jobs.request import DEFAULT_TIMEOUT_HOURS, run_command_requests

BOOT_WAIT_SECONDS = (
    1800  # a fresh node's bootstrap: image, driver check, facts; a driver install reboots once
)


def rejoin(api: EcsApi, cluster: Cluster, ranks: Sequence[int], say: Callable[[str], None]) -> list[str]:
    """Restart every running job of the stack on its nodes and those of ``ranks`` (their new instance ids in
    ``cluster``); the InvokeIds of the new calls."""
    healed = [n for n in cluster.nodes if n.rank in ranks and n.instance_id]
    if not healed:
        return []
    api.check()
    started: list[str] = []
    for record in stack_jobs(api, cluster):
        if record.status != "Running":
            continue
        ran = {
            str(i.get("InstanceId"))
            for inv in record.invocations
            for i in (inv.get("InvokeInstances") or {}).get("InvokeInstance") or ()
        }
        nodes = [n for n in cluster.nodes if n.instance_id and (n.instance_id in ran or n.rank in ranks)]
        found = [i for i in record.invocations if i.get("CommandContent")]
        if not found:
            say(
                f"heal: job {record.job} is running, but Cloud Assistant kept no script of it: start it on "
                f"rank(s) {', '.join(str(n.rank) for n in healed)} with `trainstack submit --nodes`"
            )
            continue
        try:
            script = base64.b64decode(str(found[0]["CommandContent"]), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            script = str(found[0]["CommandContent"])  # PlainText
        timeout = int(found[0].get("Timeout") or DEFAULT_TIMEOUT_HOURS * 3600)
        requests = run_command_requests(
            cluster,
            nodes,
            record.job,
            f"TRAINSTACK_JOB_BOOT_WAIT={BOOT_WAIT_SECONDS}\n{script}",
            kind="job",
            timeout_seconds=timeout,
            description=f"trainstack heal: {record.job} restarts on rank(s) {','.join(str(n.rank) for n in nodes)}",
        )
        for r in requests:
            ids = ",".join(r.request["InstanceId"])
            r.request["ClientToken"] = (
                "ts-" + hashlib.sha256(f"{record.job}/rejoin/{ids}".encode()).hexdigest()[:40]
            )
        say(
            f"heal: job {record.job} is running; restarting it at full size on rank(s) "
            f"{', '.join(str(n.rank) for n in nodes)} (it resumes from its newest checkpoint)"
        )
        cancel(api, cluster, record)
        started += send(api, requests, say)
    return started
