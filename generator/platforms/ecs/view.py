"""How ECS's part of a plan is shown and rendered (:class:`~generator.platforms.contract.ViewParts`): its compute
boxes in the flowchart (an HPC cluster, deployment sets or plain GPU nodes per vSwitch) and the nodes' RAM role. ECS
adds no summary line, no template value and no stack file of its own."""

from __future__ import annotations

from typing import Any

from generator.plan.model import Node, Plan
from generator.platforms.contract import Box, GroupLines, Picture


def compute_head(plan: Plan, nodes: list[Node]) -> str:
    """What holds one vSwitch's ECS nodes: the HPC cluster, its deployment sets, or nothing."""
    c = plan.compute
    if c.hpc_cluster:
        return "HPC cluster"
    used = {n.deployment_set for n in nodes if n.deployment_set}
    sets = [d for d in c.deployment_sets if d.key in used]
    if not sets:
        return "GPU nodes"
    strategies = "/".join(sorted({d.strategy for d in sets}))
    if len(sets) == 1:
        return f"deployment set {sets[0].name} ({strategies})"
    largest = max(len(d.ranks) for d in sets)
    return (
        f"{len(sets)} deployment sets {sets[0].name} to {sets[-1].name} "
        f"({strategies}, up to {largest} nodes each)"
    )


class EcsView:
    def summary_lines(self, plan: Plan) -> list[str]:
        return []

    def summary_rows(self, plan: Plan) -> list[tuple[str, tuple[str, ...]]]:
        return []

    def picture(self, plan: Plan, box: Box, group_lines: GroupLines) -> Picture:
        reach = "reaches only the checkpoint bucket" if plan.checkpoints.enabled else "no policy attached"
        return Picture(
            head=lambda nodes: compute_head(plan, nodes),
            identity=(f"    role[{box(f'RAM role {plan.name}-node', reach)}]",),
        )

    def preview_boxes(self, plan: Plan) -> set[str]:
        return {"nodes"}

    def template_vars(self, plan: Plan) -> dict[str, Any]:
        return {}

    def stack_files(self, plan: Plan) -> dict[str, str]:
        return {}
