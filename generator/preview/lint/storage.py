"""The storage part's rules (TS015 to TS019, TS021): the shared file system and its filesets survive a destroy and
encrypt at rest, its exports admit only private networks, and its descriptions are ones the NAS API accepts."""

from __future__ import annotations

from collections.abc import Iterator

from generator.preview.lint.graph import Index, Resource, check, input_of, not_kept
from generator.preview.lint.network import is_private, parse_network
from generator.render.describe import NAS_DESCRIPTION, NAS_DESCRIPTION_RULE

# Resource type tokens (pulumi_alicloud 4.0.0).
NAS_FS = "alicloud:nas/fileSystem:FileSystem"
NAS_ACCESS_GROUP = "alicloud:nas/accessGroup:AccessGroup"
NAS_ACCESS_RULE = "alicloud:nas/accessRule:AccessRule"
NAS_EXPORTS = ("alicloud:nas/mountTarget:MountTarget", "alicloud:nas/protocolMountTarget:ProtocolMountTarget")
NAS_FILESET = "alicloud:nas/fileset:Fileset"
# NAS/CPFS types whose description the API restricts to letters, digits, ':', '_' and '-' (TS021).
NAS_DESCRIBED = (
    NAS_FS,
    "alicloud:nas/protocolService:ProtocolService",
    "alicloud:nas/protocolMountTarget:ProtocolMountTarget",
    "alicloud:nas/dataFlow:DataFlow",
    NAS_FILESET,
    NAS_ACCESS_GROUP,
)

DEFAULT_VPC_GROUP = "DEFAULT_VPC_GROUP_NAME"


@check("TS015")
def _file_system_kept(ix: Index) -> Iterator[tuple[Resource, str]]:
    for r in ix.of(NAS_FS):
        if not_kept(r):
            yield r, f"the file system would not survive a destroy: it lacks {' and '.join(not_kept(r))}"


def _open_sources(rule: Resource) -> list[str]:
    out = []
    for cidr in (input_of(rule, "sourceCidrIp"), input_of(rule, "ipv6SourceCidrIp")):
        if cidr is None:
            continue
        net = parse_network(cidr)
        if net is None or not is_private(net):
            out.append(str(cidr))
    return out


@check("TS016")
def _access_rules_private(ix: Index) -> Iterator[tuple[Resource, str]]:
    for r in ix.of(NAS_ACCESS_RULE):
        for cidr in _open_sources(r):
            yield (
                r,
                (
                    f"access group {input_of(r, 'accessGroupName', '?')!s} admits {cidr}, which is not a private "
                    "network; admit the cluster VPC's CIDR"
                ),
            )


@check("TS017")
def _exports_not_open(ix: Index) -> Iterator[tuple[Resource, str]]:
    groups = {input_of(g, "accessGroupName"): g for g in ix.of(NAS_ACCESS_GROUP)}
    rules = ix.of(NAS_ACCESS_RULE)
    for r in ix.of(*NAS_EXPORTS):
        if str(input_of(r, "networkType", "Vpc")).lower() == "classic":
            yield r, "the export is on the classic network, shared with other tenants; use network_type='Vpc'"
        name = input_of(r, "accessGroupName", DEFAULT_VPC_GROUP)
        if name == DEFAULT_VPC_GROUP:
            continue
        group = groups.get(name)
        if group is None:
            yield (
                r,
                (
                    f"access group {name} is not declared in this program, so its rules cannot be checked; "
                    f"use {DEFAULT_VPC_GROUP} or declare the group and its rules here"
                ),
            )
            continue
        if str(input_of(group, "accessGroupType", "Vpc")).lower() == "classic":
            yield r, f"access group {name} is a classic-network group, open to other tenants; use a Vpc group"
        open_ = [
            c for rule in rules if input_of(rule, "accessGroupName") == name for c in _open_sources(rule)
        ]
        if open_:
            yield r, f"access group {name} admits {', '.join(open_)}, which is not private"


@check("TS018")
def _fileset_protected(ix: Index) -> Iterator[tuple[Resource, str]]:
    for r in ix.of(NAS_FILESET):
        missing = (
            [] if input_of(r, "deletionProtection") is True else ["deletion_protection=True"]
        ) + not_kept(r)
        if missing:
            yield r, f"the fileset could be deleted with its data: it lacks {' and '.join(missing)}"


@check("TS019")
def _nas_encrypted(ix: Index) -> Iterator[tuple[Resource, str]]:
    for r in ix.of(NAS_FS):
        kind = str(input_of(r, "fileSystemType", "standard")).lower()
        if kind.startswith("cpfs"):
            continue
        if input_of(r, "encryptType", 0) not in (1, 2):
            yield (
                r,
                (
                    f"the {kind} file system is not encrypted (encrypt_type={input_of(r, 'encryptType', 0)}); "
                    "set encrypt_type=1 (NAS-managed key) or 2 (KMS key)"
                ),
            )


@check("TS021")
def _nas_descriptions(ix: Index) -> Iterator[tuple[Resource, str]]:
    for r in ix.of(*NAS_DESCRIBED):
        text = r.inputs.get("description")
        if isinstance(text, str) and not NAS_DESCRIPTION.fullmatch(text):
            yield (
                r,
                (
                    f"description {text!r} would be refused by the NAS API: it takes {NAS_DESCRIPTION_RULE}; "
                    "the templates write it through the desc_nas filter"
                ),
            )
