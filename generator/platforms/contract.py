"""What the planner and the checks ask of a platform's behaviour (:class:`PlanParts`), and what its placement step
hands back (:class:`Placement`). Each platform folder implements it in its ``parts`` module; the planner
(:func:`generator.plan.planner.make_plan`) composes the shared parts around it in a fixed order, so the order of the
decisions and warnings in plan.json does not depend on the platform's code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from generator.catalog import Catalog, LingjunMachineType, Region
from generator.errors import Problem
from generator.plan.fit import Fit, Scored
from generator.plan.model import (
    Checkpoints,
    Decision,
    DeploymentSet,
    DlcSpot,
    LingjunSubnet,
    Network,
    Node,
    Spot,
    Storage,
    Weights,
)
from generator.plan.warns import PlanWarning
from generator.spec.model import Spec


@dataclass(frozen=True)
class Placement:
    """Where the nodes go and what connects them: the zone, the RDMA fabric and ERIs per node, the network, the
    ranks and their deployment sets, and what the platform's own part needs later (``machine``: the Lingjun
    machine type; ``extra``: the platform's own values, such as Lingjun's HPN zone and VPD)."""

    zone: str
    rdma: str
    eri: int
    network: Network
    ranks: tuple[Node, ...]
    deployment_sets: tuple[DeploymentSet, ...] = ()
    machine: LingjunMachineType | None = None
    hpn_zone: str = ""
    vpd_cidr: str = ""
    subnets: tuple[LingjunSubnet, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


class PlanParts(Protocol):
    """A platform's rules and the plan parts that differ by platform."""

    def rules(self, spec: Spec, catalog: Catalog, region: Region | None) -> list[Problem]:
        """What the platform cannot do, as spec errors with hints (validate stage, before planning)."""
        ...

    def zone_decision(self, spec: Spec, region: Region, zone: str) -> Decision | None:
        """Why the cluster goes in ``zone`` (the first zone of the spec's choice); None where the zone follows from
        the machine type chosen instead (Lingjun's HPN zone, decided in :meth:`place`)."""
        ...

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
        """The zone, fabric, network and ranks of the chosen fit (``zone``: the first zone of the spec's choice)."""
        ...

    def spot(
        self,
        spec: Spec,
        fit: Fit,
        ranks: tuple[Node, ...],
        decisions: list[Decision],
        warnings: list[PlanWarning],
    ) -> tuple[Spot, DlcSpot | None]:
        """The spot plan (and PAI-DLC's SpotSpec)."""
        ...

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
        """The platform's own part of the Plan, as Plan keyword arguments (``{"lingjun": ...}``; ECS has none)."""
        ...
