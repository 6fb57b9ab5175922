"""What the planner and the checks ask of a platform's behaviour (:class:`PlanParts`), and what its placement step
hands back (:class:`Placement`). Each platform folder implements it in its ``parts`` module; the planner
(:func:`generator.plan.planner.make_plan`) composes the shared parts around it in a fixed order, so the order of the
decisions and warnings in plan.json does not depend on the platform's code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from generator.catalog import Catalog, GpuModel, InstanceType, LingjunMachineType, Region
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
from generator.plan.refusal import Refusal
from generator.plan.rejections import Rejection
from generator.plan.warns import PlanWarning
from generator.spec.model import Spec
from generator.spec.weights import WeightsSource


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


Box = Callable[..., str]  # present.diagram's quoted, escaped Mermaid label of one or more lines
GroupLines = Callable[
    [list[Node]], list[str]
]  # present.diagram's rank ranges, count and type of a compute box


@dataclass(frozen=True)
class Picture:
    """What a platform draws in the plan's Mermaid flowchart (:func:`generator.present.diagram.flowchart`) around
    the shared network, storage and checkpoint boxes.

    ``head``: the title of a vSwitch's compute box (None: the ranks sit in no vSwitch, as on Lingjun, whose nodes
    are in ``subgraphs``); ``subgraphs``: lines drawn in the region after the VPC, holding the compute boxes
    ``groups``; ``data``: an OSS folder the platform mounts as data when the spec imports no dataset; ``identity``:
    the role (and workspace) boxes; ``role``: whether the compute boxes reach a ``role`` box; ``group_edges``: edges
    from each compute box (``{gid}`` is its id).
    """

    head: Callable[[list[Node]], str] | None
    identity: tuple[str, ...]
    role: bool = True
    subgraphs: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    data: str = ""
    group_edges: tuple[str, ...] = ()


class ViewParts(Protocol):
    """What the presentation (text, Markdown, Mermaid, preview picture) and the renderer ask of a platform: the
    text, rows, boxes and files its own part of the plan adds to the shared ones. Each answers from the Plan alone
    and returns plain text: the shared caller escapes it for its language."""

    def summary_lines(self, plan: Any) -> list[str]:
        """Lines of ``trainstack plan``'s summary after the spot line (present/text.py)."""
        ...

    def summary_rows(self, plan: Any) -> list[tuple[str, tuple[str, ...]]]:
        """(label, pieces of text) rows of the Markdown summary after its third row (present/markdown.py escapes
        each piece on its own)."""
        ...

    def picture(self, plan: Any, box: Box, group_lines: GroupLines) -> Picture:
        """Its boxes of the plan's flowchart (``box``, ``group_lines``: the flowchart's label makers)."""
        ...

    def preview_boxes(self, plan: Any) -> set[str]:
        """The boxes of the preview's picture its cluster has beyond net, ckpt, role and the file system's."""
        ...

    def template_vars(self, plan: Any) -> dict[str, Any]:
        """Its values the stack templates read (render/files.py template_vars), as plain data."""
        ...

    def stack_files(self, plan: Any) -> dict[str, str]:
        """Files it adds to the stack folder beyond node-init.sh: name -> what renders it (``"weights_script"``)."""
        ...


class PlanParts(ViewParts, Protocol):
    """A platform's rules and the plan parts that differ by platform (and, from :class:`ViewParts`, how its part of
    the plan is shown and rendered)."""

    def rules(self, spec: Spec, catalog: Catalog, region: Region | None) -> list[Problem]:
        """What the platform cannot do, as spec errors with hints (validate stage, before planning)."""
        ...

    def gpu_refusals(self, catalog: Catalog, gpu: GpuModel, region: Region) -> list[Refusal]:
        """``compute.gpu`` (known, with the precision's tensor cores) among the types the platform draws its nodes
        from in the region: the catalog's ECS instance types, or Lingjun's machine types (validate stage)."""
        ...

    def type_refusal(self, spec: Spec, catalog: Catalog, index: int, name: str) -> Refusal | None:
        """``compute.instance_types[index]``: one of the types the platform draws its nodes from (validate stage)."""
        ...

    def eligible(
        self, spec: Spec, catalog: Catalog, region: Region
    ) -> tuple[list[InstanceType], dict[str, Rejection]]:
        """The types of the region the spec allows, which the fit search sizes (Lingjun's machine types as
        instance types), and why each type the spec names but cannot use is refused."""
        ...

    def internode_gbps(self, catalog: Catalog, t: InstanceType, rdma: bool) -> float:
        """The Gbit/s a node of type ``t`` reaches the other nodes with (over RDMA when ``rdma``), as the catalog
        states it for the platform's types; 0 where it states none (the run time assumes a rate)."""
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
        """The base weights' plan (``model.weights``, parsed as ``src``): how they reach the nodes, where they land
        and how often they are fetched (:func:`generator.plan.weights.fetched_weights` where the nodes' bootstrap
        fetches them)."""
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
