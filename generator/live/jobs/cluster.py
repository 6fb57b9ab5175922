"""The nodes a job or a health check runs on: the stack folder's plan.json (ranks, instance type, checkpoint bucket)
joined with the stack outputs (``node_ids``, in rank order), the ``--nodes RANKS`` selection and the quarantine.

Pure except :func:`cluster_of`, which reads plan.json, and the quarantine file helpers, which read and write
``STACK_DIR/.trainstack/quarantine.json`` (atomically: a crash leaves the old file or the new one, never half).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from generator import atomic
from generator.errors import BadInput
from generator.live.errors import BadTarget, StackNotDeployed
from generator.platforms.base import Capability
from generator.platforms.registry import DEFAULT_PLATFORM, platform_for

QUARANTINE_FILE = ".trainstack/quarantine.json"
_RANKS = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


@dataclass(frozen=True, slots=True)
class Node:
    rank: int
    name: str
    private_ip: str  # the rendezvous address: the planned IP on ECS, the host name (= name) on Lingjun
    instance_id: str  # "" when the stack outputs have no instance for this rank (not deployed, or gone)


@dataclass(frozen=True, slots=True)
class Cluster:
    """What the job and check commands need to know about a stack's GPU nodes."""

    name: str  # the plan's name (Pulumi project)
    stack: str
    region: str
    platform: str  # its compute.platform
    instance_type: str
    gpus_per_node: int
    rdma: str  # "erdma", "roce" or "" (plain TCP between nodes)
    nodes: tuple[Node, ...]
    bucket: str = ""  # the checkpoint bucket ("" without checkpoints)
    prefix: str = ""  # the checkpoint prefix inside it, e.g. "checkpoints/"
    endpoint: str = ""  # the bucket's VPC-internal endpoint, used from the nodes
    nccl_env: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    min_nodes: int = 1  # the plan's elastic minimum: the fewest nodes whose GPUs hold the training state
    cluster_id: str = ""  # Lingjun: the eflo.Cluster of the stack outputs (``cluster_id``); "" elsewhere

    @property
    def log_prefix(self) -> str:
        """Where job logs and exit codes go: ``<checkpoint prefix>_trainstack/jobs/`` (the nodes' RAM policy reaches
        the checkpoint prefix only, so the logs live inside it, beside the checkpoints)."""
        return f"{self.prefix}_trainstack/jobs/"

    def node(self, rank: int) -> Node:
        for n in self.nodes:
            if n.rank == rank:
                return n
        raise BadInput(
            f"stack {self.stack} of {self.name} has no node of rank {rank} (ranks 0-{len(self.nodes) - 1})"
        )


def cluster_of(stack_dir: Path, outputs: Mapping[str, Any]) -> Cluster:
    """The cluster of a rendered stack folder (plan.json) with the instance ids of its deployed stack's outputs."""
    try:
        data = json.loads((Path(stack_dir) / "plan.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BadTarget(
            f"{stack_dir}/plan.json lists no compute.ranks: re-render the folder with this trainstack."
        ) from None
    return cluster_from_plan(data, outputs, str(stack_dir))


def cluster_from_plan(
    data: Mapping[str, Any], outputs: Mapping[str, Any], where: str = "the plan"
) -> Cluster:
    """The cluster of a plan's JSON (plan.json, or ``Plan.to_json()`` of a spec not rendered yet)."""
    try:
        compute = data["compute"]
        ranks = sorted(compute["ranks"], key=lambda r: int(r["rank"]))
        platform = str(compute.get("platform") or DEFAULT_PLATFORM)
    except (ValueError, KeyError, TypeError):
        raise BadTarget(
            f"{where} lists no compute.ranks: re-render the folder with this trainstack."
        ) from None
    p = platform_for(platform)
    by_name = p.has(Capability.NODES) and not p.has(Capability.FIXED_ADDRESSES)
    ids = outputs.get("node_ids") or []
    if not isinstance(ids, list):
        ids = []
    nodes = tuple(
        Node(
            int(r["rank"]),
            str(r["name"]),
            # nodes without FIXED_ADDRESSES (Lingjun) get no planned address; their host name is the rank's name
            # (compute_lingjun.py.j2)
            str(r.get("private_ip") or (r["name"] if by_name else "")),
            str(ids[i]) if i < len(ids) and ids[i] else "",
        )
        for i, r in enumerate(ranks)
    )
    ckpt = data.get("checkpoints") or {}
    enabled = bool(ckpt.get("enabled", True)) and bool(ckpt.get("bucket"))
    nccl = tuple((str(k), str(v)) for k, v in (data.get("network") or {}).get("nccl_env") or ())
    return Cluster(
        name=str(data["name"]),
        stack=str(data["stack"]),
        region=str(data["region"]),
        platform=platform,
        instance_type=str(compute.get("instance_type") or ""),
        gpus_per_node=int(compute.get("gpus_per_node") or 0),
        rdma="" if str(compute.get("rdma") or "none") == "none" else str(compute["rdma"]),
        nodes=nodes,
        bucket=str(ckpt.get("bucket") or "") if enabled else "",
        prefix=str(ckpt.get("prefix") or "") if enabled else "",
        endpoint=str(ckpt.get("internal_endpoint") or "") if enabled else "",
        min_nodes=int(compute.get("min_nodes") or 1),
        nccl_env=nccl,
        cluster_id=str(outputs.get("cluster_id") or ""),
    )


def parse_ranks(text: str, size: int) -> tuple[int, ...]:
    """``--nodes RANKS``: ``0-7,9,12-15`` (sorted, duplicates removed); every rank must exist."""
    out: set[int] = set()
    for part in text.split(","):
        m = _RANKS.match(part)
        if not m:
            raise BadInput(
                f"--nodes {text!r}: give ranks as N, N-M or a comma-separated list of them, e.g. 0-7,9"
            )
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise BadInput(f"--nodes {text!r}: the range {part.strip()} runs backwards")
        if hi >= size:
            raise BadInput(f"--nodes {text!r}: the stack has ranks 0-{size - 1} only")
        out.update(range(lo, hi + 1))
    return tuple(sorted(out))


def with_placeholders(cluster: Cluster, placeholder: str) -> Cluster:
    """The cluster with ``placeholder.format(rank)`` for each node without an instance id (dry runs only)."""
    nodes = tuple(
        n if n.instance_id else Node(n.rank, n.name, n.private_ip, placeholder.format(n.rank))
        for n in cluster.nodes
    )
    return replace(cluster, nodes=nodes)


def select(
    cluster: Cluster, ranks: Sequence[int] | None, quarantined: Iterable[int] = ()
) -> tuple[tuple[Node, ...], tuple[Node, ...]]:
    """The nodes to run on (``ranks`` or all, minus the quarantined) and the quarantined ones that were left out.

    A node without an instance id (the stack outputs lack it) is an error: the job would wait for it forever.
    """
    wanted = [cluster.node(r) for r in ranks] if ranks else list(cluster.nodes)
    bad = set(quarantined)
    left_out = tuple(n for n in wanted if n.rank in bad)
    chosen = tuple(n for n in wanted if n.rank not in bad)
    missing = [n for n in chosen if not n.instance_id]
    if not cluster.nodes or (missing and len(missing) == len(chosen)):
        raise StackNotDeployed(
            f"stack {cluster.stack} of {cluster.name} has no node instances in its outputs "
            "(node_ids): run `trainstack up` first."
        )
    if missing:
        raise StackNotDeployed(
            f"the stack outputs have no instance for rank(s) "
            f"{', '.join(str(n.rank) for n in missing)}: run `trainstack heal` (or pass --nodes "
            "without them)."
        )
    if not chosen:
        raise BadInput(
            "every selected node is quarantined by the last `trainstack check`: run `trainstack heal` "
            "and `trainstack check` again, or pass --no-quarantine"
        )
    return chosen, left_out


# -- the quarantine file ---------------------------------------------------------------------------------------------


def quarantine_path(stack_dir: Path) -> Path:
    return Path(stack_dir) / QUARANTINE_FILE


def read_quarantine(stack_dir: Path) -> dict[str, Any]:
    """``{"nodes": {rank: {"checks": [...], "instance_id", "since"}}, "healed": {instance_id: {...}}}``."""
    try:
        data = json.loads(quarantine_path(stack_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"nodes": {}, "healed": {}}
    if not isinstance(data, dict):
        return {"nodes": {}, "healed": {}}
    data.setdefault("nodes", {})
    data.setdefault("healed", {})
    return data


def quarantined_ranks(stack_dir: Path) -> tuple[int, ...]:
    return tuple(sorted(int(r) for r in read_quarantine(stack_dir)["nodes"]))


def write_quarantine(stack_dir: Path, data: Mapping[str, Any]) -> None:
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    atomic.replace(quarantine_path(stack_dir), (text.encode("utf-8"),), prefix=".quarantine-", suffix="")
