"""Checks that need the catalog: regions, zones, GPU models, instance types, and each platform's rules (asked of
the platform, :func:`generator.platforms.registry.parts_for`) with the spec fields it does not honour.

Pure: spec + catalog -> list of :class:`~generator.errors.Problem` (paths only; the caller adds lines), each made
from an event of :mod:`generator.plan.check_refusals` with its code and fields.
"""

from __future__ import annotations

import re

from generator.catalog import Catalog, GpuModel, Region
from generator.catalog.unavailable import UnavailableAccelerator, offered_gpus, unavailable_text
from generator.errors import Problem, closest
from generator.plan import catalog_refusals as x
from generator.plan import spec_refusals as y
from generator.plan.refusal import Refusal
from generator.platforms.base import Capability
from generator.platforms.registry import parts_for, platform_for, unhonoured_errors
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
    """Every problem of the spec against the catalog, each an event of :mod:`generator.plan.check_refusals` (the
    platform's own rules are asked of it), in a fixed order."""
    region = catalog.region(spec.region)
    events: list[Refusal] = [
        *_repeats(spec),
        *_bucket_tags(spec),
        *_batch(spec),
        *_places(spec, catalog, region),
    ]
    events += _preset(spec) + _gpu(spec, catalog, region) + _instance_types(spec, catalog, region)
    problems = [e.problem() for e in events]
    problems.extend(parts_for(spec).rules(spec, catalog, region))
    problems.extend(
        y.FieldNotHonoured(path, platform_for(spec).title, u.why, u.hint).problem()
        for path, u in unhonoured_errors(spec)
    )
    events = _storage(spec, catalog, region) + _checkpoints_spot_and_nodes(spec)
    problems += [e.problem() for e in events]
    m = spec.model
    problems.extend(
        c.problem()
        for c in training_conflicts(
            m.finetune.method,
            m.precision,
            m.optimizer,
            m.finetune.paged_optimizer,
            spec.parallelism.framework,
            spec.parallelism.zero_stage,
            spec.parallelism.offload,
        )
    )
    events = _container_rules(spec) + _waivers(spec)
    return problems + [e.problem() for e in events]


def _batch(spec: Spec) -> list[Refusal]:
    m = spec.model
    if m.global_batch_tokens is not None and m.global_batch_tokens < m.sequence_length:
        return [x.BatchUnderSequence(m.global_batch_tokens, m.sequence_length)]
    return []


def _preset(spec: Spec) -> list[Refusal]:
    m = spec.model
    if m.preset is not None:
        from generator.sizing import PRESETS

        if m.preset not in PRESETS:
            return [x.UnknownPreset(m.preset, closest(m.preset, PRESETS), tuple(sorted(PRESETS)))]
    return []


def _places(spec: Spec, catalog: Catalog, region: Region | None) -> list[Refusal]:
    """The region and its zones."""
    if region is None:
        return [x.RegionUnknown(spec.region, closest(spec.region, catalog.region_ids()))]
    out: list[Refusal] = []
    for i, zone in enumerate(spec.zones):
        if zone not in region.zones:
            other = next((r.id for r in catalog.regions if zone in r.zones), "")
            out.append(
                x.ZoneNotInRegion(i, zone, region.id, tuple(region.zones), closest(zone, region.zones), other)
            )
    return out


def _gpu(spec: Spec, catalog: Catalog, region: Region | None) -> list[Refusal]:
    """compute.gpu: known, offered, with the precision's tensor cores, in the region (on the platform's types)."""
    c, m, platform = spec.compute, spec.model, platform_for(spec)
    if c.gpu == "auto":
        return []
    gpu = catalog.gpu(c.gpu)
    unavailable = catalog.unavailable_accelerator(c.gpu) if gpu is None else None
    if unavailable is not None:
        lingjun = platform.has(Capability.HPN)  # the types are the catalog's Lingjun machine types
        dlc = platform.has(Capability.DLC_WORKERS)
        return [unavailable_event(unavailable, catalog, region, lingjun, dlc, m.precision == "bf16")]
    if gpu is None:
        return [x.UnknownGpu(c.gpu, closest(c.gpu, _gpu_words(catalog)), tuple(catalog.gpu_names()))]
    if m.precision == "bf16" and not gpu.bf16:
        return [no_bf16_event(gpu, catalog, region, ("compute", "gpu"))]
    if m.precision == "fp8" and not gpu.fp8_tflops:
        return [no_fp8_event(gpu, catalog, region, ("compute", "gpu"))]
    if region is None:
        return []
    return parts_for(spec).gpu_refusals(catalog, gpu, region)  # among the platform's types in the region


def _instance_types(spec: Spec, catalog: Catalog, region: Region | None) -> list[Refusal]:
    """compute.instance_types: each known, of the platform's kind, with RDMA when the spec asks; and the listed
    GPUs with the precision's tensor cores."""
    c, m, parts = spec.compute, spec.model, parts_for(spec)
    out: list[Refusal] = [
        e
        for i, name in enumerate(c.instance_types)
        if (e := parts.type_refusal(spec, catalog, i, name)) is not None
    ]
    listed = [g for name in c.instance_types if (g := _gpu_of(catalog, name)) is not None]
    picked = (
        catalog.gpu(c.gpu) if c.gpu != "auto" else None
    )  # a compute.gpu refused already is not said twice
    where = ("compute", "instance_types")
    if (
        m.precision == "bf16"
        and listed
        and not any(g.bf16 for g in listed)
        and (picked is None or picked.bf16)
    ):
        out.append(no_bf16_event(listed[0], catalog, region, where))
    fp8_ok = picked is None or picked.fp8_tflops
    if m.precision == "fp8" and listed and not any(g.fp8_tflops for g in listed) and fp8_ok:
        out.append(no_fp8_event(listed[0], catalog, region, where))
    return out


def _storage(spec: Spec, catalog: Catalog, region: Region | None) -> list[Refusal]:
    """storage: the capacity the file system takes, its class, a dataset import, CPFS in the region."""
    s, out = spec.storage, list[Refusal]()
    if isinstance(s.capacity, int):
        gib = s.capacity / 2**30
        if s.shared in ("cpfs", "extreme-nas") and limits.capacity_problem(s.shared, gib):
            out.append(y.CapacityOutOfRange(s.shared, gib, False))
        if s.shared == "none":
            out.append(y.CapacityWithoutShared())
    if s.storage_class in ("advance_100", "advance_200") and s.shared == "extreme-nas":
        out.append(y.StorageClassOfOther(s.storage_class, s.shared))
    if s.storage_class in ("standard", "advance") and s.shared == "cpfs":
        out.append(y.StorageClassOfOther(s.storage_class, s.shared))
    oss_mount = platform_for(spec).has(Capability.OSS_MOUNT)
    if s.dataset is not None and s.shared in ("none", "extreme-nas") and not oss_mount:
        out.append(y.DatasetNeedsCpfs())
    if region is not None and s.shared == "cpfs" and not region.cpfs:
        out.append(x.CpfsNotInRegion(region.id, tuple(r.id for r in catalog.regions if r.cpfs)))
    return out


def _checkpoints_spot_and_nodes(spec: Spec) -> list[Refusal]:
    k, c, out = spec.checkpoints, spec.compute, list[Refusal]()
    if k.region is not None and k.region != spec.region:
        out.append(y.CheckpointRegion(spec.region, k.region))
    if spec.spot.enabled and not k.enabled:
        out.append(y.SpotWithoutCheckpoints())
    if not k.enabled and k.bucket is not None:
        out.append(y.BucketWithoutCheckpoints())
    if k.milestones is not None and k.keep_last is None:
        out.append(y.MilestonesWithoutKeepLast())
    # sequence parallelism with tp=1 has no effect: the plan notes it, the check lets it pass
    if isinstance(c.nodes, int) and c.nodes > c.max_nodes:
        out.append(x.NodesOverMax(c.nodes, c.max_nodes))
    if spec.spot.enabled and isinstance(c.nodes, int) and spec.spot.on_demand_base > c.nodes:
        out.append(y.OnDemandBaseOverNodes(spec.spot.on_demand_base, c.nodes))
    return out


def _waivers(spec: Spec) -> list[Refusal]:
    return [
        y.UnknownWaiverRule(i, w.rule, closest(w.rule, RULES))
        for i, w in enumerate(spec.waivers)
        if w.rule not in RULES
    ]


def _container_rules(spec: Spec) -> list[Refusal]:
    """compute.container_image: pulled through the registry's VPC endpoint, so from the plan's region; on ECS the
    image the nodes boot must bring Docker and the NVIDIA Container Toolkit (the pinned default image has neither)."""
    c = spec.compute
    parts = limits.container_image_parts(c.container_image) if c.container_image else None
    problems = _registry_login_rules(spec, parts is not None)
    if parts is None:
        return problems
    if parts[0] != spec.region:
        problems.append(y.RegistryOtherRegion(parts[0], spec.region))
    if platform_for(spec).has(Capability.DEFAULT_IMAGE) and c.image_id is None:
        problems.append(y.ImageNeedsDocker())
    return problems


def _registry_login_rules(spec: Spec, has_image: bool) -> list[Refusal]:
    """compute.container_registry_instance: the nodes log in to that Enterprise Edition instance with their RAM role
    (GetAuthorizationToken with InstanceId), so it needs an Enterprise Edition image and nodes with a role (ECS)."""
    c = spec.compute
    if c.container_registry_instance is None:
        return []
    if not has_image:
        return [y.LoginWithoutImage()]
    if limits.container_repository(c.container_image or "") is None:
        return [y.LoginPersonalEdition()]
    if not platform_for(spec).has(
        Capability.NODE_RAM_ROLE
    ):  # the login needs the node role's STS credentials
        return [y.LoginWithoutRole(str(c.platform))]
    return []


def _repeats(spec: Spec) -> list[Refusal]:
    """Lists that are sets: an item given twice (after normalisation, for CIDRs) is a mistake, and for admin_cidrs
    it would render the same security-group rule twice."""
    out: list[Refusal] = []
    for path, items, what in (
        (("zones",), spec.zones, "zone"),
        (("compute", "instance_types"), spec.compute.instance_types, "instance type"),
        (("network", "admin_cidrs"), spec.network.admin_cidrs, "network"),
    ):
        first: dict[str, int] = {}
        for i, item in enumerate(items):
            if item in first:
                out.append(y.ListedTwice(path, i, what, str(item), first[item]))
            else:
                first[item] = i
    return out


def _bucket_tags(spec: Spec) -> list[Refusal]:
    """The checkpoint bucket takes every tag, and OSS bucket tags are narrower than other resources' (docs/spec.md)."""
    if not spec.checkpoints.enabled:
        return []
    out: list[Refusal] = []
    for key in spec.tags:
        if len(key) > limits.OSS_TAG_KEY_MAX:
            out.append(y.BucketTagKey(key, "length", ""))
        elif not re.fullmatch(limits.OSS_TAG_KEY_RE, key):
            bad = next(ch for ch in key if not re.fullmatch(limits.OSS_TAG_KEY_RE, ch))
            out.append(y.BucketTagKey(key, "character", bad))
        elif key.lower().startswith("acs"):
            out.append(y.BucketTagKey(key, "reserved", ""))
    return out


def _gpu_of(catalog: Catalog, name: str) -> GpuModel | None:
    t = catalog.instance(name) or catalog.lingjun_type(name)
    return None if t is None else catalog.gpu(t.gpu)


def no_bf16_event(
    gpu: GpuModel, catalog: Catalog, region: Region | None, where: tuple[str | int, ...]
) -> x.NoBf16:
    """``model.precision: bf16`` on a GPU without BF16 tensor cores (V100, Volta: fp16 and fp32 only; gpus.csv
    column ``bf16``, source NV-V100). PyTorch refuses or emulates bf16 there, so the plan's speed would be fiction.
    ``where`` is the field that names the GPU (compute.gpu or compute.instance_types); the message names both."""
    near = sorted(
        (g for g in offered_gpus(catalog, region) if g.bf16 and g.memory_gib >= gpu.memory_gib),
        key=lambda g: (g.memory_gib, g.name),
    )[:3]
    return x.NoBf16(gpu.name, ".".join(map(str, where)), tuple(g.name for g in near))


def no_fp8_event(
    gpu: GpuModel, catalog: Catalog, region: Region | None, where: tuple[str | int, ...]
) -> x.NoFp8:
    """``model.precision: fp8`` on a GPU without FP8 tensor cores (gpus.csv column ``fp8_tflops`` empty: A100, A10,
    V100). Transformer Engine's FP8 needs Ada, Hopper or Blackwell; ``where`` names the field that picks the GPU."""
    near = sorted(
        (g for g in offered_gpus(catalog, region) if g.fp8_tflops), key=lambda g: (g.memory_gib, g.name)
    )
    by_sales = False
    if (
        not near
    ):  # no generally available FP8 GPU: name those sold through sales or by invitation (instance_types.csv)
        types = catalog.types_in_region(region.id) if region is not None else catalog.instance_types
        here = {t.gpu for t in types}
        near = sorted(
            (g for g in catalog.gpus if g.fp8_tflops and g.name in here), key=lambda g: (g.memory_gib, g.name)
        )
        by_sales = bool(near)
    return x.NoFp8(gpu.name, ".".join(map(str, where)), tuple(g.name for g in near[:3]), by_sales)


def unavailable_event(
    acc: UnavailableAccelerator,
    catalog: Catalog,
    region: Region | None,
    lingjun: bool = False,
    dlc: bool = False,
    bf16: bool = False,
) -> x.AcceleratorUnavailable:
    """``compute.gpu`` names an accelerator no Alibaba Cloud product offers: say so with the sources and the date
    they were read, who offers it, and the nearest GPUs of the region (by memory and 16-bit peak; for a bf16 run only
    GPUs with bf16)."""
    message, hint = unavailable_text(acc, catalog, region, lingjun, dlc, bf16)
    return x.AcceleratorUnavailable(acc.name, message, hint)


def _gpu_words(catalog: Catalog) -> list[str]:
    words = []
    for g in catalog.gpus:
        words.append(g.name)
        words.extend(g.aliases)
    return words
