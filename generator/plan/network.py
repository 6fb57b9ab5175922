"""The Network part of an ECS cluster: its zone, the RDMA fabric, the VPC and vSwitch, MTU, NCCL variables and
egress, and where each rank goes (fixed private address, deployment set), with their decisions.

Lingjun clusters take theirs from :mod:`generator.plan.lingjun`.
"""

from __future__ import annotations

import ipaddress
import math

from generator.catalog import Region
from generator.errors import Problem
from generator.plan.fit import Fit, PlanningError
from generator.plan.model import Decision, DeploymentSet, Network, Node, VSwitch
from generator.plan.spot import spot_ranks
from generator.spec.model import Spec

LOW_LATENCY_SET_MAX = 20  # a LowLatency deployment set holds at most 20 instances, all in one zone [DOC-DS]
ERDMA_MTU_JUMBO = 8500  # NCCL over eRDMA: MTU 8500 with jumbo frames, 1400 without [DOC-ERDMA-GPU]
ERDMA_MTU_STANDARD = 1400


def zone_decision(spec: Spec, region: Region, zone: str) -> Decision:
    """Why the whole ECS cluster goes in ``zone`` (a Lingjun zone follows from the machine type chosen)."""
    return Decision("zone", zone, (
        "the first zone of your ordered preference; the whole cluster goes in one zone because eRDMA peers, "
        "LowLatency deployment sets and the CPFS mount target are zonal" if spec.zones else
        f"no zones given; {zone} is the first zone of {region.id} in the catalog (stock unverified: check "
        "DescribeAvailableResource before deploying)"))


def fabric(spec: Spec, fit: Fit, decisions: list[Decision], warnings: list[str]) -> tuple[str, int]:
    """The RDMA fabric between the nodes (``erdma``, ``roce`` or ``none``) and the ERIs each node takes."""
    t = fit.itype
    rdma = "none"
    if spec.network.rdma is not False and (fit.nodes > 1 or spec.network.rdma is True):
        rdma = "roce" if t.scc else ("erdma" if t.eri_count > 0 else "none")
    if spec.network.rdma is False and fit.nodes > 1:
        warnings.append(f"network.rdma is false: {fit.nodes} nodes will exchange gradients over TCP and the GPUs "
                        "will wait on the network for much of each step")
    eri = (2 if t.two_network_cards else 1) if rdma == "erdma" else 0
    if rdma != "none":
        decisions.append(Decision("rdma", rdma, (
            f"{fit.nodes} nodes exchange gradients every step; over TCP the GPUs would wait on the network. "
            + (f"{t.name} needs two ERIs on distinct network cards for its full {t.erdma_gbps:g} Gbit/s"
               if eri == 2 else f"{t.name} takes its eRDMA interface on the primary ENI")
            if rdma == "erdma" else f"{t.name} is an SCC type with a {t.roce_gbps:g} Gbit/s RoCE fabric; its nodes"
            " must be placed in an HPC cluster")))
    elif fit.nodes > 1:
        decisions.append(Decision("rdma", "off", "the spec turns RDMA off (network.rdma: false); traffic uses TCP"))
    else:
        decisions.append(Decision("rdma", "off", "one node: GPUs talk over NVLink/PCIe inside the node, no RDMA needed"))
    return rdma, eri


def plan_network(spec: Spec, zone: str, fit: Fit, rdma: str, eri: int, decisions: list[Decision]) -> Network:
    vpc = ipaddress.ip_network(spec.network.vpc_cidr)
    prefix = max(vpc.prefixlen, min(24, vpc.prefixlen + 4))
    need = fit.nodes + 48  # the CPFS protocol service takes up to 32 addresses of the vSwitch
    while prefix > vpc.prefixlen and (2 ** (32 - prefix) - 8) < need:
        prefix -= 1
    if (2 ** (32 - prefix) - 8) < need:
        raise PlanningError([Problem(("network", "vpc_cidr"), f"{vpc} is too small for {fit.nodes} nodes",
                                     "use a larger range such as 10.0.0.0/16")])
    subnet = next(vpc.subnets(new_prefix=prefix))
    vswitches = (VSwitch("compute", f"{spec.name}-{zone}", zone, str(subnet)),)
    jumbo = spec.network.jumbo_frames and rdma == "erdma"
    mtu = ERDMA_MTU_JUMBO if jumbo else ERDMA_MTU_STANDARD
    env: list[tuple[str, str]] = []
    if rdma == "erdma":
        # PAI's preset variables for eRDMA training (NCCL >= 2.19) [DOC-PAI-ERDMA]
        env = [("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IB_HCA", "erdma"), ("NCCL_IB_GID_INDEX", "1"),
               ("NCCL_IB_QPS_PER_CONNECTION", "8"), ("NCCL_MIN_NCHANNELS", "16"), ("NCCL_NET_PLUGIN", "none")]
        decisions.append(Decision("mtu", str(mtu), "NCCL over eRDMA needs MTU 8500 with jumbo frames on (1400 with them "
                                  "off); a wrong MTU corrupts data with the LL128 protocol [DOC-ERDMA-GPU]"))
    elif rdma == "roce":
        env = [("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IB_GID_INDEX", "3")]
    elif fit.nodes > 1:
        env = [("NCCL_SOCKET_IFNAME", "eth0")]
    egress = spec.network.egress
    decisions.append(Decision("egress", egress, (
        "outbound-only internet through an enhanced NAT gateway and one EIP (no public IP on any node, nothing "
        "inbound), so nodes can fetch drivers, packages and code" if egress == "nat" else
        "no internet: nodes reach only VPC-internal endpoints (mirrors.cloud.aliyuncs.com, OSS internal); use an "
        "image that already has the GPU driver")))
    return Network(str(vpc), vswitches, tuple(spec.network.admin_cidrs), jumbo, mtu if rdma == "erdma" else 1500,
                   tuple(env), egress)


def plan_nodes(spec: Spec, zone: str, fit: Fit, network: Network,
               decisions: list[Decision]) -> tuple[tuple[Node, ...], tuple[DeploymentSet, ...]]:
    t = fit.itype
    subnet = ipaddress.ip_network(network.vswitches[0].cidr)
    first = int(subnet.network_address) + 10  # leave the low addresses for the gateway and services
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
        decisions.append(Decision("placement", f"{count} LowLatency deployment set(s)",
                                  f"{t.family} supports LowLatency sets, which hold at most {LOW_LATENCY_SET_MAX} "
                                  f"instances in one zone [DOC-DS]; ranks go into sets in blocks of {size}, so "
                                  "resizing the cluster never moves a node between sets"))
    elif t.scc:
        decisions.append(Decision("placement", "HPC cluster", "SCC instances must be created in an HPC cluster "
                                  "(HpcClusterId is required) [DOC-RUNINST]"))
    elif fit.nodes > 1:
        decisions.append(Decision("placement", "no deployment set", f"{t.family} is not on the LowLatency list "
                                  "[DOC-DS]; nodes share one zone and vSwitch"))
    by_rank = {r: d.key for d in dsets for r in d.ranks}
    spot_on = set(spot_ranks(spec, fit.nodes))
    ranks = tuple(Node(rank=i, name=f"{spec.name}-node-{i:03d}" if fit.nodes < 1000 else f"{spec.name}-node-{i:04d}",
                       zone=zone, vswitch="compute", private_ip=str(ipaddress.ip_address(first + i)),
                       spot=i in spot_on, deployment_set=by_rank.get(i)) for i in range(fit.nodes))
    return ranks, tuple(dsets)
