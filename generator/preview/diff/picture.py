"""The change as one small Mermaid diagram per spec: a box per part of the cluster, coloured by what happens to it.

One picture, not the plan's full topology: a reviewer needs to see *what is dangerous* at GitHub's comment
width (820 px), so the diagram has a handful of boxes in one row, one-line titles and no nested subgraphs
(Mermaid clips multi-line subgraph titles, mermaid-js/mermaid#3806). Each box holds the resources of one part
(network, GPU nodes, shared file system, checkpoint bucket, role, dataset flow, PAI workspace); a changed box says
base -> head (``64 -> 96 nodes``, ``+2 ~1 -0``) and is coloured by the worst impact among its changes:

* ``risk``: data-at-risk, red: a file system, fileset or bucket is deleted or replaced;
* ``interrupt``: replaces-nodes, orange: GPU nodes are created, deleted or replaced;
* ``refused``: fails-at-apply, never-applied or unknown, purple: the cloud refuses it, ignores it, or
  trainstack cannot tell (never drawn as safe);
* ``reboot``: restarts-nodes, yellow;
* ``safe``: a change without data loss or interruption, green outline.

An unchanged box is plain. :func:`legend` lists only the classes the picture uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from generator.platforms.registry import parts_for
from generator.preview.diff.model import IMPACTS, NODE_TYPES, Change, DiffResult, Impact

if TYPE_CHECKING:
    from generator.plan.model import Plan
    from generator.preview.diff.summary import WhatChanged

# Which box each resource module belongs to (the token's middle part: alicloud:MODULE:Type).
_BOX_OF_MODULE: Mapping[str, str] = {
    "vpc/network": "net",
    "vpc/switch": "net",
    "ecs/securityGroup": "net",
    "ecs/securityGroupRule": "net",
    "vpc/natGateway": "net",
    "vpc/snatEntry": "net",
    "ecs/eipAddress": "net",
    "ecs/eipAssociation": "net",
    "eflo/vpd": "net",
    "eflo/subnet": "net",
    "ecs/instance": "nodes",
    "ecs/ramRoleAttachment": "nodes",
    "ecs/ecsDeploymentSet": "nodes",
    "ecs/hpcCluster": "nodes",
    "eflo/node": "nodes",
    "eflo/nodeGroup": "nodes",
    "eflo/cluster": "nodes",
    "nas/fileSystem": "fs",
    "nas/fileset": "fs",
    "nas/protocolService": "fs",
    "nas/protocolMountTarget": "fs",
    "nas/mountTarget": "fs",
    "nas/accessGroup": "fs",
    "nas/accessRule": "fs",
    "nas/dataFlow": "dataset",
    "oss/bucket": "ckpt",
    "oss/bucketAcl": "ckpt",
    "oss/bucketPublicAccessBlock": "ckpt",
    "oss/bucketObject": "ckpt",
    "ram/role": "role",
    "ram/policy": "role",
    "ram/rolePolicyAttachment": "role",
    "ram/user": "role",
    "ram/userPolicyAttachment": "role",
    "pai/workspaceWorkspace": "workspace",
    "pai/workspaceDataset": "workspace",
}
_TITLES: Mapping[str, str] = {
    "net": "network",
    "nodes": "GPU nodes",
    "fs": "shared file system",
    "ckpt": "checkpoint bucket",
    "role": "RAM role",
    "dataset": "dataset flow",
    "workspace": "PAI workspace",
    "other": "other",
}
_ORDER = ("net", "nodes", "fs", "dataset", "ckpt", "role", "workspace", "other")
_EDGES = (
    ("net", "nodes"),
    ("nodes", "fs"),
    ("dataset", "fs"),
    ("nodes", "ckpt"),
    ("role", "nodes"),
    ("workspace", "ckpt"),
)

# colour class of each impact; the class names are the legend's order, worst first
CLASS_OF_IMPACT: Mapping[Impact, str] = {
    "data-at-risk": "risk",
    "replaces-nodes": "interrupt",
    "fails-at-apply": "refused",
    "never-applied": "refused",
    "unknown": "refused",
    "restarts-nodes": "reboot",
    "safe": "safe",
}
CLASSES: Mapping[str, tuple[str, str, str]] = {  # class: (style, marker, meaning)
    "risk": ("fill:#fde2e1,stroke:#cf222e,stroke-width:4px,color:#1f2328", "🔴", "data at risk"),
    "interrupt": ("fill:#fff1e5,stroke:#e16f24,stroke-width:3px,color:#1f2328", "🟠", "replaces nodes"),
    "refused": (
        "fill:#f3e8ff,stroke:#8250df,stroke-width:3px,color:#1f2328",
        "🟣",
        "refused, not applied or unknown",
    ),
    "reboot": ("fill:#fff8c5,stroke:#bf8700,stroke-width:3px,color:#1f2328", "🟡", "reboots nodes"),
    "safe": ("fill:#ffffff,stroke:#1a7f37,stroke-width:2px,color:#1f2328", "🟢", "safe"),
}
_PLAIN = "fill:#f6f8fa,stroke:#d0d7de,color:#57606a"


def box_of(token: str) -> str:
    module = token.split(":")[1] if token.count(":") >= 2 else ""
    return _BOX_OF_MODULE.get(module, "other")


def _present(plan: Plan | None) -> set[str]:
    """The boxes a side's cluster has."""
    if plan is None:
        return set()
    out = {"net", "ckpt", "role"}
    out |= parts_for(plan).preview_boxes(plan)  # its compute (nodes) or what runs its jobs (a workspace)
    if plan.storage.kind != "none":
        out.add("fs")
        if plan.storage.dataset is not None:
            out.add("dataset")
    return out


def _counts(changes: Iterable[Change]) -> str:
    n = {"create": 0, "update": 0, "replace": 0, "delete": 0}
    for c in changes:
        n[c.action] += 1
    parts = [
        f"{sym}{n[a]}"
        for a, sym in (("create", "+"), ("update", "~"), ("replace", "±"), ("delete", "-"))
        if n[a]
    ]
    return " ".join(parts)


def _nodes_text(plan: Plan | None) -> str:
    if plan is None:
        return "0"
    c = plan.compute
    return "0 (paused)" if c.paused else str(c.nodes)


def _detail(box: str, base: Plan | None, head: Plan | None, changes: list[Change]) -> str:
    """The second line of a changed box: base -> head in the part's own terms, else the action counts."""
    if box == "nodes" and (
        base is None
        or head is None
        or base.compute.nodes != head.compute.nodes
        or base.compute.paused != head.compute.paused
    ):
        return f"{_nodes_text(base)} -> {_nodes_text(head)} nodes"
    if box == "nodes" and head is not None:
        hit = [c for c in changes if c.type in NODE_TYPES]
        if hit:
            verb = {"replace": "replaced", "update": "updated"}
            kinds = sorted({c.action for c in hit})
            return f"{len(hit)} of {head.compute.nodes} {'/'.join(verb.get(k, k) for k in kinds)}"
    if (
        box == "fs"
        and base is not None
        and head is not None
        and base.storage.capacity_gib != head.storage.capacity_gib
    ):
        return f"{base.storage.capacity_gib:,} -> {head.storage.capacity_gib:,} GiB"
    return _counts(changes)


def classes_used(result: DiffResult) -> list[str]:
    """The colour classes the picture of ``result`` draws, worst first (the legend lists only these)."""
    used = {CLASS_OF_IMPACT[c.impact] for c in result.changes}
    return [k for k in CLASSES if k in used]


def diagram(base: Plan | None, head: Plan | None, result: DiffResult, what: WhatChanged | None = None) -> str:
    """Mermaid flowchart text of the change ("" when neither side has a plan)."""
    from generator.present.diagram import label

    if base is None and head is None:
        return ""
    by_box: dict[str, list[Change]] = {}
    for c in result.changes:
        by_box.setdefault(box_of(c.type), []).append(c)
    boxes = [b for b in _ORDER if b in (_present(base) | _present(head) | set(by_box))]
    out = ["flowchart LR"]
    styled: dict[str, list[str]] = {}
    for b in boxes:
        changes = by_box.get(b, [])
        title = _TITLES[b]
        if changes:
            worst = min((c.impact for c in changes), key=IMPACTS.index)
            cls = CLASS_OF_IMPACT[worst]
            text = f'"{label(title)}<br/>{label(_detail(b, base, head, changes))}"'
            styled.setdefault(cls, []).append(b)
        else:
            text = f'"{label(title)}"'
            styled.setdefault("plain", []).append(b)
        shape = f"[({text})]" if b == "fs" else f"[{text}]"
        out.append(f"  {b}{shape}")
    for a, b in _EDGES:
        if a in boxes and b in boxes:
            out.append(f"  {a} --- {b}")
    for cls, (style, _, _) in CLASSES.items():
        if cls in styled:
            out.append(f"  classDef {cls} {style}")
            out.append(f"  class {','.join(styled[cls])} {cls}")
    if "plain" in styled:
        out.append(f"  classDef plain {_PLAIN}")
        out.append(f"  class {','.join(styled['plain'])} plain")
    return "\n".join(out) + "\n"


def legend(result: DiffResult) -> str:
    """``🔴 data at risk · 🟠 replaces nodes``: only the classes the picture uses ("" when nothing changes)."""
    return " · ".join(f"{CLASSES[k][1]} {CLASSES[k][2]}" for k in classes_used(result))
