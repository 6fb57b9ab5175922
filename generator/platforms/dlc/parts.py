"""PAI-DLC's behaviour for the planner (:class:`~generator.platforms.contract.PlanParts`): its rules, the job's
network and workers (no RDMA, ERIs, deployment sets or fixed addresses: DLC manages the nodes), its SpotSpec and
``Plan.dlc`` (:mod:`generator.platforms.dlc.plan`).
"""

from __future__ import annotations

from typing import Any

from generator.catalog import Catalog, GpuModel, InstanceType, Region
from generator.errors import Problem
from generator.plan import type_checks
from generator.plan.eligible import eligible_types
from generator.plan.fit import Fit, Scored
from generator.plan.model import Checkpoints, Decision, DlcSpot, Network, Node, Spot, Storage, Weights
from generator.plan.refusal import Refusal
from generator.plan.rejections import NotOnDlc, Rejection
from generator.plan.run_hours import instance_gbps
from generator.plan.warns import PlanWarning
from generator.platforms.contract import Placement
from generator.platforms.dlc.plan import (
    dlc_fabric,
    dlc_network,
    dlc_spot,
    dlc_workers,
    dlc_zone_decision,
    plan_dlc,
)
from generator.platforms.dlc.rules import dlc_rules
from generator.platforms.dlc.view import DlcView
from generator.platforms.dlc.weights_plan import plan_dlc_weights
from generator.spec.model import Spec
from generator.spec.weights import WeightsSource


def dlc_offered(catalog: Catalog, region: Region) -> set[str]:
    """The ECS types of PAI-DLC's public resource list in the region (dlc_specs.csv): the workers' types."""
    return {t.name for t in catalog.dlc_types_in_region(region.id)}


class DlcParts(DlcView):
    def rules(self, spec: Spec, catalog: Catalog, region: Region | None) -> list[Problem]:
        return dlc_rules(spec, catalog, region)

    def gpu_refusals(self, catalog: Catalog, gpu: GpuModel, region: Region) -> list[Refusal]:
        return type_checks.gpu_refusals(catalog, gpu, region)  # the workers are ECS types

    def type_refusal(self, spec: Spec, catalog: Catalog, index: int, name: str) -> Refusal | None:
        return type_checks.type_refusal(spec, catalog, index, name)

    def eligible(
        self, spec: Spec, catalog: Catalog, region: Region
    ) -> tuple[list[InstanceType], dict[str, Rejection]]:
        return eligible_types(spec, catalog, region, dlc_offered(catalog, region), NotOnDlc())

    def internode_gbps(self, catalog: Catalog, t: InstanceType, rdma: bool) -> float:
        return instance_gbps(t, rdma)

    def zone_decision(self, spec: Spec, region: Region, zone: str) -> Decision | None:
        return dlc_zone_decision(spec, region, zone)

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
        rdma, eri = dlc_fabric(spec, fit, decisions)
        network = dlc_network(spec, zone, fit, decisions)
        return Placement(zone, rdma, eri, network, dlc_workers(spec, zone, fit))

    def spot(
        self,
        spec: Spec,
        fit: Fit,
        ranks: tuple[Node, ...],
        decisions: list[Decision],
        warnings: list[PlanWarning],
    ) -> tuple[Spot, DlcSpot | None]:
        return dlc_spot(spec, fit, ranks, decisions, warnings)

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
        return plan_dlc_weights(spec, region, storage, network, nodes, parameters, src, decisions, warnings)

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
        return {
            "dlc": plan_dlc(
                spec, catalog, region, best, storage, checkpoints, dlc_spot, decisions, warnings, weights
            )
        }
