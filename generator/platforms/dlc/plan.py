"""The PAI-DLC part (``compute.platform: pai-dlc``): what a Deep Learning Containers job needs around it and what
trainstack leaves to DLC, with the platform's rules, its limits stated as decisions and warnings, and ``Plan.dlc``
(the workspace, the worker spec and count, the image, the data sources, the launch environment, spot settings and
the stack outputs a job reads).

The worker type, count and tp/pp/dp layout are chosen as on ECS (:mod:`generator.plan.layout` and
:mod:`generator.plan.compute`), from the ECS types DLC's public resources offer (``dlc_specs.csv``). DLC creates and
manages the nodes, so this part plans no instance, RDMA interface, deployment set or HPC cluster, and no fixed
address. The job itself is created by ``trainstack submit`` from ``Plan.dlc``.

Sources: [DOC-DLC-JOB] Create a training job, [DOC-DLC-BILL] Billing of DLC, [DOC-DLC-RAM] the DLC RAM role,
[SDK-DLC] the alibabacloud-pai-dlc20201203 models, [API-DLC-SPOT] the SpotSpec API reference (URLs in
``generator/catalog/data/v1/sources.csv``).
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
from collections.abc import Iterable

from generator.catalog import Catalog, Region
from generator.plan import warns
from generator.plan.fit import Fit, Scored
from generator.plan.model import (
    Checkpoints,
    Decision,
    Dlc,
    DlcDataSource,
    DlcSpot,
    IpRange,
    Network,
    Node,
    Spot,
    Storage,
    VSwitch,
    Weights,
)
from generator.plan.placement import ip_plan
from generator.plan.storage import shared_storage_needed
from generator.plan.warns import PlanWarning
from generator.platforms.dlc import weights as dlc_weights
from generator.platforms.dlc.outputs import DLC_OUTPUTS
from generator.spec import limits
from generator.spec.model import Spec

JOB_TYPE = "PyTorchJob"  # CreateJob JobType for torchrun/DeepSpeed/Megatron jobs [DOC-DLC-JOB, SDK-DLC]
# The official PAI PyTorch training image in the region's VPC registry: registry and repository as in the SDK samples
# of [DOC-DLC-JOB] (dsw-registry-vpc.<region-id>.cr.aliyuncs.com/pai/pytorch-training:<tag>, confirmed 2026-11-30).
# The tag is UNVERIFIED: seen in third-party DLC configurations [3P-DLC-IMAGE]; the only tags in Alibaba sources read
# 2026-11-30 are a CPU one (1.12-cpu-py39-ubuntu20.04, [DOC-DLC-JOB]) and a pai/pytorch 2.8.0 build in an API example
# [SDK-DLC-GO]. Check the tag against the PAI console's image list before the first job.
IMAGE_REPOSITORY = "dsw-registry-vpc.{region}.cr.aliyuncs.com/pai/pytorch-training"
IMAGE_TAG = "2.7-gpu-py312-cu128-ubuntu24.04"
# public resources: at most 2 GPU cards and 8 CPU cores; to exceed them contact your business manager [DOC-DLC-JOB]
# (confirmed 2026-11-30 on https://www.alibabacloud.com/help/en/pai/user-guide/create-a-training-task)
PUBLIC_MAX_GPUS = 2
PUBLIC_MAX_CPUS = 8
SPOT_STRATEGY = (
    "SpotWithPriceLimit"  # the only SpotSpec.SpotStrategy value the API reference lists [API-DLC-SPOT]
)
MAX_ENVS = 20  # at most 20 custom environment variables per job [DOC-DLC-JOB]
DATA_MOUNT = "/mnt/data"  # where the OSS training data appears in the containers
CHECKPOINT_MOUNT = "/mnt/checkpoints"  # where the checkpoint prefix appears in the containers
MAX_RUNNING_MARGIN = 1.5  # a job may run 1.5x its expected hours before DLC stops it (a trainstack choice)
DLC_DEFAULT_MAX_HOURS = 30 * 24  # DLC stops a job after 30 days by default [DOC-DLC-JOB]
WORKSPACE_NAME_MAX = (
    23  # pai.WorkspaceWorkspace workspace_name: 3-23 letters, digits and '_', starting with a letter
)


def dlc_zone_decision(spec: Spec, region: Region, zone: str) -> Decision:
    """Why the job's vSwitch goes in ``zone``."""
    return Decision(
        "zone",
        zone,
        (
            "the first zone of your ordered preference"
            if spec.zones
            else f"no zones given; {zone} is the first zone of {region.id} in the catalog"
        )
        + "; the job's vSwitch and the file system's mount target are zonal, so "
        "DLC starts the workers in this zone (DLC's stock there is not checked by trainstack)",
    )


def dlc_fabric(spec: Spec, fit: Fit, decisions: list[Decision]) -> tuple[str, int]:
    """No RDMA, ERIs, HPC cluster or deployment set: DLC manages the nodes and the network between them."""
    decisions.append(
        Decision(
            "rdma",
            "none (managed by DLC)",
            (
                "DLC creates the worker nodes and their network; trainstack attaches no eRDMA interface, HPC cluster or "
                "deployment set and sets no MTU. "
                + (
                    f"The {fit.nodes} workers exchange gradients over the network DLC gives {fit.itype.name} (VPC TCP for the "
                    "ECS types of its public resources; RDMA is documented only for Lingjun resources [DOC-DLC-JOB])"
                    if fit.nodes > 1
                    else "One worker: GPUs talk over NVLink/PCIe inside the node"
                )
            ),
        )
    )
    return "none", 0


def dlc_network(spec: Spec, zone: str, fit: Fit, decisions: list[Decision]) -> Network:
    """The job's VPC: a compute vSwitch whose addresses DLC hands to the workers, and the storage and egress
    vSwitches of the ECS IP plan (:func:`generator.plan.placement.ip_plan`), so no consumer can take another's."""
    vpc = ipaddress.IPv4Network(spec.network.vpc_cidr)  # the spec accepts IPv4 networks only
    vswitches, ecs_ranges, _ = ip_plan(
        spec.name,
        zone,
        vpc,
        fit.nodes,
        storage=shared_storage_needed(spec, fit.nodes),
        egress=spec.network.egress == "nat",
    )
    compute = ipaddress.ip_network(vswitches[0].cidr)
    ranges = _dlc_ranges(compute, ecs_ranges)
    decisions.append(_ip_plan_decision(compute, vswitches))
    egress = spec.network.egress
    decisions.append(_egress_decision(egress))
    return Network(str(vpc), vswitches, (), False, 1500, (), egress, tuple(ranges), "")


def _dlc_ranges(
    compute: ipaddress.IPv4Network | ipaddress.IPv6Network, ecs_ranges: Iterable[IpRange]
) -> list[IpRange]:
    """The ECS IP plan's ranges with the per-rank ones replaced by one range DLC hands out to its workers."""
    ecs_ranges = tuple(ecs_ranges)
    lo, hi = int(compute.network_address), int(compute.broadcast_address)
    ranges = [r for r in ecs_ranges if r.vswitch == "compute" and "reserved" in r.consumer]
    ranges.insert(
        1,
        IpRange(
            "compute",
            str(ipaddress.ip_address(lo + 1)),
            str(ipaddress.ip_address(hi - 3)),
            hi - 3 - lo,
            "the DLC workers' network interfaces: DLC picks the addresses when a job "
            "starts (no fixed address per rank)",
        ),
    )
    ranges += [r for r in ecs_ranges if r.vswitch != "compute"]
    return ranges


def _ip_plan_decision(
    compute: ipaddress.IPv4Network | ipaddress.IPv6Network, vswitches: Iterable[VSwitch]
) -> Decision:
    """Why the vSwitches sit where they do: the workers' compute vSwitch, the others at the top of the VPC."""
    vswitches = tuple(vswitches)
    above = [
        (key, what)
        for key, what in (("storage", "the file system's mount target"), ("egress", "the NAT gateway"))
        if any(v.key == key for v in vswitches)
    ]
    return Decision(
        "ip plan",
        ", ".join(f"{v.key} {v.cidr}" for v in vswitches),
        (
            f"compute {compute}: the workers' addresses, chosen by DLC per job (CreateJob UserVpc names this vSwitch and "
            "the security group)"
            + (
                f"; the {' and '.join(k for k, _ in above)} vSwitch{'es sit' if len(above) > 1 else ' sits'} at the top "
                f"of the VPC as on ECS, so {' and '.join(w for _, w in above)} never take{'' if len(above) > 1 else 's'} "
                "a worker's address"
                if above
                else "; no other vSwitch: no shared file system and no NAT gateway"
            )
        ),
    )


def _egress_decision(egress: str) -> Decision:
    """Why the job reaches the internet through a NAT gateway, or not at all."""
    return Decision(
        "egress",
        egress,
        (
            "outbound-only internet through an enhanced NAT gateway in the job's VPC, for pip installs and code "
            "(the official image comes from the region's VPC registry); nothing inbound"
            if egress == "nat"
            else "no internet: the job reaches only VPC-internal endpoints (the VPC image registry, OSS internal)"
        ),
    )


def dlc_workers(spec: Spec, zone: str, fit: Fit) -> tuple[Node, ...]:
    """The job's workers as ranks: DLC names and addresses the pods, so only the rank and the spot flag are planned."""
    return tuple(
        Node(
            rank=i,
            name=f"worker-{i}",
            zone=zone,
            vswitch="compute",
            private_ip="",
            spot=spec.spot.enabled,
            deployment_set=None,
        )
        for i in range(fit.nodes)
    )


def dlc_spot(
    spec: Spec, fit: Fit, ranks: Iterable[Node], decisions: list[Decision], warnings: list[PlanWarning]
) -> tuple[Spot, DlcSpot | None]:
    """DLC preemptible workers (JobSpec.SpotSpec): every worker or none, bidding SpotWithPriceLimit (the only
    SpotStrategy the API reference lists [API-DLC-SPOT]) with a price limit from spot.max_price_ratio. A spec that
    leaves spot.strategy at its ECS default (SpotAsPriceGo) gets SpotWithPriceLimit; one that names SpotAsPriceGo is
    refused by :func:`generator.platforms.dlc.rules.dlc_rules`."""
    s, ranks = spec.spot, tuple(ranks)
    if not s.enabled:
        return Spot(
            False,
            "NoSpot",
            None,
            0,
            "terminate",
            tuple(n.rank for n in ranks),
            (),
            s.price_ratio,
            s.interruptions_per_node_day,
        ), None
    limit = round(fit.itype.price.cny_per_hour * s.max_price_ratio, 3)
    defaulted = s.strategy != SPOT_STRATEGY  # the spec left strategy at SpotAsPriceGo, the ECS default
    decisions.append(
        Decision(
            "spot",
            f"all {len(ranks)} worker(s) preemptible, {SPOT_STRATEGY}",
            (
                "DLC's SpotSpec applies to the whole worker role, so there is no on-demand base; "
                f"the bid is capped at {limit:g} CNY/h per worker (price x {s.max_price_ratio:g}"
                f"{', an estimated price' if fit.itype.price.estimated else ''}; SpotPriceLimit, sent in CNY per minute) "
                + (
                    "because SpotWithPriceLimit is the only SpotStrategy DLC's API lists, not the spec's default "
                    "SpotAsPriceGo "
                    if defaulted
                    else ""
                )
                + "[API-DLC-SPOT, DOC-DLC-JOB]. A reclaimed job resumes from the last checkpoint in the bucket; trainstack "
                "runs no reclaim watcher in DLC containers"
            ),
        )
    )
    warnings.append(warns.DlcSpotAssumed(s.price_ratio, s.interruptions_per_node_day))
    spot = Spot(
        True,
        SPOT_STRATEGY,
        limit,
        0,
        "terminate",
        (),
        tuple(n.rank for n in ranks),
        s.price_ratio,
        s.interruptions_per_node_day,
    )
    return spot, DlcSpot(SPOT_STRATEGY, limit, None)


def quota_warning(workers: int, gpus: int, vcpus: int) -> warns.DlcQuota | None:
    """The warning for a job over DLC's default public-resource quota (PUBLIC_MAX_GPUS GPU cards and PUBLIC_MAX_CPUS
    CPU cores per job [DOC-DLC-JOB]), naming both of the job's figures; None when the job keeps within it."""
    if workers * gpus <= PUBLIC_MAX_GPUS and workers * vcpus <= PUBLIC_MAX_CPUS:
        return None
    return warns.DlcQuota(workers, gpus, vcpus, PUBLIC_MAX_GPUS, PUBLIC_MAX_CPUS)


def workspace_name(spec: Spec) -> str:
    """A PAI workspace name (3-23 letters, digits and '_', starting with a letter) from the spec's name."""
    name = spec.name.replace("-", "_")
    if len(name) <= WORKSPACE_NAME_MAX:
        return name
    return (
        f"{name[: WORKSPACE_NAME_MAX - 7].rstrip('_')}_{hashlib.sha256(spec.name.encode()).hexdigest()[:6]}"
    )


def plan_dlc(
    spec: Spec,
    catalog: Catalog,
    region: Region,
    best: Scored,
    storage: Storage,
    ckpt: Checkpoints,
    spot: DlcSpot | None,
    decisions: list[Decision],
    warnings: list[PlanWarning],
    weights: Weights | None = None,
) -> Dlc:
    """``Plan.dlc``: the workspace, datasets, image, worker spec and launch environment, with their decisions; with
    base weights, their dataset, environment and prelude (:mod:`generator.platforms.dlc.weights`)."""
    fit, t = best.fit, best.fit.itype
    ws = _workspace(spec, decisions)
    sources = _data_sources(spec, storage, ckpt, weights, decisions)
    image, image_source = _image(spec, region, decisions)
    env = _environment(spec, best, storage, ckpt, sources, weights)
    _workers_decision(fit, catalog, decisions)
    max_hours = _max_running_hours(best, decisions)
    _job_warnings(fit, region, sources, warnings)
    modelscope = weights is not None and weights.source_kind == "modelscope"
    return Dlc(
        workspace_name=ws,
        job_type=JOB_TYPE,
        worker_count=fit.nodes,
        worker_instance_type=t.name,
        gpus_per_worker=t.gpus,
        gpu=t.gpu,
        image=image,
        image_source=image_source,
        tp=fit.tp,
        pp=fit.pp,
        dp=fit.dp,
        data_sources=tuple(sources),
        environment=env,
        spot=spot,
        resource="public",
        outputs=DLC_OUTPUTS,
        max_running_hours=max_hours,
        prelude=dlc_weights.PRELUDE if modelscope else "",
        weights_script_key=dlc_weights.script_key(ckpt.prefix) if modelscope else "",
    )


def _workspace(spec: Spec, decisions: list[Decision]) -> str:
    """The job's own PAI workspace name, with the decision saying why it has one."""
    ws = workspace_name(spec)
    decisions.append(
        Decision(
            "pai workspace",
            ws,
            (
                "a PAI workspace of its own (pai.WorkspaceWorkspace, production environment only) holds the job's datasets "
                "and jobs, so access is granted per workspace; DLC creates the nodes, pulls the image, mounts the datasets "
                "and restarts the job, and bills only while it runs"
            ),
        )
    )
    return ws


def _data_sources(
    spec: Spec, storage: Storage, ckpt: Checkpoints, weights: Weights | None, decisions: list[Decision]
) -> list[DlcDataSource]:
    """The datasets the job mounts (shared file system, OSS data, checkpoints, base weights), with their decision."""
    sources: list[DlcDataSource] = []
    if storage.kind != "none":
        kind = "cpfs" if storage.kind == "cpfs" else "nas"
        sources.append(DlcDataSource(f"{spec.name}-shared", kind, storage.mount_path, "dataset_shared_id"))
    if spec.storage.dataset is not None:
        sources.append(
            DlcDataSource(
                f"{spec.name}-data",
                "oss",
                DATA_MOUNT,
                "dataset_data_id",
                spec.storage.dataset.source,
                read_only=True,
            )
        )
    if ckpt.enabled:
        sources.append(
            DlcDataSource(
                f"{spec.name}-checkpoints",
                "oss",
                CHECKPOINT_MOUNT,
                "dataset_checkpoints_id",
                f"oss://{ckpt.bucket}/{ckpt.prefix}",
            )
        )
    if weights is not None:  # the OSS weights folder, or the folder holding trainstack-weights (ModelScope)
        sources.append(dlc_weights.data_source(spec.name, weights, ckpt.bucket, ckpt.prefix))
    decisions.append(
        Decision(
            "datasets",
            ", ".join(f"{d.name} ({d.kind}) at {d.mount_path}" for d in sources) or "none",
            _datasets_reason(sources),
        )
    )
    return sources


def _image(spec: Spec, region: Region, decisions: list[Decision]) -> tuple[str, str]:
    """The job's image and where it comes from: compute.container_image when given, else the official PAI image."""
    own = limits.container_image_parts(spec.compute.container_image) if spec.compute.container_image else None
    if own is not None:  # compute.container_image is the job's image (CreateJob JobSpecs[].Image)
        image, image_source = own[1], "compute.container_image (the spec), pinned by digest"
        reason = (
            "compute.container_image, pinned by its digest, through the registry's VPC endpoint: DLC pulls it for "
            "every worker (CreateJob JobSpecs Image [DOC-DLC-JOB]); it must bring PyTorch and torchrun, and its "
            "repository must be one DLC may pull (the same account's ACR, or public)"
        )
    else:
        image = f"{IMAGE_REPOSITORY.format(region=region.id)}:{IMAGE_TAG}"
        image_source = "UNVERIFIED tag [3P-DLC-IMAGE]; registry and repository per [DOC-DLC-JOB]"
        reason = (
            "the official PAI PyTorch training image from the region's VPC registry (PyTorch, DeepSpeed and Megatron "
            "tooling, drivers managed by DLC): registry and repository as in Alibaba's CreateJob samples "
            "[DOC-DLC-JOB]; the tag is unverified [3P-DLC-IMAGE]: check the PAI console's image list"
        )
    decisions.append(Decision("image", image, reason))
    return image, image_source


def _workers_decision(fit: Fit, catalog: Catalog, decisions: list[Decision]) -> None:
    """Why the job runs ``fit.nodes`` workers of its type, and whether the catalog's DLC row for it is verified."""
    t = fit.itype
    row = catalog.dlc_spec(t.name)
    decisions.append(
        Decision(
            "workers",
            f"{fit.nodes} x {t.name} ({JOB_TYPE})",
            (
                f"the same fit as on ECS: {t.gpus} x {t.gpu} per worker, tp={fit.tp} pp={fit.pp} dp={fit.dp}; DLC's public "
                f"resources offer {t.name} per the catalog "
                + (
                    f"[{row.source}]"
                    if row is not None and row.verified
                    else f"(unverified [{row.source if row else 'no source'}]: confirm on the Create Job page)"
                )
                + "; pay-as-you-go, billed per worker-minute [DOC-DLC-BILL]"
            ),
        )
    )


def _max_running_hours(best: Scored, decisions: list[Decision]) -> int | None:
    """The job's running-time limit (CreateJob JobMaxRunningTimeMinutes, in hours), or None without a run estimate."""
    if best.run_hours is None:
        return None
    expected = best.run_hours + (best.rework_hours or 0.0)
    max_hours = min(DLC_DEFAULT_MAX_HOURS, math.ceil(expected * MAX_RUNNING_MARGIN) + 1)
    decisions.append(
        Decision(
            "max running time",
            f"{max_hours} h",
            (
                f"{MAX_RUNNING_MARGIN:g} x the expected {expected:,.1f} h (training plus expected rework) plus an hour, at "
                f"most DLC's default of 30 days [DOC-DLC-JOB]: a job that hangs stops being billed "
                "(CreateJob JobMaxRunningTimeMinutes)"
            ),
        )
    )
    return max_hours


def _job_warnings(
    fit: Fit, region: Region, sources: list[DlcDataSource], warnings: list[PlanWarning]
) -> None:
    """The public-resource quota warning (when over it) and the DLC activation warning naming the read-only buckets."""
    warning = quota_warning(fit.nodes, fit.itype.gpus, fit.itype.vcpu)
    if warning is not None:
        warnings.append(warning)
    oss = sorted({d.uri.split("/")[2] for d in sources if d.kind == "oss" and d.read_only and d.uri})
    warnings.append(warns.DlcActivation(region.id, tuple(oss)))


def _datasets_reason(sources: list[DlcDataSource]) -> str:
    """Why the job mounts what it mounts, naming only the datasets the plan has."""
    if not sources:
        return "no shared file system, OSS data, checkpoints or base weights: the job mounts no dataset"
    what = {
        "dataset_shared_id": "the shared file system read-write",
        "dataset_data_id": "the OSS training data read-only (DLC mounts OSS directly, no import needed)",
        "dataset_checkpoints_id": "the checkpoint prefix read-write",
        dlc_weights.WEIGHTS_OUTPUT: "the base weights' OSS folder read-only",
        dlc_weights.TOOLS_OUTPUT: "the checkpoint bucket's folder holding trainstack-weights read-only",
    }
    parts = [what[d.output_key] for d in sources]
    return (
        "each storage is registered in the workspace as a dataset (pai.WorkspaceDataset) that the job mounts by "
        "id (CreateJob DataSources): " + ", ".join(parts)
    )


def _environment(
    spec: Spec,
    best: Scored,
    storage: Storage,
    ckpt: Checkpoints,
    sources: list[DlcDataSource],
    weights: Weights | None = None,
) -> tuple[tuple[str, str], ...]:
    """The launch environment (CreateJob Envs), named as the ECS launcher's (/etc/trainstack/launch.env). DLC injects
    MASTER_ADDR, MASTER_PORT, WORLD_SIZE (the worker count) and RANK itself [DOC-DLC-JOB], so they are not set."""
    fit = best.fit
    env = [
        ("TRAINSTACK_NAME", spec.name),
        ("NNODES", str(fit.nodes)),
        ("GPUS_PER_NODE", str(fit.itype.gpus)),
        ("TP_SIZE", str(fit.tp)),
        ("PP_SIZE", str(fit.pp)),
        ("DP_SIZE", str(fit.dp)),
        ("ZERO_STAGE", str(spec.parallelism.zero_stage)),
    ]
    if fit.ep > 1:  # a MoE model's expert-parallel degree, named as the ECS launcher's
        env.append(("EP_SIZE", str(fit.ep)))
    if fit.cp > 1:  # context parallelism and CPU offload, named as the ECS launcher's
        env.append(("CP_SIZE", str(fit.cp)))
    if spec.parallelism.offload != "none":
        env.append(("OFFLOAD", spec.parallelism.offload))
    if storage.kind != "none":
        env.append(("SHARED_DIR", storage.mount_path))
    if any(d.mount_path == DATA_MOUNT for d in sources):
        env.append(("DATA_DIR", DATA_MOUNT))
    if ckpt.enabled:
        env += [
            ("CHECKPOINT_DIR", CHECKPOINT_MOUNT),
            ("CHECKPOINT_URL", f"oss://{ckpt.bucket}/{ckpt.prefix}"),
            ("CHECKPOINT_ENDPOINT", ckpt.internal_endpoint),
            ("CHECKPOINT_INTERVAL_SECONDS", str(ckpt.interval_seconds)),
        ]
    if weights is not None:
        env += dlc_weights.environment(weights)
    assert len(env) <= MAX_ENVS, env  # DLC takes at most 20 [DOC-DLC-JOB]
    return tuple(env)
