"""How Lingjun's part of a plan is shown and rendered (:class:`~generator.platforms.contract.ViewParts`): in the
flowchart, the VPD with its subnets and one node group box per subnet (the nodes sit in no vSwitch of the VPC), and
the RAM user that writes checkpoints (Lingjun nodes take no RAM role). No summary line or stack file of its own; its
template values are its part of the plan (``lj``) and the user data wrapper its program part builds."""

from __future__ import annotations

from typing import Any

from generator.plan.model import Plan
from generator.platforms.contract import Box, GroupLines, Picture
from generator.platforms.lingjun import PLATFORM


class LingjunView:
    def summary_lines(self, plan: Plan) -> list[str]:
        return []

    def summary_rows(self, plan: Plan) -> list[tuple[str, tuple[str, ...]]]:
        return []

    def picture(self, plan: Plan, box: Box, group_lines: GroupLines) -> Picture:
        lj = plan.lingjun
        assert lj is not None
        out = [
            f"    subgraph vpd[{box(f'Lingjun VPD {lj.vpd_cidr}', f'HPN zone {lj.hpn_zone}')}]",
            "      direction TB",
        ]
        groups: list[str] = []
        for i, sn in enumerate(lj.subnets):
            out.append(f"      subgraph sub{i}[{box(f'subnet {sn.name}', f'{sn.zone} {sn.cidr}')}]")
            members = [r for r in plan.compute.ranks if r.zone == sn.zone]
            if members:
                gid = f"ng{len(groups)}"
                head = (f"node group {lj.node_group}", f"{lj.cluster_type} cluster")
                out.append(f"        {gid}[{box(*head, *group_lines(members))}]")
                groups.append(gid)
            out.append("      end")
        out.append("    end")
        k = plan.checkpoints
        identity = (f"    role[{box('RAM user for checkpoints', 'Lingjun nodes take no RAM role')}]",)
        return Picture(
            head=None,
            identity=identity if k.enabled else (),
            role=k.enabled,
            subgraphs=tuple(out),
            groups=tuple(groups),
        )

    def preview_boxes(self, plan: Plan) -> set[str]:
        return {"nodes"}

    def template_vars(self, plan: Plan) -> dict[str, Any]:
        """``lj``: its part of the plan, which its template parts read; ``user_data_wrapper``: the node group's
        user data around node-init.sh (the declaration's, which the renderer's size check uses too)."""
        return {"lj": plan.lingjun, "user_data_wrapper": PLATFORM.user_data_wrapper}

    def stack_files(self, plan: Plan) -> dict[str, str]:
        return {}
