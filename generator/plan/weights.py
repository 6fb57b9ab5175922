"""The Weights piece of the Storage part: where the base weights (``model.weights``) land, their estimated size, and
how often they are fetched, with the decision and its reason.

The weights land once on the shared file system (``<mount>/weights/...``), which every node reads; a plan without
shared storage keeps them on each node's own disk. ECS plans with several nodes and ``storage.shared: none`` are
refused (a fix exists: shared storage); Lingjun plans have no shared file system, so each node downloads its own copy
and the plan warns. The size is an estimate from the parameter count (``docs/spec.md``, "model.weights").
"""

from __future__ import annotations

from generator.catalog import Region
from generator.errors import Problem
from generator.plan.fit import PlanningError
from generator.plan.model import Decision, Network, Storage, Weights
from generator.spec import weights as source
from generator.spec.model import Spec
from generator.spec.units import human_bytes

# Published base checkpoints are mostly stored in bf16 or fp16: 2 bytes per parameter (e.g. Llama 2 7B's
# safetensors are 13.5 GB for 6.74B parameters). An fp32 checkpoint is twice as large; a repository that ships both
# .bin and .safetensors files doubles the download. An ASSUMPTION, labelled so in the plan.
BYTES_PER_PARAMETER = 2
LOCAL_RESERVE_GIB = 60  # ASSUMPTION: what the OS, the GPU driver, CUDA and a Python environment take of a system disk
LOCAL_DIR = "/mnt/local"  # SHARED_DIR without shared storage (render.files.launch_env)


def estimated_size(spec: Spec, parameters: int) -> int:
    """The weights' estimated size in bytes, or 0 without ``model.weights``."""
    return parameters * BYTES_PER_PARAMETER if spec.model.weights else 0


def landing_path(root: str, src: source.WeightsSource) -> str:
    """Where the weights land under ``root``: weights/ORG/NAME@REVISION, or weights/oss/BUCKET/PREFIX."""
    if src.kind == "modelscope":
        return f"{root.rstrip('/')}/weights/{src.model_id}@{src.revision}"
    return f"{root.rstrip('/')}/weights/oss/{src.bucket}/{src.prefix.rstrip('/')}"


def plan_weights(spec: Spec, region: Region, storage: Storage, network: Network, nodes: int, parameters: int,
                 decisions: list[Decision], warnings: list[str]) -> Weights | None:
    if spec.model.weights is None:
        return None
    src = source.parse(spec.model.weights)
    size = estimated_size(spec, parameters)
    lingjun = spec.compute.platform == "lingjun"
    shared = storage.kind != "none"
    if not shared and nodes > 1 and not lingjun:
        raise PlanningError([Problem(("storage", "shared"), f"model.weights on {nodes} nodes needs a shared file "
                                     f"system: with storage.shared: none each node would download the "
                                     f"{human_bytes(size)} of weights itself",
                                     "set storage.shared: auto (Extreme NAS, or CPFS with a dataset) or cpfs, so one "
                                     "node fetches the weights and every node reads them")])
    if src.kind == "modelscope" and network.egress == "none":
        raise PlanningError([Problem(("model", "weights"), "ModelScope weights are downloaded from modelscope.cn, "
                                     "but network.egress: none gives the nodes no internet access",
                                     f"set network.egress: nat, or copy the weights to an OSS bucket in "
                                     f"{region.id} and write oss://BUCKET/PREFIX/")])
    path = landing_path(storage.mount_path if shared else LOCAL_DIR, src)
    fetches = 1 if shared else nodes
    basis = (f"ESTIMATE: {parameters / 1e9:.2f}B parameters x {BYTES_PER_PARAMETER} bytes (bf16/fp16, the dtype "
             "published checkpoints mostly use; fp32 files, or a repository with both .bin and .safetensors, are "
             "twice as large)")
    endpoint = f"oss-{region.id}-internal.aliyuncs.com" if src.kind == "oss" else ""
    if src.kind == "modelscope":
        how = (f"downloaded with ModelScope's CLI (modelscope download --model {src.model_id} --revision "
               f"{src.revision})" + ("; master is a branch, so pin a tag or commit (@REVISION) for a reproducible "
                                     "run" if src.revision == source.DEFAULT_REVISION else ""))
    else:
        how = (f"copied with ossutil over the internal endpoint {endpoint}, so the bucket must be in {region.id}; "
               + ("the RAM user's policy" if lingjun else "the nodes' RAM role") + f" may read oss://{src.bucket}/"
               f"{src.prefix} and list that prefix, nothing else of the bucket")
    if shared:
        where = (f"on the shared {storage.kind} file system, fetched once: the node that takes the lock "
                 "(mkdir on the shared file system) downloads into a temporary folder and renames it into place with a "
                 "completion marker; the other nodes wait for the marker")
    elif nodes > 1:
        where = f"on each node's own disk: {'Lingjun plans have' if lingjun else 'the plan has'} no shared file system"
        warnings.append(f"model.weights: each of the {nodes} nodes downloads the {human_bytes(size)} of weights itself "
                        "(Lingjun plans have no shared file system); expect the first launch to wait for it")
    else:
        where = "on the node's own disk, fetched once (one node, no shared file system)"
    decisions.append(Decision("base weights", f"{src.uri} -> {path}",
                              f"{where}; {how}; about {human_bytes(size)} ({basis})"))
    if not shared and size / 2**30 > spec.compute.system_disk_gib - LOCAL_RESERVE_GIB:
        warnings.append(f"model.weights: the weights (about {human_bytes(size)}) may not fit on the "
                        f"{spec.compute.system_disk_gib} GiB system disk beside the system (assumed "
                        f"{LOCAL_RESERVE_GIB} GiB): raise compute.system_disk_gib or use shared storage")
    return Weights(source_kind=src.kind, uri=src.uri, model_id=src.model_id, revision=src.revision,
                   bucket=src.bucket, prefix=src.prefix, endpoint=endpoint, landing_path=path, shared=shared,
                   fetches=fetches, size_bytes=size, size_basis=basis)
