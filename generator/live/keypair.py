"""The key pair preflight: before ``trainstack up`` creates nodes that name an admin key pair
(``compute.admin_key_pair``, on Lingjun by default ``NAME-admin``), ask the ECS API whether the region has it, and
stop before anything is created when it does not (ECS would refuse every instance, after the VPC, the NAT gateway
and the protected file system were created).

The question is ECS's DescribeKeyPairs (API version 2014-05-26,
https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describekeypairs) with the region
and ``KeyPairName``; the answer lists matching key pairs under ``KeyPairs.KeyPair`` (``KeyPairName``,
``KeyPairFingerPrint``). A name the region does not have gives an empty list. Nodes without a key pair (the ECS
default) need no question: they are reached through Cloud Assistant.

:class:`SdkKeyPairChecker` asks with ``alibabacloud-ecs20140526`` (the ``trainstack[live]`` extra), with the same
credentials as the stock check; tests replay recorded responses through the :class:`KeyPairChecker` port.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from generator.live.errors import EXIT_NO_STOCK, BadTarget, LiveError, StackNotDeployed
from generator.live.mountaddr import sdk_config
from generator.live.stock import SdkStockChecker, fleet_of, nodes_to_create
from generator.platforms.base import Capability
from generator.platforms.registry import platform_for

SKIP_FLAG = "--skip-key-pair-check"  # `up`'s flag that skips this check (the stock check has its own)
API_DOC = "https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describekeypairs"

Say = Callable[[str], None]


class NoKeyPair(LiveError):
    """The key pair the nodes name does not exist in the region; nothing was created."""

    exit_code = (
        EXIT_NO_STOCK  # the same class of answer as no stock: the cloud cannot create the nodes as planned
    )


class KeyPairCheckFailed(LiveError):
    """DescribeKeyPairs itself failed (permissions, throttling, network): the check could not answer."""


class KeyPairChecker(Protocol):
    """One call of the ECS API's DescribeKeyPairs for one key pair name in one region."""

    def check(self) -> None:
        """Raise :class:`generator.live.errors.EcsSdkMissing` when this checker cannot run."""

    def describe(self, region: str, name: str) -> Mapping[str, Any]:
        """The response body as documented: ``{"RequestId", "TotalCount", "KeyPairs": {"KeyPair": [...]}}``."""


class SdkKeyPairChecker:
    """:class:`KeyPairChecker` over ``alibabacloud-ecs20140526``. The RAM user needs ``ecs:DescribeKeyPairs``."""

    def __init__(self, env: Mapping[str, str] | None = None):
        self.env = os.environ if env is None else env

    def check(self) -> None:
        SdkStockChecker(self.env).check()  # the same SDK modules

    def describe(self, region: str, name: str) -> Mapping[str, Any]:
        from alibabacloud_ecs20140526 import models as ecs_models
        from alibabacloud_ecs20140526.client import Client

        request = ecs_models.DescribeKeyPairsRequest(region_id=region, key_pair_name=name)
        return Client(sdk_config(self.env, region)).describe_key_pairs(request).body.to_map()


def planned_key_pair(stack_dir: Path) -> str | None:
    """The key pair the stack folder's nodes name (plan.json ``compute.key_pair``), or None for none."""
    try:
        data = json.loads((Path(stack_dir) / "plan.json").read_text(encoding="utf-8"))
        value = data["compute"].get("key_pair")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise BadTarget(
            f"{stack_dir}/plan.json has no compute section: re-render the folder with this trainstack."
        ) from None
    return str(value) if value else None


def has_key_pair(body: Mapping[str, Any], name: str) -> bool:
    """Whether a DescribeKeyPairs body lists the key pair ``name`` (the API also matches by pattern)."""
    pairs = (body.get("KeyPairs") or {}).get("KeyPair") or ()
    return any(isinstance(p, Mapping) and p.get("KeyPairName") == name for p in pairs)


def key_pair_preflight(engine: Any, target: Any, checker: KeyPairChecker, say: Say) -> str | None:
    """Before ``up``: when the nodes this run creates name a key pair, check that the region has it; raise
    :class:`NoKeyPair` (exit 30) when it does not. Returns the name checked, or None when nothing was asked."""
    name = planned_key_pair(target.stack_dir)
    fleet = fleet_of(target.stack_dir)
    if name is None:
        say("key pair: none (nodes are reached through Cloud Assistant)")
        return None
    try:
        state = engine.resources(target)
    except StackNotDeployed:
        state = None
    if platform_for(fleet.platform).has(Capability.ECS_INSTANCES) and not nodes_to_create(fleet, state):
        return None
    checker.check()
    try:
        body = checker.describe(fleet.region, name)
    except LiveError:
        raise
    except Exception as e:  # noqa: BLE001 the SDK's exceptions become one sentence
        raise KeyPairCheckFailed(
            f"the key pair check (ECS DescribeKeyPairs for {name} in {fleet.region}) failed: "
            f"{type(e).__name__}: {e}; grant ecs:DescribeKeyPairs, or pass {SKIP_FLAG}."
        ) from None
    if not has_key_pair(body, name):
        raise NoKeyPair(
            f"the nodes name the key pair {name} (compute.admin_key_pair), which {fleet.region} does not "
            f"have, so nothing was created: create or import it (ECS console, Key Pairs, or "
            f"`aliyun ecs ImportKeyPair`), remove compute.admin_key_pair to use Cloud Assistant only, "
            f"or pass {SKIP_FLAG} to try anyway."
        )
    say(f"key pair: {name} exists in {fleet.region}")
    return name


__all__ = [
    "API_DOC",
    "SKIP_FLAG",
    "KeyPairCheckFailed",
    "KeyPairChecker",
    "NoKeyPair",
    "SdkKeyPairChecker",
    "has_key_pair",
    "key_pair_preflight",
    "planned_key_pair",
]
