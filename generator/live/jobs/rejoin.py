"""``trainstack heal`` after it re-created nodes: the stack's running jobs start again on them (RunCommand of the
job's own script, which Cloud Assistant keeps with the invocation), so torchrun's elastic rendezvous on rank 0
admits them and the job returns to its full size.

The job script is the one ``submit`` sent (DescribeInvocations ``CommandContent``), with one assignment put first:
``TRAINSTACK_JOB_BOOT_WAIT``, the seconds job.sh waits for the fresh node's bootstrap to end (Cloud Assistant's
agent runs commands before cloud-init has finished). Its world size (``TRAINSTACK_JOB_NNODES``) and rendezvous
host stay the job's; the new instance is not in the job's instance-to-rank list, so job.sh takes the node's rank
from its launch.env. Each call has a ClientToken of its own (the job, the instances), so a retried heal does not
start the job twice on one node, and the job's tags, so ``trainstack jobs`` and ``logs`` show it as the same job.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable, Sequence

from generator.live.jobs.client import EcsApi
from generator.live.jobs.cluster import Cluster
from generator.live.jobs.ops import send, stack_jobs
from generator.live.jobs.request import DEFAULT_TIMEOUT_HOURS, run_command_requests

BOOT_WAIT_SECONDS = 1800  # a fresh node's bootstrap: image, driver check, facts; a driver install reboots once


def rejoin(api: EcsApi, cluster: Cluster, ranks: Sequence[int], say: Callable[[str], None]) -> list[str]:
    """Start every running job of the stack on the nodes of ``ranks`` (their new instance ids in ``cluster``);
    the InvokeIds of the calls."""
    nodes = [n for n in cluster.nodes if n.rank in ranks and n.instance_id]
    if not nodes:
        return []
    api.check()
    started: list[str] = []
    for record in stack_jobs(api, cluster):
        if record.status != "Running":
            continue
        found = [i for i in record.invocations if i.get("CommandContent")]
        if not found:
            say(f"heal: job {record.job} is running, but Cloud Assistant kept no script of it: start it on "
                f"rank(s) {', '.join(str(n.rank) for n in nodes)} with `trainstack submit --nodes`")
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
            description=f"trainstack heal: {record.job} rejoins on rank(s) {','.join(str(n.rank) for n in nodes)}",
        )
        for r in requests:
            ids = ",".join(r.request["InstanceId"])
            r.request["ClientToken"] = "ts-" + hashlib.sha256(f"{record.job}/rejoin/{ids}".encode()).hexdigest()[:40]
        say(f"heal: job {record.job} is running; starting it on rank(s) {', '.join(str(n.rank) for n in nodes)}")
        started += send(api, requests, say)
    return started
