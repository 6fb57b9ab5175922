"""The Checkpoints part: the OSS bucket and its name, the checkpoint interval (Young/Daly by default), and their
decisions.

:func:`auto_interval_hours` is the interval a candidate fit would get; the ranking of instance types uses it to
price the rework after interruptions.
"""

from __future__ import annotations

import hashlib

from generator import sizing
from generator.catalog import Catalog, Region
from generator.plan.fit import Fit
from generator.plan.model import Checkpoints, Decision, Storage
from generator.plan.spot import spot_split
from generator.spec.model import Spec
from generator.spec.units import human_bytes, human_seconds

FACTS_KEYS = ("trainstack/cluster.json", "trainstack-facts/cluster.json")


def facts_key(prefix: str) -> str:
    """Where the program publishes the cluster facts: a key the checkpoint prefix does not cover, so the nodes,
    which may write under the prefix, can only read the facts."""
    return next(key for key in FACTS_KEYS if not key.startswith(prefix))


NODE_MTBF_HOURS = 2000.0  # assumed hardware MTBF of one 8-GPU node; an engineering assumption (docs/sizing.md)


def bucket_name(spec: Spec) -> str:
    """A deterministic, globally-unlikely-to-collide bucket name: ``<name>-ckpt-<6 hex of name+region+stack>``."""
    if spec.checkpoints.bucket:
        return spec.checkpoints.bucket
    suffix = hashlib.sha256(f"{spec.name}/{spec.region}/{spec.stack}".encode()).hexdigest()[:6]
    return f"{spec.name[:45]}-ckpt-{suffix}"


def auto_interval_hours(spec: Spec, catalog: Catalog, fit: Fit, arch: sizing.Architecture) -> float:
    """The checkpoint interval, in hours, that ranking prices rework with for ``fit``."""
    region = catalog.region(spec.region)
    assert region is not None
    _, spot_nodes = spot_split(spec, fit.nodes)
    node_gbps = fit.nodes * fit.itype.network_gbps
    write_gbps = min(region.oss_upload_gbps, node_gbps) if node_gbps > 0 else region.oss_upload_gbps
    cm = sizing.checkpoint_plan(arch.parameters, spec.model.optimizer, spec.model.precision, write_gbps, fit.nodes,
                                NODE_MTBF_HOURS, spot_nodes > 0,
                                spec.spot.interruptions_per_node_day * (spot_nodes / fit.nodes))
    if isinstance(spec.checkpoints.interval, int):
        return spec.checkpoints.interval / 3600
    return cm.interval_seconds / 3600


def plan_checkpoints(spec: Spec, catalog: Catalog, region: Region, fit: Fit, arch: sizing.Architecture,
                     lora_rank: int | None, storage: Storage, decisions: list[Decision]) -> Checkpoints:
    k = spec.checkpoints
    endpoint = f"oss-{region.id}-internal.aliyuncs.com"
    if not k.enabled:
        decisions.append(Decision("checkpoints", "off", "the spec disables checkpoints"))
        return Checkpoints(False, "", k.prefix, 0, k.retention_days, k.transition_ia_days, k.abort_multipart_days,
                           endpoint, 0, 0.0, 0.0)
    node_gbps = fit.nodes * fit.itype.network_gbps
    # a node bandwidth of 0 means "not stated" (Lingjun types): the region's OSS limit is the only bound known
    write_gbps = min(region.oss_upload_gbps, node_gbps) if node_gbps > 0 else region.oss_upload_gbps
    lora_trainable = None
    if lora_rank is not None:
        lora_trainable = sizing.lora_trainable_parameters(arch, lora_rank) if hasattr(sizing, "lora_trainable_parameters") \
            else None
    _, spot_nodes = spot_split(spec, fit.nodes)
    cm = sizing.checkpoint_plan(arch.parameters, spec.model.optimizer, spec.model.precision, write_gbps, fit.nodes,
                                NODE_MTBF_HOURS, spot_nodes > 0,
                                spec.spot.interruptions_per_node_day * (spot_nodes / fit.nodes if fit.nodes else 0),
                                lora_trainable)
    if isinstance(k.interval, int):
        interval = k.interval
        why = (f"as the spec asks (the Young/Daly optimum would be {human_seconds(cm.interval_seconds)}: write "
               f"{human_seconds(cm.write_seconds)}, cluster MTBF {cm.mtbf_hours:.1f} h)")
    else:
        interval = max(300, int(round(cm.interval_seconds / 60.0)) * 60)
        why = (f"Young/Daly sqrt(2 x write time x MTBF): a {human_bytes(cm.size_bytes)} checkpoint written at "
               f"{write_gbps:g} Gbit/s (OSS upload limit of {region.id} per account [DOC-OSS-LIM]) takes "
               f"{human_seconds(cm.write_seconds)}; the cluster's expected time between interruptions is "
               f"{cm.mtbf_hours:.1f} h (node MTBF {NODE_MTBF_HOURS:g} h assumed"
               + (f", {spec.spot.interruptions_per_node_day:g} spot reclaims per node-day assumed" if spot_nodes else "")
               + ")")
    decisions.append(Decision("checkpoint interval", human_seconds(interval), why))
    decisions.append(Decision("checkpoint bucket", bucket_name(spec),
                              f"private OSS bucket in {region.id}, versioned and encrypted; noncurrent versions expire "
                              f"after {k.retention_days} days; reached over the internal endpoint {endpoint}"))
    return Checkpoints(True, bucket_name(spec), k.prefix, interval, k.retention_days, k.transition_ia_days,
                       k.abort_multipart_days, endpoint, cm.size_bytes, round(cm.write_seconds, 3),
                       round(cm.mtbf_hours, 3),
                       facts_key(k.prefix) if spec.compute.platform == "ecs" else "")
