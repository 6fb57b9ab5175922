"""The compute part's rules (TS010 to TS014): ECS and Lingjun nodes encrypt their disks, harden the metadata
service, log in with a key pair and have no public IP."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from generator.preview.lint.graph import Index, Resource, check, input_of

# Resource type tokens (pulumi_alicloud 4.0.0).
INSTANCE = "alicloud:ecs/instance:Instance"
EFLO_NODE = "alicloud:eflo/node:Node"
EFLO_NODE_GROUP = "alicloud:eflo/nodeGroup:NodeGroup"
EFLO_CLUSTER = "alicloud:eflo/cluster:Cluster"
DISKS = ("alicloud:ecs/disk:Disk", "alicloud:ecs/ecsDisk:EcsDisk")
EIP_ASSOCIATION = "alicloud:ecs/eipAssociation:EipAssociation"


@check("TS010")
def _system_disk_encrypted(ix: Index) -> Iterator[tuple[Resource, str]]:
    for r in ix.of(INSTANCE):
        if input_of(r, "systemDiskEncrypted") is not True:
            yield r, "the system disk is not encrypted; set system_disk_encrypted=True"


@check("TS011")
def _data_disks_encrypted(ix: Index) -> Iterator[tuple[Resource, str]]:
    for r in ix.of(INSTANCE):
        disks = input_of(r, "dataDisks", [])
        for i, disk in enumerate(disks if isinstance(disks, list) else []):
            if not isinstance(disk, Mapping) or disk.get("encrypted") is not True:
                yield r, f"data disk {i} is not encrypted; set encrypted=True on it"
    for r in ix.of(*DISKS):
        if input_of(r, "encrypted") is not True:
            yield r, "the disk is not encrypted; set encrypted=True"


@check("TS012")
def _metadata_hardened(ix: Index) -> Iterator[tuple[Resource, str]]:
    for r in ix.of(INSTANCE):
        if str(input_of(r, "httpEndpoint", "enabled")).lower() == "disabled":
            continue  # no metadata service at all: nothing to steal
        if input_of(r, "httpTokens") != "required":
            yield (
                r,
                (
                    f"instance metadata is in normal mode (http_tokens={input_of(r, 'httpTokens', 'unset')}); "
                    "set http_tokens='required'"
                ),
            )


@check("TS013")
def _key_pair_login(ix: Index) -> Iterator[tuple[Resource, str]]:
    for r in ix.of(INSTANCE):  # no key_name is fine: access through Cloud Assistant
        for key, arg in (("password", "password"), ("kmsEncryptedPassword", "kms_encrypted_password")):
            if input_of(r, key):
                yield r, f"a login password is set ({arg}); remove it and log in with the key pair"
        if input_of(r, "passwordInherit") is True:
            yield (
                r,
                "password_inherit=True keeps the image's password; remove it and log in with the key pair",
            )
    for r in ix.of(EFLO_NODE, EFLO_NODE_GROUP, EFLO_CLUSTER):
        if input_of(r, "loginPassword"):
            yield r, "a login password is set (login_password); remove it and log in with a key pair"
        for group_key in ("nodes", "nodeGroups"):
            for i, item in enumerate(input_of(r, group_key) or []):
                if not isinstance(item, Mapping):
                    continue
                if item.get("loginPassword"):
                    yield r, f"{group_key}[{i}] sets a login password; remove it and log in with a key pair"
                for j, node in enumerate(item.get("nodes") or []):
                    if isinstance(node, Mapping) and node.get("loginPassword"):
                        yield r, f"{group_key}[{i}].nodes[{j}] sets a login password; remove it"
    for r in ix.of(EFLO_NODE_GROUP):
        if not input_of(r, "keyPairName"):
            yield r, "no key pair is set; set key_pair_name"


@check("TS014")
def _no_public_ip(ix: Index) -> Iterator[tuple[Resource, str]]:
    for r in ix.of(INSTANCE):
        bandwidth = input_of(r, "internetMaxBandwidthOut", 0)
        if isinstance(bandwidth, (int, float)) and bandwidth > 0:
            yield (
                r,
                (
                    f"internet_max_bandwidth_out={bandwidth:g} gives the node a public IP; set it to 0 and "
                    "reach the internet through the NAT gateway"
                ),
            )
        if input_of(r, "allocatePublicIp") is True:
            yield r, "allocate_public_ip=True gives the node a public IP; remove it"
    for r in ix.of(EIP_ASSOCIATION):
        kind = input_of(r, "instanceType")
        if kind is None or kind in ("EcsInstance", "NetworkInterface"):
            yield (
                r,
                (
                    f"binds an EIP to {'an ECS instance (the default instance_type)' if kind is None else kind}, "
                    "giving a node a public IP; bind EIPs to the NAT gateway (instance_type='Nat')"
                ),
            )
