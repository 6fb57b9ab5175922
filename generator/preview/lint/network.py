"""The network part's rules (TS001, TS002): security group ingress, and how wide a source range is.

The address helpers (private ranges, parsing a CIDR) live here and the storage rules reuse them for NAS access
rules.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from generator.preview.lint.fact import LintFact
from generator.preview.lint.graph import Index, Resource, check, input_of

# Resource type tokens (pulumi_alicloud 4.0.0).
SG_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)


def parse_network(text: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return None


def is_private(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    return any(net.version == p.version and net.subnet_of(p) for p in PRIVATE_NETWORKS)  # type: ignore[arg-type]


def _sg_ingress_sources(r: Resource) -> list[str]:
    """CIDR sources of an accepting ingress rule (a drop rule or an egress rule admits nothing)."""
    if (
        str(input_of(r, "type", "ingress")).lower() != "ingress"
        or str(input_of(r, "policy", "accept")).lower() == "drop"
    ):
        return []
    return [c for c in (input_of(r, "cidrIp"), input_of(r, "ipv6CidrIp")) if isinstance(c, str) and c]


def _covers_port(r: Resource, port: int) -> bool:
    protocol = str(input_of(r, "ipProtocol", "all")).lower()
    if protocol not in ("tcp", "all"):
        return False
    low, _, high = str(input_of(r, "portRange", "-1/-1")).partition("/")
    try:
        lo, hi = int(low), int(high or low)
    except ValueError:
        return True  # unreadable: assume the worst
    return lo == -1 or lo <= port <= hi


# The widest public source an ingress rule may name (TS001, docs/lint.md). Assumption (a judgement of what
# "one named network" means, not a provider rule): an IPv4 prefix shorter than /8 is wider than the unit in
# which IANA hands IPv4 space to the regional registries (https://www.iana.org/assignments/ipv4-address-space
# lists /8 blocks), more than 16.7 million addresses; an IPv6 prefix shorter than /32 is wider than the usual
# allocation a regional registry makes to an ISP (RIPE NCC IPv6 policy, ripe-589 and its successors, "minimum
# allocation"), so it spans many organisations. Private ranges (10/8, 172.16/12, 192.168/16, fc00::/7) are not
# the internet.
WIDEST_PUBLIC_PREFIX = {4: 8, 6: 32}


# -- facts


@dataclass(frozen=True, slots=True)
class OpenIngress(LintFact):
    rule = "TS001"
    summary = (
        "an accepting ingress rule admits everything, or a public range wider than an IPv4 /8 or an IPv6 /32"
    )
    protocol: str  # ip_protocol as declared ('all' when unset)
    port_range: str  # port_range as declared ('-1/-1' when unset)
    cidr: str  # the source as declared (cidr_ip or ipv6_cidr_ip)
    ip_version: int  # 4 or 6
    prefix_length: int
    widest_prefix: int  # the shortest public prefix allowed for this IP version (WIDEST_PUBLIC_PREFIX)

    def text(self) -> str:
        if self.prefix_length == 0:
            why = "that is from anywhere"
        else:
            share = f"1/{2**self.prefix_length:,}" if self.prefix_length < 16 else "a large part"
            why = (
                f"{share} of the IPv{self.ip_version} address space (a prefix shorter than "
                f"/{self.widest_prefix} names no one network)"
            )
        return (
            f"admits {self.protocol} port {self.port_range} from {self.cidr}, {why}; name the networks that "
            "need access (network.admin_cidrs)"
        )


@dataclass(frozen=True, slots=True)
class SshIngress(LintFact):
    rule = "TS002"
    summary = "an accepting ingress rule whose ports include 22 names a source range"
    cidr: str

    def text(self) -> str:
        return (
            f"SSH (port 22) is reachable from {self.cidr}; check that this network is meant to log in to "
            "the nodes"
        )


# -- checks


def _from_anywhere(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    """Whether ``net`` counts as open to the internet: everything, or a very wide public range."""
    return net.prefixlen == 0 or (net.prefixlen < WIDEST_PUBLIC_PREFIX[net.version] and not is_private(net))


@check("TS001")
def _open_ingress(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(SG_RULE):
        for cidr in _sg_ingress_sources(r):
            net = parse_network(cidr)
            if net is not None and _from_anywhere(net):
                protocol, ports = (
                    str(input_of(r, "ipProtocol", "all")),
                    str(input_of(r, "portRange", "-1/-1")),
                )
                yield (
                    r,
                    OpenIngress(
                        protocol, ports, cidr, net.version, net.prefixlen, WIDEST_PUBLIC_PREFIX[net.version]
                    ),
                )


@check("TS002")
def _ssh_ingress(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(SG_RULE):
        if not _covers_port(r, 22):
            continue
        for cidr in _sg_ingress_sources(r):
            yield r, SshIngress(cidr)
