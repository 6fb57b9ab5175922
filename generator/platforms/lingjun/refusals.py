"""Why Lingjun refuses a spec (exit 2): one event class per problem of :mod:`generator.platforms.lingjun.rules` (the
validate stage) and of :mod:`generator.platforms.lingjun.plan` (a VPC too small, pausing Subscription nodes), each
with a stable code ``TSJ...`` (J for Lingjun; TSL is not used so as not to read as "lint"), the spec field it names
and typed fields, on the shared :class:`~generator.plan.refusals.Refusal` base. The message and the hint are
rendered from the fields here only, so the CLI prints what it always printed while tests and scripts read the code.

It exists apart from the rules because the words are data (``docs/codes.md`` lists every code; tests/test_codes.py
checks the table against :func:`codes`), and the rules read better as conditions only.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.plan.refusal import Refusal


@dataclass(frozen=True, slots=True)
class NotOffered(Refusal):
    code = "TSJ001"
    path = ("compute", "platform")
    summary = "the catalog does not offer Lingjun in the spec's region"
    region: str
    regions: tuple[str, ...]  # the regions that offer Lingjun

    def text(self) -> str:
        return f"Lingjun is not offered in {self.region} per the catalog"

    def hint(self) -> str:
        return f"Lingjun regions: {', '.join(self.regions) or 'none'}; or use platform: ecs"


@dataclass(frozen=True, slots=True)
class NoMachineType(Refusal):
    code = "TSJ002"
    path = ("compute", "platform")
    summary = "the catalog knows no Lingjun machine type in the spec's region"
    region: str
    regions: tuple[str, ...]  # the regions with a Lingjun machine type

    def text(self) -> str:
        return f"the catalog knows no Lingjun machine type in {self.region}"

    def hint(self) -> str:
        return "Lingjun regions with machine types: " + ", ".join(self.regions)


@dataclass(frozen=True, slots=True)
class NoHpnZone(Refusal):
    code = "TSJ003"
    path = ("zones",)
    summary = "no zone listed has a Lingjun HPN zone in the catalog"
    known: tuple[tuple[str, str], ...]  # (zone, HPN zone) the catalog knows in the region

    def text(self) -> str:
        return "no zone listed has a known Lingjun HPN zone in the catalog"

    def hint(self) -> str:
        zones = ", ".join(f"{z} (HPN {h})" for z, h in self.known)
        return f"zones with a known HPN zone: {zones}; or remove zones"


@dataclass(frozen=True, slots=True)
class NeedsImage(Refusal):
    code = "TSJ004"
    path = ("compute", "platform")
    summary = "platform lingjun without compute.image_id (a Lingjun image the provider cannot look up)"

    def text(self) -> str:
        return (
            "platform lingjun needs compute.image_id: Lingjun node groups boot a Lingjun image (an id like "
            "i190982651690986913088), not an ECS image, and the provider has no data source to look one up"
        )

    def hint(self) -> str:
        return (
            "set compute.image_id to an image listed in the PAI Lingjun console (node groups); "
            "the stack config trainstack:imageId overrides it at deploy time"
        )


@dataclass(frozen=True, slots=True)
class DataDiskUnencrypted(Refusal):
    code = "TSJ005"
    path = ("compute", "data_disk_gib")
    summary = "a data disk, which pulumi-alicloud 4.0.0 cannot encrypt on Lingjun nodes"
    gib: int

    def text(self) -> str:
        return (
            "Lingjun data disks cannot be encrypted with pulumi-alicloud 4.0.0 (eflo.Node data_disks take only "
            "category, performance level and size), and trainstack keeps every disk encrypted"
        )

    def hint(self) -> str:
        return "set compute.data_disk_gib: 0 and keep data in OSS"


@dataclass(frozen=True, slots=True)
class BareMetalAvoided(Refusal):
    code = "TSJ006"
    path = ("compute", "bare_metal")
    summary = "compute.bare_metal: avoid, and Lingjun nodes are bare-metal"

    def text(self) -> str:
        return "Lingjun nodes are bare-metal servers"

    def hint(self) -> str:
        return "set compute.bare_metal: any, or use platform: ecs"


@dataclass(frozen=True, slots=True)
class CpfsUnmountable(Refusal):
    code = "TSJ007"
    path = ("storage", "shared")
    summary = "storage.shared: cpfs, which Lingjun nodes cannot mount (and bmcpfs cannot be created)"

    def text(self) -> str:
        return (
            "Lingjun nodes cannot mount CPFS general-purpose file systems (they serve ECS), and CPFS for Lingjun "
            "(bmcpfs) cannot be created with pulumi-alicloud (nas.FileSystem has no bmcpfs type)"
        )

    def hint(self) -> str:
        return (
            "set storage.shared: none (or auto) and attach CPFS for Lingjun through PAI, or use platform: ecs"
        )


@dataclass(frozen=True, slots=True)
class ExtremeNasUnverified(Refusal):
    code = "TSJ008"
    path = ("storage", "shared")
    summary = "storage.shared: extreme-nas, whose mount from Lingjun nodes is unverified"

    def text(self) -> str:
        return (
            "trainstack renders no shared file system for Lingjun: an Extreme NAS mount target is a VPC endpoint "
            "and mounting it from Lingjun nodes is unverified"
        )

    def hint(self) -> str:
        return "set storage.shared: none (or auto); checkpoints still go to OSS"


@dataclass(frozen=True, slots=True)
class DatasetNeedsCpfs(Refusal):
    code = "TSJ009"
    path = ("storage", "dataset")
    summary = "a dataset import, which needs CPFS that Lingjun nodes cannot use"

    def text(self) -> str:
        return "importing a dataset from OSS needs CPFS (a fileset and a data flow), which Lingjun nodes cannot use here"

    def hint(self) -> str:
        return "remove storage.dataset and read the data from OSS, or import it into CPFS for Lingjun through PAI"


@dataclass(frozen=True, slots=True)
class NoSpot(Refusal):
    code = "TSJ010"
    path = ("spot", "enabled")
    summary = "spot.enabled, and Lingjun has no spot nodes"

    def text(self) -> str:
        return "Lingjun has no spot (preemptible) nodes: eflo.Node is billed Subscription or PayAsYouGo"

    def hint(self) -> str:
        return "set spot.enabled: false, or use platform: ecs for spot instances"


@dataclass(frozen=True, slots=True)
class VpcTooSmall(Refusal):
    code = "TSJ011"
    path = ("network", "vpc_cidr")
    summary = "half of network.vpc_cidr (the VPD) or the other half (the VPC) is too small for the nodes"
    vpc_cidr: str
    nodes: int
    bonds: int  # HPN addresses per node

    def text(self) -> str:
        return (
            f"{self.vpc_cidr} is too small for {self.nodes} Lingjun nodes: half of it is the VPD, which needs "
            f"{self.bonds} address(es) per node, and half the VPC"
        )

    def hint(self) -> str:
        return "use a larger range such as 10.0.0.0/16"


@dataclass(frozen=True, slots=True)
class PausedSubscription(Refusal):
    code = "TSJ012"
    path = ("compute", "paused")
    summary = "compute.paused on a machine type sold by subscription only"
    machine_type: str

    def text(self) -> str:
        return (
            f"{self.machine_type} is sold by subscription only, and Pulumi cannot release Subscription nodes: "
            "pausing would drop them from the state while they stay prepaid, and resuming would buy new ones"
        )

    def hint(self) -> str:
        return (
            "leave compute.paused false and stop the job instead, or choose a PayAsYouGo machine type "
            "(compute.instance_types)"
        )


def codes() -> list[type[Refusal]]:
    """Every Lingjun refusal class, by code (docs/codes.md lists them)."""
    found = {
        v
        for v in globals().values()
        if isinstance(v, type) and issubclass(v, Refusal) and v.code.startswith("TSJ")
    }
    return sorted(found, key=lambda c: c.code)
