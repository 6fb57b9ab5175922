"""The Cloud Assistant requests of ``trainstack submit``, ``jobs``, ``logs``, ``cancel`` and ``check`` on ECS and
bare-metal stacks (pure: the same cluster, command and job id always give the same requests).

Maps are in the ECS API's own shape (API version 2014-05-26, PascalCase keys, as the SDK's request models
``alibabacloud_ecs20140526.models.RunCommandRequest`` ... ``to_map()`` print them); :mod:`~generator.live.jobs.client`
turns them into the models.

* **RunCommand** (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-runcommand) runs a
  shell script on up to :data:`MAX_INSTANCES_PER_CALL` instances per call: the SDK's docstring of
  ``RunCommandRequest.instance_id`` says "Array length: 1 to 100" (alibabacloud-ecs20140526 7.11.8), with a quota
  increase possible in Quota Center. A 64-node job is one call; 150 nodes are two (100 + 50). The script is sent
  ``ContentEncoding: Base64`` and must stay under 24 KB once encoded (the docstring of ``CommandContent``).
  ``KeepCommand`` false: nothing is left in the region's quota of kept commands. ``TerminationMode`` ProcessTree:
  a stop or a timeout ends the whole process tree (torchrun and its workers), not only the script.
* The user's words after ``--`` reach the node as **data**: NUL-separated, base64-encoded (alphabet
  ``A-Za-z0-9+/=``, which no shell expands), decoded on the node into a bash array with ``mapfile -d ''`` and passed
  as ``"${argv[@]}"`` to ``trainstack-launch``. No word is ever parsed by a shell: ``$(touch /tmp/pwned)`` or
  ``; rm -rf /`` arrive as those literal arguments. Cloud Assistant's own ``{{parameter}}`` substitution is not used
  (``EnableParameter`` false), so ``{{`` in an argument is not touched either.
* Every invocation carries the tags ``trainstack-project``, ``trainstack-stack`` and ``trainstack-job``;
  **DescribeInvocations** filters on them (``jobs`` lists only this stack's jobs, ``logs`` and ``cancel`` refuse other
  invocations), **DescribeInvocationResults** reads each node's status and output (``ContentEncoding`` PlainText),
  **StopInvocation** stops it.
* ``OssOutputDelivery`` (``oss://bucket/prefix`` in the SDK's RunCommandRequest docstring) is not sent: the docstring
  gives the format only, not which identity writes the objects nor their names, and a request the account cannot
  honour would fail the whole job. The job script uploads the log and the exit status itself, with the node's RAM
  role, under the checkpoint prefix that role may write (:attr:`Cluster.log_prefix`).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from generator.live.jobs.cluster import Cluster, Node
from generator.platforms.base import Capability
from generator.platforms.registry import platform_for

MAX_INSTANCES_PER_CALL = 100  # RunCommandRequest.instance_id: "Array length: 1 to 100" (SDK 7.11.8 docstring)
MAX_CONTENT_BYTES = (
    24 * 1024
)  # CommandContent: "The size of the Base64-encoded command content cannot exceed 24 KB"
DEFAULT_TIMEOUT_HOURS = 168  # a week; --timeout-hours changes it (the SDK docstring names no maximum)
TAG_PROJECT = "trainstack-project"
TAG_STACK = "trainstack-stack"
TAG_JOB = "trainstack-job"
TAG_KIND = "trainstack-kind"  # "job" or "check"
JOB_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
INSTANCE_ID = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")
PLACEHOLDER = "<unresolved:node_ids[{}]>"  # a dry run of a stack that is not deployed: no instance ids yet
_PLACEHOLDER = re.compile(r"^<unresolved:node_ids\[[0-9]+\]>$")
HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
ENDPOINT = re.compile(r"^[a-z0-9.-]{1,253}$")
BUCKET = re.compile(r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
PREFIX = re.compile(r"^[A-Za-z0-9._/-]{0,512}$")


@dataclass(frozen=True, slots=True)
class ApiRequest:
    """One API request: the action (``RunCommand``, ...) and its map in the API's shape."""

    action: str
    request: dict[str, Any]


def script(name: str) -> str:
    """A shell script of this package (``scripts/NAME``), sent to the nodes as command content."""
    return (
        resources.files("generator.live.jobs").joinpath("scripts").joinpath(name).read_text(encoding="utf-8")
    )


def job_id(plan_name: str, stamp: str) -> str:
    """``<plan name>-<stamp>`` in lower case, e.g. ``pretrain-70b-20261201-221500`` (the stamp comes from the caller)."""
    value = f"{plan_name}-{stamp}".lower()
    return check_job_id(value)


def check_job_id(value: str) -> str:
    if not JOB_ID.fullmatch(value):
        raise ValueError(
            f"job name {value!r}: use at most 63 lower-case letters, digits and '-', starting with a "
            "letter or digit"
        )
    return value


def encode_argv(argv: Sequence[str]) -> str:
    """The words as data: each followed by a NUL, the whole base64-encoded (decoded by ``mapfile -d ''``)."""
    words = list(argv)
    if not words or not any(w.strip() for w in words):
        raise ValueError(
            "give the command the job runs after --, e.g. trainstack submit SPEC -- train.py --lr 3e-4"
        )
    for w in words:
        if "\0" in w:
            raise ValueError("a command word contains a NUL character, which no program argument can hold")
    return base64.b64encode(b"".join(w.encode("utf-8") + b"\0" for w in words)).decode("ascii")


def decode_argv(text: str) -> list[str]:
    """The inverse of :func:`encode_argv` (what the node's ``mapfile -d ''`` does), for tests and ``jobs``."""
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    return [w.decode("utf-8") for w in raw.split(b"\0")[:-1]]


def _assign(name: str, value: str) -> str:
    return f"{name}={shlex.quote(value)}"


def _log_url(cluster: Cluster, job: str) -> str:
    if not cluster.bucket:
        return ""
    if not BUCKET.fullmatch(cluster.bucket) or not PREFIX.fullmatch(cluster.prefix):
        raise ValueError(
            f"checkpoint bucket {cluster.bucket!r} or prefix {cluster.prefix!r} is not a plain OSS name"
        )
    return f"oss://{cluster.bucket}/{cluster.log_prefix}{job}"


def _rank_map(nodes: Sequence[Node]) -> str:
    for n in nodes:
        if not INSTANCE_ID.fullmatch(n.instance_id) and not _PLACEHOLDER.fullmatch(n.instance_id):
            raise ValueError(f"instance id {n.instance_id!r} of rank {n.rank} is not an ECS instance id")
    return ",".join(f"{n.instance_id}:{n.rank}" for n in nodes)


def rendezvous_host(node: Node) -> str:
    """Rank 0's address: an IPv4 address (ECS) or a plain host name (Lingjun); anything else raises."""
    try:
        ipaddress.IPv4Address(node.private_ip)
    except ValueError:
        if HOSTNAME.fullmatch(node.private_ip):
            return node.private_ip
        raise ValueError(f"rank {node.rank} has no rendezvous address (got {node.private_ip!r})") from None
    return node.private_ip


def job_script(cluster: Cluster, nodes: Sequence[Node], job: str, argv: Sequence[str]) -> str:
    """The script every node runs: the job's values (each checked against a strict pattern and shell-quoted, the argv
    base64) above the package's ``scripts/job.sh``."""
    check_job_id(job)
    master = rendezvous_host(nodes[0])
    if cluster.endpoint and not ENDPOINT.fullmatch(cluster.endpoint):
        raise ValueError(f"checkpoint endpoint {cluster.endpoint!r} is not a host name")
    head = [
        "#!/bin/bash",
        f"# trainstack job {job} of stack {cluster.stack} ({cluster.name}): {len(nodes)} node(s)",
        _assign("TRAINSTACK_JOB", job),
        _assign("TRAINSTACK_JOB_NNODES", str(len(nodes))),
        _assign("TRAINSTACK_JOB_MASTER_ADDR", master),
        _assign("TRAINSTACK_JOB_LOG_URL", _log_url(cluster, job)),
        _assign("TRAINSTACK_JOB_ENDPOINT", cluster.endpoint),
        _assign("TRAINSTACK_JOB_REGION", cluster.region),
        _assign("TRAINSTACK_JOB_RANKS", _rank_map(nodes)),
        _assign("TRAINSTACK_JOB_ARGV", encode_argv(argv)),
    ]
    # nodes without the cluster facts (a Lingjun node group) lack the OSS client the facts ship: the job carries it
    if not platform_for(cluster.platform).has(Capability.CLUSTER_FACTS) and cluster.bucket:
        head.append(_assign("TRAINSTACK_JOB_OSS_CLIENT", oss_client()))
    return "\n".join(head) + "\n" + script("job.sh")


def oss_client() -> str:
    """trainstack-ckpt-sync (the node's one OSS client, templates/stack/ckpt_sync.py.j2), gzip-compressed
    (reproducibly) and base64-encoded, for the nodes that lack it: a Lingjun node group's user data has no room for
    it (docs/bootstrap.md), so the job carries it and job.sh runs it from a private folder with ``--put``, signed with
    the RAM user's AccessKey in /etc/trainstack/oss-credentials. About 9.6 KB of the command's 24 KB."""
    from generator.render import files, userdata

    return base64.b64encode(userdata.ecs_user_data_bytes(files.ckpt_sync_script())).decode("ascii")


def encode_content(text: str) -> str:
    content = base64.b64encode(text.encode("utf-8")).decode("ascii")
    if len(content) > MAX_CONTENT_BYTES:
        raise ValueError(
            f"the script is {len(content)} bytes base64-encoded, over RunCommand's 24 KB: shorten the command"
        )
    return content


def batches(nodes: Sequence[Node], size: int = MAX_INSTANCES_PER_CALL) -> list[tuple[Node, ...]]:
    return [tuple(nodes[i : i + size]) for i in range(0, len(nodes), size)]


def tags(cluster: Cluster, job: str, kind: str) -> list[dict[str, str]]:
    return [
        {"Key": TAG_PROJECT, "Value": cluster.name},
        {"Key": TAG_STACK, "Value": cluster.stack},
        {"Key": TAG_JOB, "Value": job},
        {"Key": TAG_KIND, "Value": kind},
    ]


def client_token(job: str, batch: int) -> str:
    """Idempotence: a retried RunCommand of the same batch is not run twice (ClientToken, 64 ASCII at most)."""
    return "ts-" + hashlib.sha256(f"{job}/{batch}".encode()).hexdigest()[:40]


def run_command_requests(
    cluster: Cluster,
    nodes: Sequence[Node],
    job: str,
    content: str,
    *,
    kind: str,
    timeout_seconds: int,
    description: str,
) -> list[ApiRequest]:
    """One RunCommand per batch of at most 100 nodes, all with the same script, name and tags."""
    encoded = encode_content(content)
    out = []
    for i, batch in enumerate(batches(nodes)):
        out.append(
            ApiRequest(
                "RunCommand",
                {
                    "RegionId": cluster.region,
                    "Type": "RunShellScript",
                    "Name": job,
                    "Description": description[:512],
                    "CommandContent": encoded,
                    "ContentEncoding": "Base64",
                    "EnableParameter": False,
                    "KeepCommand": False,
                    "Timeout": timeout_seconds,
                    "TerminationMode": "ProcessTree",
                    "InstanceId": [n.instance_id for n in batch],
                    "Tag": tags(cluster, job, kind),
                    "ClientToken": client_token(job, i),
                },
            )
        )
    return out


def submit_requests(
    cluster: Cluster,
    nodes: Sequence[Node],
    job: str,
    argv: Sequence[str],
    *,
    timeout_hours: int = DEFAULT_TIMEOUT_HOURS,
) -> list[ApiRequest]:
    words = " ".join(shlex.quote(w) for w in argv)
    return run_command_requests(
        cluster,
        nodes,
        job,
        job_script(cluster, nodes, job, argv),
        kind="job",
        timeout_seconds=timeout_hours * 3600,
        description=f"trainstack-launch {words}",
    )


def stack_filter(cluster: Cluster, job: str | None = None, kind: str | None = None) -> list[dict[str, str]]:
    out = [{"Key": TAG_PROJECT, "Value": cluster.name}, {"Key": TAG_STACK, "Value": cluster.stack}]
    if job:
        out.append({"Key": TAG_JOB, "Value": job})
    if kind:
        out.append({"Key": TAG_KIND, "Value": kind})
    return out


def describe_invocations_request(
    cluster: Cluster, job: str | None = None, kind: str | None = "job", page: int = 1
) -> ApiRequest:
    return ApiRequest(
        "DescribeInvocations",
        {
            "RegionId": cluster.region,
            "Tag": stack_filter(cluster, job, kind),
            "CommandType": "RunShellScript",
            "IncludeOutput": False,
            "PageNumber": page,
            "PageSize": 50,
        },
    )


def describe_results_request(
    cluster: Cluster, invoke_id: str, instance_id: str | None = None, page: int = 1
) -> ApiRequest:
    body: dict[str, Any] = {
        "RegionId": cluster.region,
        "InvokeId": invoke_id,
        "ContentEncoding": "PlainText",
        "PageNumber": page,
        "PageSize": 50,
    }
    if instance_id:
        body["InstanceId"] = instance_id
    return ApiRequest("DescribeInvocationResults", body)


def stop_invocation_request(cluster: Cluster, invoke_id: str, instance_ids: Sequence[str] = ()) -> ApiRequest:
    body: dict[str, Any] = {"RegionId": cluster.region, "InvokeId": invoke_id}
    if instance_ids:
        body["InstanceId"] = list(instance_ids)
    return ApiRequest("StopInvocation", body)


def tag_value(item: Mapping[str, Any], key: str) -> str:
    """A tag of an invocation as DescribeInvocations returns it (``Tags: {Tag: [{TagKey, TagValue}]}``)."""
    tags_ = item.get("Tags") or {}
    entries = tags_.get("Tag") if isinstance(tags_, Mapping) else tags_
    for t in entries or ():
        if isinstance(t, Mapping) and (t.get("TagKey") or t.get("Key")) == key:
            return str(t.get("TagValue") if "TagValue" in t else t.get("Value") or "")
    return ""


def is_stack_invocation(cluster: Cluster, item: Mapping[str, Any]) -> bool:
    return tag_value(item, TAG_PROJECT) == cluster.name and tag_value(item, TAG_STACK) == cluster.stack
