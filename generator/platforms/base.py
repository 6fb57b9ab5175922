"""What a platform is, as data: its capabilities, the program parts it renders, and the spec fields it does not
honour (each an error or a warning there, never silence).

In the manner of SkyPilot's one class per cloud with a feature set (``skypilot-org/skypilot`` ``sky/clouds/cloud.py``:
``CloudImplementationFeatures``, checked once by ``check_features_are_supported``): code that differs by platform
asks ``platform_for(spec or plan).has(Capability.X)`` (:mod:`generator.platforms.registry`) instead of comparing
``compute.platform`` with a name. A declaration imports nothing but the spec model, so every stage from the plan on
can ask it; what a platform *does* (its rules and plan parts) lives beside it in its folder, named by the
declaration's ``parts`` entry and reached through :func:`generator.platforms.registry.parts_for`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field


class Capability(enum.Enum):
    """Something a platform does (or lets trainstack do) that another may not."""

    NODES = (
        "nodes"  # trainstack creates the nodes itself (ECS instances, eflo nodes); PAI-DLC manages its own
    )
    ECS_INSTANCES = (
        "ecs-instances"  # the nodes are ECS instances (heal re-creates them, stock and key pairs are ECS's)
    )
    NODE_BOOTSTRAP = "node-bootstrap"  # the nodes boot trainstack's node-init.sh as user data
    ZONE_CHOICE = (
        "zone-choice"  # the plan picks the zone (a Lingjun zone follows from the machine type's HPN zone)
    )
    RDMA = "rdma"  # an RDMA fabric between the nodes (eRDMA or RoCE on ECS, HPN on Lingjun)
    RDMA_BY_TYPE = "rdma-by-type"  # the fabric follows the instance type (eRDMA, RoCE) and network.rdma, so a
    # multi-node job needs an RDMA-capable type; without it the platform decides the fabric (HPN, DLC's network)
    HPN = "hpn"  # the nodes are eflo machine types on the HPN RDMA network (the catalog's Lingjun machine types,
    # with their HPN zone, payment types and RDMA rate): RDMA between the nodes whatever network.rdma says
    DLC_WORKERS = (
        "dlc-workers"  # the workers are the ECS types on PAI-DLC's public resource list (dlc_specs.csv)
    )
    OSS_MOUNT = "oss-mount"  # OSS data (a dataset, base weights) is mounted read-only as a workspace dataset:
    # nothing is imported into CPFS or copied
    JUMBO_FRAMES = "jumbo-frames"  # trainstack sets the nodes' MTU (8500 with jumbo frames, else 1400)
    DEPLOYMENT_SETS = "deployment-sets"  # ECS deployment sets place the nodes
    FIXED_ADDRESSES = "fixed-addresses"  # each rank has a private address fixed in the plan
    SPOT = "spot"  # preemptible capacity
    MIXED_SPOT = "mixed-spot"  # some nodes on demand, the rest spot (spot.on_demand_base)
    ELASTIC = "elastic"  # an elastic launch with a minimum node count (spot.min_nodes)
    SHARED_FILE_SYSTEM = "shared-file-system"  # CPFS or Extreme NAS mounted by the nodes
    DATA_DISKS = "data-disks"  # encrypted data disks on the nodes (compute.data_disk_gib)
    PAUSE = "pause"  # compute.paused: the nodes go, everything else stays
    SSH = "ssh"  # an SSH port opened to network.admin_cidrs
    DEFAULT_IMAGE = "default-image"  # the program looks a node image up when compute.image_id is unset
    NODE_RAM_ROLE = (
        "node-ram-role"  # the nodes get OSS credentials from a RAM role through the metadata service
    )
    CLUSTER_FACTS = "cluster-facts"  # the program publishes the cluster facts the nodes read at boot
    CLOUD_ASSISTANT_JOBS = (
        "cloud-assistant-jobs"  # submit/jobs/logs/cancel/check run over ECS Cloud Assistant
    )
    EFLO_JOBS = (
        "eflo-jobs"  # submit/jobs/logs/cancel/check run over the EFLO controller's RunCommand (2022-12-15)
    )
    DLC_JOBS = "dlc-jobs"  # submit/jobs/logs/cancel create and follow PAI-DLC jobs


class Level(enum.Enum):
    """What a spec that sets a field a platform does not honour gets."""

    ERROR = "error"  # the spec is refused (exit 2) with file, line and field: the user relies on the field
    WARNING = (
        "warning"  # the plan warns, naming the field: the field only tunes something the platform decides
    )


@dataclass(frozen=True)
class Unhonoured:
    """A spec field a platform does not honour.

    ``why`` says what the platform does instead (with its source). ``rule`` is True when a platform rule already
    reports the field with its own message, for the values ``when`` names (the others are fine); otherwise setting
    the field in the spec at all (any value, the default too) gets ``why`` as an error or a warning.
    """

    level: Level
    why: str
    hint: str = ""
    rule: bool = False
    when: str = ""  # with rule: the values the rule refuses or warns about ("true", "cpfs or extreme-nas")


# The places of the shared stack files where a platform adds its own text (Platform.template_parts): the shared
# template includes stack/slots/<the platform's part>.j2 (in its folder's templates/) there, or nothing where the
# platform has none.
SLOTS = {
    "summary": "__main__.py's docstring, after the compute line: what the platform's part of the stack is",
    "stack_config": "Pulumi.<stack>.yaml, after the region: the commented settings the operator may set",
    "readme_row": "README.md's summary table, after the RDMA row",
    "readme_deploy": "README.md's Deploy section, after `trainstack up`: what to run once deployed",
}


@dataclass(frozen=True)
class PriceNote:
    """A price the platform bills on top of the instance type's (the plan's ``cost.prices`` row ``item`` and a
    ``cost.notes`` line; ``{type}`` in ``note`` is the instance type)."""

    item: str
    source: str
    note: str


@dataclass(frozen=True)
class PausedItem:
    """Something of the platform that stays, unpriced, while the cluster is paused (a ``cost.paused`` item)."""

    key: str
    label: str
    what: str


@dataclass(frozen=True)
class Platform:
    """One platform: the ``compute.platform`` value, what it can do and what it renders."""

    name: str  # the compute.platform value
    title: str  # how the docs and messages name it
    capabilities: frozenset[Capability]
    # stack/parts/<part>.py.j2 (shared, or in its folder), in the order __main__.py holds them
    program_parts: tuple[str, ...]
    template_parts: Mapping[str, str] = field(
        default_factory=dict
    )  # SLOTS name -> <its folder>/templates/stack/slots/<part>.j2
    unhonoured: Mapping[str, Unhonoured] = field(
        default_factory=dict
    )  # spec field path ("network.jumbo_frames")
    user_data_max_bytes: int = 0  # the documented user data limit of a node (0: no node bootstrap)
    # with NODE_BOOTSTRAP, how node-init.sh reaches a node (generator/render/userdata.py): "gzip" (each node's
    # script gzip-compressed, cloud-init unpacks it) or "wrapper" (one bash wrapper per node group unpacks it), and
    # what the size refusal calls that user data
    user_data: str = ""
    user_data_where: str = ""
    # with user_data "wrapper": the bash script around node-init.sh, whose "{body}" the gzip-compressed,
    # base64-encoded script replaces (generator/render/userdata.py wrapped_user_data; the program builds the same)
    user_data_wrapper: str = ""
    machine_noun: str = "instance type"  # what messages call a node's type
    default_key_pair: str = (
        ""  # the key pair the nodes get without compute.admin_key_pair ("{name}": the spec's)
    )
    pause_leaves_out: str = ""  # with PAUSE: what a paused program leaves out (the pause decision's words)
    paused_items: tuple[PausedItem, ...] = ()  # with PAUSE: what of the platform stays while paused, unpriced
    worker_price: PriceNote | None = None  # a price the platform bills per worker on top of the type's
    # "module:Class" of its behaviour (a generator.platforms.contract.PlanParts, in its own folder): imported by
    # registry.parts_for on first use, so a declaration stays data that every stage can import without a cycle
    parts: str = ""
    # the module of its own live operations, under its folder (PAI-DLC's job commands, ECS's and Lingjun's heal
    # --health action tables): imported by registry.live_for when a live command of such a stack first asks; ""
    # where the shared live engine does all
    live: str = ""

    def has(self, capability: Capability) -> bool:
        return capability in self.capabilities
