"""The stock preflight: before ``trainstack up`` or ``heal`` creates GPU nodes, ask the ECS API whether the planned
zone has stock of the planned instance type, and stop before anything is created when it has none.

The question is ECS's DescribeAvailableResource (API version 2014-05-26,
https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeavailableresource) with
``DestinationResource=InstanceType``, the zone, the instance type, ``InstanceChargeType=PostPaid`` and the
``SpotStrategy`` of the nodes (``NoSpot`` for on-demand ones). Each ``AvailableZone`` of the answer carries a
``Status`` (``Available`` or ``SoldOut``) and a ``StatusCategory`` (``WithStock``, ``ClosedWithStock``: in stock
but no longer replenished, ``WithoutStock``), and so does each ``SupportedResource`` (the instance type). The answer
says whether there is stock, not how much: a zone "with stock" may still run out before the last of 64 nodes.

:class:`SdkStockChecker` asks with Alibaba Cloud's official Python SDK (``alibabacloud-ecs20140526``, in the optional
``trainstack[live]`` extra); tests replay recorded responses through the :class:`StockChecker` port.

Which nodes a run creates is decided from the plan and the state, not from a preview: the ranks of plan.json whose
``ecs:Instance`` is not in the stack's state. That needs no extra preview for ``up --yes``, and it also covers a
CPFS stack's first ``up``, whose first pass creates no node but whose second pass creates them all.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from generator.live.engine import StateResource
from generator.live.errors import BadTarget, EcsSdkMissing, EngineFailed, LiveError, NoStock, StackNotDeployed
from generator.live.mountaddr import INSTALL_LIVE, sdk_config
from generator.platforms.base import Capability
from generator.platforms.registry import DEFAULT_PLATFORM, platform_for

API_DOC = "https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeavailableresource"
ECS_SDK_MODULES = ("alibabacloud_ecs20140526", "alibabacloud_tea_openapi", "alibabacloud_credentials")
ECS_INSTANCE = "alicloud:ecs/instance:Instance"
SKIP_FLAG = "--skip-stock-check"

Say = Callable[[str], None]


class StockCheckFailed(LiveError):
    """DescribeAvailableResource itself failed (permissions, throttling, network): the check could not answer."""

    exit_code = EngineFailed.exit_code


class StockChecker(Protocol):
    """One call of the ECS API's DescribeAvailableResource for one instance type in one zone."""

    def check(self) -> None:
        """Raise :class:`EcsSdkMissing` when this checker cannot run (its SDK is not installed)."""

    def describe(self, region: str, zone: str, instance_type: str, spot_strategy: str) -> Mapping[str, Any]:
        """The response body as documented: ``{"RequestId", "AvailableZones": {"AvailableZone": [...]}}``."""


class SdkStockChecker:
    """:class:`StockChecker` over ``alibabacloud-ecs20140526``; the SDK picks the ECS endpoint of the region.

    Credentials come from ``alibabacloud-credentials``' default chain, like the NAS lookup
    (:func:`generator.live.mountaddr.sdk_config`). The RAM user needs ``ecs:DescribeAvailableResource``.
    """

    def __init__(self, env: Mapping[str, str] | None = None):
        self.env = os.environ if env is None else env

    def check(self) -> None:
        import importlib

        for module in ECS_SDK_MODULES:
            try:
                importlib.import_module(module)
            except ImportError:
                raise EcsSdkMissing(
                    f"the stock check before creating nodes asks Alibaba Cloud's ECS SDK ({module} is not installed),"
                    f" so nothing was deployed: {INSTALL_LIVE}, or pass {SKIP_FLAG}."
                ) from None

    @staticmethod
    def request(region: str, zone: str, instance_type: str, spot_strategy: str) -> Any:
        from alibabacloud_ecs20140526 import models as ecs_models

        return ecs_models.DescribeAvailableResourceRequest(
            region_id=region,
            zone_id=zone,
            destination_resource="InstanceType",
            instance_type=instance_type,
            instance_charge_type="PostPaid",
            spot_strategy=spot_strategy,
        )

    def client(self, region: str) -> Any:
        from alibabacloud_ecs20140526.client import Client

        return Client(sdk_config(self.env, region))

    def describe(self, region: str, zone: str, instance_type: str, spot_strategy: str) -> Mapping[str, Any]:
        response = self.client(region).describe_available_resource(
            self.request(region, zone, instance_type, spot_strategy)
        )
        return response.body.to_map()


@dataclass(frozen=True, slots=True)
class PlannedNode:
    """One GPU node of the program, as plan.json's ``compute.ranks`` lists it."""

    rank: int
    name: str
    private_ip: str
    zone: str
    spot: bool


@dataclass(frozen=True, slots=True)
class Fleet:
    """The GPU nodes the stack folder's program declares, with what a stock question needs."""

    region: str
    zones: tuple[str, ...]  # the spec's ``zones`` list, in its order
    instance_type: str
    platform: str  # its compute.platform
    spot_strategy: str  # for the spot nodes, e.g. SpotAsPriceGo
    nodes: tuple[PlannedNode, ...]  # empty when the plan is paused: the program declares no node
    paused: bool = False


def fleet_of(stack_dir: Path) -> Fleet:
    """The nodes of a rendered stack folder, from its plan.json (``compute.ranks``, ``zones``, ``spot``)."""
    try:
        data = json.loads((Path(stack_dir) / "plan.json").read_text(encoding="utf-8"))
        compute = data["compute"]
        nodes = tuple(
            PlannedNode(
                int(r["rank"]),
                str(r["name"]),
                str(r.get("private_ip") or ""),
                str(r.get("zone") or ""),
                bool(r.get("spot")),
            )
            for r in compute["ranks"]
        )
        spot = data.get("spot") or {}
        paused = bool(compute.get("paused"))
        return Fleet(
            region=str(data["region"]),
            zones=tuple(data.get("zones") or ()),
            instance_type=str(compute.get("instance_type") or ""),
            platform=str(compute.get("platform") or DEFAULT_PLATFORM),
            spot_strategy=str(spot.get("strategy") or "SpotAsPriceGo"),
            nodes=() if paused else nodes,
            paused=paused,
        )
    except (OSError, ValueError, KeyError, TypeError):
        raise BadTarget(
            f"{stack_dir}/plan.json lists no compute.ranks: re-render the folder with this trainstack."
        ) from None


def nodes_to_create(fleet: Fleet, state: Iterable[StateResource] | None) -> list[PlannedNode]:
    """The planned nodes whose ``ecs:Instance`` is not in the state (all of them when the stack has no state)."""
    present = {r.name for r in state or () if r.type == ECS_INSTANCE}
    return [n for n in fleet.nodes if n.name not in present]


def _available(status: str, category: str) -> bool:
    return status.lower() == "available" and category != "WithoutStock"


def zone_stock(body: Mapping[str, Any], zone: str, instance_type: str) -> tuple[bool, str]:
    """(in stock, what the answer said) for ``instance_type`` in ``zone`` of a DescribeAvailableResource body.

    Both the zone and the instance type's ``SupportedResource`` must be ``Available`` and not ``WithoutStock``; a
    type the zone does not list is not offered there.
    """
    zones = (body.get("AvailableZones") or {}).get("AvailableZone") or ()
    for z in zones:
        if not isinstance(z, Mapping) or z.get("ZoneId") != zone:
            continue
        zone_status, zone_category = str(z.get("Status") or ""), str(z.get("StatusCategory") or "")
        if not _available(zone_status, zone_category):
            return False, f"{zone_status or 'no status'}/{zone_category or '-'}"
        for resource in (z.get("AvailableResources") or {}).get("AvailableResource") or ():
            for s in (resource.get("SupportedResources") or {}).get("SupportedResource") or ():
                if s.get("Value") == instance_type:
                    status, category = str(s.get("Status") or ""), str(s.get("StatusCategory") or "")
                    return _available(status, category), f"{status or 'no status'}/{category or '-'}"
        return False, "not offered"
    return False, "not offered"


@dataclass(frozen=True, slots=True)
class StockVerdict:
    zone: str
    spot: bool
    nodes: int  # how many nodes of this kind the run creates in the zone
    ok: bool
    said: str  # e.g. "Available/WithStock", "SoldOut/WithoutStock", "not offered"

    @property
    def kind(self) -> str:
        return "spot" if self.spot else "on-demand"


def _ask(checker: StockChecker, fleet: Fleet, zone: str, spot: bool) -> tuple[bool, str]:
    strategy = fleet.spot_strategy if spot else "NoSpot"
    try:
        body = checker.describe(fleet.region, zone, fleet.instance_type, strategy)
    except LiveError:
        raise
    except Exception as e:  # noqa: BLE001 the SDK's exceptions (Tea, credentials, HTTP) become one sentence
        raise StockCheckFailed(
            f"the stock check (ECS DescribeAvailableResource for {fleet.instance_type} in {zone}) "
            f"failed: {type(e).__name__}: {e}; grant ecs:DescribeAvailableResource, or pass "
            f"{SKIP_FLAG}."
        ) from None
    return zone_stock(body, zone, fleet.instance_type)


def stock_verdicts(checker: StockChecker, fleet: Fleet, nodes: Iterable[PlannedNode]) -> list[StockVerdict]:
    """One DescribeAvailableResource per (zone, spot or not) among ``nodes``."""
    groups: dict[tuple[str, bool], int] = {}
    for n in nodes:
        groups[(n.zone, n.spot)] = groups.get((n.zone, n.spot), 0) + 1
    out = []
    for (zone, spot), count in sorted(groups.items()):
        ok, said = _ask(checker, fleet, zone, spot)
        out.append(StockVerdict(zone, spot, count, ok, said))
    return out


def zones_with_stock(checker: StockChecker, fleet: Fleet, spot: bool, besides: str) -> list[str]:
    """The spec's other zones that have stock of the instance type (asked one by one, in the spec's order)."""
    return [z for z in fleet.zones if z != besides and _ask(checker, fleet, z, spot)[0]]


def short_stock(checker: StockChecker, fleet: Fleet, nodes: list[PlannedNode], say: Say) -> NoStock | None:
    """The :class:`NoStock` error for ``nodes`` (not raised), or None when every zone they need has stock."""
    if not nodes:
        return None
    for v in stock_verdicts(checker, fleet, nodes):
        if v.ok:
            note = " (in stock, but no longer replenished)" if v.said.endswith("ClosedWithStock") else ""
            say(f"stock: {fleet.instance_type} ({v.kind}) in {v.zone}: {v.said}{note}")
            continue
        others = zones_with_stock(checker, fleet, v.spot, v.zone)
        where = (
            f"zones of the spec with stock: {', '.join(others)} (put one first in the spec's `zones`)"
            if others
            else "no other zone of the spec's `zones` has stock either"
        )
        return NoStock(
            f"{v.zone} has no {v.kind} stock of {fleet.instance_type} ({v.said}) for the {v.nodes} "
            f"node{'s' if v.nodes != 1 else ''} this run would create, so nothing was created; {where}; "
            f"retry later, or pass {SKIP_FLAG} to try anyway."
        )
    return None


def stock_preflight(engine: Any, target: Any, checker: StockChecker, say: Say) -> list[PlannedNode]:
    """Before ``up``: ask for stock of the nodes this run creates; raise :class:`NoStock` (exit 30) when short.

    Returns the nodes it checked (none when every planned node is already in the state, or for Lingjun, whose
    machine types DescribeAvailableResource does not cover).
    """
    fleet = fleet_of(target.stack_dir)
    if not platform_for(fleet.platform).has(Capability.ECS_INSTANCES):
        say(f"stock: not checked: Lingjun nodes are not ECS instance types ({API_DOC} covers ECS only)")
        return []
    try:
        state = engine.resources(target)
    except StackNotDeployed:
        state = None
    nodes = nodes_to_create(fleet, state)
    if not nodes:
        return []
    checker.check()  # the SDK is needed only when nodes are created; still before any change to the cloud
    say(
        f"stock: {len(nodes)} node{'s' if len(nodes) != 1 else ''} to create; asking ECS DescribeAvailableResource "
        f"for {fleet.instance_type} in {', '.join(sorted({n.zone for n in nodes}))}"
    )
    error = short_stock(checker, fleet, nodes, say)
    if error is not None:
        raise error
    return nodes
