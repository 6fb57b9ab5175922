"""The spec language: what a training run needs, as the user writes it in YAML.

These pydantic models are the edge of the system: they parse and type-check the YAML (``extra="forbid"``
so unknown keys are errors) and are frozen, so the planner can treat a spec as a value. Facts that need the
catalog (is this GPU known, is this zone in the region) are checked in :mod:`generator.plan.check`.
``docs/spec.md`` documents every field; keep the two in step (a test checks that every field is documented).

This module is the spec's public face: the root :class:`Spec` with its budget and waivers, and the JSON Schema. The
sections live in modules named for what they hold (:mod:`~generator.spec.training`: model and parallelism;
:mod:`~generator.spec.compute`: compute, network, spot; :mod:`~generator.spec.storage`: storage and checkpoints;
field types in :mod:`~generator.spec.fieldtypes`) and are re-exported here, so callers import from one place.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    field_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from generator.spec import limits
from generator.spec.compute import ComputeSpec, NetworkSpec, SpotSpec
from generator.spec.fieldtypes import Strict, accepts, shown
from generator.spec.storage import CheckpointSpec, DatasetSpec, MilestonesSpec, StorageSpec
from generator.spec.tags import TagKey, TagValue, spec_error
from generator.spec.training import ArchitectureSpec, FinetuneSpec, ModelSpec, ParallelismSpec

SPEC_VERSION = 1

NAME_RE = r"^[a-z][a-z0-9-]{1,38}[a-z0-9]$"


class BudgetSpec(Strict):
    currency: Literal["CNY"] = "CNY"
    per_hour: Annotated[float, Field(gt=0, le=limits.MAX_BUDGET_PER_HOUR)] | None = None
    total: Annotated[float, Field(gt=0, le=limits.MAX_BUDGET_TOTAL)] | None = None
    max_days: Annotated[float, Field(gt=0, le=3650)] | None = None

    @field_validator("per_hour", "total", mode="before")
    @classmethod
    def _money(cls, v: Any, info: ValidationInfo) -> Any:
        maximum = limits.MAX_BUDGET_PER_HOUR if info.field_name == "per_hour" else limits.MAX_BUDGET_TOTAL
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > maximum:
            unit = "CNY per hour" if info.field_name == "per_hour" else "CNY"
            raise spec_error(
                f"{shown(v)} {unit} is too large: at most {maximum:,} (10^{len(str(maximum)) - 1})",
                "check the exponent; budgets are in CNY"
                + (
                    ", and 100,000 nodes of the priciest catalog type cost about 2.8e7 CNY per hour"
                    if info.field_name == "per_hour"
                    else ""
                ),
            )
        return v


class Waiver(Strict):
    rule: Annotated[str, Field(pattern=r"^TS[0-9]{3}$")]
    reason: Annotated[
        str, Field(min_length=10, max_length=limits.MAX_WAIVER_REASON_CHARS, pattern=limits.NO_CONTROL_RE)
    ]

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        v = v.strip()  # a block scalar (reason: >) ends with a line feed
        if len(v) > limits.MAX_WAIVER_REASON_CHARS:
            raise spec_error(
                f"the reason is {len(v):,} characters; at most {limits.MAX_WAIVER_REASON_CHARS}",
                "say why in a sentence or two and link to the longer discussion",
            )
        ctrl = limits.control_character(v)
        if ctrl:
            raise spec_error(
                f"the reason contains {ctrl}; write it on one line without control characters",
                "a long reason may be folded over several lines with reason: >- (they join with spaces)",
            )
        return v


class Spec(Strict):
    """A whole training-run spec (the root of a ``*.yaml`` file)."""

    name: Annotated[str, Field(pattern=NAME_RE)]
    stack: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,30}$")] = "dev"
    region: str
    zones: tuple[str, ...] = ()
    model: ModelSpec
    parallelism: ParallelismSpec = ParallelismSpec()
    compute: ComputeSpec = ComputeSpec()
    network: NetworkSpec = NetworkSpec()
    storage: StorageSpec = StorageSpec()
    checkpoints: CheckpointSpec = CheckpointSpec()
    spot: SpotSpec = SpotSpec()
    budget: BudgetSpec = BudgetSpec()
    tags: Annotated[
        dict[TagKey, TagValue],
        WithJsonSchema(
            {
                "type": "object",
                "maxProperties": 15,
                "propertyNames": {
                    "minLength": 1,
                    "maxLength": limits.TAG_KEY_MAX,
                    "pattern": limits.NO_CONTROL_RE,
                },
                "additionalProperties": {
                    "type": "string",
                    "maxLength": limits.TAG_VALUE_MAX,
                    "pattern": limits.NO_CONTROL_RE,
                },
            }
        ),
    ] = {}  # noqa: RUF012 - a pydantic field (Strict is a BaseModel), copied per instance
    waivers: tuple[Waiver, ...] = ()

    @field_validator("tags", mode="wrap")
    @classmethod
    def _tags(cls, v: Any, handler: ValidatorFunctionWrapHandler) -> dict[str, str]:
        """The tag count, reported together with the problems of single tags (a plain after-validator would run only
        once every key and value is valid)."""
        count = (
            [
                InitErrorDetails(
                    type=spec_error(
                        f"{len(v)} tags; at most 15 (a resource holds 20 and trainstack adds 5 of its own)",
                        "drop the tags you can do without",
                    ),
                    loc=(),
                    input=v,
                )
            ]
            if isinstance(v, dict) and len(v) > 15
            else []
        )
        try:
            out = handler(v)
        except ValidationError as e:
            if not count:
                raise
            raise ValidationError.from_exception_data("tags", [*count, *_error_details(e)]) from None
        if count:
            raise ValidationError.from_exception_data("tags", count)
        return out


def _error_details(error: ValidationError) -> list[InitErrorDetails]:
    """``error``'s problems as details a new ValidationError can carry (trainstack's own keep message and hint)."""
    out: list[InitErrorDetails] = []
    for e in error.errors(include_url=False):
        ctx = e.get("ctx") or {}
        kind = (
            PydanticCustomError("trainstack", "{message}", ctx)
            if e["type"] == "trainstack"
            else PydanticCustomError(e["type"], e["msg"].replace("{", "{{").replace("}", "}}"), ctx or None)
        )
        out.append(InitErrorDetails(type=kind, loc=e["loc"], input=e["input"]))
    return out


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a spec file, for editors (``trainstack schema``)."""
    schema = Spec.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://trainstack.dev/schema/spec-v{SPEC_VERSION}.json"
    schema["title"] = "trainstack training spec"
    return schema


__all__ = [
    "NAME_RE",
    "SPEC_VERSION",
    "ArchitectureSpec",
    "BudgetSpec",
    "CheckpointSpec",
    "ComputeSpec",
    "DatasetSpec",
    "FinetuneSpec",
    "MilestonesSpec",
    "ModelSpec",
    "NetworkSpec",
    "ParallelismSpec",
    "Spec",
    "SpotSpec",
    "StorageSpec",
    "Waiver",
    "accepts",
    "json_schema",
]
