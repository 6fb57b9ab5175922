"""The stack outputs a PAI-DLC job reads: ``plan.dlc.outputs`` carries them (key -> output name), the program's
outputs part (``templates/stack/parts/outputs_dlc.py.j2``) exports them under these names, and ``trainstack
submit`` looks each up by its key, never by a literal name."""

from __future__ import annotations

DLC_OUTPUTS = (
    ("workspace_id", "pai_workspace_id"),
    ("vpc_id", "vpc_id"),
    ("vswitch_id", "vswitch_id"),
    ("security_group_id", "security_group_id"),
    ("role_arn", "job_role_arn"),
    ("checkpoint_bucket", "checkpoint_bucket"),
    ("checkpoint_url", "checkpoint_url"),  # oss://BUCKET/PREFIX
)
