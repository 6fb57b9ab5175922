"""The plan drawn as a Mermaid flowchart: network, compute groups, storage, checkpoints and identity (and, for
PAI-DLC, the workspace that runs the job).

``flowchart(plan)`` is pure and deterministic. Nodes are grouped (one box per deployment set, HPC cluster or
Lingjun node group and vSwitch, with its rank ranges), so the diagram's size does not grow with the node
count.
Every label is quoted and escaped for Mermaid (:func:`label`): characters outside a small inert set become
numeric entities (``"`` is ``#quot;``), and node ids are positional names from ``[a-z0-9_]``.
"""

from __future__ import annotations

import re

from generator.plan.model import Node, Plan
from generator.platforms.contract import Picture
from generator.platforms.registry import parts_for

_SAFE = re.compile(r"[A-Za-z0-9 _.,:/+=()\-]")


def label(text: str) -> str:
    """Text inside a quoted Mermaid label: anything outside a small inert set is a numeric entity."""
    out = []
    for ch in str(text):
        if _SAFE.fullmatch(ch):
            out.append(ch)
        elif ch == '"':
            out.append("#quot;")
        elif ch.isprintable():
            out.append(f"#{ord(ch)};")
        else:
            out.append(" ")
    return "".join(out)


def _box(*lines: str) -> str:
    """A quoted label of one or more lines (each line escaped, joined with Mermaid's line break)."""
    return '"' + "<br/>".join(label(line) for line in lines if line) + '"'


def rank_ranges(ranks: list[int] | tuple[int, ...]) -> str:
    """``0-31, 40, 42-47``: sorted ranks as contiguous ranges."""
    out: list[str] = []
    values = sorted(ranks)
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ", ".join(out)


def _group_lines(nodes: list[Node], plan: Plan) -> list[str]:
    """The summary of one compute group: ranks, node count and type, spot split, paused state."""
    ranks = [n.rank for n in nodes]
    spot = sum(1 for n in nodes if n.spot)
    lines = [
        f"{'rank' if len(ranks) == 1 else 'ranks'} {rank_ranges(ranks)}",
        f"{len(nodes)} x {plan.compute.instance_type}",
    ]
    if plan.spot.enabled:
        lines.append(f"{spot} spot, {len(nodes) - spot} on demand")
    if plan.compute.paused:
        lines.append("paused: planned, not running")
    return lines


def flowchart(plan: Plan) -> str:
    """The plan's topology as Mermaid flowchart text (LF line ends, trailing newline): the region's boxes (the VPC,
    the platform's own, the bucket, the dataset, the identity), then the edges between them."""
    n = plan.network
    part = parts_for(plan).picture(plan, _box, lambda m: _group_lines(m, plan))  # the platform's own boxes
    out = ["flowchart LR"]
    if n.admin_cidrs:
        out.append(f"  admin[{_box('admin CIDRs', ', '.join(n.admin_cidrs))}]")
    out.append(f"  subgraph region[{_box(f'region {plan.region}')}]")
    vpc, groups = _vpc(plan, part)
    out += [*vpc, *part.subgraphs, *_checkpoint_box(plan)]
    groups += part.groups
    s = plan.storage
    oss_data = s.dataset.source if s.dataset is not None else part.data
    if oss_data:
        out.append(f"    dataset[({_box('OSS dataset', oss_data)})]")
    out += [*part.identity, "  end"]
    if n.egress == "nat":
        out.append(f"  internet(({_box('internet')}))")
    return "\n".join(out + _edges(plan, part, groups)) + "\n"


def _vpc(plan: Plan, part: Picture) -> tuple[list[str], list[str]]:
    """The VPC subgraph: the security group, then one subgraph per vSwitch with the compute box of the ranks in it
    (ids ``grp0``, ``grp1``...) and the services placed there; also the compute boxes' ids."""
    n = plan.network
    inbound = "SSH from the admin CIDRs" if n.admin_cidrs else "nothing from outside the VPC"
    out = [
        f"    subgraph vpc[{_box(f'VPC {n.vpc_cidr}')}]",
        "      direction TB",
        f"      sg[{_box('security group', 'all traffic between nodes', inbound)}]",
    ]
    groups: list[str] = []  # ids of the compute boxes
    vsw_id = {v.key: f"vsw{i}" for i, v in enumerate(n.vswitches)}
    head = part.head
    for v in n.vswitches:
        out.append(f"      subgraph {vsw_id[v.key]}[{_box(f'vSwitch {v.name}', f'{v.zone} {v.cidr}')}]")
        members = [r for r in plan.compute.ranks if r.vswitch == v.key] if head is not None else []
        if head is not None and members:
            gid = f"grp{len(groups)}"
            out.append(f"        {gid}[{_box(head(members), *_group_lines(members, plan))}]")
            groups.append(gid)
        out += _vswitch_services(plan, v.key)
        out.append("      end")
    out.append("    end")
    return out, groups


def _vswitch_services(plan: Plan, key: str) -> list[str]:
    """What sits in the vSwitch ``key`` besides the nodes: the file system, its export, the NAT gateway."""
    s, n = plan.storage, plan.network
    out = []
    if s.kind != "none" and s.vswitch == key:
        kind = "CPFS" if s.kind == "cpfs" else f"NAS ({s.kind})"
        size = f"{s.capacity_gib} GiB, {s.throughput_mbps} MB/s"
        out.append(f"        fs[({_box(kind, size, s.storage_type)})]")
    if s.kind != "none" and (s.service_vswitch or s.vswitch) == key:
        what = "NFS export" if s.kind == "cpfs" else "mount target"
        out.append(f"        export[{_box(what, f'mounted at {s.mount_path}')}]")
    nat_vswitch = "egress" if any(v.key == "egress" for v in n.vswitches) else "compute"
    if n.egress == "nat" and key == nat_vswitch:  # as templates/stack/parts/network.py.j2 places it
        out.append(f"        nat[{_box('NAT gateway', 'outbound only (SNAT)')}]")
    return out


def _checkpoint_box(plan: Plan) -> list[str]:
    """The checkpoint bucket and what its lifecycle rules keep; nothing when checkpoints are off."""
    k = plan.checkpoints
    if not k.enabled:
        return []
    # what the lifecycle rules do: current checkpoints never expire, replaced or deleted versions do
    count = plan.cost.checkpoints_kept
    kept = f"every checkpoint kept (about {count:,} by the end)" if count else "every checkpoint kept"
    if k.expire_days:  # checkpoints.keep_last: current checkpoints expire too (not while paused)
        kept = (
            f"keep last {k.keep_last}: expire after {k.expire_days} days"
            + ("" if k.expiry_enabled else " (off while paused)")
            + (f"; 1 in {k.milestone_every} kept forever" if k.milestone_every else "")
            + (f"; 1 per {k.milestone_hours:g} h kept forever" if k.milestone_hours else "")
            + (f"; {len(k.milestone_steps)} step(s) kept forever" if k.milestone_steps else "")
        )
    box = _box(
        f"OSS bucket {k.bucket}",
        f"checkpoints under {k.prefix}",
        kept,
        f"old versions expire after {k.retention_days} days",
        "versioned, encrypted",
    )
    return [f"    ckpt[({box})]"]


def _edges(plan: Plan, part: Picture, groups: list[str]) -> list[str]:
    """The edges: admin SSH, each compute box to the security group, NAT, export, bucket and role, then the
    shared boxes' own (NAT to the internet, export to the file system, the dataset's data flow)."""
    n, s, k = plan.network, plan.storage, plan.checkpoints
    out = ["  admin -->|SSH| sg"] if n.admin_cidrs else []
    out += [f"  sg --- {gid}" for gid in groups]
    for gid in groups:
        if n.egress == "nat":
            out.append(f"  {gid} --> nat")
        if s.kind != "none":
            out.append(f"  {gid} -->|NFS| export")
        if k.enabled:
            out.append(f"  {gid} -->|checkpoints| ckpt")
        if part.role:
            out.append(f"  {gid} -.-> role")
        out.extend(e.replace("{gid}", gid) for e in part.group_edges)
    if n.egress == "nat":
        out.append("  nat --> internet")
    if s.kind != "none":
        out.append("  export --- fs")
    if s.dataset is not None and s.kind != "none":
        out.append(f"  dataset -->|{_box(f'data flow {s.dataset.flow_throughput_mbps} MB/s')}| fs")
    return out
