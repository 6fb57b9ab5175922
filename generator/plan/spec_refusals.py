"""Why the spec check refuses a spec for its own combinations (:mod:`generator.plan.check`, exit 2): a storage
capacity or class the file system does not take, checkpoints and spot settings that contradict each other, container
images and the private registry login, lists with repeats, tag keys the checkpoint bucket cannot take, waivers of no
rule, and fields the platform does not honour. Codes ``TSC...`` follow :mod:`generator.plan.catalog_refusals`'s.

It exists apart from :mod:`generator.plan.catalog_refusals` because none of these needs the catalog: each reads the
spec alone (and :mod:`generator.spec.limits`).
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.errors import clip, excerpt
from generator.plan import catalog_refusals
from generator.plan.catalog_refusals import near_or
from generator.plan.refusal import Refusal
from generator.spec import limits

_TAG_KEY_CHARS = "letters, digits, spaces and + - = . _ : /"


# -- storage


@dataclass(frozen=True, slots=True)
class CapacityOutOfRange(Refusal):
    code = "TSC016"
    path = ("storage", "capacity")
    summary = "storage.capacity is not a capacity the file system takes (generator/spec/limits.py)"
    kind: str  # "cpfs" or "extreme-nas"
    gib: float
    chosen: bool  # storage.shared: auto chose the file system

    def _words(self) -> tuple[str, str]:
        wrong = limits.capacity_problem(self.kind, self.gib)
        assert wrong is not None, (self.kind, self.gib)
        return wrong

    def text(self) -> str:
        what = "CPFS" if self.kind == "cpfs" else "Extreme NAS"
        return (f"storage.shared: auto chose {what}; " if self.chosen else "") + self._words()[0]

    def hint(self) -> str:
        return self._words()[1]


@dataclass(frozen=True, slots=True)
class DatasetOverCpfs(Refusal):
    code = "TSC017"
    path = ("storage", "dataset", "size")
    summary = "capacity: auto would need a CPFS capacity over the 1 PiB maximum for the dataset"
    size_bytes: int

    def _words(self) -> tuple[str, str]:
        wrong = limits.dataset_capacity_problem(self.size_bytes)
        assert wrong is not None, self.size_bytes
        return wrong

    def text(self) -> str:
        return self._words()[0]

    def hint(self) -> str:
        return self._words()[1]


@dataclass(frozen=True, slots=True)
class CapacityWithoutShared(Refusal):
    code = "TSC018"
    path = ("storage", "capacity")
    summary = "storage.capacity is set and storage.shared is none"

    def text(self) -> str:
        return "a capacity is set but storage.shared is none"

    def hint(self) -> str:
        return "remove capacity or choose a shared file system"


@dataclass(frozen=True, slots=True)
class StorageClassOfOther(Refusal):
    code = "TSC019"
    path = ("storage", "storage_class")
    summary = "storage.storage_class is a class of the other file system"
    storage_class: str
    shared: str  # "cpfs" or "extreme-nas"

    def text(self) -> str:
        if self.shared == "cpfs":
            return f"{self.storage_class} is an Extreme NAS class; CPFS takes advance_100 or advance_200"
        return f"{self.storage_class} is a CPFS class; Extreme NAS takes standard or advance"


@dataclass(frozen=True, slots=True)
class DatasetNeedsCpfs(Refusal):
    code = "TSC020"
    path = ("storage", "dataset")
    summary = "a dataset import without CPFS, on a platform that does not mount OSS"

    def text(self) -> str:
        return "importing a dataset from OSS needs CPFS (a fileset and a data flow)"

    def hint(self) -> str:
        return "set storage.shared: cpfs or auto"


# -- checkpoints and spot


@dataclass(frozen=True, slots=True)
class CheckpointRegion(Refusal):
    code = "TSC022"
    path = ("checkpoints", "region")
    summary = "the checkpoint bucket's region is not the compute region"
    region: str
    given: str

    def text(self) -> str:
        return f"the checkpoint bucket must be in the compute region {self.region}, not {excerpt(self.given)}"

    def hint(self) -> str:
        return "cross-region writes are slow and billed; remove checkpoints.region"


@dataclass(frozen=True, slots=True)
class SpotWithoutCheckpoints(Refusal):
    code = "TSC023"
    path = ("spot", "enabled")
    summary = "spot instances with checkpoints disabled"

    def text(self) -> str:
        return (
            "spot instances need checkpoints: a reclaimed node loses its work unless training resumes from a "
            "checkpoint"
        )

    def hint(self) -> str:
        return "set checkpoints.enabled: true or spot.enabled: false"


@dataclass(frozen=True, slots=True)
class BucketWithoutCheckpoints(Refusal):
    code = "TSC024"
    path = ("checkpoints", "bucket")
    summary = "a checkpoint bucket is named and checkpoints are disabled"

    def text(self) -> str:
        return "a bucket is named but checkpoints are disabled"


@dataclass(frozen=True, slots=True)
class MilestonesWithoutKeepLast(Refusal):
    code = "TSC025"
    path = ("checkpoints", "milestones")
    summary = "checkpoints.milestones without checkpoints.keep_last"

    def text(self) -> str:
        return (
            "milestones are checkpoints kept beside checkpoints.keep_last's window, and without keep_last every "
            "checkpoint is kept already"
        )

    def hint(self) -> str:
        return "set checkpoints.keep_last (e.g. 3), or remove checkpoints.milestones"


@dataclass(frozen=True, slots=True)
class OnDemandBaseOverNodes(Refusal):
    code = "TSC026"
    path = ("spot", "on_demand_base")
    summary = "spot.on_demand_base is more than the fixed node count"
    base: int
    nodes: int

    def text(self) -> str:
        return f"on_demand_base ({self.base}) is more than the {self.nodes} nodes"


# -- container images and the private registry


@dataclass(frozen=True, slots=True)
class RegistryOtherRegion(Refusal):
    code = "TSC027"
    path = ("compute", "container_image")
    summary = "the container image's registry is in another region"
    registry_region: str
    region: str

    def text(self) -> str:
        return (
            f"the registry is in {self.registry_region}, not in {self.region}: "
            "nodes pull through the registry's VPC endpoint, which serves its own region only"
        )

    def hint(self) -> str:
        return f"push the image to a registry in {self.region} (ACR replicates across regions)"


@dataclass(frozen=True, slots=True)
class ImageNeedsDocker(Refusal):
    code = "TSC028"
    path = ("compute", "container_image")
    summary = "a container image on the default node image, which has no Docker"

    def text(self) -> str:
        return (
            "a container image needs a node image with Docker and the NVIDIA Container Toolkit; the default "
            "image (Alibaba Cloud Linux 3) has neither and node-init.sh installs neither"
        )

    def hint(self) -> str:
        return (
            "set compute.image_id to an image that has them, or remove compute.container_image to train with the "
            "PyTorch node-init.sh installs"
        )


@dataclass(frozen=True, slots=True)
class LoginWithoutImage(Refusal):
    code = "TSC029"
    path = ("compute", "container_registry_instance")
    summary = "a registry instance to log in to without a container image"

    def text(self) -> str:
        return "a registry instance to log in to, but no compute.container_image to pull from it"

    def hint(self) -> str:
        return "set compute.container_image to the private image, or remove this line"


@dataclass(frozen=True, slots=True)
class LoginPersonalEdition(Refusal):
    code = "TSC030"
    path = ("compute", "container_registry_instance")
    summary = "a registry login with a Personal Edition image"

    def text(self) -> str:
        return (
            "nodes log in only to Enterprise Edition instances (INSTANCE-registry[-vpc].REGION.cr.aliyuncs.com); "
            "compute.container_image is Personal Edition"
        )

    def hint(self) -> str:
        return (
            "push the image to an Enterprise Edition instance, or make the Personal Edition repository public and "
            "remove this line"
        )


@dataclass(frozen=True, slots=True)
class LoginWithoutRole(Refusal):
    code = "TSC031"
    path = ("compute", "container_registry_instance")
    summary = "a registry login on a platform whose nodes have no RAM role"
    platform: str

    def text(self) -> str:
        return (
            f"only ECS nodes log in to a private registry, not platform {self.platform} (Lingjun nodes have no "
            "RAM role; PAI-DLC pulls the job's image itself, without this login)"
        )

    def hint(self) -> str:
        return "use an image the platform can pull without a login, or platform: ecs"


# -- lists, tags and waivers


@dataclass(frozen=True, slots=True)
class ListedTwice(Refusal):
    code = "TSC032"
    summary = "an item of zones, compute.instance_types or network.admin_cidrs is listed twice"
    at: tuple[str, ...]  # the list's path
    index: int
    what: str  # "zone", "instance type", "network"
    item: str
    first: int  # the index it is listed at first

    def where(self) -> tuple[str | int, ...]:
        return (*self.at, self.index)

    def text(self) -> str:
        return f"{self.what} {clip(self.item, 60)} is listed twice (also as item {self.first})"

    def hint(self) -> str:
        return "remove the repeated item; each may appear once"


@dataclass(frozen=True, slots=True)
class BucketTagKey(Refusal):
    code = "TSC033"
    path = ("tags",)
    summary = "a tag key the checkpoint bucket cannot take (OSS bucket tags are narrower)"
    key: str
    broken: str  # "length", "character" or "reserved"
    bad: str  # the first character OSS refuses ("" unless broken is "character")

    def where(self) -> tuple[str | int, ...]:
        return ("tags", self.key)

    def text(self) -> str:
        why = {
            "length": f"is {len(self.key)} characters; an OSS bucket tag key is at most {limits.OSS_TAG_KEY_MAX}",
            "character": f"contains {self.bad!r}; an OSS bucket tag key holds only {_TAG_KEY_CHARS}",
            "reserved": "starts with acs, which OSS reserves for bucket tags",
        }[self.broken]
        return (
            f"tag key {self.key[:40]!r}{'...' if len(self.key) > 40 else ''} {why}, and trainstack tags the "
            "checkpoint bucket with every tag"
        )

    def hint(self) -> str:
        return "shorten or rename the key (or set checkpoints.enabled: false, which creates no bucket)"


@dataclass(frozen=True, slots=True)
class UnknownWaiverRule(Refusal):
    code = "TSC034"
    path = ("waivers",)
    summary = "a waiver names no lint rule"
    index: int
    rule: str
    close: str

    def where(self) -> tuple[str | int, ...]:
        return ("waivers", self.index, "rule")

    def text(self) -> str:
        return f"no lint rule '{self.rule}'"

    def hint(self) -> str:
        return near_or(self.close, "run 'trainstack lint --rules' to list them")


@dataclass(frozen=True, slots=True)
class FieldNotHonoured(Refusal):
    code = "TSC035"
    summary = "a spec field the platform does not honour and refuses (generator/platforms/registry.py)"
    field: str  # dotted
    platform: str  # the platform's title
    why: str
    fix: str

    def where(self) -> tuple[str | int, ...]:
        return tuple(self.field.split("."))

    def text(self) -> str:
        return f"{self.field} is not honoured on {self.platform}: {self.why}"

    def hint(self) -> str:
        return self.fix


def codes() -> list[type[Refusal]]:
    """Every event class of the spec check, this module's and :mod:`generator.plan.catalog_refusals`'s, by code
    (docs/codes.md lists them)."""
    found = {
        v
        for v in [*vars(catalog_refusals).values(), *globals().values()]
        if isinstance(v, type) and issubclass(v, Refusal) and v.code.startswith("TSC")
    }
    return sorted(found, key=lambda c: c.code)
