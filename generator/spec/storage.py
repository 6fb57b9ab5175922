"""The spec's storage and checkpoints sections: the shared file system and the dataset on it, and where checkpoints
go, how often, and how long they are kept (retention, keep_last, milestones).

One of the modules :mod:`generator.spec.model` gathers into the spec; the storage and checkpoint plan parts read these.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from generator.errors import excerpt
from generator.spec import codes, limits
from generator.spec.fieldtypes import AutoBytes, AutoInterval, Bytes, Strict
from generator.spec.tags import spec_error


class DatasetSpec(Strict):
    source: Annotated[str, Field(pattern=limits.OSS_SOURCE_RE)]
    size: Bytes
    path: Annotated[str, Field(pattern=limits.FILESET_PATH_RE, max_length=limits.MAX_PATH_CHARS)] = (
        "/datasets/"
    )

    @field_validator("source", mode="before")
    @classmethod
    def _oss(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        m = re.fullmatch(r"oss://([a-z0-9][a-z0-9-]{1,61}[a-z0-9])(/.*)?", v, flags=re.DOTALL)
        if not m:
            raise spec_error(
                f"{v[:80]!r} is not an OSS location: write oss://bucket/prefix/",
                "a bucket name is 3-63 lowercase letters, digits and '-', e.g. oss://my-corpus/tokenized/",
            )
        wrong = limits.oss_prefix_problem(m.group(2)[1:]) if m.group(2) else None
        if wrong:
            raise spec_error(
                f"{v[:80]!r} is not a usable OSS location: {wrong}",
                "quotes, backticks, '$', '\\', spaces and control characters are refused because the "
                "location is written into the generated program; e.g. oss://my-corpus/tokenized/",
            )
        return v

    @field_validator("path", mode="before")
    @classmethod
    def _path(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        if len(v) > limits.MAX_PATH_CHARS:
            raise spec_error(f"the fileset path is {len(v):,} characters; at most {limits.MAX_PATH_CHARS:,}")
        if not re.fullmatch(limits.FILESET_PATH_RE, v):
            raise spec_error(
                "a fileset path starts and ends with '/' and holds letters, digits, '.', '_', '-' and "
                "'/', e.g. /datasets/"
            )
        segments = v.strip("/").split("/")
        if any(seg in (".", "..") for seg in segments):
            raise spec_error(
                f"{excerpt(v, 80)} has a '.' or '..' segment; a fileset path is written from the file system's root",
                "e.g. /datasets/ or /datasets/corpus-2026/",
            )
        kept = [seg for seg in segments if seg]
        if not kept:
            raise spec_error("a fileset cannot be the file system's root directory", "e.g. /datasets/")
        return "/" + "/".join(kept) + "/"


class StorageSpec(Strict):
    shared: Literal["auto", "cpfs", "extreme-nas", "none"] = "auto"
    capacity: AutoBytes = "auto"
    storage_class: Literal["auto", "advance_100", "advance_200", "standard", "advance"] = "auto"
    mount_path: Annotated[str, Field(pattern=limits.MOUNT_PATH_RE, max_length=limits.MAX_PATH_CHARS)] = (
        "/mnt/shared"
    )
    dataset: DatasetSpec | None = None

    @field_validator("mount_path", mode="before")
    @classmethod
    def _mount(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        if len(v) > limits.MAX_PATH_CHARS:
            raise spec_error(
                f"the mount path is {len(v):,} characters; at most {limits.MAX_PATH_CHARS:,}",
                "use e.g. /mnt/shared",
            )
        if not re.fullmatch(limits.MOUNT_PATH_RE, v):
            raise spec_error(
                f"{v[:80]!r} is not an absolute path of letters, digits, '.', '_', '-' and '/'",
                "use e.g. /mnt/shared",
            )
        norm = limits.normalize_abs_path(v)
        system = limits.system_dir(norm)
        if system == "/":
            raise spec_error(
                f"{excerpt(v, 80)} is the root directory"
                + (f" (it normalizes to {norm})" if v != "/" else "")
                + "; mounting over it would hide the whole system",
                "use e.g. /mnt/shared",
            )
        if system is not None:
            where = "is" if norm == system else "is under"
            normalized = f" (it normalizes to {norm})" if norm != v else ""
            raise spec_error(
                f"{excerpt(v, 80)}{normalized} {where} {system}, a system directory; mounting the shared file "
                "system there would hide the operating system's files",
                "use e.g. /mnt/shared",
            )
        return norm


MILESTONE_FORMS = ("every", "every_hours", "at_steps")


class MilestonesSpec(Strict):
    """checkpoints.milestones: checkpoints kept forever beside keep_last's window (docs/operations.md), in exactly one
    of three forms: one in every M checkpoints, one per H hours, or the checkpoints of the listed steps."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=False, json_schema_extra={"minProperties": 1, "maxProperties": 1}
    )

    # one checkpoint in every N (a window of N intervals) is kept
    every: Annotated[int, Field(ge=2, le=100_000)] | None = None
    # one checkpoint per H hours of training (a window of H hours) is kept
    every_hours: Annotated[float, Field(gt=0, le=limits.MAX_MILESTONE_HOURS)] | None = None
    # the checkpoints of these optimizer steps (the number in a checkpoint's name) are kept
    at_steps: (
        Annotated[
            tuple[Annotated[int, Field(ge=1, le=limits.MAX_MILESTONE_STEP)], ...],
            Field(min_length=1, max_length=limits.MAX_MILESTONE_STEPS),
        ]
        | None
    ) = None

    @field_validator("at_steps")
    @classmethod
    def _steps(cls, v: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if v is None:
            return v
        twice = sorted({s for s in v if v.count(s) > 1})
        if twice:
            raise spec_error(
                f"step {twice[0]:,} is listed twice", "list each step once; the order does not matter"
            )
        return tuple(sorted(v))

    @model_validator(mode="after")
    def _one_form(self) -> MilestonesSpec:
        given = [name for name in MILESTONE_FORMS if getattr(self, name) is not None]
        if len(given) != 1:
            raise spec_error(
                "give milestones one way: every (checkpoints), every_hours (hours of training) or at_steps "
                + (f"(steps), not {' and '.join(given)}" if given else "(steps)"),
                "e.g. milestones: {every: 10}, milestones: {every_hours: 24} or milestones: {at_steps: [10000, 50000]}",
                codes.MILESTONE_FORM.code,
                {"given": tuple(given)},
            )
        return self


class CheckpointSpec(Strict):
    enabled: bool = True
    bucket: str | None = None
    region: str | None = None
    prefix: str = "checkpoints/"
    interval: AutoInterval = "auto"
    retention_days: Annotated[int, Field(gt=0, le=3650)] = 30
    transition_ia_days: Annotated[int, Field(gt=0, le=3650)] | None = 30
    abort_multipart_days: Annotated[int, Field(gt=0, le=365)] = 3
    keep_last: Annotated[int, Field(ge=1, le=100_000)] | None = None  # None: keep every checkpoint
    milestones: MilestonesSpec | None = None  # with keep_last: milestones kept forever (ECS)

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]", v):
            raise ValueError(
                "an OSS bucket name is 3-63 lowercase letters, digits and hyphens, not starting or ending with '-'"
            )
        return v

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*/", v):
            raise ValueError("a prefix is a path without a leading '/' that ends in '/', e.g. checkpoints/")
        if limits.dot_segment(v):
            raise spec_error(
                f"{v[:60]!r} has a '.' or '..' segment, which would reach outside the run's own prefix "
                "(the nodes' RAM policy and the copy to OSS name the prefix as written)",
                "e.g. checkpoints/ or runs/llama-70b/checkpoints/",
            )
        return v
