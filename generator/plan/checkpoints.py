"""The Checkpoints part: the OSS bucket and its name, the tier the job writes to (the shared file system when it
has room, else OSS), the checkpoint interval (Young/Daly by default), and their decisions.

The tier and the interval come from :mod:`generator.plan.run_hours`, which the ranking of instance types uses too.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from generator import sizing
from generator.catalog import Catalog, Region
from generator.plan import refusals
from generator.plan.fit import Fit, PlanningError
from generator.plan.milestones import decision as milestone_decision
from generator.plan.milestones import rule as milestone_rule
from generator.plan.model import Checkpoints, Decision, Storage
from generator.plan.run_hours import NODE_MTBF_HOURS, checkpoint_size, checkpoint_tier, interruptions_per_hour
from generator.plan.spot import spot_split
from generator.platforms.base import Capability
from generator.platforms.registry import platform_for
from generator.spec.model import Spec
from generator.spec.units import human_bytes, human_seconds

FACTS_KEYS = ("trainstack/cluster.json", "trainstack-facts/cluster.json")
CHECKPOINT_SUBDIR = "checkpoints"  # the checkpoint directory under the shared file system's mount path
JOBS_SUBPREFIX = (
    "_trainstack/"  # job logs and exit codes under the prefix (live/jobs/cluster.py); never expired
)
# OSS runs lifecycle rules once a day and counts days from an object's last modification ("Lifecycle rules based on
# the last modified time", https://www.alibabacloud.com/help/en/oss/user-guide/lifecycle-rules-based-on-the-last-modified-time):
# one more day than keep_last intervals, and never fewer than MIN_EXPIRE_DAYS, so at least keep_last remain.
MIN_EXPIRE_DAYS = 2


def expire_days(keep_last: int, interval_seconds: int) -> int:
    """Days after which a current checkpoint object expires so that at least ``keep_last`` remain: the whole days
    that ``keep_last`` intervals span, plus one for the lifecycle's daily scan, at least :data:`MIN_EXPIRE_DAYS`."""
    return max(MIN_EXPIRE_DAYS, math.ceil(keep_last * interval_seconds / 86400.0) + 1)


def facts_key(prefix: str) -> str:
    """Where the program publishes the cluster facts: a key the checkpoint prefix does not cover, so the nodes,
    which may write under the prefix, can only read the facts."""
    return next(key for key in FACTS_KEYS if not key.startswith(prefix))


def bucket_name(spec: Spec) -> str:
    """A deterministic, globally-unlikely-to-collide bucket name: ``<name>-ckpt-<6 hex of name+region+stack>``."""
    if spec.checkpoints.bucket:
        return spec.checkpoints.bucket
    suffix = hashlib.sha256(f"{spec.name}/{spec.region}/{spec.stack}".encode()).hexdigest()[:6]
    return f"{spec.name[:45]}-ckpt-{suffix}"


def plan_checkpoints(
    spec: Spec,
    catalog: Catalog,
    region: Region,
    fit: Fit,
    arch: sizing.Architecture,
    lora_rank: int | None,
    storage: Storage,
    decisions: list[Decision],
) -> Checkpoints:
    """Where and how often the run checkpoints (the interval, the tier, the bucket, keep_last and milestones), each
    choice with a decision saying why."""
    k = spec.checkpoints
    endpoint = f"oss-{region.id}-internal.aliyuncs.com"
    if not k.enabled:
        return _checkpoints_off(spec, fit, endpoint, decisions)
    size = checkpoint_size(spec, arch, lora_rank)
    choice = checkpoint_tier(spec, catalog, region, fit.itype, fit.nodes, size)
    tier = choice.tier
    rate = interruptions_per_hour(spec, fit.nodes)
    write_s = size / (tier.write_gbps * 1e9 / 8)
    restore_s = size / (tier.read_gbps * 1e9 / 8)
    mtbf_h = 1.0 / rate
    optimum = sizing.young_daly_interval(write_s, mtbf_h * 3600.0)
    interval, why = _checkpoint_interval(spec, fit.nodes, optimum, write_s, mtbf_h, size, tier)
    decisions.append(Decision("checkpoint interval", human_seconds(interval), why))
    directory = storage.mount_path.rstrip("/") + f"/{CHECKPOINT_SUBDIR}/" if choice.kind != "oss" else ""
    decisions += _where_decisions(spec, region, choice, directory, restore_s, endpoint)
    days = 0 if k.keep_last is None else expire_days(k.keep_last, interval)
    if k.keep_last is not None:
        decisions.append(_retention_decision(spec, interval, days))
    milestones = milestone_rule(spec, interval)
    kept = milestone_decision(milestones, interval, k.prefix)
    if kept is not None:
        decisions.append(kept)
    return Checkpoints(
        True,
        bucket_name(spec),
        k.prefix,
        interval,
        k.retention_days,
        k.transition_ia_days,
        k.abort_multipart_days,
        endpoint,
        size,
        round(write_s, 3),
        round(mtbf_h, 3),
        facts_key(k.prefix) if platform_for(spec).has(Capability.CLUSTER_FACTS) else "",
        choice.kind,
        directory,
        round(restore_s, 3),
        k.keep_last,
        days,
        k.keep_last is not None and not spec.compute.paused,
        milestones.every,
        milestones.seconds,
        milestones.hours,
        milestones.steps,
    )


def _checkpoint_interval(
    spec: Spec, nodes: int, optimum: float, write_s: float, mtbf_h: float, size: float, tier: Any
) -> tuple[int, str]:
    """The checkpoint interval in seconds and why: the spec's, or the Young/Daly optimum rounded to whole minutes
    (at least five)."""
    k = spec.checkpoints
    _, spot_nodes = spot_split(spec, nodes)
    if isinstance(k.interval, int):
        interval = k.interval
        why = (
            f"as the spec asks (the Young/Daly optimum would be {human_seconds(optimum)}: write "
            f"{human_seconds(write_s)} to {tier.name}, cluster MTBF {mtbf_h:.1f} h)"
        )
    else:
        interval = max(300, round(optimum / 60.0) * 60)
        why = (
            f"Young/Daly sqrt(2 x write time x MTBF): a {human_bytes(size)} checkpoint written to {tier.name} at "
            f"{tier.write_gbps:,.4g} Gbit/s takes {human_seconds(write_s)}; the cluster's expected time between "
            f"interruptions is {mtbf_h:.1f} h (node MTBF {NODE_MTBF_HOURS:g} h assumed"
            + (
                f", {spec.spot.interruptions_per_node_day:g} spot reclaims per node-day assumed"
                if spot_nodes
                else ""
            )
            + ")"
        )
    return interval, why


def _retention_decision(spec: Spec, interval: int, days: int) -> Decision:
    """The decision for checkpoints.keep_last: the lifecycle rule's expiry days, and what stays restorable."""
    k = spec.checkpoints
    return Decision(
        "checkpoint retention",
        f"keep last {k.keep_last}: expire after {days} days",
        (
            f"checkpoints.keep_last {k.keep_last} at one checkpoint every {human_seconds(interval)}: an OSS lifecycle "
            f"rule expires current objects under {k.prefix} {days} days after they are written (the days "
            f"{k.keep_last} intervals span, plus one for the daily lifecycle scan, at least {MIN_EXPIRE_DAYS}), so "
            f"at least the last {k.keep_last} stay; on this versioned bucket an expired checkpoint becomes a "
            f"noncurrent version, restorable for checkpoints.retention_days ({k.retention_days}) more days; "
            f"{k.prefix}{JOBS_SUBPREFIX} (job logs) is never expired; "
            + (
                "the rule is DISABLED while compute.paused is true, so a paused run's newest checkpoint never "
                "expires"
                if spec.compute.paused
                else "while compute.paused is true the rule is disabled, so a paused run's newest checkpoint never "
                "expires; a run that stops writing without being paused loses it after "
                f"{days} days (restorable {k.retention_days} days more)"
            )
        ),
    )


def _checkpoints_off(spec: Spec, fit: Fit, endpoint: str, decisions: list[Decision]) -> Checkpoints:
    """The checkpoints of a spec that disables them: no bucket, no interval, no size; refused for a cluster whose
    platform shares the cluster facts through the bucket."""
    k = spec.checkpoints
    if fit.nodes > 1 and platform_for(spec).has(Capability.CLUSTER_FACTS):
        # Without a bucket the cluster facts (the member list) would ride in every node's user data, which would then
        # grow with the cluster and pass the user-data limit (docs/bootstrap.md, "How the bootstrap is delivered").
        raise PlanningError([refusals.ClusterNeedsBucket(fit.nodes).problem()])
    decisions.append(Decision("checkpoints", "off", "the spec disables checkpoints"))
    return Checkpoints(
        False,
        "",
        k.prefix,
        0,
        k.retention_days,
        k.transition_ia_days,
        k.abort_multipart_days,
        endpoint,
        0,
        0.0,
        0.0,
    )


def _where_decisions(
    spec: Spec, region: Region, choice: Any, directory: str, restore_s: float, endpoint: str
) -> list[Decision]:
    """The decisions for where checkpoints go: the tier they are written to (and restored from), and the bucket."""
    k = spec.checkpoints
    tier = choice.tier
    return [
        Decision(
            "checkpoint tier",
            f"{tier.name}" + (f" {directory}, copied to OSS" if directory else ""),
            f"{choice.why}; restoring one takes {human_seconds(restore_s)} at {tier.read_gbps:,.4g} Gbit/s",
        ),
        Decision(
            "checkpoint bucket",
            bucket_name(spec),
            f"private OSS bucket in {region.id}, versioned and encrypted; noncurrent versions expire "
            f"after {k.retention_days} days; reached over the internal endpoint {endpoint}"
            + ("; the durable copy of the checkpoints on the shared file system" if directory else ""),
        ),
    ]
