"""Why PAI-DLC refuses a spec (exit 2): one event class per problem of :mod:`generator.platforms.dlc.rules` (the
validate stage), each with a stable code ``TSA...`` (A for PAI; TSD is the diff's), the spec field it names and
typed fields, on the shared :class:`~generator.plan.refusals.Refusal` base. The message and the hint are rendered
from the fields here only, so the CLI prints what it always printed while tests and scripts read the code.

It exists apart from the rules because the words are data (``docs/codes.md`` lists every code; tests/test_codes.py
checks the table against :func:`codes`), and the rules read better as conditions only.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.plan.refusal import Refusal
from generator.platforms.dlc.plan import SPOT_STRATEGY


@dataclass(frozen=True, slots=True)
class NoWorkerType(Refusal):
    code = "TSA001"
    path = ("compute", "platform")
    summary = "the catalog knows no PAI-DLC worker type in the spec's region"
    region: str
    regions: tuple[str, ...]  # the regions with DLC worker types

    def text(self) -> str:
        return f"the catalog knows no PAI-DLC worker type in {self.region}"

    def hint(self) -> str:
        return f"regions with DLC worker types: {', '.join(self.regions)}; or use platform: ecs"


@dataclass(frozen=True, slots=True)
class GpuNotOnDlc(Refusal):
    code = "TSA002"
    path = ("compute", "gpu")
    summary = "compute.gpu is offered in the region on ECS but on no PAI-DLC worker type"
    gpu: str
    region: str
    offered: tuple[str, ...]  # the GPUs of the region's DLC worker types

    def text(self) -> str:
        return f"no PAI-DLC worker type with {self.gpu} in {self.region} in the catalog (dlc_specs.csv)"

    def hint(self) -> str:
        return f"DLC GPUs there: {', '.join(self.offered)}; or use platform: ecs"


@dataclass(frozen=True, slots=True)
class TypeNotOnDlc(Refusal):
    code = "TSA003"
    path = ("compute", "instance_types")
    summary = "an ECS instance type in compute.instance_types that is not on PAI-DLC's public resource list"
    index: int
    instance_type: str
    worker_types: tuple[str, ...]  # the catalog's DLC worker types

    def where(self) -> tuple[str | int, ...]:
        return (*self.path, self.index)

    def text(self) -> str:
        return f"{self.instance_type} is not on PAI-DLC's public resource list in the catalog (dlc_specs.csv)"

    def hint(self) -> str:
        return "DLC worker types: " + ", ".join(self.worker_types)


@dataclass(frozen=True, slots=True)
class ImageIdGiven(Refusal):
    code = "TSA004"
    path = ("compute", "image_id")
    summary = "compute.image_id, and a DLC job runs a container image"

    def text(self) -> str:
        return "a DLC job runs a container image, not an ECS or Lingjun image, and DLC boots the nodes itself"

    def hint(self) -> str:
        return "remove compute.image_id; the plan names the official PAI PyTorch image for the job (plan.json dlc.image)"


@dataclass(frozen=True, slots=True)
class DataDiskGiven(Refusal):
    code = "TSA005"
    path = ("compute", "data_disk_gib")
    summary = "compute.data_disk_gib, and DLC manages the workers' disks"
    gib: int

    def text(self) -> str:
        return "DLC workers take no data disk from trainstack (DLC manages the nodes)"

    def hint(self) -> str:
        return "set compute.data_disk_gib: 0 and keep data on the shared file system or in OSS"


@dataclass(frozen=True, slots=True)
class NothingToPause(Refusal):
    code = "TSA006"
    path = ("compute", "paused")
    summary = "compute.paused, and no DLC node exists between jobs"

    def text(self) -> str:
        return (
            "there is nothing to pause on PAI-DLC: no node exists between jobs and DLC bills only while a job runs "
            "[DOC-DLC-BILL]"
        )

    def hint(self) -> str:
        return "set compute.paused: false and stop the job instead (`trainstack cancel`)"


@dataclass(frozen=True, slots=True)
class BareMetalRequired(Refusal):
    code = "TSA007"
    path = ("compute", "bare_metal")
    summary = "compute.bare_metal: require, and DLC's public resources are virtual machines"

    def text(self) -> str:
        return "DLC's public resources are ECS virtual-machine types in the catalog"

    def hint(self) -> str:
        return "set compute.bare_metal: any, or use platform: ecs"


@dataclass(frozen=True, slots=True)
class NoSsh(Refusal):
    code = "TSA008"
    path = ("network", "admin_cidrs")
    summary = "network.admin_cidrs, and DLC workers have no SSH port"
    admin_cidrs: tuple[str, ...]

    def text(self) -> str:
        return "DLC workers are containers DLC manages: there is no node to SSH into, so trainstack opens no SSH port"

    def hint(self) -> str:
        return "remove network.admin_cidrs; use the DLC console's terminal or `trainstack logs`"


@dataclass(frozen=True, slots=True)
class NoRdma(Refusal):
    code = "TSA009"
    path = ("network", "rdma")
    summary = "network.rdma: true, and trainstack attaches no RDMA interface to DLC workers"

    def text(self) -> str:
        return (
            "trainstack attaches no RDMA interface to DLC workers: DLC manages their network, and its public "
            "resources document no RDMA"
        )

    def hint(self) -> str:
        return "set network.rdma: auto, or use platform: lingjun (HPN RDMA) or ecs (eRDMA)"


@dataclass(frozen=True, slots=True)
class SpotMixed(Refusal):
    code = "TSA010"
    path = ("spot", "on_demand_base")
    summary = "spot with on-demand workers, and a DLC job's workers are all spot or all on demand"
    on_demand_base: int

    def text(self) -> str:
        return (
            "a DLC job's workers are all spot or all on demand (JobSpec.SpotSpec applies to the whole worker role "
            "[SDK-DLC])"
        )

    def hint(self) -> str:
        return "set spot.on_demand_base: 0 to run every worker on spot, or spot.enabled: false"


@dataclass(frozen=True, slots=True)
class NoElastic(Refusal):
    code = "TSA011"
    path = ("spot", "min_nodes")
    summary = "spot.min_nodes, and a DLC job runs a fixed number of workers"
    min_nodes: int

    def text(self) -> str:
        return (
            "a DLC job runs a fixed number of workers (CreateJob PodCount) and DLC restarts it whole; trainstack "
            "plans no elastic launch on DLC"
        )

    def hint(self) -> str:
        return "remove spot.min_nodes"


@dataclass(frozen=True, slots=True)
class SpotStrategy(Refusal):
    code = "TSA012"
    path = ("spot", "strategy")
    summary = "a spot.strategy DLC's SpotSpec does not take"
    strategy: str

    def text(self) -> str:
        return (
            f"DLC's SpotSpec takes SpotStrategy {SPOT_STRATEGY} only (the API reference lists no other value "
            f"[API-DLC-SPOT]), not {self.strategy}"
        )

    def hint(self) -> str:
        return (
            f"set spot.strategy: {SPOT_STRATEGY} with spot.max_price_ratio (1.0 caps the bid at the pay-as-you-go "
            "price, as SpotAsPriceGo does on ECS)"
        )


@dataclass(frozen=True, slots=True)
class SpotKeptStopped(Refusal):
    code = "TSA013"
    path = ("spot", "interruption")
    summary = "spot.interruption: stop, and DLC releases a reclaimed spot worker"

    def text(self) -> str:
        return "DLC releases a reclaimed spot worker; it cannot be kept stopped"

    def hint(self) -> str:
        return "remove spot.interruption"


def codes() -> list[type[Refusal]]:
    """Every PAI-DLC refusal class, by code (docs/codes.md lists them)."""
    found = {
        v
        for v in globals().values()
        if isinstance(v, type) and issubclass(v, Refusal) and v.code.startswith("TSA")
    }
    return sorted(found, key=lambda c: c.code)
