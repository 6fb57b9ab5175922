"""Lingjun (``compute.platform: lingjun``, eflo): bare-metal GPU nodes in an eflo cluster and node group on the HPN
RDMA network. The declaration below is data; the plan parts are in :mod:`generator.platforms.lingjun.plan`, the
rules in :mod:`generator.platforms.lingjun.rules`, composed by :mod:`generator.platforms.lingjun.parts`. The live job
commands (submit, jobs, logs, cancel, check) run over the EFLO controller's Cloud Assistant (EFLO_JOBS,
:mod:`generator.platforms.lingjun.live.eflo`), and heal --health over its node list and fault reports
(:mod:`generator.platforms.lingjun.live.eflo_cure`): the declaration's ``live``.
"""

from __future__ import annotations

from generator.platforms.base import Capability, Level, PausedItem, Platform, Unhonoured

C = Capability
NO_SPOT = Unhonoured(
    Level.WARNING,
    "Lingjun has no spot nodes (spot.enabled is refused there), so it has no effect",
    "remove it",
)
NO_SHARED = Unhonoured(
    Level.WARNING,
    "Lingjun plans have no shared file system (storage.shared is none there), so it has no effect",
    "remove it",
)

# The node group's user data: a plain bash script that writes node-init.sh (gzip, base64 in a quoted heredoc: only
# base64 characters, so nothing in it can end the heredoc) to /var/lib/trainstack and runs it. The generated program
# builds the same bytes (compute_lingjun.py.j2, from the view's template values).
USER_DATA_WRAPPER = (
    "#!/bin/bash\n# trainstack node bootstrap (Lingjun): node-init.sh, gzip-compressed and base64-encoded;\n"
    "# unpacked to /var/lib/trainstack/node-init.sh and run (docs/bootstrap.md).\nset -e\n"
    "mkdir -p /var/lib/trainstack\n"
    "base64 -d <<'NODE_INIT' | gunzip > /var/lib/trainstack/node-init.sh\n{body}NODE_INIT\n"
    "exec bash /var/lib/trainstack/node-init.sh\n"
)

PLATFORM = Platform(
    name="lingjun",
    title="Lingjun",
    capabilities=frozenset(
        {C.NODES, C.NODE_BOOTSTRAP, C.RDMA, C.HPN, C.ELASTIC, C.PAUSE, C.SSH, C.EFLO_JOBS}
    ),
    parts="generator.platforms.lingjun.parts:LingjunParts",
    live="generator.platforms.lingjun.live",  # the job commands' and heal --health's calls to the EFLO controller
    program_parts=(
        "network",
        "network_lingjun",
        "identity_lingjun",
        "checkpoints",
        "storage",
        "compute_lingjun",
        "outputs_lingjun",
    ),
    template_parts={
        "summary": "summary_lingjun.py",
        "stack_config": "stack_config_lingjun.yaml",
        "readme_row": "readme_row_lingjun.md",
    },
    unhonoured={
        # the lifecycle rule expires only objects tagged rolling, so without the tagger keep_last would keep all
        "checkpoints.milestones": Unhonoured(
            Level.ERROR,
            "the milestones are tagged by trainstack-ckpt-sync on rank 0 "
            "of an ECS cluster, and Lingjun nodes run no copy to OSS",
            "remove checkpoints.milestones and keep the milestones you want "
            "by copying them out of the prefix",
        ),
        "compute.system_disk_gib": Unhonoured(
            Level.WARNING, "eflo node groups take no system disk size", rule=True, when="any"
        ),
        "compute.data_disk_gib": Unhonoured(
            Level.ERROR, "eflo.Node data disks cannot be encrypted", rule=True, when="more than 0"
        ),
        # The HPN network is Lingjun's: eflo.Node and eflo.NodeGroup take no MTU in pulumi-alicloud 4.x (the
        # package's eflo module has no MTU argument), and the plan sets none (MTU 1500, jumbo frames off).
        "network.jumbo_frames": Unhonoured(
            Level.WARNING,
            "Lingjun's HPN network decides the nodes' MTU: eflo nodes "
            "and node groups take no MTU in pulumi-alicloud, so trainstack sets none",
            "remove network.jumbo_frames",
        ),
        "storage.shared": Unhonoured(
            Level.ERROR, "Lingjun nodes mount no CPFS or NAS", rule=True, when="cpfs or extreme-nas"
        ),
        "storage.capacity": NO_SHARED,
        "storage.storage_class": NO_SHARED,
        "storage.mount_path": NO_SHARED,
        "storage.dataset": Unhonoured(Level.ERROR, "importing a dataset needs CPFS", rule=True, when="any"),
        "spot.enabled": Unhonoured(
            Level.ERROR, "eflo.Node is billed Subscription or PayAsYouGo", rule=True, when="true"
        ),
        "spot.strategy": NO_SPOT,
        "spot.max_price_ratio": NO_SPOT,
        "spot.on_demand_base": NO_SPOT,
        "spot.protection_hours": NO_SPOT,
        "spot.interruption": NO_SPOT,
        "spot.interruptions_per_node_day": NO_SPOT,
        "spot.price_ratio": NO_SPOT,
    },
    user_data_max_bytes=16 * 1024,  # node group user data: base64 of at most 16 KB [PU-EFLO]
    user_data="wrapper",
    user_data_where="a Lingjun node group's user data (the unpacking wrapper)",
    user_data_wrapper=USER_DATA_WRAPPER,
    machine_noun="Lingjun machine type",
    default_key_pair="{name}-admin",  # the node group logs in with a key pair (compute_lingjun.py.j2 KEY_PAIR)
    pause_leaves_out="no eflo.Node and no node group; the eflo cluster, VPD and subnets stay",
    paused_items=(
        PausedItem(
            "lingjun_cluster", "Lingjun cluster and VPD", "the eflo cluster (no node), VPD and subnets"
        ),
    ),
)
