"""Checks that need the catalog: regions, zones, GPU models, instance types, and each platform's rules (asked of
the platform, :func:`generator.platforms.registry.parts_for`) with the spec fields it does not honour.

Pure: spec + catalog -> list of :class:`~generator.errors.Problem` (paths only; the caller adds lines).
"""

from __future__ import annotations

import re

from generator.catalog import Catalog, GpuModel, Region
from generator.catalog.unavailable import UnavailableAccelerator, offered_gpus, unavailable_text
from generator.errors import Problem, clip, did_you_mean, excerpt
from generator.platforms.base import Capability
from generator.platforms.registry import parts_for, platform_for, unhonoured_problems
from generator.spec import limits
from generator.spec.conflicts import training_conflicts
from generator.spec.limits import (  # noqa: F401
    CPFS_MAX_GIB,
    CPFS_MIN_GIB,
    CPFS_STEP_GIB,
    NAS_EXTREME_MAX_GIB,
    NAS_EXTREME_MIN_GIB,
)
from generator.spec.model import Spec
from generator.spec.rules import RULES


def check(spec: Spec, catalog: Catalog) -> list[Problem]:
    problems: list[Problem] = _repeats(spec) + _bucket_tags(spec)
    m = spec.model
    if m.global_batch_tokens is not None and m.global_batch_tokens < m.sequence_length:
        problems.append(
            Problem(
                ("model", "global_batch_tokens"),
                f"a global batch of {m.global_batch_tokens:,} tokens "
                f"is less than one sequence of {m.sequence_length:,} tokens",
                f"use at least {m.sequence_length}, e.g. a multiple of it such as "
                f"{m.sequence_length * 256} (256 sequences)",
            )
        )
    region = catalog.region(spec.region)
    if region is None:
        problems.append(
            Problem(
                ("region",),
                f"unknown region {excerpt(spec.region)}",
                did_you_mean(spec.region, catalog.region_ids())
                or "run 'trainstack catalog --regions' to list the regions trainstack knows",
            )
        )
    else:
        for i, zone in enumerate(spec.zones):
            if zone not in region.zones:
                hint = did_you_mean(zone, region.zones) or f"zones of {region.id}: {', '.join(region.zones)}"
                other = next((r.id for r in catalog.regions if zone in r.zones), None)
                msg = f"zone {excerpt(zone)} is not in region {region.id}"
                if other:
                    msg += f" (it is in {other})"
                    hint = f"set region: {other}, or use zones of {region.id}: {', '.join(region.zones)}"
                problems.append(Problem(("zones", i), msg, hint))
    if spec.model.preset is not None:
        from generator.sizing import PRESETS

        if spec.model.preset not in PRESETS:
            problems.append(
                Problem(
                    ("model", "preset"),
                    f"unknown preset {excerpt(spec.model.preset)}",
                    did_you_mean(spec.model.preset, PRESETS) or "presets: " + ", ".join(sorted(PRESETS)),
                )
            )
    c = spec.compute
    platform = platform_for(spec)
    lingjun = platform.has(Capability.HPN)  # the types are the catalog's Lingjun machine types
    if c.gpu != "auto":
        gpu = catalog.gpu(c.gpu)
        unavailable = catalog.unavailable_accelerator(c.gpu) if gpu is None else None
        if unavailable is not None:
            problems.append(
                unavailable_problem(
                    unavailable,
                    catalog,
                    region,
                    lingjun,
                    platform.has(Capability.DLC_WORKERS),
                    spec.model.precision == "bf16",
                )
            )
        elif gpu is None:
            problems.append(
                Problem(
                    ("compute", "gpu"),
                    f"unknown GPU {excerpt(c.gpu)}",
                    did_you_mean(c.gpu, _gpu_words(catalog))
                    or f"known GPUs: {', '.join(catalog.gpu_names())}",
                )
            )
        elif m.precision == "bf16" and not gpu.bf16:
            problems.append(no_bf16_problem(gpu, catalog, region, ("compute", "gpu")))
        elif m.precision == "fp8" and not gpu.fp8_tflops:
            problems.append(no_fp8_problem(gpu, catalog, region, ("compute", "gpu")))
        elif lingjun:
            if (
                region is not None
                and region.lingjun
                and not any(t.gpu == gpu.name for t in catalog.lingjun_types_in_region(region.id))
            ):
                offered = sorted({t.gpu for t in catalog.lingjun_types_in_region(region.id)})
                problems.append(
                    Problem(
                        ("compute", "gpu"),
                        f"no Lingjun machine type with {gpu.name} in {region.id} in the catalog",
                        f"Lingjun GPUs there: {', '.join(offered) or 'none'} "
                        "(GPU identities of Lingjun types are unverified; see the catalog notes)",
                    )
                )
        elif region is not None and not any(t.gpu == gpu.name for t in catalog.types_in_region(region.id)):
            offered = sorted({t.gpu for t in catalog.types_in_region(region.id)})
            where = sorted(
                r.id for r in catalog.regions if any(t.gpu == gpu.name for t in catalog.types_in_region(r.id))
            )
            problems.append(
                Problem(
                    ("compute", "gpu"),
                    f"region {region.id} offers no {gpu.name} instance types in the catalog",
                    f"GPUs there: {', '.join(offered) or 'none'}; {gpu.name} is in: "
                    f"{', '.join(where) or 'no known region'}",
                )
            )
    for i, name in enumerate(c.instance_types):
        lj = catalog.lingjun_type(name)
        if lingjun:
            if lj is None:
                lj_names = [x.name for x in catalog.lingjun_types]
                known = catalog.instance(name) is not None
                problems.append(
                    Problem(
                        ("compute", "instance_types", i),
                        f"{name} is an ECS instance type, not a Lingjun machine type"
                        if known
                        else f"unknown Lingjun machine type {excerpt(name)}",
                        (None if known else did_you_mean(name, lj_names))
                        or "Lingjun machine types in the catalog: " + ", ".join(lj_names),
                    )
                )
            continue
        if lj is not None:
            problems.append(
                Problem(
                    ("compute", "instance_types", i),
                    f"{name} is a Lingjun (eflo) machine type, not an ECS instance type",
                    "set compute.platform: lingjun, or list ECS types",
                )
            )
            continue
        t = catalog.instance(name)
        if t is None:
            problems.append(
                Problem(
                    ("compute", "instance_types", i),
                    f"unknown instance type {excerpt(name)}",
                    did_you_mean(name, [x.name for x in catalog.instance_types])
                    or "run 'trainstack catalog' to list GPU instance types",
                )
            )
        elif spec.network.rdma is True and not t.rdma:
            problems.append(
                Problem(
                    ("compute", "instance_types", i),
                    f"{name} has no eRDMA interface (ERI) or RoCE, but network.rdma is true",
                    "choose an ERI type such as ecs.ebmgn7ex.32xlarge or ecs.gn8v-8x.48xlarge,"
                    " or set network.rdma: auto",
                )
            )
    listed = [g for name in c.instance_types if (g := _gpu_of(catalog, name)) is not None]
    if (
        m.precision == "bf16"
        and listed
        and not any(g.bf16 for g in listed)
        and (c.gpu == "auto" or (cg := catalog.gpu(c.gpu)) is None or cg.bf16)
    ):
        problems.append(no_bf16_problem(listed[0], catalog, region, ("compute", "instance_types")))
    if (
        m.precision == "fp8"
        and listed
        and not any(g.fp8_tflops for g in listed)
        and (c.gpu == "auto" or (fg := catalog.gpu(c.gpu)) is None or fg.fp8_tflops)
    ):
        problems.append(no_fp8_problem(listed[0], catalog, region, ("compute", "instance_types")))
    problems.extend(parts_for(spec).rules(spec, catalog, region))
    problems.extend(unhonoured_problems(spec))
    s = spec.storage
    if isinstance(s.capacity, int):
        gib = s.capacity / 2**30
        if s.shared in ("cpfs", "extreme-nas"):
            wrong = limits.capacity_problem(s.shared, gib)
            if wrong:
                problems.append(Problem(("storage", "capacity"), *wrong))
        if s.shared == "none":
            problems.append(
                Problem(
                    ("storage", "capacity"),
                    "a capacity is set but storage.shared is none",
                    "remove capacity or choose a shared file system",
                )
            )
    if s.storage_class in ("advance_100", "advance_200") and s.shared == "extreme-nas":
        problems.append(
            Problem(
                ("storage", "storage_class"),
                f"{s.storage_class} is a CPFS class; Extreme NAS takes standard or advance",
            )
        )
    if s.storage_class in ("standard", "advance") and s.shared == "cpfs":
        problems.append(
            Problem(
                ("storage", "storage_class"),
                f"{s.storage_class} is an Extreme NAS class; CPFS takes advance_100 or advance_200",
            )
        )
    if (
        s.dataset is not None
        and s.shared in ("none", "extreme-nas")
        and not platform.has(Capability.OSS_MOUNT)
    ):
        problems.append(
            Problem(
                ("storage", "dataset"),
                "importing a dataset from OSS needs CPFS (a fileset and a data flow)",
                "set storage.shared: cpfs or auto",
            )
        )
    if region is not None and s.shared == "cpfs" and not region.cpfs:
        problems.append(
            Problem(
                ("storage", "shared"),
                f"CPFS is not offered in {region.id} per the catalog",
                "CPFS regions: " + ", ".join(r.id for r in catalog.regions if r.cpfs),
            )
        )
    k = spec.checkpoints
    if k.region is not None and k.region != spec.region:
        problems.append(
            Problem(
                ("checkpoints", "region"),
                f"the checkpoint bucket must be in the compute region {spec.region}, not {excerpt(k.region)}",
                "cross-region writes are slow and billed; remove checkpoints.region",
            )
        )
    if spec.spot.enabled and not k.enabled:
        problems.append(
            Problem(
                ("spot", "enabled"),
                "spot instances need checkpoints: a reclaimed node loses its work"
                " unless training resumes from a checkpoint",
                "set checkpoints.enabled: true or spot.enabled: false",
            )
        )
    if not k.enabled and any(x != d for x, d in ((k.bucket, None),)):
        problems.append(Problem(("checkpoints", "bucket"), "a bucket is named but checkpoints are disabled"))
    if k.milestones is not None and k.keep_last is None:
        problems.append(
            Problem(
                ("checkpoints", "milestones"),
                "milestones are checkpoints kept beside "
                "checkpoints.keep_last's window, and without keep_last every checkpoint is kept "
                "already",
                "set checkpoints.keep_last (e.g. 3), or remove checkpoints.milestones",
            )
        )
    p = spec.parallelism
    if p.sequence_parallel and p.tensor == 1:
        pass  # sequence parallelism needs tensor parallelism; with tp=1 it has no effect (noted in the plan)
    if isinstance(c.nodes, int) and c.nodes > c.max_nodes:
        problems.append(
            Problem(
                ("compute", "nodes"),
                f"{c.nodes} nodes is more than compute.max_nodes ({c.max_nodes})",
                "raise compute.max_nodes if you mean it",
            )
        )
    if spec.spot.enabled and isinstance(c.nodes, int) and spec.spot.on_demand_base > c.nodes:
        problems.append(
            Problem(
                ("spot", "on_demand_base"),
                f"on_demand_base ({spec.spot.on_demand_base}) is more than the {c.nodes} nodes",
            )
        )
    m = spec.model
    problems.extend(
        c.problem()
        for c in training_conflicts(m.finetune.method, m.precision, m.optimizer, m.finetune.paged_optimizer)
    )
    problems.extend(_container_rules(spec))
    for i, w in enumerate(spec.waivers):
        if w.rule not in RULES:
            problems.append(
                Problem(
                    ("waivers", i, "rule"),
                    f"no lint rule '{w.rule}'",
                    did_you_mean(w.rule, RULES) or "run 'trainstack lint --rules' to list them",
                )
            )
    return problems


def _container_rules(spec: Spec) -> list[Problem]:
    """compute.container_image: pulled through the registry's VPC endpoint, so from the plan's region; on ECS the
    image the nodes boot must bring Docker and the NVIDIA Container Toolkit (the pinned default image has neither)."""
    c = spec.compute
    parts = limits.container_image_parts(c.container_image) if c.container_image else None
    problems = _registry_login_rules(spec, parts is not None)
    if parts is None:
        return problems
    if parts[0] != spec.region:
        problems.append(
            Problem(
                ("compute", "container_image"),
                f"the registry is in {parts[0]}, not in {spec.region}: "
                "nodes pull through the registry's VPC endpoint, which serves its own region only",
                f"push the image to a registry in {spec.region} (ACR replicates across regions)",
            )
        )
    if platform_for(spec).has(Capability.DEFAULT_IMAGE) and c.image_id is None:
        problems.append(
            Problem(
                ("compute", "container_image"),
                "a container image needs a node image with Docker "
                "and the NVIDIA Container Toolkit; the default image (Alibaba Cloud Linux 3) has "
                "neither and node-init.sh installs neither",
                "set compute.image_id to an image that has them, or remove compute.container_image "
                "to train with the PyTorch node-init.sh installs",
            )
        )
    return problems


def _registry_login_rules(spec: Spec, has_image: bool) -> list[Problem]:
    """compute.container_registry_instance: the nodes log in to that Enterprise Edition instance with their RAM role
    (GetAuthorizationToken with InstanceId), so it needs an Enterprise Edition image and nodes with a role (ECS)."""
    c, where = spec.compute, ("compute", "container_registry_instance")
    if c.container_registry_instance is None:
        return []
    if not has_image:
        return [
            Problem(
                where,
                "a registry instance to log in to, but no compute.container_image to pull from it",
                "set compute.container_image to the private image, or remove this line",
            )
        ]
    if limits.container_repository(c.container_image or "") is None:
        return [
            Problem(
                where,
                "nodes log in only to Enterprise Edition instances "
                "(INSTANCE-registry[-vpc].REGION.cr.aliyuncs.com); compute.container_image is Personal Edition",
                "push the image to an Enterprise Edition instance, or make the Personal Edition repository "
                "public and remove this line",
            )
        ]
    if not platform_for(spec).has(
        Capability.NODE_RAM_ROLE
    ):  # the login needs the node role's STS credentials
        return [
            Problem(
                where,
                f"only ECS nodes log in to a private registry, not platform {c.platform} (Lingjun "
                "nodes have no RAM role; PAI-DLC pulls the job's image itself, without this login)",
                "use an image the platform can pull without a login, or platform: ecs",
            )
        ]
    return []


def _repeats(spec: Spec) -> list[Problem]:
    """Lists that are sets: an item given twice (after normalisation, for CIDRs) is a mistake, and for admin_cidrs
    it would render the same security-group rule twice."""
    problems: list[Problem] = []
    for path, items, what in (
        (("zones",), spec.zones, "zone"),
        (("compute", "instance_types"), spec.compute.instance_types, "instance type"),
        (("network", "admin_cidrs"), spec.network.admin_cidrs, "network"),
    ):
        first: dict[str, int] = {}
        for i, item in enumerate(items):
            if item in first:
                problems.append(
                    Problem(
                        (*path, i),
                        f"{what} {clip(str(item), 60)} is listed twice (also as item {first[item]})",
                        "remove the repeated item; each may appear once",
                    )
                )
            else:
                first[item] = i
    return problems


def _bucket_tags(spec: Spec) -> list[Problem]:
    """The checkpoint bucket takes every tag, and OSS bucket tags are narrower than other resources' (docs/spec.md)."""
    if not spec.checkpoints.enabled:
        return []
    problems: list[Problem] = []
    for key in spec.tags:
        why = ""
        if len(key) > limits.OSS_TAG_KEY_MAX:
            why = f"is {len(key)} characters; an OSS bucket tag key is at most {limits.OSS_TAG_KEY_MAX}"
        elif not re.fullmatch(limits.OSS_TAG_KEY_RE, key):
            bad = next(ch for ch in key if not re.fullmatch(limits.OSS_TAG_KEY_RE, ch))
            why = (
                f"contains {bad!r}; an OSS bucket tag key holds only letters, digits, spaces and "
                "+ - = . _ : /"
            )
        elif key.lower().startswith("acs"):
            why = "starts with acs, which OSS reserves for bucket tags"
        if why:
            problems.append(
                Problem(
                    ("tags", key),
                    f"tag key {key[:40]!r}{'...' if len(key) > 40 else ''} {why}, and "
                    "trainstack tags the checkpoint bucket with every tag",
                    "shorten or rename the key (or set checkpoints.enabled: false, which creates no bucket)",
                )
            )
    return problems


def _gpu_of(catalog: Catalog, name: str) -> GpuModel | None:
    t = catalog.instance(name) or catalog.lingjun_type(name)
    return None if t is None else catalog.gpu(t.gpu)


def no_bf16_problem(
    gpu: GpuModel, catalog: Catalog, region: Region | None, where: tuple[str | int, ...]
) -> Problem:
    """``model.precision: bf16`` on a GPU without BF16 tensor cores (V100, Volta: fp16 and fp32 only; gpus.csv
    column ``bf16``, source NV-V100). PyTorch refuses or emulates bf16 there, so the plan's speed would be fiction.
    ``where`` is the field that names the GPU (compute.gpu or compute.instance_types); the message names both."""
    near = sorted(
        (g for g in offered_gpus(catalog, region) if g.bf16 and g.memory_gib >= gpu.memory_gib),
        key=lambda g: (g.memory_gib, g.name),
    )[:3]
    names = ", ".join(g.name for g in near)
    alternatives = (
        (f"compute.instance_types of such a GPU, e.g. {names}" if near else "other compute.instance_types")
        if where[-1] == "instance_types"
        else "compute.gpu: auto" + (f", or {names}" if near else "")
    )
    return Problem(
        ("model", "precision"),
        f"bf16 needs a GPU with bf16 support, and {gpu.name} (from {'.'.join(map(str, where))}) has none: "
        "Volta tensor cores do fp16 and fp32 only; bf16 needs NVIDIA Ampere or newer",
        f"set model.precision: fp16 (mixed precision with loss scaling) to train on {gpu.name}, or choose "
        f"a GPU with bf16 ({alternatives})",
    )


def no_fp8_problem(
    gpu: GpuModel, catalog: Catalog, region: Region | None, where: tuple[str | int, ...]
) -> Problem:
    """``model.precision: fp8`` on a GPU without FP8 tensor cores (gpus.csv column ``fp8_tflops`` empty: A100, A10,
    V100). Transformer Engine's FP8 needs Ada, Hopper or Blackwell; ``where`` names the field that picks the GPU."""
    near = sorted(
        (g for g in offered_gpus(catalog, region) if g.fp8_tflops), key=lambda g: (g.memory_gib, g.name)
    )[:3]
    names = ", ".join(g.name for g in near)
    if (
        not near
    ):  # no generally available FP8 GPU: name those sold through sales or by invitation (instance_types.csv)
        here = {
            t.gpu
            for t in (catalog.types_in_region(region.id) if region is not None else catalog.instance_types)
        }
        near = sorted(
            (g for g in catalog.gpus if g.fp8_tflops and g.name in here), key=lambda g: (g.memory_gib, g.name)
        )
        names = ", ".join(g.name for g in near[:3]) + (
            " (offered through sales or by invitation)" if near else ""
        )
    alternatives = (
        (f"compute.instance_types of such a GPU, e.g. {names}" if near else "other compute.instance_types")
        if where[-1] == "instance_types"
        else "compute.gpu: auto" + (f", or {names}" if near else "")
    )
    return Problem(
        ("model", "precision"),
        f"fp8 needs a GPU with FP8 tensor cores, and {gpu.name} (from {'.'.join(map(str, where))}) has "
        "none: FP8 training (Transformer Engine) needs NVIDIA Ada, Hopper or Blackwell",
        f"set model.precision: bf16 to train on {gpu.name}, or choose a GPU with FP8 ({alternatives})",
    )


def unavailable_problem(
    acc: UnavailableAccelerator,
    catalog: Catalog,
    region: Region | None,
    lingjun: bool = False,
    dlc: bool = False,
    bf16: bool = False,
) -> Problem:
    """``compute.gpu`` names an accelerator no Alibaba Cloud product offers: say so with the sources and the date
    they were read, who offers it, and the nearest GPUs of the region (by memory and 16-bit peak; for a bf16 run only
    GPUs with bf16)."""
    message, hint = unavailable_text(acc, catalog, region, lingjun, dlc, bf16)
    return Problem(
        ("compute", "gpu"),
        message,
        f"{hint}; set compute.gpu to one of them; every source: trainstack catalog --gpu {acc.name}",
    )


def _gpu_words(catalog: Catalog) -> list[str]:
    words = []
    for g in catalog.gpus:
        words.append(g.name)
        words.extend(g.aliases)
    return words
