"""How node-init.sh reaches a node as user data, and the size check that refuses user data over the documented limit.

ECS: the program fills in a node's rank, name and spot flag, gzip-compresses the script (level 9, mtime 0, so the
same script gives the same bytes) and base64-encodes it. Linux user data on ECS is run by cloud-init, which takes
gzip-compressed content and runs what it unpacks; the limit applies to the bytes before base64, so here to the
compressed bytes (docs/bootstrap.md, "How the bootstrap is delivered"). Lingjun: the node group takes a plain
script (no documented cloud-init; see :data:`generator.platforms.lingjun.plan.LINGJUN_USER_DATA_MAX`), so node-init.sh goes
inside a short bash wrapper that unpacks it (base64, gzip) and runs it: :func:`wrapped_user_data`, around the
platform's ``Platform.user_data_wrapper`` (``generator/platforms/lingjun/__init__.py``).

:func:`check` runs at render time, on the largest user data any node of the plan can get; the generated program
checks again, node by node, with the same limit.
"""

from __future__ import annotations

import base64
import gzip
from typing import Any

from generator.errors import TrainstackError
from generator.plan.model import Plan
from generator.platforms.registry import platform_for

# The limit is the platform's (Platform.user_data_max_bytes): ECS's pages say 32 KB before base64
# (https://www.alibabacloud.com/help/en/ecs/user-guide/overview-of-ecs-instance-user-data, last updated 2024-06-07)
# and 16 KB (https://www.alibabacloud.com/help/doc-detail/49121.htm); trainstack keeps to the smaller, so user data
# that passes here passes under either reading (generator/platforms/ecs/__init__.py).
GZIP_LEVEL = 9  # fixed: the same script must give the same user data bytes on every run
MAX_ADDRESS = "x" * 253  # the longest DNS name (RFC 1035): the worst case of the shared file system's address

PLACEHOLDERS = ("__TRAINSTACK_NODE_RANK__", "__TRAINSTACK_NODE_NAME__", "__TRAINSTACK_NODE_SPOT__")


class UserDataTooLarge(TrainstackError):
    """The rendered bootstrap would not fit a node's user data; nothing was written."""


def ecs_user_data_bytes(script: str) -> bytes:
    """The bytes an ECS node's user data carries before base64: the script, gzip-compressed reproducibly."""
    return gzip.compress(script.encode(), compresslevel=GZIP_LEVEL, mtime=0)


def ecs_user_data(script: str) -> str:
    """What the program passes as ``user_data`` (base64 of :func:`ecs_user_data_bytes`)."""
    return base64.b64encode(ecs_user_data_bytes(script)).decode()


def wrapped_user_data(subject: Any, script: str) -> str:
    """The plain user data of a node group of ``subject``'s platform (a plan, a spec or a ``compute.platform``
    value; ``Platform.user_data`` "wrapper", Lingjun): its ``user_data_wrapper`` around the compressed script."""
    body = base64.encodebytes(ecs_user_data_bytes(script)).decode()
    return platform_for(subject).user_data_wrapper.format(body=body)


def wrapped_script(subject: Any, user_data: str) -> str:
    """node-init.sh back from a node group's wrapped user data (the inverse of :func:`wrapped_user_data`)."""
    head, tail = platform_for(subject).user_data_wrapper.split("{body}")
    if not (user_data.startswith(head) and user_data.endswith(tail)):
        raise ValueError("not the platform's wrapped user data")
    return gzip.decompress(base64.b64decode(user_data[len(head) : len(user_data) - len(tail)])).decode()


def largest_ecs_script(plan: Plan, node_init: str) -> str:
    """node-init.sh as the node with the longest rank and name gets it (spot flag ``false``, the longer word), with
    the longest possible shared file system address where the script carries the cluster facts itself."""
    ranks = plan.compute.ranks
    rank = str(max((r.rank for r in ranks), default=0))
    name = max((r.name for r in ranks), key=len, default=plan.name)
    script = (
        node_init.replace(PLACEHOLDERS[0], rank)
        .replace(PLACEHOLDERS[1], name)
        .replace(PLACEHOLDERS[2], "false")
    )
    if not plan.checkpoints.facts_key:
        script = script.replace('"address": ""', f'"address": "{MAX_ADDRESS}"', 1)
    return script


def limit(plan: Plan) -> int:
    """The documented user data limit of a node of ``plan``'s platform, in bytes before base64."""
    return platform_for(plan).user_data_max_bytes


def user_data_size(plan: Plan, node_init: str) -> tuple[int, int]:
    """(bytes before base64 of the largest user data a node of ``plan`` gets, the platform's limit), in the
    platform's form of user data (``Platform.user_data``)."""
    if platform_for(plan).user_data == "wrapper":
        return len(wrapped_user_data(plan, node_init).encode()), limit(plan)
    return len(ecs_user_data_bytes(largest_ecs_script(plan, node_init))), limit(plan)


def check(plan: Plan, node_init: str) -> None:
    """Refuse a bootstrap whose user data would pass the platform's documented limit."""
    size, most = user_data_size(plan, node_init)
    if size > most:
        where = platform_for(plan).user_data_where
        raise UserDataTooLarge(
            f"{plan.name}: node-init.sh makes {size} bytes of {where}, over the {most}-byte limit "
            '(docs/bootstrap.md, "How the bootstrap is delivered"); shorten the bootstrap'
        )


__all__ = [
    "GZIP_LEVEL",
    "UserDataTooLarge",
    "check",
    "ecs_user_data",
    "ecs_user_data_bytes",
    "largest_ecs_script",
    "limit",
    "user_data_size",
    "wrapped_script",
    "wrapped_user_data",
]
