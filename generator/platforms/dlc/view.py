"""How PAI-DLC's part of a plan is shown and rendered (:class:`~generator.platforms.contract.ViewParts`): its
summary line and Markdown row (workspace, workers, datasets), the flowchart's workspace and job role with the job's
workers in their vSwitch, the workspace datasets the program creates (``dlc_datasets``) and its outputs, and the
weights script the stack folder carries for the job's prelude (:mod:`generator.platforms.dlc.weights`)."""

from __future__ import annotations

from typing import Any

from generator.plan.model import Dlc, Plan
from generator.platforms.contract import Box, GroupLines, Picture
from generator.platforms.dlc import weights

_DATASET_WHAT = {
    "nas": "trainstack: the shared file system (Extreme NAS)",
    "cpfs": "trainstack: the shared file system (CPFS)",
    "oss": "trainstack: OSS data",
}
_DATASET_WHAT_BY_OUTPUT = {
    weights.WEIGHTS_OUTPUT: "trainstack: base weights, read-only",
    weights.TOOLS_OUTPUT: "trainstack: trainstack-weights, read-only",
}


def datasets(plan: Plan) -> list[dict[str, Any]]:
    """The PAI workspace datasets of a DLC plan, split into what the program needs (OSS bucket, endpoint and path;
    the checkpoint bucket's name comes from its resource so the dataset waits for the bucket)."""
    if plan.dlc is None:
        return []
    out = []
    for d in plan.dlc.data_sources:
        key = d.output_key.removeprefix("dataset_").removesuffix("_id")
        bucket, _, path = d.uri.removeprefix("oss://").partition("/")
        in_bucket = d.kind == "oss" and bucket == plan.checkpoints.bucket and plan.checkpoints.enabled
        what = _DATASET_WHAT_BY_OUTPUT.get(d.output_key) or (
            "trainstack: checkpoints"
            if in_bucket
            else "trainstack: training data, read-only"
            if d.kind == "oss"
            else _DATASET_WHAT[d.kind]
        )
        out.append(
            {
                "key": key,
                "name": d.name,
                "kind": d.kind,
                "mount": d.mount_path,
                "output": d.output_key,
                "read_only": d.read_only,
                "bucket": bucket,
                "path": path,
                "bucket_output": in_bucket,
                "endpoint": f"oss-{plan.region}.aliyuncs.com",
                "what": what,
            }
        )
    return out


def _dlc(plan: Plan) -> Dlc:
    assert plan.dlc is not None
    return plan.dlc


class DlcView:
    def summary_lines(self, plan: Plan) -> list[str]:
        d = _dlc(plan)
        return [
            f"  pai-dlc      workspace {d.workspace_name}, {d.worker_count} x "
            f"{d.worker_instance_type} per {d.job_type}, image {d.image}, datasets: "
            + (", ".join(f"{x.name} at {x.mount_path}" for x in d.data_sources) or "none")
        ]

    def summary_rows(self, plan: Plan) -> list[tuple[str, tuple[str, ...]]]:
        d = _dlc(plan)
        return [
            (
                "PAI-DLC",
                (
                    f"workspace {d.workspace_name}, {d.worker_count} workers per {d.job_type}, datasets: ",
                    ", ".join(x.name for x in d.data_sources) or "none",
                ),
            )
        ]

    def picture(self, plan: Plan, box: Box, group_lines: GroupLines) -> Picture:
        d, k = _dlc(plan), plan.checkpoints
        data = next((x.uri for x in d.data_sources if x.kind == "oss" and x.read_only), "")
        names = ", ".join(x.name for x in d.data_sources) or "no dataset"
        reach = "reaches only the checkpoint bucket" if k.enabled else "no policy attached"
        edges = [f"  workspace -.->|{box('runs the job')}| {{gid}}"]
        if data and plan.storage.dataset is None:
            edges.append(f"  {{gid}} -->|{box('mounted read-only')}| dataset")
        return Picture(
            head=lambda nodes: f"PAI-DLC {d.job_type} workers (nodes managed by DLC)",
            identity=(
                f"    workspace[{box(f'PAI workspace {d.workspace_name}', f'datasets: {names}')}]",
                f"    role[{box(f'RAM role {plan.name}-dlc-job', 'assumed by the job through PAI', reach)}]",
            ),
            data=data,
            group_edges=tuple(edges),
        )

    def preview_boxes(self, plan: Plan) -> set[str]:
        return {"workspace"}

    def template_vars(self, plan: Plan) -> dict[str, Any]:
        """``dl``: its part of the plan, which its template parts read; its datasets and stack outputs."""
        return {"dl": _dlc(plan), "dlc_datasets": datasets(plan), "outputs": dict(_dlc(plan).outputs)}

    def stack_files(self, plan: Plan) -> dict[str, str]:
        """The weights script the job's prelude runs (the program publishes it: compute_dlc.py.j2)."""
        return {weights.SCRIPT_NAME: "weights_script"} if _dlc(plan).weights_script_key else {}
