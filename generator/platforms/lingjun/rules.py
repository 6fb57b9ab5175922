"""Lingjun's rules: what a Lingjun (eflo) cluster cannot do, or cannot do with pulumi-alicloud 4.0.0, as spec
errors with hints (the validate stage; :mod:`generator.plan.check` asks the platform for them).
"""

from __future__ import annotations

from generator.catalog import Catalog, Region
from generator.errors import Problem
from generator.spec.model import Spec


def lingjun_rules(spec: Spec, catalog: Catalog, region: Region | None) -> list[Problem]:
    """What a Lingjun (eflo) cluster cannot do, or cannot do with pulumi-alicloud 4.0.0, as spec errors."""
    problems: list[Problem] = []
    c, s = spec.compute, spec.storage
    lingjun_regions = ", ".join(r.id for r in catalog.regions if r.lingjun) or "none"
    if region is not None and not region.lingjun:
        problems.append(
            Problem(
                ("compute", "platform"),
                f"Lingjun is not offered in {region.id} per the catalog",
                f"Lingjun regions: {lingjun_regions}; or use platform: ecs",
            )
        )
    elif region is not None and not catalog.lingjun_types_in_region(region.id):
        problems.append(
            Problem(
                ("compute", "platform"),
                f"the catalog knows no Lingjun machine type in {region.id}",
                "Lingjun regions with machine types: "
                + ", ".join(sorted({r for t in catalog.lingjun_types for r in t.regions})),
            )
        )
    elif region is not None and spec.zones:
        known = {z: h for t in catalog.lingjun_types_in_region(region.id) for z, h in t.hpn_zones}
        if not any(z in known for z in spec.zones):
            problems.append(
                Problem(
                    ("zones",),
                    "no zone listed has a known Lingjun HPN zone in the catalog",
                    "zones with a known HPN zone: "
                    + ", ".join(f"{z} (HPN {h})" for z, h in sorted(known.items()))
                    + "; or remove zones",
                )
            )
    if c.image_id is None:
        problems.append(
            Problem(
                ("compute", "platform"),
                "platform lingjun needs compute.image_id: Lingjun node groups "
                "boot a Lingjun image (an id like i190982651690986913088), not an ECS image, and the "
                "provider has no data source to look one up",
                "set compute.image_id to an image listed in the PAI Lingjun console (node groups); "
                "the stack config trainstack:imageId overrides it at deploy time",
            )
        )
    if c.data_disk_gib:
        problems.append(
            Problem(
                ("compute", "data_disk_gib"),
                "Lingjun data disks cannot be encrypted with "
                "pulumi-alicloud 4.0.0 (eflo.Node data_disks take only category, performance level "
                "and size), and trainstack keeps every disk encrypted",
                "set compute.data_disk_gib: 0 and keep data in OSS",
            )
        )
    if c.bare_metal == "avoid":
        problems.append(
            Problem(
                ("compute", "bare_metal"),
                "Lingjun nodes are bare-metal servers",
                "set compute.bare_metal: any, or use platform: ecs",
            )
        )
    if s.shared == "cpfs":
        problems.append(
            Problem(
                ("storage", "shared"),
                "Lingjun nodes cannot mount CPFS general-purpose file systems "
                "(they serve ECS), and CPFS for Lingjun (bmcpfs) cannot be created with pulumi-alicloud "
                "(nas.FileSystem has no bmcpfs type)",
                "set storage.shared: none (or auto) and attach CPFS for Lingjun through PAI, or use "
                "platform: ecs",
            )
        )
    elif s.shared == "extreme-nas":
        problems.append(
            Problem(
                ("storage", "shared"),
                "trainstack renders no shared file system for Lingjun: an "
                "Extreme NAS mount target is a VPC endpoint and mounting it from Lingjun nodes is "
                "unverified",
                "set storage.shared: none (or auto); checkpoints still go to OSS",
            )
        )
    if s.dataset is not None and s.shared in (
        "auto",
        "cpfs",
    ):  # none/extreme-nas: the general rule reports it
        problems.append(
            Problem(
                ("storage", "dataset"),
                "importing a dataset from OSS needs CPFS (a fileset and a data "
                "flow), which Lingjun nodes cannot use here",
                "remove storage.dataset and read the data from OSS, or import it into CPFS for "
                "Lingjun through PAI",
            )
        )
    if spec.spot.enabled:
        problems.append(
            Problem(
                ("spot", "enabled"),
                "Lingjun has no spot (preemptible) nodes: eflo.Node is billed Subscription or PayAsYouGo",
                "set spot.enabled: false, or use platform: ecs for spot instances",
            )
        )
    return problems
