"""The Weights piece of the Storage part: where the base weights (``model.weights``) land, their estimated size, and
how often they are fetched, with the decision and its reason.

The platform plans them (``PlanParts.weights``, asked by :func:`plan_weights`). Where the nodes' bootstrap fetches
them (ECS, Lingjun: :func:`fetched_weights`), they land once on the shared file system (``<mount>/weights/...``),
which every node reads; a plan without shared storage keeps them on each node's own disk. Plans with several nodes
and ``storage.shared: none`` are refused where the platform has a shared file system (a fix exists: shared
storage); a platform without one (Lingjun) has each node download its own copy, and the plan warns. PAI-DLC plans
them its own way (:mod:`generator.platforms.dlc.weights_plan`): OSS weights are mounted, not copied, so ``fetches``
is 0 and no storage is sized for them (:func:`stored_size`). The size is an estimate from the parameter count
(``docs/spec.md``, "model.weights").
"""

from __future__ import annotations

from generator.catalog import Region
from generator.plan import refusals, warns
from generator.plan.fit import PlanningError
from generator.plan.model import Decision, Network, Storage, Weights
from generator.plan.warns import PlanWarning
from generator.platforms.base import Capability
from generator.platforms.registry import parts_for, platform_for
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
    """The Weights piece, or None without ``model.weights``: planned by the platform (``PlanParts.weights``), which
    fetches them at boot (:func:`fetched_weights`, ECS and Lingjun) or has its own way (PAI-DLC's job)."""
    if spec.model.weights is None:
        return None
    src = source.parse(spec.model.weights)
    parts = parts_for(spec)
    return parts.weights(spec, region, storage, network, nodes, parameters, src, decisions, warnings)


def fetched_weights(
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
    """Weights the nodes' bootstrap fetches (``Capability.NODE_BOOTSTRAP``): once to the shared file system, or to
    each node's own disk without one (refused with several nodes where the platform has a shared file system)."""
    size = estimated_size(spec, parameters)
    platform = platform_for(spec)
    shared = storage.kind != "none"
    if not shared and nodes > 1 and platform.has(Capability.SHARED_FILE_SYSTEM):
        raise PlanningError([refusals.WeightsNeedShared(nodes, size).problem()])
    check_egress(region, network, src)
    path = landing_path(storage.mount_path if shared else LOCAL_DIR, src)
    basis = size_basis(parameters)
    endpoint = f"oss-{region.id}-internal.aliyuncs.com" if src.kind == "oss" else ""
    how = modelscope_how(src) if src.kind == "modelscope" else _oss_how(spec, region, src, endpoint)
    where = _where(spec, storage, nodes, size, warnings)
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
        fetches=1 if shared else nodes,
        size_bytes=size,
        size_basis=basis,
    )


def _oss_how(spec: Spec, region: Region, src: source.WeightsSource, endpoint: str) -> str:
    """How the nodes copy OSS weights: signed requests over the region's internal endpoint, read-only grant."""
    who = (
        "the nodes' RAM role" if platform_for(spec).has(Capability.NODE_RAM_ROLE) else "the RAM user's policy"
    )
    return (
        f"copied with signed OSS requests (Python's standard library; no ossutil) over the internal endpoint {endpoint}, so the bucket must be in {region.id}; "
        + who
        + f" may read oss://{src.bucket}/"
        f"{src.prefix} and list that prefix, nothing else of the bucket"
    )


def _where(spec: Spec, storage: Storage, nodes: int, size: int, warnings: list[PlanWarning]) -> str:
    """Where the fetched weights land and how often (warning when every node downloads its own copy)."""
    if storage.kind != "none":
        return (
            f"on the shared {storage.kind} file system, fetched once: the node that takes the lock "
            "(mkdir on the shared file system) downloads into a temporary folder and renames it into place with a "
            "completion marker; the other nodes wait for the marker"
        )
    if nodes > 1:
        warnings.append(warns.WeightsPerNode(nodes, size))
        platform = platform_for(
            spec
        )  # a platform without a shared file system: each node fetches its own copy
        plans = (
            "the plan has" if platform.has(Capability.SHARED_FILE_SYSTEM) else f"{platform.title} plans have"
        )
        return f"on each node's own disk: {plans} no shared file system"
    return "on the node's own disk, fetched once (one node, no shared file system)"


def size_basis(parameters: int) -> str:
    """How the size estimate was made (``Weights.size_basis``), labelled an ESTIMATE."""
    return (
        f"ESTIMATE: {parameters / 1e9:.2f}B parameters x {BYTES_PER_PARAMETER} bytes (bf16/fp16, the dtype "
        "published checkpoints mostly use; fp32 files, or a repository with both .bin and .safetensors, are "
        "twice as large)"
    )


def modelscope_how(src: source.WeightsSource) -> str:
    """How ModelScope weights are downloaded (a decision's reason), with a word on an unpinned revision."""
    return (
        f"downloaded with ModelScope's CLI (modelscope download --model {src.model_id} --revision "
        f"{src.revision})"
        + (
            "; master is a branch, so pin a tag or commit (@REVISION) for a reproducible run"
            if src.revision == source.DEFAULT_REVISION
            else ""
        )
    )


def check_egress(region: Region, network: Network, src: source.WeightsSource) -> None:
    """Refuse ModelScope weights in a network without internet egress (the download needs it)."""
    if src.kind == "modelscope" and network.egress == "none":
        raise PlanningError([refusals.ModelScopeNoEgress(region.id).problem()])
