"""The Network part of an ECS cluster: its zone, the RDMA fabric, the VPC and its vSwitches with the IP plan (which
consumer takes which addresses), the MTU and jumbo frames by the catalog, NCCL variables and egress, and where each
rank goes (fixed private address, deployment set), with their decisions.

Lingjun clusters take theirs from :mod:`generator.platforms.lingjun.plan`.
"""

from __future__ import annotations

import ipaddress
import math

from generator.catalog import Region
from generator.plan import refusals, warns
from generator.plan.fit import Fit, PlanningError
from generator.plan.model import Decision, DeploymentSet, IpRange, Network, Node, VSwitch
from generator.plan.naming import node_name
from generator.plan.spot import spot_ranks
from generator.plan.storage import shared_storage_needed
from generator.plan.warns import PlanWarning
from generator.spec.model import Spec

LOW_LATENCY_SET_MAX = 20  # a LowLatency deployment set holds at most 20 instances, all in one zone [DOC-DS]
ERDMA_MTU_JUMBO = 8500  # NCCL over eRDMA: MTU 8500 with jumbo frames, 1400 without [DOC-ERDMA-GPU]
ERDMA_MTU_STANDARD = 1400
RESERVED_FIRST, RESERVED_LAST = 1, 3  # Alibaba reserves the first and the last three addresses of a vSwitch
NODE_OFFSET = 10  # nodes take .10 upward in the compute vSwitch
COMPUTE_HEADROOM = (
    48  # the compute vSwitch's sizing from earlier versions (nodes + 48), so existing ones stay put
)
PROTOCOL_SERVICE_ADDRESSES = (
    32  # a CPFS protocol service takes up to 32 addresses of its vSwitch [DOC-CPFS-PS]
)
# The top /25 of the VPC holds the service vSwitches: egress /27 at its bottom, storage /26 on top.
SERVICES_PREFIX, STORAGE_PREFIX, EGRESS_PREFIX = 25, 26, 27
# What takes the addresses of each service vSwitch (the IP plan's consumers, ip_plan).
STORAGE_CONSUMER = (
    "the CPFS NFS protocol service (up to 32 addresses [DOC-CPFS-PS]) and "
    "its export, or the Extreme NAS mount target; Alibaba Cloud picks the addresses"
)
EGRESS_CONSUMER = (
    "the enhanced NAT gateway; Alibaba Cloud picks its address (how many "
    "it takes is not stated in the sources read)"
)


def zone_decision(spec: Spec, region: Region, zone: str) -> Decision:
    """Why the whole ECS cluster goes in ``zone`` (PAI-DLC's reason is its own, a Lingjun zone follows from the
    machine type chosen)."""
    return Decision(
        "zone",
        zone,
        (
            "the first zone of your ordered preference; the whole cluster goes in one zone because eRDMA peers, "
            "LowLatency deployment sets and the CPFS mount target are zonal"
            if spec.zones
            else f"no zones given; {zone} is the first zone of {region.id} in the catalog (stock unverified: check "
            "DescribeAvailableResource before deploying)"
        ),
    )


def fabric(spec: Spec, fit: Fit, decisions: list[Decision], warnings: list[PlanWarning]) -> tuple[str, int]:
    """The RDMA fabric between the nodes (``erdma``, ``roce`` or ``none``) and the ERIs each node takes."""
    t = fit.itype
    rdma = "none"
    if spec.network.rdma is not False and (fit.nodes > 1 or spec.network.rdma is True):
        rdma = "roce" if t.scc else ("erdma" if t.eri_count > 0 else "none")
    if spec.network.rdma is False and fit.nodes > 1:
        warnings.append(warns.RdmaOff(fit.nodes))
    eri = (2 if t.two_network_cards else 1) if rdma == "erdma" else 0
    fabric_warnings(spec, fit, rdma, warnings)
    if rdma != "none":
        decisions.append(
            Decision(
                "rdma",
                rdma,
                (
                    f"{fit.nodes} nodes exchange gradients every step; over TCP the GPUs would wait on the network. "
                    + (
                        f"{t.name} needs two ERIs on distinct network cards for its full {t.erdma_gbps:g} Gbit/s"
                        if eri == 2
                        else f"{t.name} takes its eRDMA interface on the primary ENI"
                    )
                    if rdma == "erdma"
                    else f"{t.name} is an SCC type with a {t.roce_gbps:g} Gbit/s RoCE fabric; its nodes"
                    " must be placed in an HPC cluster"
                ),
            )
        )
    elif fit.nodes > 1:
        decisions.append(
            Decision("rdma", "off", "the spec turns RDMA off (network.rdma: false); traffic uses TCP")
        )
    else:
        decisions.append(
            Decision("rdma", "off", "one node: GPUs talk over NVLink/PCIe inside the node, no RDMA needed")
        )
    return rdma, eri


def jumbo_support(spec: Spec, fit: Fit, rdma: str) -> tuple[bool, str]:
    """Whether the nodes turn jumbo frames on, and why (only eRDMA plans set an MTU).

    Jumbo frames go on only where the catalog documents them for the family (``jumbo_frames.csv``: ``yes``) and the
    spec leaves ``network.jumbo_frames`` on; everything else gets MTU 1400, which is safe on every family."""
    t = fit.itype
    doc = f"{t.family} jumbo frames: {t.jumbo_frames} in the catalog [{t.jumbo_source or 'no source'}]"
    if rdma != "erdma":
        return False, f"no eRDMA, so no MTU to set ({doc})"
    if t.jumbo_frames == "no":
        return False, f"{doc}: a source says {t.family} does not support jumbo frames, so they stay off"
    if t.jumbo_frames != "yes":
        return False, (
            f"{doc}: no source read says {t.family} supports jumbo frames, so they stay off (check "
            "DescribeInstanceTypes JumboFrameSupport for the type and report it if it is true)"
        )
    if not spec.network.jumbo_frames:
        return False, f"{doc}, but the spec turns them off (network.jumbo_frames: false)"
    return True, doc


def fabric_warnings(spec: Spec, fit: Fit, rdma: str, warnings: list[PlanWarning]) -> None:
    """A spec that asks for jumbo frames on a family without documented support gets a warning, not an error."""
    if rdma == "erdma" and "jumbo_frames" in spec.network.model_fields_set and spec.network.jumbo_frames:
        on, why = jumbo_support(spec, fit, rdma)
        if not on:
            warnings.append(warns.JumboNotEnabled(fit.itype.name, why, ERDMA_MTU_STANDARD))


def plan_network(spec: Spec, zone: str, fit: Fit, rdma: str, eri: int, decisions: list[Decision]) -> Network:
    """The ECS cluster's network: the VPC and its IP plan, the MTU and jumbo frames (eRDMA plans), NCCL's
    variables and egress, with the decisions for the IP plan, the MTU and egress."""
    vpc = ipaddress.IPv4Network(spec.network.vpc_cidr)  # the spec accepts IPv4 networks only
    vswitches, ranges, ip_reason = ip_plan(
        spec.name,
        zone,
        vpc,
        fit.nodes,
        storage=shared_storage_needed(spec, fit.nodes),
        egress=spec.network.egress == "nat",
    )
    decisions.append(Decision("ip plan", ", ".join(f"{v.key} {v.cidr}" for v in vswitches), ip_reason))
    jumbo, why = jumbo_support(spec, fit, rdma)
    mtu = ERDMA_MTU_JUMBO if jumbo else ERDMA_MTU_STANDARD
    if rdma == "erdma":
        decisions.append(mtu_decision(fit, jumbo, why, mtu))
    egress = spec.network.egress
    decisions.append(egress_decision(egress))
    return Network(
        vpc_cidr=str(vpc),
        vswitches=vswitches,
        admin_cidrs=tuple(spec.network.admin_cidrs),
        jumbo_frames=jumbo,
        mtu=mtu if rdma == "erdma" else 1500,
        nccl_env=nccl_env(fit, rdma),
        egress=egress,
        ip_plan=ranges,
        jumbo_source=fit.itype.jumbo_source if rdma == "erdma" else "",
    )


def nccl_env(fit: Fit, rdma: str) -> tuple[tuple[str, str], ...]:
    """NCCL's variables for the fabric: the bootstrap NIC whenever nodes talk, and the eRDMA or RoCE
    settings."""
    # NCCL's bootstrap NIC: every interface but loopback, container and veth ones, whatever the image calls the
    # NIC (eth0 on Alibaba Cloud Linux, ens5 and the like on other images); "^" excludes prefixes (NCCL docs,
    # "NCCL_SOCKET_IFNAME").
    ifname = ("NCCL_SOCKET_IFNAME", "^lo,docker,veth")
    if rdma == "erdma":
        # PAI's preset variables for eRDMA training (NCCL >= 2.19) [DOC-PAI-ERDMA]. None of them carries the MTU:
        # node-init.sh sets the MTU below on the NICs, so the two cannot disagree.
        return (
            ifname,
            ("NCCL_IB_HCA", "erdma"),
            ("NCCL_IB_GID_INDEX", "1"),
            ("NCCL_IB_QPS_PER_CONNECTION", "8"),
            ("NCCL_MIN_NCHANNELS", "16"),
            ("NCCL_NET_PLUGIN", "none"),
        )
    if rdma == "roce":
        return (ifname, ("NCCL_IB_GID_INDEX", "3"))
    return (ifname,) if fit.nodes > 1 else ()


def mtu_decision(fit: Fit, jumbo: bool, why: str, mtu: int) -> Decision:
    """Why an eRDMA plan's NICs get ``mtu``: jumbo frames on where the catalog documents them
    (:func:`jumbo_support`)."""
    return Decision(
        "mtu",
        str(mtu),
        (
            f"{fit.itype.name}: {why}. NCCL over eRDMA needs MTU {ERDMA_MTU_JUMBO} with jumbo frames on and "
            f"{ERDMA_MTU_STANDARD} with them off; a wrong MTU corrupts data with the LL128 protocol "
            "[DOC-ERDMA-GPU]"
            + ("" if jumbo else f". Jumbo frames stay off (no enable_jumbo_frame) and the NICs get {mtu}")
        ),
    )


def egress_decision(egress: str) -> Decision:
    """Why the nodes reach the internet through a NAT gateway (``nat``) or not at all (``none``)."""
    return Decision(
        "egress",
        egress,
        (
            "outbound-only internet through an enhanced NAT gateway and one EIP (no public IP on any node, "
            "nothing inbound), so nodes can fetch drivers, packages and code; the gateway sits in its own "
            "egress vSwitch so it never takes a node address"
            if egress == "nat"
            else "no internet: nodes reach only VPC-internal endpoints (mirrors.cloud.aliyuncs.com, OSS "
            "internal); use an image that already has the GPU driver"
        ),
    )


def _block(vswitch: str, first: int, last: int, consumer: str) -> IpRange:
    return IpRange(
        vswitch, str(ipaddress.ip_address(first)), str(ipaddress.ip_address(last)), last - first + 1, consumer
    )


def _reserved(key: str, net: ipaddress.IPv4Network) -> tuple[IpRange, IpRange]:
    lo, hi = int(net.network_address), int(net.broadcast_address)
    why = "reserved by Alibaba Cloud in every vSwitch [DOC-VSW-RESERVED]"
    return (
        _block(key, lo, lo + RESERVED_FIRST - 1, f"{why} (the first address)"),
        _block(key, hi - RESERVED_LAST + 1, hi, f"{why} (the last three)"),
    )


def compute_prefix(vpc: ipaddress.IPv4Network, nodes: int) -> int:
    """The compute vSwitch's prefix: a sixteenth of the VPC (at most a /24), widened for large clusters, never more
    than the lower half of the VPC (the top /25 holds the service vSwitches).

    The sizing (nodes + 48 addresses) is the one earlier versions used, so an existing compute vSwitch keeps its
    CIDR: changing it would replace the vSwitch and every node in it."""
    prefix = max(vpc.prefixlen + 1, min(24, vpc.prefixlen + 4))
    while prefix > vpc.prefixlen + 1 and (2 ** (32 - prefix) - 8) < nodes + COMPUTE_HEADROOM:
        prefix -= 1
    return prefix


def ip_plan(
    name: str, zone: str, vpc: ipaddress.IPv4Network, nodes: int, *, storage: bool, egress: bool
) -> tuple[tuple[VSwitch, ...], tuple[IpRange, ...], str]:
    """The vSwitches and every address range in them, with its consumer, such that no two consumers can collide.

    Nodes take fixed addresses from ``.10`` upward in the compute vSwitch, at the bottom of the VPC. The consumers
    that Alibaba Cloud gives addresses to dynamically live in vSwitches of their own at the top of the VPC: the
    CPFS protocol service (up to 32 addresses [DOC-CPFS-PS]) and its export, or the Extreme NAS mount target, in
    the storage vSwitch; the NAT gateway in the egress vSwitch. All are in the cluster's zone. Raises
    PlanningError when the nodes do not fit."""
    compute = next(vpc.subnets(new_prefix=compute_prefix(vpc, nodes)))
    _check_nodes_fit(vpc, compute, nodes)
    top = ipaddress.IPv4Network(
        f"{ipaddress.IPv4Address(int(vpc.broadcast_address) - 127)}/{SERVICES_PREFIX}"
    )
    egress_net = next(top.subnets(new_prefix=EGRESS_PREFIX))
    storage_net = list(top.subnets(new_prefix=STORAGE_PREFIX))[-1]
    vswitches = [VSwitch("compute", f"{name}-{zone}", zone, str(compute))]
    ranges = _compute_ranges(compute, nodes)
    parts = [f"compute {compute}: nodes {ranges[2].first}-{ranges[2].last} ({nodes}), fixed per rank"]
    services = (
        ("storage", storage_net, storage, STORAGE_CONSUMER),
        ("egress", egress_net, egress, EGRESS_CONSUMER),
    )
    for key, net, on, consumer in services:
        if not on:
            continue
        vswitches.append(VSwitch(key, f"{name}-{zone}-{key}", zone, str(net)))
        ranges += _service_ranges(key, net, consumer)
        parts.append(f"{key} {net}: {consumer}")
    _check_disjoint(vpc, vswitches, storage_net)
    return tuple(vswitches), tuple(ranges), _ip_plan_reason(parts, storage)


def _check_nodes_fit(vpc: ipaddress.IPv4Network, compute: ipaddress.IPv4Network, nodes: int) -> None:
    """Refuse (VpcTooSmall) when the compute vSwitch has fewer addresses from ``.10`` up than there are
    nodes."""
    lo, hi = int(compute.network_address), int(compute.broadcast_address)
    room = hi - RESERVED_LAST - (lo + NODE_OFFSET) + 1
    if nodes > room:
        largest = 2 ** (32 - (vpc.prefixlen + 1)) - NODE_OFFSET - RESERVED_LAST
        raise PlanningError(
            [
                refusals.VpcTooSmall(
                    str(vpc), nodes, str(compute), room, NODE_OFFSET, RESERVED_LAST, largest
                ).problem()
            ]
        )


def _compute_ranges(compute: ipaddress.IPv4Network, nodes: int) -> list[IpRange]:
    """The compute vSwitch's blocks, bottom to top: reserved, kept free below ``.10``, the nodes (the third
    block, one fixed address per rank), free room for more nodes, reserved."""
    lo, hi = int(compute.network_address), int(compute.broadcast_address)
    first, last = lo + NODE_OFFSET, lo + NODE_OFFSET + nodes - 1
    r_first, r_last = _reserved("compute", compute)
    ranges = [
        r_first,
        _block(
            "compute",
            lo + RESERVED_FIRST,
            first - 1,
            f"kept free: nodes start at .{NODE_OFFSET} (the layout of earlier versions, so no node moves)",
        ),
        _block(
            "compute", first, last, f"{nodes} node(s), ranks 0-{nodes - 1}: fixed private IPs, one per rank"
        ),
    ]
    if last + 1 <= hi - RESERVED_LAST:
        ranges.append(_block("compute", last + 1, hi - RESERVED_LAST, "free: room for more nodes"))
    ranges.append(r_last)
    return ranges


def _service_ranges(key: str, net: ipaddress.IPv4Network, consumer: str) -> list[IpRange]:
    """A service vSwitch's blocks: reserved, everything between for ``consumer``, reserved."""
    a, b = _reserved(key, net)
    usable = _block(
        key, int(net.network_address) + RESERVED_FIRST, int(net.broadcast_address) - RESERVED_LAST, consumer
    )
    return [a, usable, b]


def _ip_plan_reason(parts: list[str], storage: bool) -> str:
    """The IP plan's decision: each vSwitch and its consumers, why none can take a node's address, and what is
    reserved (and, with shared storage, what is not known of the CPFS file system's own addresses)."""
    return (
        "; ".join(parts)
        + ". The vSwitches do not overlap, so an address Alibaba Cloud hands out dynamically "
        "can never be a node's. Alibaba Cloud reserves the first address and the last three of every vSwitch "
        "[DOC-VSW-RESERVED]"
        + (
            ". A CPFS file system itself keeps vswitch_id on the compute vSwitch (changing "
            "it replaces the file system); whether it takes addresses there is not stated in "
            "the sources read"
            if storage
            else ""
        )
    )


def _check_disjoint(
    vpc: ipaddress.IPv4Network, vswitches: list[VSwitch], storage_net: ipaddress.IPv4Network
) -> None:
    nets = [(v.key, ipaddress.IPv4Network(v.cidr)) for v in vswitches]
    problems = [f"{k} {n} is outside the VPC {vpc}" for k, n in nets if not n.subnet_of(vpc)]
    problems += [
        f"{a} {m} overlaps {b} {n}"
        for i, (a, m) in enumerate(nets)
        for b, n in nets[i + 1 :]
        if m.overlaps(n)
    ]
    usable = storage_net.num_addresses - RESERVED_FIRST - RESERVED_LAST
    if usable < PROTOCOL_SERVICE_ADDRESSES + 1:
        problems.append(
            f"the storage vSwitch {storage_net} has {usable} usable addresses; the protocol service "
            f"needs up to {PROTOCOL_SERVICE_ADDRESSES}"
        )
    if problems:  # cannot happen for a VPC the loader accepts (/8 to /24); kept as the plan's own check
        raise PlanningError([refusals.IpPlanInconsistent(tuple(problems)).problem()])


def plan_nodes(
    spec: Spec, zone: str, fit: Fit, network: Network, decisions: list[Decision]
) -> tuple[tuple[Node, ...], tuple[DeploymentSet, ...]]:
    t = fit.itype
    subnet = ipaddress.ip_network(next(v.cidr for v in network.vswitches if v.key == "compute"))
    first = int(subnet.network_address) + NODE_OFFSET  # the node range of the IP plan (ip_plan)
    use_sets = t.low_latency_set and fit.nodes > 1 and not t.scc
    dsets: list[DeploymentSet] = []
    if use_sets:
        # Fixed blocks of 20 ranks (not balanced sets): growing or shrinking the cluster then never moves an
        # existing node to another set.
        count = math.ceil(fit.nodes / LOW_LATENCY_SET_MAX)
        size = LOW_LATENCY_SET_MAX
        for i in range(count):
            ranks = tuple(range(i * size, min(fit.nodes, (i + 1) * size)))
            dsets.append(DeploymentSet(f"ll{i}", f"{spec.name}-ll{i}", zone, "LowLatency", ranks))
        decisions.append(
            Decision(
                "placement",
                f"{count} LowLatency deployment set(s)",
                f"{t.family} supports LowLatency sets, which hold at most {LOW_LATENCY_SET_MAX} "
                f"instances in one zone [DOC-DS]; ranks go into sets in blocks of {size}, so "
                "resizing the cluster never moves a node between sets",
            )
        )
    elif t.scc:
        decisions.append(
            Decision(
                "placement",
                "HPC cluster",
                "SCC instances must be created in an HPC cluster (HpcClusterId is required) [DOC-RUNINST]",
            )
        )
    elif fit.nodes > 1:
        decisions.append(
            Decision(
                "placement",
                "no deployment set",
                f"{t.family} is not on the LowLatency list [DOC-DS]; nodes share one zone and vSwitch",
            )
        )
    by_rank = {r: d.key for d in dsets for r in d.ranks}
    spot_on = set(spot_ranks(spec, fit.nodes))
    nodes = tuple(
        Node(
            rank=i,
            name=node_name(spec.name, i),
            zone=zone,
            vswitch="compute",
            private_ip=str(ipaddress.ip_address(first + i)),
            spot=i in spot_on,
            deployment_set=by_rank.get(i),
        )
        for i in range(fit.nodes)
    )
    return nodes, tuple(dsets)
