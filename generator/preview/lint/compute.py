"""The compute part's rules (TS010 to TS014): ECS and Lingjun nodes encrypt their disks, harden the metadata
service, log in with a key pair and have no public IP."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from generator.preview.lint.fact import LintFact
from generator.preview.lint.graph import Index, Resource, check, input_of

# Resource type tokens (pulumi_alicloud 4.0.0).
INSTANCE = "alicloud:ecs/instance:Instance"
EFLO_NODE = "alicloud:eflo/node:Node"
EFLO_NODE_GROUP = "alicloud:eflo/nodeGroup:NodeGroup"
EFLO_CLUSTER = "alicloud:eflo/cluster:Cluster"
DISKS = ("alicloud:ecs/disk:Disk", "alicloud:ecs/ecsDisk:EcsDisk")
EIP_ASSOCIATION = "alicloud:ecs/eipAssociation:EipAssociation"


# -- facts


@dataclass(frozen=True, slots=True)
class SystemDiskPlain(LintFact):
    rule = "TS010"
    summary = "an ECS instance's system_disk_encrypted is not true"
    encrypted: bool | None  # as declared (None: unset)

    def text(self) -> str:
        return "the system disk is not encrypted; set system_disk_encrypted=True"


@dataclass(frozen=True, slots=True)
class DataDiskPlain(LintFact):
    rule = "TS011"
    summary = "an entry of an ECS instance's data_disks is not encrypted"
    index: int  # its place in data_disks

    def text(self) -> str:
        return f"data disk {self.index} is not encrypted; set encrypted=True on it"


@dataclass(frozen=True, slots=True)
class DiskPlain(LintFact):
    rule = "TS011"
    summary = "an ecs.Disk or ecs.EcsDisk is not encrypted"

    def text(self) -> str:
        return "the disk is not encrypted; set encrypted=True"


@dataclass(frozen=True, slots=True)
class MetadataNormalMode(LintFact):
    rule = "TS012"
    summary = "an ECS instance with a metadata service does not require tokens (http_tokens)"
    http_tokens: str | None  # as declared (None: unset)

    def text(self) -> str:
        tokens = "unset" if self.http_tokens is None else self.http_tokens
        return f"instance metadata is in normal mode (http_tokens={tokens}); set http_tokens='required'"


@dataclass(frozen=True, slots=True)
class LoginPassword(LintFact):
    rule = "TS013"
    summary = "an ECS instance sets a login password (password or kms_encrypted_password)"
    argument: str  # the SDK argument that sets it

    def text(self) -> str:
        return f"a login password is set ({self.argument}); remove it and log in with the key pair"


@dataclass(frozen=True, slots=True)
class PasswordInherited(LintFact):
    rule = "TS013"
    summary = "an ECS instance keeps its image's password (password_inherit)"

    def text(self) -> str:
        return "password_inherit=True keeps the image's password; remove it and log in with the key pair"


@dataclass(frozen=True, slots=True)
class EfloLoginPassword(LintFact):
    rule = "TS013"
    summary = "a Lingjun node, node group or cluster node group sets a login password"
    path: str  # where in the inputs: '' for its own login_password, else e.g. nodeGroups[0].nodes[1]

    def text(self) -> str:
        where = (
            f"{self.path} sets a login password" if self.path else "a login password is set (login_password)"
        )
        return f"{where}; remove it and log in with a key pair"


@dataclass(frozen=True, slots=True)
class NoKeyPair(LintFact):
    rule = "TS013"
    summary = "a Lingjun node group names no key pair"

    def text(self) -> str:
        return "no key pair is set; set key_pair_name"


@dataclass(frozen=True, slots=True)
class PublicBandwidth(LintFact):
    rule = "TS014"
    summary = "an ECS instance has internet_max_bandwidth_out over 0 (a public IP)"
    bandwidth: float  # Mbit/s, as declared

    def text(self) -> str:
        return (
            f"internet_max_bandwidth_out={self.bandwidth:g} gives the node a public IP; set it to 0 and "
            "reach the internet through the NAT gateway"
        )


@dataclass(frozen=True, slots=True)
class PublicIpAllocated(LintFact):
    rule = "TS014"
    summary = "an ECS instance sets allocate_public_ip"

    def text(self) -> str:
        return "allocate_public_ip=True gives the node a public IP; remove it"


@dataclass(frozen=True, slots=True)
class EipOnNode(LintFact):
    rule = "TS014"
    summary = "an ecs.EipAssociation binds an EIP to an ECS instance or a network interface"
    instance_type: str | None  # as declared (None: unset, the provider's default EcsInstance)

    def text(self) -> str:
        target = (
            "an ECS instance (the default instance_type)"
            if self.instance_type is None
            else self.instance_type
        )
        return (
            f"binds an EIP to {target}, giving a node a public IP; bind EIPs to the NAT gateway "
            "(instance_type='Nat')"
        )


# -- checks


@check("TS010")
def _system_disk_encrypted(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(INSTANCE):
        encrypted = input_of(r, "systemDiskEncrypted")
        if encrypted is not True:
            yield r, SystemDiskPlain(encrypted if isinstance(encrypted, bool) else None)


@check("TS011")
def _data_disks_encrypted(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(INSTANCE):
        disks = input_of(r, "dataDisks", [])
        for i, disk in enumerate(disks if isinstance(disks, list) else []):
            if not isinstance(disk, Mapping) or disk.get("encrypted") is not True:
                yield r, DataDiskPlain(i)
    for r in ix.of(*DISKS):
        if input_of(r, "encrypted") is not True:
            yield r, DiskPlain()


@check("TS012")
def _metadata_hardened(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(INSTANCE):
        if str(input_of(r, "httpEndpoint", "enabled")).lower() == "disabled":
            continue  # no metadata service at all: nothing to steal
        tokens = input_of(r, "httpTokens")
        if tokens != "required":
            yield r, MetadataNormalMode(None if tokens is None else str(tokens))


def _eflo_passwords(r: Resource) -> Iterator[str]:
    """Where a Lingjun resource's inputs set a login password ('' for its own login_password)."""
    if input_of(r, "loginPassword"):
        yield ""
    for group_key in ("nodes", "nodeGroups"):
        for i, item in enumerate(input_of(r, group_key) or []):
            if not isinstance(item, Mapping):
                continue
            if item.get("loginPassword"):
                yield f"{group_key}[{i}]"
            for j, node in enumerate(item.get("nodes") or []):
                if isinstance(node, Mapping) and node.get("loginPassword"):
                    yield f"{group_key}[{i}].nodes[{j}]"


@check("TS013")
def _key_pair_login(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(INSTANCE):  # no key_name is fine: access through Cloud Assistant
        for key, arg in (("password", "password"), ("kmsEncryptedPassword", "kms_encrypted_password")):
            if input_of(r, key):
                yield r, LoginPassword(arg)
        if input_of(r, "passwordInherit") is True:
            yield r, PasswordInherited()
    for r in ix.of(EFLO_NODE, EFLO_NODE_GROUP, EFLO_CLUSTER):
        yield from ((r, EfloLoginPassword(path)) for path in _eflo_passwords(r))
    for r in ix.of(EFLO_NODE_GROUP):
        if not input_of(r, "keyPairName"):
            yield r, NoKeyPair()


@check("TS014")
def _no_public_ip(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(INSTANCE):
        bandwidth = input_of(r, "internetMaxBandwidthOut", 0)
        if isinstance(bandwidth, (int, float)) and bandwidth > 0:
            yield r, PublicBandwidth(float(bandwidth))
        if input_of(r, "allocatePublicIp") is True:
            yield r, PublicIpAllocated()
    for r in ix.of(EIP_ASSOCIATION):
        kind = input_of(r, "instanceType")
        if kind is None or kind in ("EcsInstance", "NetworkInterface"):
            yield r, EipOnNode(kind)
