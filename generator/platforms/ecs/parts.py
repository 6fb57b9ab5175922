"""ECS's behaviour for the planner (:class:`~generator.platforms.contract.PlanParts`): the fabric, the VPC and
the nodes' places of :mod:`generator.plan.placement`, the spot plan of :mod:`generator.plan.spot`. ECS has no rules
beyond the shared checks and no part of its own in the Plan.
"""

from __future__ import annotations

from typing import Any

from generator.catalog import Catalog, GpuModel, InstanceType, Region
from generator.errors import Problem
from generator.plan import type_checks
from generator.plan.eligible import eligible_types
from generator.plan.fit import Fit, Scored
from generator.plan.model import Checkpoints, Decision, DlcSpot, Network, Node, Spot, Storage, Weights
from generator.plan.placement import fabric, plan_network, plan_nodes, zone_decision
from generator.plan.refusal import Refusal
from generator.plan.rejections import Rejection
from generator.plan.run_hours import instance_gbps
from generator.plan.spot import plan_spot
from generator.plan.warns import PlanWarning
from generator.plan.weights import fetched_weights
from generator.platforms.contract import Placement
from generator.platforms.ecs.view import EcsView
from generator.spec.model import Spec
from generator.spec.weights import WeightsSource


class EcsParts(EcsView):
    def rules(self, spec: Spec, catalog: Catalog, region: Region | None) -> list[Problem]:
        return []

    def gpu_refusals(self, catalog: Catalog, gpu: GpuModel, region: Region) -> list[Refusal]:
        return type_checks.gpu_refusals(catalog, gpu, region)

    def type_refusal(self, spec: Spec, catalog: Catalog, index: int, name: str) -> Refusal | None:
        return type_checks.type_refusal(spec, catalog, index, name)

    def eligible(
        self, spec: Spec, catalog: Catalog, region: Region
    ) -> tuple[list[InstanceType], dict[str, Rejection]]:
        return eligible_types(spec, catalog, region)

    def internode_gbps(self, catalog: Catalog, t: InstanceType, rdma: bool) -> float:
        return instance_gbps(t, rdma)

    def zone_decision(self, spec: Spec, region: Region, zone: str) -> Decision | None:
        return zone_decision(spec, region, zone)

    def place(
        self,
        spec: Spec,
        catalog: Catalog,
        region: Region,
        zone: str,
        fit: Fit,
        decisions: list[Decision],
        warnings: list[PlanWarning],
    ) -> Placement:
        rdma, eri = fabric(spec, fit, decisions, warnings)
        network = plan_network(spec, zone, fit, rdma, eri, decisions)
        ranks, dsets = plan_nodes(spec, zone, fit, network, decisions)
        return Placement(zone, rdma, eri, network, ranks, dsets)

    def spot(
        self,
        spec: Spec,
        fit: Fit,
        ranks: tuple[Node, ...],
        decisions: list[Decision],
        warnings: list[PlanWarning],
    ) -> tuple[Spot, DlcSpot | None]:
        return plan_spot(spec, fit, ranks, decisions, warnings), None

    def weights(
        self,
        spec: Spec,
        region: Region,
        storage: Storage,
        network: Network,
        nodes: int,
        parameters: int,
        src: WeightsSource,
        decisions: list[Decision],
        warnings: list[PlanWarning],
    ) -> Weights:
        return fetched_weights(spec, region, storage, network, nodes, parameters, src, decisions, warnings)

    def part(
        self,
        spec: Spec,
        catalog: Catalog,
        region: Region,
        placement: Placement,
        best: Scored,
        storage: Storage,
        checkpoints: Checkpoints,
        dlc_spot: DlcSpot | None,
        weights: Weights | None,
        decisions: list[Decision],
        warnings: list[PlanWarning],
    ) -> dict[str, Any]:
        return {}
