"""The storage part's rules (TS015 to TS019, TS021): the shared file system and its filesets survive a destroy
and encrypt at rest, its exports admit only private networks, and its descriptions are ones the NAS API
accepts."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from generator.preview.lint.fact import LintFact, settings
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


# -- facts


@dataclass(frozen=True, slots=True)
class FileSystemNotKept(LintFact):
    rule = "TS015"
    summary = "a NAS or CPFS file system lacks protect or retain_on_delete"
    missing: tuple[str, ...]  # the resource options it lacks: protect, retain_on_delete

    def text(self) -> str:
        return f"the file system would not survive a destroy: it lacks {settings(self.missing)}"


@dataclass(frozen=True, slots=True)
class AccessRulePublic(LintFact):
    rule = "TS016"
    summary = "a NAS access rule's source is not a private network"
    group: str | None  # access_group_name (None: unset)
    cidr: str  # the source as declared

    def text(self) -> str:
        return (
            f"access group {'?' if self.group is None else self.group} admits {self.cidr}, which is not a "
            "private network; admit the cluster VPC's CIDR"
        )


@dataclass(frozen=True, slots=True)
class ExportOnClassic(LintFact):
    rule = "TS017"
    summary = "a NAS or CPFS export is on the classic network"
    network_type: str  # as declared

    def text(self) -> str:
        return "the export is on the classic network, shared with other tenants; use network_type='Vpc'"


@dataclass(frozen=True, slots=True)
class GroupUndeclared(LintFact):
    rule = "TS017"
    summary = "an export's access group is not declared in the program, so its rules cannot be checked"
    group: str

    def text(self) -> str:
        return (
            f"access group {self.group} is not declared in this program, so its rules cannot be checked; use "
            f"{DEFAULT_VPC_GROUP} or declare the group and its rules here"
        )


@dataclass(frozen=True, slots=True)
class GroupClassic(LintFact):
    rule = "TS017"
    summary = "an export's access group is a classic-network group"
    group: str

    def text(self) -> str:
        return f"access group {self.group} is a classic-network group, open to other tenants; use a Vpc group"


@dataclass(frozen=True, slots=True)
class GroupAdmitsPublic(LintFact):
    rule = "TS017"
    summary = "an export's access group has rules whose sources are not private"
    group: str
    cidrs: tuple[str, ...]  # the sources that are not private, as declared

    def text(self) -> str:
        return f"access group {self.group} admits {', '.join(self.cidrs)}, which is not private"


@dataclass(frozen=True, slots=True)
class FilesetDeletable(LintFact):
    rule = "TS018"
    summary = "a fileset lacks deletion_protection, protect or retain_on_delete"
    missing: tuple[
        str, ...
    ]  # what it lacks: deletion_protection (an input), protect, retain_on_delete (options)

    def text(self) -> str:
        return f"the fileset could be deleted with its data: it lacks {settings(self.missing)}"


@dataclass(frozen=True, slots=True)
class NasPlain(LintFact):
    rule = "TS019"
    summary = "a standard or Extreme NAS file system's encrypt_type is neither 1 nor 2"
    kind: str  # file_system_type, lower case
    encrypt_type: int | str  # as declared (0 when unset)

    def text(self) -> str:
        return (
            f"the {self.kind} file system is not encrypted (encrypt_type={self.encrypt_type}); set "
            "encrypt_type=1 (NAS-managed key) or 2 (KMS key)"
        )


@dataclass(frozen=True, slots=True)
class DescriptionRefused(LintFact):
    rule = "TS021"
    summary = "a NAS or CPFS resource's description is one the NAS API refuses"
    description: str

    def text(self) -> str:
        return (
            f"description {self.description!r} would be refused by the NAS API: it takes "
            f"{NAS_DESCRIPTION_RULE}; the templates write it through the desc_nas filter"
        )


# -- checks


@check("TS015")
def _file_system_kept(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(NAS_FS):
        if not_kept(r):
            yield r, FileSystemNotKept(not_kept(r))


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
def _access_rules_private(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(NAS_ACCESS_RULE):
        group = input_of(r, "accessGroupName")
        for cidr in _open_sources(r):
            yield r, AccessRulePublic(None if group is None else str(group), cidr)


@check("TS017")
def _exports_not_open(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    groups = {input_of(g, "accessGroupName"): g for g in ix.of(NAS_ACCESS_GROUP)}
    rules = ix.of(NAS_ACCESS_RULE)
    for r in ix.of(*NAS_EXPORTS):
        network = str(input_of(r, "networkType", "Vpc"))
        if network.lower() == "classic":
            yield r, ExportOnClassic(network)
        name = input_of(r, "accessGroupName", DEFAULT_VPC_GROUP)
        if name == DEFAULT_VPC_GROUP:
            continue
        group = groups.get(name)
        if group is None:
            yield r, GroupUndeclared(str(name))
            continue
        if str(input_of(group, "accessGroupType", "Vpc")).lower() == "classic":
            yield r, GroupClassic(str(name))
        open_ = [
            c for rule in rules if input_of(rule, "accessGroupName") == name for c in _open_sources(rule)
        ]
        if open_:
            yield r, GroupAdmitsPublic(str(name), tuple(open_))


@check("TS018")
def _fileset_protected(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(NAS_FILESET):
        unprotected = () if input_of(r, "deletionProtection") is True else ("deletion_protection",)
        if unprotected + not_kept(r):
            yield r, FilesetDeletable(unprotected + not_kept(r))


@check("TS019")
def _nas_encrypted(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(NAS_FS):
        kind = str(input_of(r, "fileSystemType", "standard")).lower()
        if kind.startswith("cpfs"):
            continue
        encrypt_type = input_of(r, "encryptType", 0)
        if encrypt_type not in (1, 2):
            yield r, NasPlain(kind, encrypt_type if isinstance(encrypt_type, int) else str(encrypt_type))


@check("TS021")
def _nas_descriptions(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for r in ix.of(*NAS_DESCRIBED):
        text = r.inputs.get("description")
        if isinstance(text, str) and not NAS_DESCRIPTION.fullmatch(text):
            yield r, DescriptionRefused(text)
