"""The lint rules' checks: one function per rule id, each reading the whole resource graph for violations.

A check takes the graph (some rules relate resources, e.g. a bucket and its ACL) and yields (resource,
message) pairs; :func:`generator.preview.lint.lint_graph` runs every registered check and turns its pairs into
findings with the rule's severity. The rules (ids, severities, titles, rationales) are spec vocabulary in
:mod:`generator.spec.rules`; every rule there has exactly one check here.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from generator.render.describe import NAS_DESCRIPTION, NAS_DESCRIPTION_RULE
from generator.spec.rules import RULES

# Resource type tokens (pulumi_alicloud 4.0.0).
SG_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
INSTANCE = "alicloud:ecs/instance:Instance"
EFLO_NODE = "alicloud:eflo/node:Node"
EFLO_NODE_GROUP = "alicloud:eflo/nodeGroup:NodeGroup"
EFLO_CLUSTER = "alicloud:eflo/cluster:Cluster"
DISKS = ("alicloud:ecs/disk:Disk", "alicloud:ecs/ecsDisk:EcsDisk")
EIP_ASSOCIATION = "alicloud:ecs/eipAssociation:EipAssociation"
BUCKET = "alicloud:oss/bucket:Bucket"
BUCKET_ACL = "alicloud:oss/bucketAcl:BucketAcl"
BUCKET_PAB = "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock"
ACCOUNT_PAB = "alicloud:oss/accountPublicAccessBlock:AccountPublicAccessBlock"
BUCKET_VERSIONING = "alicloud:oss/bucketVersioning:BucketVersioning"
BUCKET_SSE = "alicloud:oss/bucketServerSideEncryption:BucketServerSideEncryption"
RAM_POLICY = "alicloud:ram/policy:Policy"
RAM_ATTACHMENTS = ("alicloud:ram/rolePolicyAttachment:RolePolicyAttachment",
                   "alicloud:ram/userPolicyAttachment:UserPolicyAttachment",
                   "alicloud:ram/groupPolicyAttachment:GroupPolicyAttachment")
NAS_FS = "alicloud:nas/fileSystem:FileSystem"
NAS_ACCESS_GROUP = "alicloud:nas/accessGroup:AccessGroup"
NAS_ACCESS_RULE = "alicloud:nas/accessRule:AccessRule"
NAS_EXPORTS = ("alicloud:nas/mountTarget:MountTarget", "alicloud:nas/protocolMountTarget:ProtocolMountTarget")
NAS_FILESET = "alicloud:nas/fileset:Fileset"
# NAS/CPFS types whose description the API restricts to letters, digits, ':', '_' and '-' (TS021).
NAS_DESCRIBED = (NAS_FS, "alicloud:nas/protocolService:ProtocolService",
                 "alicloud:nas/protocolMountTarget:ProtocolMountTarget", "alicloud:nas/dataFlow:DataFlow",
                 NAS_FILESET, NAS_ACCESS_GROUP)

DEFAULT_VPC_GROUP = "DEFAULT_VPC_GROUP_NAME"
SSE_ALGORITHMS = ("AES256", "KMS", "SM4")
PRIVATE_NETWORKS = tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"))


class _Resource(Protocol):
    """What the checks read from a resource (``mockrun.Resource`` has it); read-only, so frozen types fit."""

    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def inputs(self) -> Mapping[str, Any]: ...
    @property
    def protect(self) -> bool: ...
    @property
    def retain_on_delete(self) -> bool: ...


# A check takes the whole graph (some rules relate resources, e.g. a bucket and its ACL) and yields
# (resource, message) pairs; lint_graph turns them into Findings with the rule's severity.
_Check = Callable[["_Index"], Iterable[tuple[_Resource, str]]]
_CHECKS: dict[str, _Check] = {}


def _check(rule_id: str) -> Callable[[_Check], _Check]:
    def register(fn: _Check) -> _Check:
        assert rule_id in RULES, rule_id
        _CHECKS[rule_id] = fn
        return fn
    return register


class _Index:
    """The graph's resources grouped by type, in registration order."""

    def __init__(self, resources: Iterable[_Resource]) -> None:
        self.resources = list(resources)
        self.order = {id(r): i for i, r in enumerate(self.resources)}

    def of(self, *types: str) -> list[_Resource]:
        return [r for r in self.resources if r.type in types]


def _in(r: _Resource, key: str, default: Any = None) -> Any:
    value = r.inputs.get(key, default)
    return default if value is None else value


def _network(text: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return None


def _is_private(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    return any(net.version == p.version and net.subnet_of(p) for p in PRIVATE_NETWORKS)  # type: ignore[arg-type]


def _sg_ingress_sources(r: _Resource) -> list[str]:
    """CIDR sources of an accepting ingress rule (a drop rule or an egress rule admits nothing)."""
    if str(_in(r, "type", "ingress")).lower() != "ingress" or str(_in(r, "policy", "accept")).lower() == "drop":
        return []
    return [c for c in (_in(r, "cidrIp"), _in(r, "ipv6CidrIp")) if isinstance(c, str) and c]


def _covers_port(r: _Resource, port: int) -> bool:
    protocol = str(_in(r, "ipProtocol", "all")).lower()
    if protocol not in ("tcp", "all"):
        return False
    low, _, high = str(_in(r, "portRange", "-1/-1")).partition("/")
    try:
        lo, hi = int(low), int(high or low)
    except ValueError:
        return True  # unreadable: assume the worst
    return lo == -1 or lo <= port <= hi


# The widest public source an ingress rule may name (TS001, docs/lint.md). Assumption (a judgement of what "one
# named network" means, not a provider rule): an IPv4 prefix shorter than /8 is wider than the unit in which IANA
# hands IPv4 space to the regional registries (https://www.iana.org/assignments/ipv4-address-space lists /8
# blocks), more than 16.7 million addresses; an IPv6 prefix shorter than /32 is wider than the usual allocation a
# regional registry makes to an ISP (RIPE NCC IPv6 policy, ripe-589 and its successors, "minimum allocation"), so
# it spans many organisations. Private ranges (10/8, 172.16/12, 192.168/16, fc00::/7) are not the internet.
WIDEST_PUBLIC_PREFIX = {4: 8, 6: 32}


def _from_anywhere(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> str:
    """Why ``net`` counts as open to the internet ('' if it does not): everything, or a very wide public range."""
    if net.prefixlen == 0:
        return "that is from anywhere"
    if net.prefixlen < WIDEST_PUBLIC_PREFIX[net.version] and not _is_private(net):
        share = f"1/{2 ** net.prefixlen:,}" if net.prefixlen < 16 else "a large part"
        return (f"{share} of the {'IPv4' if net.version == 4 else 'IPv6'} address space (a prefix shorter than "
                f"/{WIDEST_PUBLIC_PREFIX[net.version]} names no one network)")
    return ""


@_check("TS001")
def _open_ingress(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(SG_RULE):
        for cidr in _sg_ingress_sources(r):
            net = _network(cidr)
            why = _from_anywhere(net) if net is not None else ""
            if why:
                yield r, (f"admits {_in(r, 'ipProtocol', 'all')} port {_in(r, 'portRange', '-1/-1')} from {cidr}, "
                          f"{why}; name the networks that need access (network.admin_cidrs)")


@_check("TS002")
def _ssh_ingress(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(SG_RULE):
        if not _covers_port(r, 22):
            continue
        for cidr in _sg_ingress_sources(r):
            yield r, f"SSH (port 22) is reachable from {cidr}; check that this network is meant to log in to the nodes"


def _bucket_companions(ix: _Index, bucket: _Resource, types: str | tuple[str, ...]) -> list[_Resource]:
    """Resources configuring ``bucket`` (matched by bucket name, which the mock runtime resolves)."""
    name = _in(bucket, "bucket")
    types = (types,) if isinstance(types, str) else types
    return [r for r in ix.of(*types) if name is not None and _in(r, "bucket") == name]


@_check("TS003")
def _bucket_acl(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for b in ix.of(BUCKET):
        acls = [(f"oss.BucketAcl {a.name}", _in(a, "acl")) for a in _bucket_companions(ix, b, BUCKET_ACL)]
        if _in(b, "acl") is not None:
            acls.append(("the bucket's own acl", _in(b, "acl")))
        public = [f"{where} is {acl}" for where, acl in acls if acl != "private"]
        if public:
            yield b, f"bucket {_in(b, 'bucket', b.name)!s} is not private: {'; '.join(public)}"
        elif not acls:
            yield b, (f"bucket {_in(b, 'bucket', b.name)!s} has no private ACL; declare an oss.BucketAcl "
                      "with acl='private' for it")


@_check("TS004")
def _bucket_public_access_block(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    account_blocked = any(_in(a, "blockPublicAccess") is True for a in ix.of(ACCOUNT_PAB))
    for b in ix.of(BUCKET):
        blocks = _bucket_companions(ix, b, BUCKET_PAB)
        if account_blocked or any(_in(p, "blockPublicAccess") is True for p in blocks):
            continue
        yield b, (f"bucket {_in(b, 'bucket', b.name)!s} does not block public access; declare an "
                  "oss.BucketPublicAccessBlock with block_public_access=True for it")


@_check("TS005")
def _bucket_versioning(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for b in ix.of(BUCKET):
        inline = _in(b, "versioning", {})
        statuses = [inline.get("status") if isinstance(inline, Mapping) else None]
        statuses += [_in(v, "status") for v in _bucket_companions(ix, b, BUCKET_VERSIONING)]
        if "Enabled" not in statuses:
            yield b, (f"bucket {_in(b, 'bucket', b.name)!s} does not keep versions; set "
                      "versioning=BucketVersioningArgs(status='Enabled')")


@_check("TS006")
def _bucket_encryption(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for b in ix.of(BUCKET):
        inline = _in(b, "serverSideEncryptionRule", {})
        algorithms = [inline.get("sseAlgorithm") if isinstance(inline, Mapping) else None]
        algorithms += [_in(s, "sseAlgorithm") for s in _bucket_companions(ix, b, BUCKET_SSE)]
        if not any(a in SSE_ALGORITHMS for a in algorithms):
            yield b, (f"bucket {_in(b, 'bucket', b.name)!s} does not encrypt objects at rest; set "
                      "server_side_encryption_rule with sse_algorithm KMS (or AES256)")


def _not_kept(r: _Resource) -> list[str]:
    missing = []
    if not r.protect:
        missing.append("protect=True")
    if not r.retain_on_delete:
        missing.append("retain_on_delete=True")
    return missing


@_check("TS007")
def _bucket_kept(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for b in ix.of(BUCKET):
        problems = [f"it lacks {' and '.join(_not_kept(b))}"] if _not_kept(b) else []
        if _in(b, "forceDestroy") is True:
            problems.append("force_destroy=True would delete every object with it")
        if problems:
            yield b, f"bucket {_in(b, 'bucket', b.name)!s} would not survive a destroy: {'; '.join(problems)}"


# Separate resources that secure a bucket; a bucket that survives a destroy needs them to survive it too.
BUCKET_SECURING = {BUCKET_ACL: "oss.BucketAcl", BUCKET_PAB: "oss.BucketPublicAccessBlock",
                   BUCKET_VERSIONING: "oss.BucketVersioning", BUCKET_SSE: "oss.BucketServerSideEncryption"}


@_check("TS020")
def _bucket_security_kept(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for b in ix.of(BUCKET):
        if not (b.protect or b.retain_on_delete):
            continue  # a bucket that does not survive a destroy is TS007's finding
        for r in _bucket_companions(ix, b, tuple(BUCKET_SECURING)):
            if _not_kept(r):
                yield r, (f"{BUCKET_SECURING[r.type]} {r.name} of the kept bucket {_in(b, 'bucket', b.name)!s} "
                          f"lacks {' and '.join(_not_kept(r))}: a destroy that keeps the bucket would delete it")


def _policy_document(r: _Resource) -> tuple[list[Mapping[str, Any]], str]:
    """The Allow statements of a RAM policy, or an explanation of why the document cannot be read."""
    raw = _in(r, "policyDocument", _in(r, "document"))
    if raw is None:
        statements = _in(r, "statements")  # deprecated inline form: [{effect, actions, resources}]
        if isinstance(statements, list):
            return [{"Effect": s.get("effect", "Allow"), "Action": s.get("actions", []),
                     "Resource": s.get("resources", [])} for s in statements if isinstance(s, Mapping)
                    and str(s.get("effect", "Allow")).lower() == "allow"], ""
        return [], ""  # unknown until deploy (computed from another resource): nothing to check offline
    try:
        doc = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as e:
        return [], f"its policy document is not JSON ({e})"
    body = doc.get("Statement", []) if isinstance(doc, Mapping) else None
    if isinstance(body, Mapping):
        body = [body]
    if not isinstance(body, list):
        return [], "its policy document has no Statement list"
    return [s for s in body if isinstance(s, Mapping) and str(s.get("Effect", "")).lower() == "allow"], ""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []


def _service_wide(action: str) -> bool:
    """``ram:*``, ``oss:*``, ``*:*``: every action of a service (a product code, a colon, and only ``*`` after it)."""
    service, colon, verb = action.strip().partition(":")
    return bool(colon) and bool(service) and set(verb) == {"*"}


def _every_resource_of_service(resource: str) -> bool:
    """``acs:ram:*:*:*``, ``acs:ecs:*:*:*/*``, ``acs:*:*:*:*``: an ARN whose region, account and resource parts
    are all wildcards (or empty), so it names every resource of the service in every region and account. OSS is
    left to TS009, which reads its bucket."""
    parts = resource.strip().split(":", 4)
    if len(parts) < 5 or parts[0] != "acs" or parts[1] == "oss":  # OSS resources are TS009's (one bucket)
        return False
    return all(not part.strip("*/") for part in parts[2:])


@_check("TS008")
def _ram_wildcards(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(RAM_POLICY):
        statements, unreadable = _policy_document(r)
        if unreadable:
            yield r, f"policy {_in(r, 'policyName', r.name)!s} cannot be checked: {unreadable}"
        for s in statements:
            policy = _in(r, "policyName", r.name)
            for action in _strings(s.get("Action")):
                if action.strip() == "*":
                    yield r, f"policy {policy!s} allows every action ('*'); list the actions it needs"
                elif _service_wide(action):
                    yield r, (f"policy {policy!s} allows every action of a service ('{action}'); list the actions "
                              "it needs")
            for resource in _strings(s.get("Resource")):
                if resource.strip() == "*":
                    yield r, f"policy {policy!s} allows every resource ('*'); name the resources"
                elif _every_resource_of_service(resource):
                    yield r, (f"policy {policy!s} allows every resource of a service ('{resource}'); name the "
                              "resources")
            for key in ("NotAction", "NotResource"):
                if key in s:
                    yield r, (f"policy {_in(r, 'policyName', r.name)!s} allows with {key}, which grants everything "
                              "not listed; use Action and Resource")
    for r in ix.of(*RAM_ATTACHMENTS):
        name = str(_in(r, "policyName", ""))
        if str(_in(r, "policyType", "")).lower() == "system" and (
                name == "AdministratorAccess" or name.endswith("FullAccess")):
            yield r, f"attaches the system policy {name}, which allows every action of a service; write a custom policy"


def _oss_buckets(resource: str) -> str:
    """The bucket an ``acs:oss:region:account:bucket[/object]`` resource names ('' if it is not OSS)."""
    parts = resource.split(":", 4)
    if len(parts) < 5 or parts[0] != "acs" or parts[1] != "oss":
        return ""
    return parts[4].split("/", 1)[0] or "*"


@_check("TS009")
def _ram_one_bucket(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(RAM_POLICY):
        statements, _ = _policy_document(r)
        buckets: list[str] = []
        for s in statements:
            for resource in _strings(s.get("Resource")):
                bucket = _oss_buckets(resource)
                if bucket and any(ch in bucket for ch in "*?$"):
                    yield r, (f"policy {_in(r, 'policyName', r.name)!s} reaches every bucket matching '{resource}'; "
                              "name one bucket, e.g. acs:oss:*:*:<bucket>/<prefix>*")
                elif bucket and bucket not in buckets:
                    buckets.append(bucket)
        if len(buckets) > 1:
            yield r, (f"policy {_in(r, 'policyName', r.name)!s} reaches {len(buckets)} buckets "
                      f"({', '.join(buckets)}); give each bucket its own policy")


@_check("TS010")
def _system_disk_encrypted(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(INSTANCE):
        if _in(r, "systemDiskEncrypted") is not True:
            yield r, "the system disk is not encrypted; set system_disk_encrypted=True"


@_check("TS011")
def _data_disks_encrypted(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(INSTANCE):
        disks = _in(r, "dataDisks", [])
        for i, disk in enumerate(disks if isinstance(disks, list) else []):
            if not isinstance(disk, Mapping) or disk.get("encrypted") is not True:
                yield r, f"data disk {i} is not encrypted; set encrypted=True on it"
    for r in ix.of(*DISKS):
        if _in(r, "encrypted") is not True:
            yield r, "the disk is not encrypted; set encrypted=True"


@_check("TS012")
def _metadata_hardened(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(INSTANCE):
        if str(_in(r, "httpEndpoint", "enabled")).lower() == "disabled":
            continue  # no metadata service at all: nothing to steal
        if _in(r, "httpTokens") != "required":
            yield r, (f"instance metadata is in normal mode (http_tokens={_in(r, 'httpTokens', 'unset')}); "
                      "set http_tokens='required'")


@_check("TS013")
def _key_pair_login(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(INSTANCE):  # no key_name is fine: access through Cloud Assistant
        for key, arg in (("password", "password"), ("kmsEncryptedPassword", "kms_encrypted_password")):
            if _in(r, key):
                yield r, f"a login password is set ({arg}); remove it and log in with the key pair"
        if _in(r, "passwordInherit") is True:
            yield r, "password_inherit=True keeps the image's password; remove it and log in with the key pair"
    for r in ix.of(EFLO_NODE, EFLO_NODE_GROUP, EFLO_CLUSTER):
        if _in(r, "loginPassword"):
            yield r, "a login password is set (login_password); remove it and log in with a key pair"
        for group_key in ("nodes", "nodeGroups"):
            for i, item in enumerate(_in(r, group_key) or []):
                if not isinstance(item, Mapping):
                    continue
                if item.get("loginPassword"):
                    yield r, f"{group_key}[{i}] sets a login password; remove it and log in with a key pair"
                for j, node in enumerate(item.get("nodes") or []):
                    if isinstance(node, Mapping) and node.get("loginPassword"):
                        yield r, f"{group_key}[{i}].nodes[{j}] sets a login password; remove it"
    for r in ix.of(EFLO_NODE_GROUP):
        if not _in(r, "keyPairName"):
            yield r, "no key pair is set; set key_pair_name"


@_check("TS014")
def _no_public_ip(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(INSTANCE):
        bandwidth = _in(r, "internetMaxBandwidthOut", 0)
        if isinstance(bandwidth, (int, float)) and bandwidth > 0:
            yield r, (f"internet_max_bandwidth_out={bandwidth:g} gives the node a public IP; set it to 0 and "
                      "reach the internet through the NAT gateway")
        if _in(r, "allocatePublicIp") is True:
            yield r, "allocate_public_ip=True gives the node a public IP; remove it"
    for r in ix.of(EIP_ASSOCIATION):
        kind = _in(r, "instanceType")
        if kind is None or kind in ("EcsInstance", "NetworkInterface"):
            yield r, (f"binds an EIP to {'an ECS instance (the default instance_type)' if kind is None else kind}, "
                      "giving a node a public IP; bind EIPs to the NAT gateway (instance_type='Nat')")


@_check("TS015")
def _file_system_kept(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(NAS_FS):
        if _not_kept(r):
            yield r, f"the file system would not survive a destroy: it lacks {' and '.join(_not_kept(r))}"


def _open_sources(rule: _Resource) -> list[str]:
    out = []
    for cidr in (_in(rule, "sourceCidrIp"), _in(rule, "ipv6SourceCidrIp")):
        if cidr is None:
            continue
        net = _network(cidr)
        if net is None or not _is_private(net):
            out.append(str(cidr))
    return out


@_check("TS016")
def _access_rules_private(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(NAS_ACCESS_RULE):
        for cidr in _open_sources(r):
            yield r, (f"access group {_in(r, 'accessGroupName', '?')!s} admits {cidr}, which is not a private "
                      "network; admit the cluster VPC's CIDR")


@_check("TS017")
def _exports_not_open(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    groups = {_in(g, "accessGroupName"): g for g in ix.of(NAS_ACCESS_GROUP)}
    rules = ix.of(NAS_ACCESS_RULE)
    for r in ix.of(*NAS_EXPORTS):
        if str(_in(r, "networkType", "Vpc")).lower() == "classic":
            yield r, "the export is on the classic network, shared with other tenants; use network_type='Vpc'"
        name = _in(r, "accessGroupName", DEFAULT_VPC_GROUP)
        if name == DEFAULT_VPC_GROUP:
            continue
        group = groups.get(name)
        if group is None:
            yield r, (f"access group {name} is not declared in this program, so its rules cannot be checked; "
                      f"use {DEFAULT_VPC_GROUP} or declare the group and its rules here")
            continue
        if str(_in(group, "accessGroupType", "Vpc")).lower() == "classic":
            yield r, f"access group {name} is a classic-network group, open to other tenants; use a Vpc group"
        open_ = [c for rule in rules if _in(rule, "accessGroupName") == name for c in _open_sources(rule)]
        if open_:
            yield r, f"access group {name} admits {', '.join(open_)}, which is not private"


@_check("TS018")
def _fileset_protected(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(NAS_FILESET):
        missing = ([] if _in(r, "deletionProtection") is True else ["deletion_protection=True"]) + _not_kept(r)
        if missing:
            yield r, f"the fileset could be deleted with its data: it lacks {' and '.join(missing)}"


@_check("TS019")
def _nas_encrypted(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(NAS_FS):
        kind = str(_in(r, "fileSystemType", "standard")).lower()
        if kind.startswith("cpfs"):
            continue
        if _in(r, "encryptType", 0) not in (1, 2):
            yield r, (f"the {kind} file system is not encrypted (encrypt_type={_in(r, 'encryptType', 0)}); "
                      "set encrypt_type=1 (NAS-managed key) or 2 (KMS key)")


@_check("TS021")
def _nas_descriptions(ix: _Index) -> Iterator[tuple[_Resource, str]]:
    for r in ix.of(*NAS_DESCRIBED):
        text = r.inputs.get("description")
        if isinstance(text, str) and not NAS_DESCRIPTION.fullmatch(text):
            yield r, (f"description {text!r} would be refused by the NAS API: it takes {NAS_DESCRIPTION_RULE}; "
                      "the templates write it through the desc_nas filter")
