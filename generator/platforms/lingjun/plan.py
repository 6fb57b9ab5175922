"""The Lingjun part (``compute.platform: lingjun``): the zone and HPN zone, the HPN fabric, the VPD and VPC split
of the address range, rank identity, and the cluster, billing, image and credentials, with the limits of Lingjun
stated as decisions and warnings.

Which Lingjun machine types are eligible is decided in :mod:`generator.platforms.lingjun.eligible` (the fit search
asks it through ``PlanParts.eligible``).
"""

from __future__ import annotations

import ipaddress

from generator.catalog import Catalog, InstanceType, LingjunMachineType
from generator.plan import warns
from generator.plan.cost import prepaid, subscription_months
from generator.plan.fit import Fit, PlanningError, Scored
from generator.plan.model import Checkpoints, Decision, Lingjun, LingjunSubnet, Network, Node, VSwitch
from generator.plan.naming import node_name
from generator.plan.warns import PlanWarning
from generator.platforms.lingjun import PLATFORM, refusals
from generator.spec.model import Spec

# eflo.Cluster cluster_type; the API's values are AckEdgePro, ExclusiveBareCluster and Lite [SDK-EFLO]
LINGJUN_CLUSTER_TYPE = "Lite"
LINGJUN_USER_DATA_MAX = (
    PLATFORM.user_data_max_bytes
)  # node group user data: base64 of at most 16 KB [PU-EFLO]
LINGJUN_BONDS_ASSUMED = (
    8  # addresses per node to reserve in the VPD subnet when the catalog gives no bond count
)


def hpn_gbps(catalog: Catalog, t: InstanceType) -> float:
    """The HPN RDMA rate of a Lingjun machine type (every node is on the HPN fabric); 0 where the catalog states
    none."""
    lj = catalog.lingjun_type(t.name)
    return float((lj.rdma_gbps if lj is not None else 0) or 0.0)


def lingjun_place(spec: Spec, lj: LingjunMachineType, decisions: list[Decision]) -> tuple[str, str]:
    """The zone and HPN zone of the cluster; the zone decision goes first, as on ECS."""
    zone, hpn_zone, why_zone = _lingjun_zone(spec, lj)
    decisions.insert(0, Decision("zone", zone, why_zone))
    decisions.append(
        Decision(
            "hpn zone",
            hpn_zone,
            f"the HPN zone (Lingjun network cluster) the sources pair with "
            f"{lj.name} in {zone} [{lj.source}]; eflo.Cluster and every eflo.Node name it",
        )
    )
    return zone, hpn_zone


def lingjun_fabric(
    spec: Spec, lj: LingjunMachineType, decisions: list[Decision], warnings: list[PlanWarning]
) -> tuple[str, int]:
    """The HPN RDMA fabric every Lingjun node sits on (no ERIs to attach), with its decision."""
    rdma = "lingjun-hpn"
    fabric = (
        f"{lj.rdma_gbps:g} Gbit/s per node per the Lingjun docs [DOC-PAI-LJ]"
        if lj.rdma_gbps
        else "bandwidth not stated"
    )
    decisions.append(
        Decision(
            "rdma",
            rdma,
            (
                f"Lingjun machine types sit on the HPN RDMA fabric ({fabric}); there is nothing to enable per node: each "
                f"node's {lj.bonds or 'network'} bond(s) take addresses from the VPD subnet, and NCCL finds the RDMA "
                "devices itself (NCCL tuning variables are left to the Lingjun image; unverified)"
            ),
        )
    )
    if spec.network.rdma is False:
        warnings.append(warns.LingjunRdmaOff())
    return rdma, 0


def _lingjun_zone(spec: Spec, lj: LingjunMachineType) -> tuple[str, str, str]:
    """The zone and HPN zone for a Lingjun machine type: the first zone of the spec's preference where the catalog
    knows an HPN zone for the type, else the type's first known pair."""
    for z in spec.zones:
        hpn = lj.hpn_zone(z)
        if hpn:
            why = (
                "the first zone of your ordered preference where the catalog knows an HPN zone for "
                f"{lj.name}; the whole cluster goes in one zone and one HPN zone"
            )
            return z, hpn, why
    z, hpn = lj.hpn_zones[
        0
    ]  # eligible_lingjun keeps only types with a pair in the spec's zones (or any pair)
    return (
        z,
        hpn,
        (
            f"no zones given; {z} is where the sources show {lj.name} (HPN zone {hpn}) [{lj.source}]. "
            "Catalog belief, not stock: Lingjun capacity is confirmed by Alibaba Cloud when ordered"
        ),
    )


def _carve(space: ipaddress.IPv4Network, need: int) -> ipaddress.IPv4Network | None:
    """The first subnet of ``space`` holding ``need`` addresses (8 reserved), sized as the ECS vSwitch is."""
    prefix = max(space.prefixlen, min(24, space.prefixlen + 4))
    while prefix > space.prefixlen and (2 ** (32 - prefix) - 8) < need:
        prefix -= 1
    if (2 ** (32 - prefix) - 8) < need:
        return None
    return next(space.subnets(new_prefix=prefix))


def lingjun_network(
    spec: Spec, zone: str, fit: Fit, lj: LingjunMachineType, decisions: list[Decision]
) -> tuple[Network, str, tuple[LingjunSubnet, ...]]:
    """network.vpc_cidr split in two: the lower half is the VPD (HPN addresses), the upper half the VPC."""
    space = ipaddress.IPv4Network(spec.network.vpc_cidr)
    vpd, vpc = space.subnets(prefixlen_diff=1)
    bonds = lj.bonds or LINGJUN_BONDS_ASSUMED
    subnet = _carve(vpd, fit.nodes * bonds + 16)
    vswitch = _carve(vpc, fit.nodes + 48)
    if subnet is None or vswitch is None:
        raise PlanningError([refusals.VpcTooSmall(str(space), fit.nodes, bonds).problem()])
    subnets = (LingjunSubnet("hpn", f"{spec.name}-{zone}", zone, str(subnet)),)
    decisions.append(
        Decision(
            "network",
            f"VPD {vpd} (subnet {subnet} in {zone}), VPC {vpc} (vSwitch {vswitch})",
            (
                f"network.vpc_cidr is split in two so the ranges cannot overlap on a node: the lower half is the Lingjun "
                f"network segment (eflo.Vpd), whose subnet gives each node's {bonds} bond(s) their HPN addresses"
                + (
                    ""
                    if lj.bonds
                    else f" ({LINGJUN_BONDS_ASSUMED} reserved per node: the catalog gives no bond count)"
                )
                + "; the upper half is a VPC whose vSwitch gives each node a VPC interface, the path to the OSS internal "
                "endpoint, the NAT gateway and SSH from admin_cidrs. Addresses are assigned at deploy time"
            ),
        )
    )
    egress = spec.network.egress
    decisions.append(
        Decision(
            "egress",
            egress,
            (
                "outbound-only internet through an enhanced NAT gateway and one EIP on the nodes' VPC interfaces (no public "
                "IP on any node, nothing inbound); that Lingjun nodes route the internet through their VPC interface is "
                "unverified"
                if egress == "nat"
                else "no internet: nodes reach only VPC-internal endpoints (OSS internal); use an image that already has the "
                "GPU driver"
            ),
        )
    )
    network = Network(
        str(vpc),
        (VSwitch("compute", f"{spec.name}-{zone}", zone, str(vswitch)),),
        tuple(spec.network.admin_cidrs),
        False,
        1500,
        (),
        egress,
    )
    return network, str(vpd), subnets


def lingjun_nodes(spec: Spec, zone: str, fit: Fit, decisions: list[Decision]) -> tuple[Node, ...]:
    decisions.append(
        Decision(
            "node identity",
            "rank from hostname",
            (
                "Lingjun assigns each node's addresses from the subnets at deploy time, so no hostfile can be written in "
                "advance; the node group names node i '<name>-node-<i>' and node-init.sh reads the rank from the hostname. "
                "trainstack-launch uses rank 0's hostname as MASTER_ADDR unless MASTER_ADDR is set (that the hostnames "
                "resolve between nodes is unverified; otherwise export MASTER_ADDR=<rank 0's address>)"
            ),
        )
    )
    return tuple(
        Node(
            rank=i,
            name=node_name(spec.name, i),
            zone=zone,
            vswitch="compute",
            private_ip="",
            spot=False,
            deployment_set=None,
        )
        for i in range(fit.nodes)
    )


def plan_lingjun(
    spec: Spec,
    lj: LingjunMachineType,
    zone: str,
    hpn_zone: str,
    vpd_cidr: str,
    subnets: tuple[LingjunSubnet, ...],
    best: Scored,
    ckpt: Checkpoints,
    decisions: list[Decision],
    warnings: list[PlanWarning],
) -> Lingjun:
    """Billing, cluster type, credentials and the limits of Lingjun, as decisions and warnings."""
    nodes = best.fit.nodes
    decisions.append(_cluster_decision())
    payment, period = _billing(spec, lj, best, decisions, warnings)
    warnings.append(warns.LingjunStock(nodes, lj.name, zone, hpn_zone))
    if not lj.gpu_verified:
        warnings.append(warns.LingjunGpusUndocumented(lj.name, lj.gpus, lj.gpu))
    decisions.append(
        Decision(
            "image",
            str(spec.compute.image_id),
            (
                "a Lingjun image id from the spec (Lingjun node groups boot Lingjun images, not ECS images, and the provider "
                "has no data source to look one up); trainstack:imageId overrides it at deploy time"
            ),
        )
    )
    if ckpt.enabled:
        _credentials(spec, decisions, warnings)
    if "system_disk_gib" in spec.compute.model_fields_set:
        warnings.append(
            warns.FieldIgnored(
                "compute.system_disk_gib",
                PLATFORM.title,
                "eflo node groups take no system disk size in pulumi-alicloud 4.0.0 (the image decides)",
                "",
            )
        )
    return Lingjun(
        vpd_cidr=vpd_cidr,
        subnets=subnets,
        hpn_zone=hpn_zone,
        cluster_type=LINGJUN_CLUSTER_TYPE,
        machine_type=lj.name,
        payment_type=payment,
        period_months=period,
        bonds=lj.bonds,
        node_group=f"{spec.name}-nodes",
        user_data_max_bytes=LINGJUN_USER_DATA_MAX,
    )


def _cluster_decision() -> Decision:
    """Why the cluster is an eflo.Cluster of type Lite with one node group."""
    return Decision(
        "lingjun cluster",
        f"eflo.Cluster type {LINGJUN_CLUSTER_TYPE}, one node group",
        (
            f"cluster_type {LINGJUN_CLUSTER_TYPE} (the basic Lingjun cluster) is the type the provider's acceptance test "
            "and docs create with a VPD subnet, a VPC vSwitch and a security group [TF-eflo-cluster, PU-EFLO]; "
            "AckEdgePro would add a managed ACK Edge control plane and ExclusiveBareCluster has no example in the "
            "provider. Nodes join through one eflo.NodeGroup, which sets the image, the SSH key pair and the bootstrap "
            "script (eflo.Node itself takes no key pair)"
        ),
    )


def _billing(
    spec: Spec, lj: LingjunMachineType, best: Scored, decisions: list[Decision], warnings: list[PlanWarning]
) -> tuple[str, int | None]:
    """The payment type and subscription period (None for PayAsYouGo): PayAsYouGo when the machine type is sold so,
    else a subscription sized to the expected run, refused for a paused spec and warned about as prepaid."""
    if "PayAsYouGo" in lj.payment_types:
        decisions.append(
            Decision(
                "billing",
                "PayAsYouGo",
                (
                    f"Lingjun is sold subscription first, but the sources show {lj.name} pay-as-you-go too [{lj.source}]; "
                    "a training run is finite and Pulumi can release PayAsYouGo nodes on destroy, whereas Subscription "
                    "nodes are only removed from the Pulumi state, never destroyed"
                ),
            )
        )
        return "PayAsYouGo", None
    if spec.compute.paused:
        raise PlanningError([refusals.PausedSubscription(lj.name).problem()])
    nodes = best.fit.nodes
    hours = (best.run_hours or 0.0) + (best.rework_hours or 0.0)
    period = subscription_months(hours if best.run_hours is not None else None)
    amount = prepaid(nodes, lj.price.cny_per_hour, period)  # the cost part prices the run at this amount too
    decisions.append(
        Decision(
            "billing",
            f"Subscription, {period} month(s)",
            (
                f"the sources show {lj.name} by subscription only [{lj.source}]; the period covers "
                + (
                    f"the expected {hours:,.0f} h of training"
                    if best.run_hours is not None
                    else "one month (give model.tokens to size it to the run)"
                )
                + ", renewal is manual"
            ),
        )
    )
    warnings.append(warns.SubscriptionPrepaid(nodes, lj.name, period, amount))
    warnings.append(warns.SubscriptionNotDestroyed())
    return "Subscription", period


def _credentials(spec: Spec, decisions: list[Decision], warnings: list[PlanWarning]) -> None:
    """How the nodes reach the checkpoint bucket: a RAM user with the bucket's policy and no AccessKey."""
    decisions.append(
        Decision(
            "node credentials",
            f"RAM user {spec.name}-checkpoints, no AccessKey",
            (
                "eflo.Node and eflo.NodeGroup take no RAM role in pulumi-alicloud 4.0.0, so the ECS way (a role through "
                "the metadata service) is not available; the same one-bucket policy is attached to a RAM user instead. "
                "trainstack creates no AccessKey for it, because a key created by Pulumi would be stored in its state: "
                "create one (console or `aliyun ram CreateAccessKey`) and install it on the nodes, or give them "
                "credentials through PAI"
            ),
        )
    )
    warnings.append(warns.LingjunNoOssCredentials(f"{spec.name}-checkpoints"))
