"""ECS (``compute.platform: ecs``, the default): GPU instances (gn, ebmgn) that trainstack creates, places and boots.

The declaration below is data; ECS's plan parts are the shared ones in :mod:`generator.plan` (``placement`` for the
fabric, the VPC and the nodes' places), composed by :mod:`generator.platforms.ecs.parts`; its own live operation is
heal --health's action table (:mod:`generator.platforms.ecs.live`), the rest of its live side is the shared engine's.
"""

from __future__ import annotations

from generator.platforms.base import Capability, Platform

# ECS user data: "Before user data is encoded in Base64, the user data can only be up to 32 KB in size" on one page
# and 16 KB on another; trainstack keeps to the smaller (generator/render/userdata.py)
USER_DATA_MAX = 16 * 1024

PLATFORM = Platform(
    name="ecs",
    title="ECS",
    capabilities=frozenset(Capability)
    - {
        Capability.DLC_JOBS,
        Capability.EFLO_JOBS,
        Capability.HPN,
        Capability.DLC_WORKERS,
        Capability.OSS_MOUNT,
    },
    parts="generator.platforms.ecs.parts:EcsParts",
    live="generator.platforms.ecs.live",  # heal --health's action table over ECS health and events
    program_parts=(
        "network",
        "identity_ecs",
        "checkpoints",
        "storage",
        "compute_ecs",
        "facts",
        "outputs_ecs",
    ),
    template_parts={"stack_config": "stack_config_ecs.yaml"},
    user_data_max_bytes=USER_DATA_MAX,
    user_data="gzip",
    user_data_where="an ECS instance's user data (gzip-compressed, before base64)",
    pause_leaves_out="no ecs.Instance, no role attachment, and no HPC cluster or deployment set (they would hold "
    "nothing)",
)
