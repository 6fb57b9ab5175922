"""The Weights piece of the Storage part: where the base weights (``model.weights``) land, their estimated size, and
how often they are fetched, with the decision and its reason.

The weights land once on the shared file system (``<mount>/weights/...``), which every node reads; a plan without
shared storage keeps them on each node's own disk. ECS and PAI-DLC plans with several nodes and ``storage.shared:
none`` are refused (a fix exists: shared storage); Lingjun plans have no shared file system, so each node downloads
its own copy and the plan warns. On PAI-DLC, weights in OSS are not copied at all: DLC mounts the folder read-only
(:mod:`generator.platforms.dlc.weights`), so ``fetches`` is 0 and no storage is sized for them. The size is an estimate
from the parameter count (``docs/spec.md``, "model.weights").
"""

from __future__ import annotations

from generator.catalog import Region
from generator.plan import refusals, warns
from generator.plan.fit import PlanningError
from generator.plan.model import Decision, Network, Storage, Weights
from generator.plan.warns import PlanWarning
from generator.platforms.base import Capability
from generator.platforms.dlc import weights as dlc_weights
from generator.platforms.registry import platform_for
from generator.spec import weights as source
from generator.spec.model import Spec
from generator.spec.units import human_bytes

# Published base checkpoints are mostly stored in bf16 or fp16: 2 bytes per parameter (e.g. Llama 2 7B's
# safetensors are 13.5 GB for 6.74B parameters). An fp32 checkpoint is twice as large; a repository that ships both
# .bin and .safetensors files doubles the download. An ASSUMPTION, labelled so in the plan.
BYTES_PER_PARAMETER = 2
LOCAL_RESERVE_GIB = (
    60  # ASSUMPTION: what the OS, the GPU driver, CUDA and a Python environment take of a system disk
)
LOCAL_DIR = "/mnt/local"  # SHARED_DIR without shared storage (render.files.launch_env)


def estimated_size(spec: Spec, parameters: int) -> int:
    """The weights' estimated size in bytes, or 0 without ``model.weights``."""
    return parameters * BYTES_PER_PARAMETER if spec.model.weights else 0


def mounted(spec: Spec) -> bool:
    """Whether the weights are mounted rather than copied: OSS weights on PAI-DLC (a read-only workspace dataset)."""
    return (
        platform_for(spec).has(Capability.OSS_MOUNT)
        and spec.model.weights is not None
        and source.parse(spec.model.weights).kind == "oss"
    )


def stored_size(spec: Spec, parameters: int) -> int:
    """What the weights take of the shared file system, for storage sizing: 0 when they are mounted, not copied."""
    return 0 if mounted(spec) else estimated_size(spec, parameters)


def landing_path(root: str, src: source.WeightsSource) -> str:
    """Where the weights land under ``root``: weights/ORG/NAME@REVISION, or weights/oss/BUCKET/PREFIX."""
    if src.kind == "modelscope":
        return f"{root.rstrip('/')}/weights/{src.model_id}@{src.revision}"
    return f"{root.rstrip('/')}/weights/oss/{src.bucket}/{src.prefix.rstrip('/')}"


def plan_weights(
    spec: Spec,
    region: Region,
    storage: Storage,
    network: Network,
    nodes: int,
    parameters: int,
    decisions: list[Decision],
    warnings: list[PlanWarning],
) -> Weights | None:
    if spec.model.weights is None:
        return None
    src = source.parse(spec.model.weights)
    size = estimated_size(spec, parameters)
    platform = platform_for(spec)
    lingjun = not platform.has(Capability.SHARED_FILE_SYSTEM)  # each Lingjun node fetches its own copy
    if not platform.has(Capability.NODE_BOOTSTRAP):  # PAI-DLC: the job mounts or fetches them itself
        return _plan_dlc_weights(spec, region, storage, network, nodes, parameters, src, decisions, warnings)
    shared = storage.kind != "none"
    if not shared and nodes > 1 and not lingjun:
        raise PlanningError([refusals.WeightsNeedShared(nodes, size).problem()])
    _check_egress(region, network, src)
    path = landing_path(storage.mount_path if shared else LOCAL_DIR, src)
    fetches = 1 if shared else nodes
    basis = _basis(parameters)
    endpoint = f"oss-{region.id}-internal.aliyuncs.com" if src.kind == "oss" else ""
    if src.kind == "modelscope":
        how = _modelscope_how(src)
    else:
        how = (
            f"copied with signed OSS requests (Python's standard library; no ossutil) over the internal endpoint {endpoint}, so the bucket must be in {region.id}; "
            + ("the nodes' RAM role" if platform.has(Capability.NODE_RAM_ROLE) else "the RAM user's policy")
            + f" may read oss://{src.bucket}/"
            f"{src.prefix} and list that prefix, nothing else of the bucket"
        )
    if shared:
        where = (
            f"on the shared {storage.kind} file system, fetched once: the node that takes the lock "
            "(mkdir on the shared file system) downloads into a temporary folder and renames it into place with a "
            "completion marker; the other nodes wait for the marker"
        )
    elif nodes > 1:
        where = f"on each node's own disk: {'Lingjun plans have' if lingjun else 'the plan has'} no shared file system"
        warnings.append(warns.WeightsPerNode(nodes, size))
    else:
        where = "on the node's own disk, fetched once (one node, no shared file system)"
    decisions.append(
        Decision(
            "base weights", f"{src.uri} -> {path}", f"{where}; {how}; about {human_bytes(size)} ({basis})"
        )
    )
    if not shared and size / 2**30 > spec.compute.system_disk_gib - LOCAL_RESERVE_GIB:
        warnings.append(warns.WeightsDiskTight(size, spec.compute.system_disk_gib, LOCAL_RESERVE_GIB))
    return Weights(
        source_kind=src.kind,
        uri=src.uri,
        model_id=src.model_id,
        revision=src.revision,
        bucket=src.bucket,
        prefix=src.prefix,
        endpoint=endpoint,
        landing_path=path,
        shared=shared,
        fetches=fetches,
        size_bytes=size,
        size_basis=basis,
    )


def _basis(parameters: int) -> str:
    return (
        f"ESTIMATE: {parameters / 1e9:.2f}B parameters x {BYTES_PER_PARAMETER} bytes (bf16/fp16, the dtype "
        "published checkpoints mostly use; fp32 files, or a repository with both .bin and .safetensors, are "
        "twice as large)"
    )


def _modelscope_how(src: source.WeightsSource) -> str:
    return (
        f"downloaded with ModelScope's CLI (modelscope download --model {src.model_id} --revision "
        f"{src.revision})"
        + (
            "; master is a branch, so pin a tag or commit (@REVISION) for a reproducible run"
            if src.revision == source.DEFAULT_REVISION
            else ""
        )
    )


def _check_egress(region: Region, network: Network, src: source.WeightsSource) -> None:
    if src.kind == "modelscope" and network.egress == "none":
        raise PlanningError([refusals.ModelScopeNoEgress(region.id).problem()])


def _plan_dlc_weights(
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
    """PAI-DLC runs no bootstrap: OSS weights are mounted read-only (nothing copied), ModelScope weights are fetched
    once to the shared file system dataset by trainstack-weights, which the job runs before its command."""
    size, basis = estimated_size(spec, parameters), _basis(parameters)
    if src.kind == "oss":
        endpoint = f"oss-{region.id}-internal.aliyuncs.com"
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
            endpoint=endpoint,
            landing_path=dlc_weights.WEIGHTS_MOUNT,
            shared=False,
            fetches=0,
            size_bytes=size,
            size_basis=basis,
        )
    shared = storage.kind != "none"
    if not shared and nodes > 1:
        raise PlanningError([refusals.DlcWeightsNeedShared(nodes, size).problem()])
    if not spec.checkpoints.enabled:
        raise PlanningError([refusals.DlcWeightsNeedBucket().problem()])
    _check_egress(region, network, src)
    path = landing_path(storage.mount_path if shared else LOCAL_DIR, src)
    script = f"{dlc_weights.TOOLS_MOUNT}/{dlc_weights.SCRIPT_NAME}"
    runs = (
        f"DLC runs no node bootstrap, so the job carries the fetch: every worker runs trainstack-weights "
        f"({script}, a read-only dataset of the checkpoint bucket's "
        f"{dlc_weights.tools_dir(spec.checkpoints.prefix)} folder, where the stack publishes it) before the "
        "job's command (`trainstack submit` starts the command with it)"
    )
    if shared:
        where = (
            f"on the shared {storage.kind} file system (the workspace dataset DLC mounts at "
            f"{storage.mount_path}), fetched once: {runs}; the worker that takes the lock (mkdir on the shared "
            "file system) downloads into a temporary folder and renames it into place with a completion marker; "
            "the other workers wait for the marker, and later jobs find it and start at once"
        )
    else:
        where = (
            f"on the one worker's container disk (no shared file system): {runs}; the container's disk goes "
            "with the job, so every job downloads them again"
        )
        warnings.append(warns.DlcWeightsRefetch(size))
    decisions.append(
        Decision(
            "base weights",
            f"{src.uri} -> {path}",
            f"{where}; {_modelscope_how(src)}; about {human_bytes(size)} ({basis})",
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
