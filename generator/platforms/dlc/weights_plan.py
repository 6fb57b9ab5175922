"""How PAI-DLC plans the base weights (``model.weights``; the planner's ``PlanParts.weights`` hook, asked by
:func:`generator.plan.weights.plan_weights`). DLC runs no node bootstrap, so the nodes' fetch of
:func:`generator.plan.weights.fetched_weights` does not apply: OSS weights are mounted read-only (nothing copied),
ModelScope weights are fetched once to the shared file system dataset by trainstack-weights, which the job runs
before its command (:mod:`generator.platforms.dlc.weights`: the mounts, the script's key and the prelude).
"""

from __future__ import annotations

from generator.catalog import Region
from generator.plan import refusals, warns
from generator.plan.fit import PlanningError
from generator.plan.model import Decision, Network, Storage, Weights
from generator.plan.warns import PlanWarning
from generator.plan.weights import (
    LOCAL_DIR,
    check_egress,
    estimated_size,
    landing_path,
    modelscope_how,
    size_basis,
)
from generator.platforms.dlc import weights as dlc_weights
from generator.spec import weights as source
from generator.spec.model import Spec
from generator.spec.units import human_bytes


def plan_dlc_weights(
    spec: Spec,
    region: Region,
    storage: Storage,
    network: Network,
    nodes: int,
    parameters: int,
    src: source.WeightsSource,
    decisions: list[Decision],
    warnings: list[PlanWarning],
) -> Weights:
    """The Weights piece on PAI-DLC: mounted from OSS, or fetched by the job from ModelScope."""
    if src.kind == "oss":
        return _mounted(spec, region, parameters, src, decisions)
    return _job_fetched(spec, region, storage, network, nodes, parameters, src, decisions, warnings)


def _mounted(
    spec: Spec, region: Region, parameters: int, src: source.WeightsSource, decisions: list[Decision]
) -> Weights:
    """OSS weights: a read-only workspace dataset DLC mounts in every worker, nothing downloaded or sized."""
    size, basis = estimated_size(spec, parameters), size_basis(parameters)
    decisions.append(
        Decision(
            "base weights",
            f"{src.uri} -> {dlc_weights.WEIGHTS_MOUNT} (mounted read-only)",
            (
                f"mounted read-only from OSS by DLC, not copied: the folder is a read-only OSS workspace dataset "
                f"(pai.WorkspaceDataset) that DLC mounts at {dlc_weights.WEIGHTS_MOUNT} in every worker (CreateJob "
                f"DataSources, MountAccess RO), so nothing is downloaded before the job starts and no storage is sized "
                f"for them; the job's RAM role may read oss://{src.bucket}/{src.prefix} and list that prefix, nothing else "
                f"of the bucket; the bucket must be in {region.id} (the dataset names the region's OSS endpoint); "
                f"files are read through the mount as the job opens them; about {human_bytes(size)} ({basis})"
            ),
        )
    )
    return Weights(
        source_kind="oss",
        uri=src.uri,
        model_id="",
        revision="",
        bucket=src.bucket,
        prefix=src.prefix,
        endpoint=f"oss-{region.id}-internal.aliyuncs.com",
        landing_path=dlc_weights.WEIGHTS_MOUNT,
        shared=False,
        fetches=0,
        size_bytes=size,
        size_basis=basis,
    )


def _job_fetched(
    spec: Spec,
    region: Region,
    storage: Storage,
    network: Network,
    nodes: int,
    parameters: int,
    src: source.WeightsSource,
    decisions: list[Decision],
    warnings: list[PlanWarning],
) -> Weights:
    """ModelScope weights: every worker runs trainstack-weights before the job's command; one downloads."""
    size, basis = estimated_size(spec, parameters), size_basis(parameters)
    shared = storage.kind != "none"
    if not shared and nodes > 1:
        raise PlanningError([refusals.DlcWeightsNeedShared(nodes, size).problem()])
    if not spec.checkpoints.enabled:
        raise PlanningError([refusals.DlcWeightsNeedBucket().problem()])
    check_egress(region, network, src)
    path = landing_path(storage.mount_path if shared else LOCAL_DIR, src)
    where = _where(spec, storage, size, warnings)
    decisions.append(
        Decision(
            "base weights",
            f"{src.uri} -> {path}",
            f"{where}; {modelscope_how(src)}; about {human_bytes(size)} ({basis})",
        )
    )
    return Weights(
        source_kind="modelscope",
        uri=src.uri,
        model_id=src.model_id,
        revision=src.revision,
        bucket="",
        prefix="",
        endpoint="",
        landing_path=path,
        shared=shared,
        fetches=1,
        size_bytes=size,
        size_basis=basis,
    )


def _where(spec: Spec, storage: Storage, size: int, warnings: list[PlanWarning]) -> str:
    """Where the job's fetch puts the weights: the shared file system dataset, or the one worker's container disk
    (downloaded again by every job: a warning)."""
    script = f"{dlc_weights.TOOLS_MOUNT}/{dlc_weights.SCRIPT_NAME}"
    runs = (
        f"DLC runs no node bootstrap, so the job carries the fetch: every worker runs trainstack-weights "
        f"({script}, a read-only dataset of the checkpoint bucket's "
        f"{dlc_weights.tools_dir(spec.checkpoints.prefix)} folder, where the stack publishes it) before the "
        "job's command (`trainstack submit` starts the command with it)"
    )
    if storage.kind != "none":
        return (
            f"on the shared {storage.kind} file system (the workspace dataset DLC mounts at "
            f"{storage.mount_path}), fetched once: {runs}; the worker that takes the lock (mkdir on the shared "
            "file system) downloads into a temporary folder and renames it into place with a completion marker; "
            "the other workers wait for the marker, and later jobs find it and start at once"
        )
    warnings.append(warns.DlcWeightsRefetch(size))
    return (
        f"on the one worker's container disk (no shared file system): {runs}; the container's disk goes "
        "with the job, so every job downloads them again"
    )
