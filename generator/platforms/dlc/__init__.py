"""PAI-DLC (``compute.platform: pai-dlc``): a Deep Learning Containers job on workers DLC manages; trainstack sizes
it and builds its surroundings (workspace, VPC, storage, checkpoint bucket, role). The declaration below is data;
the plan parts and rules are in :mod:`generator.platforms.dlc.plan`, base weights in
:mod:`generator.platforms.dlc.weights`, composed by :mod:`generator.platforms.dlc.parts`.
"""

from __future__ import annotations

from generator.platforms.base import Capability, Level, Platform, PriceNote, Unhonoured

C = Capability


def rule(when: str) -> Unhonoured:
    """A field a PAI-DLC rule refuses for the values ``when`` names (generator/platforms/dlc/rules.py dlc_rules)."""
    return Unhonoured(Level.ERROR, "refused by a PAI-DLC rule", rule=True, when=when)


PLATFORM = Platform(
    name="pai-dlc",
    title="PAI-DLC",
    capabilities=frozenset(
        {C.ZONE_CHOICE, C.SPOT, C.SHARED_FILE_SYSTEM, C.DLC_JOBS, C.DLC_WORKERS, C.OSS_MOUNT}
    ),
    parts="generator.platforms.dlc.parts:DlcParts",
    live="generator.platforms.dlc.live",  # submit, jobs, logs and cancel over the PAI-DLC API
    program_parts=("network", "identity_dlc", "checkpoints", "storage", "compute_dlc", "outputs_dlc"),
    template_parts={
        "summary": "summary_dlc.py",
        "stack_config": "stack_config_dlc.yaml",
        "readme_row": "readme_row_dlc.md",
        "readme_deploy": "readme_deploy_dlc.md",
    },
    # DLC bills public-resource workers per minute at the price its Create Job page shows [DOC-DLC-BILL]
    worker_price=PriceNote(
        "dlc_worker",
        "DOC-DLC-BILL",
        "PAI-DLC worker price: ESTIMATE equal to the ECS price of "
        "{type} above (DLC bills workers per minute at the console's unit price, which may differ; "
        "catalog date 2026-11-30) [DOC-DLC-BILL]; the workspace and datasets are free, and nothing "
        "is billed between jobs except storage and the NAT gateway",
    ),
    unhonoured={
        # the lifecycle rule expires only objects tagged rolling, so without the tagger keep_last would keep all
        "checkpoints.milestones": Unhonoured(
            Level.ERROR,
            "the milestones are tagged by trainstack-ckpt-sync on rank 0 "
            "of an ECS cluster, and DLC workers run no trainstack process",
            "remove checkpoints.milestones and keep the milestones you want "
            "by copying them out of the prefix",
        ),
        "compute.image_id": rule("any"),
        "compute.data_disk_gib": rule("more than 0"),
        "compute.paused": rule("true"),
        # DLC manages the workers: CreateJob's worker spec (generator/platforms/dlc/live/request.py) carries no disk size,
        # no key pair and no MTU [SDK-DLC]
        "compute.system_disk_gib": Unhonoured(
            Level.WARNING,
            "DLC manages the workers' disks: the job's worker spec takes no system disk size",
            "remove compute.system_disk_gib",
        ),
        "compute.admin_key_pair": Unhonoured(
            Level.ERROR,
            "DLC workers are containers DLC manages: there is no node to log in to with a key pair",
            "remove compute.admin_key_pair; use the DLC console's terminal or `trainstack logs`",
        ),
        "network.admin_cidrs": rule("any"),
        "network.rdma": rule("true"),
        "network.jumbo_frames": Unhonoured(
            Level.WARNING,
            "DLC manages the workers' network and its MTU: trainstack sets none on PAI-DLC",
            "remove network.jumbo_frames",
        ),
        "spot.on_demand_base": rule("more than 0, with spot"),
        "spot.min_nodes": rule("any"),
        "spot.strategy": rule("SpotAsPriceGo, with spot"),
        "spot.interruption": rule("stop, with spot"),
        "spot.protection_hours": Unhonoured(
            Level.WARNING,
            "the job's SpotSpec takes a strategy and a price limit, no protection period [API-DLC-SPOT]",
            "remove spot.protection_hours",
        ),
    },
)
