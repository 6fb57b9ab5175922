"""PAI-DLC's rules: what a PAI-DLC job cannot do, as spec errors with hints (the validate stage;
:mod:`generator.plan.check` asks the platform for them, through :mod:`generator.platforms.dlc.parts`).
"""

from __future__ import annotations

from generator.catalog import Catalog, Region
from generator.errors import Problem
from generator.platforms.dlc.plan import SPOT_STRATEGY
from generator.spec.model import Spec


def dlc_rules(spec: Spec, catalog: Catalog, region: Region | None) -> list[Problem]:
    """What a DLC job cannot do (or trainstack does not do for it), as spec errors with hints."""
    problems: list[Problem] = []
    c, n = spec.compute, spec.network
    if region is not None and not catalog.dlc_types_in_region(region.id):
        where = sorted({r.id for r in catalog.regions if catalog.dlc_types_in_region(r.id)})
        problems.append(
            Problem(
                ("compute", "platform"),
                f"the catalog knows no PAI-DLC worker type in {region.id}",
                f"regions with DLC worker types: {', '.join(where)}; or use platform: ecs",
            )
        )
    gpu = catalog.gpu(c.gpu) if c.gpu != "auto" else None
    in_region = catalog.types_in_region(region.id) if region is not None else ()
    if (
        gpu is not None
        and region is not None
        and any(t.gpu == gpu.name for t in in_region)
        and not any(t.gpu == gpu.name for t in catalog.dlc_types_in_region(region.id))
    ):  # else check.py reports the GPU
        offered = sorted({t.gpu for t in catalog.dlc_types_in_region(region.id)})
        problems.append(
            Problem(
                ("compute", "gpu"),
                f"no PAI-DLC worker type with {gpu.name} in {region.id} in the catalog (dlc_specs.csv)",
                f"DLC GPUs there: {', '.join(offered)}; or use platform: ecs",
            )
        )
    for i, name in enumerate(c.instance_types):
        if (
            catalog.instance(name) is not None
            and catalog.lingjun_type(name) is None
            and catalog.dlc_spec(name) is None
        ):
            problems.append(
                Problem(
                    ("compute", "instance_types", i),
                    f"{name} is not on PAI-DLC's public resource list in the catalog (dlc_specs.csv)",
                    "DLC worker types: " + ", ".join(d.name for d in catalog.dlc_specs),
                )
            )
    if c.image_id is not None:
        problems.append(
            Problem(
                ("compute", "image_id"),
                "a DLC job runs a container image, not an ECS or Lingjun "
                "image, and DLC boots the nodes itself",
                "remove compute.image_id; the plan names the official PAI PyTorch image for the job "
                "(plan.json dlc.image)",
            )
        )
    if c.data_disk_gib:
        problems.append(
            Problem(
                ("compute", "data_disk_gib"),
                "DLC workers take no data disk from trainstack (DLC manages the nodes)",
                "set compute.data_disk_gib: 0 and keep data on the shared file system or in OSS",
            )
        )
    if c.paused:
        problems.append(
            Problem(
                ("compute", "paused"),
                "there is nothing to pause on PAI-DLC: no node exists between "
                "jobs and DLC bills only while a job runs [DOC-DLC-BILL]",
                "set compute.paused: false and stop the job instead (`trainstack cancel`)",
            )
        )
    if c.bare_metal == "require":
        problems.append(
            Problem(
                ("compute", "bare_metal"),
                "DLC's public resources are ECS virtual-machine types in the catalog",
                "set compute.bare_metal: any, or use platform: ecs",
            )
        )
    if n.admin_cidrs:
        problems.append(
            Problem(
                ("network", "admin_cidrs"),
                "DLC workers are containers DLC manages: there is no "
                "node to SSH into, so trainstack opens no SSH port",
                "remove network.admin_cidrs; use the DLC console's terminal or `trainstack logs`",
            )
        )
    if n.rdma is True:
        problems.append(
            Problem(
                ("network", "rdma"),
                "trainstack attaches no RDMA interface to DLC workers: DLC "
                "manages their network, and its public resources document no RDMA",
                "set network.rdma: auto, or use platform: lingjun (HPN RDMA) or ecs (eRDMA)",
            )
        )
    sp = spec.spot
    if sp.enabled and sp.on_demand_base != 0:
        problems.append(
            Problem(
                ("spot", "on_demand_base"),
                "a DLC job's workers are all spot or all on demand "
                "(JobSpec.SpotSpec applies to the whole worker role [SDK-DLC])",
                "set spot.on_demand_base: 0 to run every worker on spot, or spot.enabled: false",
            )
        )
    if sp.min_nodes is not None:
        problems.append(
            Problem(
                ("spot", "min_nodes"),
                "a DLC job runs a fixed number of workers (CreateJob PodCount) "
                "and DLC restarts it whole; trainstack plans no elastic launch on DLC",
                "remove spot.min_nodes",
            )
        )
    if sp.enabled and "strategy" in sp.model_fields_set and sp.strategy != SPOT_STRATEGY:
        problems.append(
            Problem(
                ("spot", "strategy"),
                f"DLC's SpotSpec takes SpotStrategy {SPOT_STRATEGY} only (the "
                f"API reference lists no other value [API-DLC-SPOT]), not {sp.strategy}",
                f"set spot.strategy: {SPOT_STRATEGY} with spot.max_price_ratio (1.0 caps the bid "
                "at the pay-as-you-go price, as SpotAsPriceGo does on ECS)",
            )
        )
    if sp.enabled and "interruption" in sp.model_fields_set and sp.interruption == "stop":
        problems.append(
            Problem(
                ("spot", "interruption"),
                "DLC releases a reclaimed spot worker; it cannot be kept stopped",
                "remove spot.interruption",
            )
        )
    return problems
