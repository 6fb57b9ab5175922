"""Lingjun's behaviour for the planner (:class:`~generator.platforms.contract.PlanParts`): its rules
(:mod:`generator.platforms.lingjun.rules`), the zone from the machine type's HPN zone, the HPN fabric, the VPD and
VPC split, the ranks and ``Plan.lingjun`` (:mod:`generator.platforms.lingjun.plan`). Lingjun has no spot nodes: the
spot plan is the shared one, which a Lingjun spec (spot.enabled refused) leaves off.
"""

from __future__ import annotations

from typing import Any

from generator.catalog import Catalog, GpuModel, InstanceType, Region
from generator.errors import Problem
from generator.plan.fit import Fit, Scored
from generator.plan.model import Checkpoints, Decision, DlcSpot, Network, Node, Spot, Storage, Weights
from generator.plan.refusal import Refusal
from generator.plan.rejections import Rejection
from generator.plan.spot import plan_spot
from generator.plan.warns import PlanWarning
from generator.plan.weights import fetched_weights
from generator.platforms.contract import Placement
from generator.platforms.lingjun.eligible import eligible_lingjun
from generator.platforms.lingjun.plan import (
    hpn_gbps,
    lingjun_fabric,
    lingjun_network,
    lingjun_nodes,
    lingjun_place,
    plan_lingjun,
)
from generator.platforms.lingjun.rules import gpu_refusals, lingjun_rules, type_refusal
from generator.platforms.lingjun.view import LingjunView
from generator.spec.model import Spec
from generator.spec.weights import WeightsSource


class LingjunParts(LingjunView):
    def rules(self, spec: Spec, catalog: Catalog, region: Region | None) -> list[Problem]:
        return lingjun_rules(spec, catalog, region)

    def gpu_refusals(self, catalog: Catalog, gpu: GpuModel, region: Region) -> list[Refusal]:
        return gpu_refusals(catalog, gpu, region)

    def type_refusal(self, spec: Spec, catalog: Catalog, index: int, name: str) -> Refusal | None:
        return type_refusal(catalog, index, name)

    def eligible(
        self, spec: Spec, catalog: Catalog, region: Region
    ) -> tuple[list[InstanceType], dict[str, Rejection]]:
        return eligible_lingjun(spec, catalog, region)

    def internode_gbps(self, catalog: Catalog, t: InstanceType, rdma: bool) -> float:
        return hpn_gbps(catalog, t)

    def zone_decision(self, spec: Spec, region: Region, zone: str) -> Decision | None:
        return None  # the zone follows from the machine type's HPN zone (place)

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
        lj = catalog.lingjun_type(fit.itype.name)
        assert lj is not None, "the layout offers only Lingjun machine types on Lingjun"
        zone, hpn_zone = lingjun_place(spec, lj, decisions)
        rdma, eri = lingjun_fabric(spec, lj, decisions, warnings)
        network, vpd_cidr, subnets = lingjun_network(spec, zone, fit, lj, decisions)
        ranks = lingjun_nodes(spec, zone, fit, decisions)
        return Placement(zone, rdma, eri, network, ranks, (), lj, hpn_zone, vpd_cidr, subnets)

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
        assert placement.machine is not None
        return {
            "lingjun": plan_lingjun(
                spec,
                placement.machine,
                placement.zone,
                placement.hpn_zone,
                placement.vpd_cidr,
                placement.subnets,
                best,
                checkpoints,
                decisions,
                warnings,
            )
        }
