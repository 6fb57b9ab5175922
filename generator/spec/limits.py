"""The limits of the spec language in one place: bounds on numbers, file-system sizes, paths and text.

Pure functions and constants, shared by the load stage (:mod:`generator.spec.model`), the catalog checks
(:mod:`generator.plan.check`) and the planner, so a size the planner derives obeys the same rule, with the same
message, as one the user writes. ``docs/spec.md`` ("Limits") documents every bound here; keep the two in step.
"""

from __future__ import annotations

import math
import posixpath
import re
import unicodedata

# ------------------------------------------------------------------------------------------ numbers
# Generous but finite: each is far above any real training run, so it only stops typos (a missing suffix, an
# exponent too many) before they become a plan for 10^20 days.
MAX_PARAMETERS = 10**14  # 100T; the largest published dense and MoE models have about 2T
MAX_TOKENS = 10**15  # 1,000T; the largest published pre-training runs use a few tens of T tokens
MAX_GLOBAL_BATCH_TOKENS = 10**10  # 10B per optimizer step; published runs use 4M-64M
MAX_BYTES = (
    100 * 2**50
)  # 100 PiB, for any size; the file systems' own limits (1 PiB CPFS) are checked at validate
MAX_BUDGET_PER_HOUR = 10**8  # CNY/h; 100,000 nodes of the priciest catalog type cost about 2.8e7 CNY/h
MAX_BUDGET_TOTAL = 10**12  # CNY
MAX_CHECKPOINT_INTERVAL_SECONDS = (
    30 * 86400
)  # 30 days; a fixed interval near a node's MTBF already loses work
LONG_RUN_HOURS = 365 * 24  # a plan whose expected wall time exceeds a year gets a warning

# ------------------------------------------------------------------------------------------ shared file systems
CPFS_MIN_GIB = (
    3600  # smallest CPFS general-purpose file system in the provider's examples and tests [TF-nas test]
)
CPFS_STEP_GIB = 1200  # CPFS scales in 1,200 GiB steps [DOC-CPFS-SCALE]
CPFS_MAX_GIB = 1024 * 1024  # 1 PiB [DOC-CPFS-SCALE]
CPFS_LARGEST_GIB = (
    CPFS_MAX_GIB // CPFS_STEP_GIB * CPFS_STEP_GIB
)  # 1,047,600: the largest whole step within 1 PiB
NAS_EXTREME_MIN_GIB = 100  # [DOC-NAS-EXT]
NAS_EXTREME_MAX_GIB = 256 * 1024
DATASET_HEADROOM = 1.3  # capacity: auto gives a dataset 30% room for checkpoint staging and growth


def cpfs_capacity_for_dataset(size_bytes: int | None) -> int:
    """The CPFS capacity (GiB) ``storage.capacity: auto`` derives: dataset x 1.3, at least 3600, in 1200 GiB steps."""
    data_gib = (size_bytes / 2**30) if size_bytes else 0
    return max(CPFS_MIN_GIB, math.ceil(data_gib * DATASET_HEADROOM / CPFS_STEP_GIB) * CPFS_STEP_GIB)


def largest_cpfs_dataset_tib() -> int:
    """The largest whole-TiB dataset whose derived CPFS capacity is within the maximum."""
    tib = int(CPFS_LARGEST_GIB / DATASET_HEADROOM / 1024)
    while tib > 0 and cpfs_capacity_for_dataset(tib * 2**40) > CPFS_LARGEST_GIB:
        tib -= 1
    return tib


def accepted_capacity(kind: str, gib: float) -> int:
    """The capacity (GiB) nearest ``gib`` that ``kind`` accepts: rounded up to a step, within the limits."""
    if kind == "cpfs":
        up = -(-math.ceil(gib) // CPFS_STEP_GIB) * CPFS_STEP_GIB
        return min(max(CPFS_MIN_GIB, up), CPFS_LARGEST_GIB)
    return min(max(NAS_EXTREME_MIN_GIB, math.ceil(gib)), NAS_EXTREME_MAX_GIB)


def capacity_problem(kind: str, gib: float) -> tuple[str, str] | None:
    """(message, hint) when ``gib`` is not a capacity of ``kind`` ("cpfs" or "extreme-nas"), else None.

    The hint's value always passes this check itself (tests/test_limits.py)."""
    if kind == "cpfs":
        off_step = abs(gib / CPFS_STEP_GIB - round(gib / CPFS_STEP_GIB)) > 1e-9
        if gib < CPFS_MIN_GIB or off_step or gib > CPFS_MAX_GIB:
            fix = accepted_capacity(kind, gib)
            why = (
                f", the largest multiple of {CPFS_STEP_GIB} GiB within 1 PiB"
                if fix == CPFS_LARGEST_GIB
                else ""
            )
            return (
                f"CPFS capacity must be at least {CPFS_MIN_GIB} GiB, a multiple of {CPFS_STEP_GIB} GiB and at "
                f"most 1 PiB; got {gib:.10g} GiB"
            ), f"use {fix}GiB{why}"
    elif kind == "extreme-nas" and not NAS_EXTREME_MIN_GIB <= gib <= NAS_EXTREME_MAX_GIB:
        return (
            f"Extreme NAS capacity is 100 GiB to 256 TiB; got {gib:.10g} GiB",
            f"use {accepted_capacity(kind, gib)}GiB",
        )
    return None


def dataset_capacity_problem(size_bytes: int) -> tuple[str, str] | None:
    """(message, hint) when ``capacity: auto`` would derive a CPFS capacity over the maximum for this dataset."""
    cap = cpfs_capacity_for_dataset(size_bytes)
    if cap <= CPFS_LARGEST_GIB:
        return None
    tib = largest_cpfs_dataset_tib()
    message = (
        f"a dataset of {size_bytes / 2**40:,.2f} TiB needs a CPFS capacity of {cap:,} GiB (dataset x "
        f"{DATASET_HEADROOM:g}, in {CPFS_STEP_GIB} GiB steps), over the 1 PiB maximum of a CPFS file system"
    )
    return message, f"import at most {tib}TiB (split the data over several runs or file systems)"


# ------------------------------------------------------------------------------------------ paths
# A shared file system mounted over one of these would hide or replace the operating system's own files.
SYSTEM_DIRS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
)
MAX_PATH_CHARS = 1024  # trainstack's bound for mount and fileset paths (Linux allows 4096)


def normalize_abs_path(path: str) -> str:
    """``/mnt/../etc`` -> ``/etc``, ``//mnt//x/`` -> ``/mnt/x`` (posixpath.normpath keeps a leading '//')."""
    return posixpath.normpath("/" + path.lstrip("/"))


def system_dir(normalized: str) -> str | None:
    """The system directory a normalized absolute path is, or is under (``/`` itself counts), else None."""
    if normalized == "/":
        return "/"
    top = "/" + normalized.split("/")[1]
    if top in SYSTEM_DIRS or top.startswith("/lib"):  # /lib, /lib32, /lib64, /libx32, ...
        return top
    return None


# ------------------------------------------------------------------------------------------ text
MAX_WAIVER_REASON_CHARS = 500
MAX_IMAGE_ID_CHARS = 128
IMAGE_ID_RE = r"^[A-Za-z0-9_.-]+$"
# OSS object prefixes: printable ASCII that needs no quoting anywhere trainstack writes it (Python strings, shell,
# Markdown): letters, digits and ! - _ . * ( ) = + , : @ and '/' between segments.
OSS_PREFIX_CHARS = "A-Za-z0-9!_.*()=+,:@-"
OSS_PREFIX_MAX_BYTES = 1023  # an OSS object key is 1-1023 bytes

# Alibaba Cloud tags. Every resource (ECS TagResources): key 1-128 characters, value at most 128; a key must not
# start with 'aliyun' or 'acs:', a value not with 'acs:', and neither may contain 'http://' or 'https://'.
# The OSS checkpoint bucket (PutBucketTags): key at most 64 characters, of letters, digits, spaces and + - = . _ : /,
# not starting with http://, https://, aliyun or acs (case-insensitive). Sources: docs/spec.md, "tags".
TAG_KEY_MAX = 128
TAG_VALUE_MAX = 128
OSS_TAG_KEY_MAX = 64
OSS_TAG_KEY_RE = r"[A-Za-z0-9 +=._:/-]+"


# No control character and no invisible format character (below): the same rule for the JSON Schema, so an editor
# flags them too (ECMA-262 and Python agree on this syntax)
NO_CONTROL_RE = (
    r"^[^\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2028\u2029"
    r"\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]*$"
)
MOUNT_PATH_RE = r"^/[A-Za-z0-9._/-]*$"
FILESET_PATH_RE = r"^/[A-Za-z0-9._/-]*/$"
OSS_SOURCE_RE = (
    rf"^oss://[a-z0-9][a-z0-9-]{{1,61}}[a-z0-9](/[/{OSS_PREFIX_CHARS}]*)?$"  # no nested quantifier
)


def control_character(text: str) -> str | None:
    """The first control character (C0, DEL or C1; Unicode category Cc) in ``text``, shown readably, or None."""
    for ch in text:
        if unicodedata.category(ch) == "Cc":
            return _NAMES.get(ch, f"U+{ord(ch):04X}")
    return None


_NAMES = {
    "\x00": "NUL (U+0000)",
    "\t": "a tab (U+0009)",
    "\n": "a line feed (U+000A)",
    "\r": "a carriage return (U+000D)",
    "\x1b": "ESC (U+001B)",
    "\x7f": "DEL (U+007F)",
}


def dot_segment(prefix: str) -> bool:
    """True when an object-key prefix has a '.' or '..' segment (``../../``, ``a/./b/``): tools that treat keys as
    paths (ossutil, mounts, RAM resource patterns read by people) would take it outside the prefix it names."""
    return any(seg in (".", "..") for seg in prefix.split("/"))


def oss_prefix_problem(prefix: str) -> str | None:
    """Why an OSS object prefix (the part after ``oss://bucket/``) is refused, or None."""
    ctrl = control_character(prefix)
    if ctrl:
        return f"the object prefix contains {ctrl}"
    bad = re.search(rf"[^/{OSS_PREFIX_CHARS}]", prefix)
    if bad:
        return (
            f"{bad.group()!r} is not allowed in an object prefix: use letters, digits, '/' and "
            + " ".join(OSS_PREFIX_CHARS[9:])
        )
    if "//" in prefix or prefix.startswith("/"):
        return "the object prefix has an empty segment ('//')"
    if dot_segment(prefix):
        return "the object prefix has a '.' or '..' segment; object-key prefixes stay inside the bucket's namespace"
    if len(prefix.encode()) > OSS_PREFIX_MAX_BYTES:
        return (
            f"the object prefix is {len(prefix.encode()):,} bytes; an OSS object key is at most "
            f"{OSS_PREFIX_MAX_BYTES:,}"
        )
    return None


# Invisible format characters: bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069),
# marks (U+200E, U+200F, U+061C), zero-width characters (U+200B-U+200D, U+2060, U+FEFF), the soft hyphen and
# every other character of Unicode category Cf, and the line and paragraph separators (U+2028, U+2029). They
# reorder or hide text in editors, terminals and review tools ("Trojan Source", CVE-2021-42574), so no spec text
# may hold them: they would reach the generated program, plan.json and the pull-request comment.
_INVISIBLE_CATEGORIES = ("Cf", "Zl", "Zp", "Cs")


def invisible_character(text: str) -> str | None:
    """The first invisible format character in ``text``, as ``U+202E (RIGHT-TO-LEFT OVERRIDE)``, or None."""
    for ch in text:
        if ord(ch) > 0x7F and unicodedata.category(ch) in _INVISIBLE_CATEGORIES:
            return f"U+{ord(ch):04X} ({unicodedata.name(ch, 'unnamed')})"
    return None


# ------------------------------------------------------------------------------------------ container images
# compute.container_image: an Alibaba Cloud Container Registry (ACR) image pinned by digest. Registry hosts, as ACR
# names its endpoints: Personal Edition registry.REGION.aliyuncs.com (VPC: registry-vpc.REGION.aliyuncs.com),
# Enterprise Edition INSTANCE-registry.REGION.cr.aliyuncs.com (VPC: INSTANCE-registry-vpc.REGION.cr.aliyuncs.com);
# PAI's own images use the latter (dsw-registry-vpc.REGION.cr.aliyuncs.com). Nodes pull from the VPC endpoint.
ACR_HOST_RE = (
    r"(?:(?P<personal>registry)(?:-vpc)?\.(?P<pregion>[a-z]{2}(?:-[a-z0-9]+)+)\.aliyuncs\.com"
    r"|(?P<instance>[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)-registry(?:-vpc)?\.(?P<eregion>[a-z]{2}(?:-[a-z0-9]+)+)"
    r"\.cr\.aliyuncs\.com)"
)
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
CONTAINER_IMAGE_RE = (
    rf"^(?P<host>{ACR_HOST_RE})/(?P<repo>{_PATH_PART}(?:/{_PATH_PART})+)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?@sha256:(?P<digest>[0-9a-f]{64})$"
)
MAX_CONTAINER_IMAGE_CHARS = 512
# compute.container_registry_instance: an Enterprise Edition instance id as the console and the API show it
# (GetAuthorizationToken's InstanceId, e.g. cri-kmsiwlxxdcvaduwb: help.aliyun.com/document_detail/451390.htm)
ACR_INSTANCE_ID_RE = r"^cri-[a-z0-9]{4,40}$"


def container_image_parts(ref: str) -> tuple[str, str, str] | None:
    """(region, the reference with the registry's VPC endpoint, digest) of an ACR image reference pinned by digest,
    or None when ``ref`` is not one."""
    m = re.fullmatch(CONTAINER_IMAGE_RE, ref) if len(ref) <= MAX_CONTAINER_IMAGE_CHARS else None
    if m is None:
        return None
    if m["personal"]:
        region, host = m["pregion"], f"registry-vpc.{m['pregion']}.aliyuncs.com"
    else:
        region, host = m["eregion"], f"{m['instance']}-registry-vpc.{m['eregion']}.cr.aliyuncs.com"
    return region, host + ref[len(m["host"]) :], m["digest"]


def container_repository(ref: str) -> tuple[str, str, str] | None:
    """(VPC registry host, namespace, repository) of an Enterprise Edition image reference, None for Personal
    Edition or no reference: what `docker login` and the pull policy's repository ARN name."""
    m = re.fullmatch(CONTAINER_IMAGE_RE, ref) if len(ref) <= MAX_CONTAINER_IMAGE_CHARS else None
    if m is None or m["personal"]:
        return None
    namespace, repository = m["repo"].split("/", 1)
    return f"{m['instance']}-registry-vpc.{m['eregion']}.cr.aliyuncs.com", namespace, repository


# checkpoints.milestones: every_hours is at most ten years of training; at_steps holds at most 1,000 steps, each at
# most 10^12 (a run of 10^15 tokens at 1,000 tokens a step)
MAX_MILESTONE_HOURS = 87_600
MAX_MILESTONE_STEPS = 1_000
MAX_MILESTONE_STEP = 10**12
