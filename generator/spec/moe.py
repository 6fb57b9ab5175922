"""The spec's ``model.moe`` section: a mixture-of-experts model's expert layers, as the user writes them.

Kept apart from :mod:`generator.spec.model` (which imports it) so the spec language stays in modules under the
size limit. Like every section a boolean is not a count here (the same message as the rest of the spec); the
sizing of these fields is :mod:`generator.sizing.moe`, and ``docs/spec.md`` documents each.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError


class MoESpec(BaseModel):
    """Routed experts per MoE layer, how many a token uses, their width, shared experts, leading dense layers and
    an optional capacity factor (left out: a dropless router)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)

    experts: Annotated[int, Field(gt=1, le=100_000)]
    top_k: Annotated[int, Field(gt=0, le=1024)]
    expert_ffn_hidden: Annotated[int, Field(gt=0, le=10_000_000)]
    shared_experts: Annotated[int, Field(ge=0, le=1024)] = 0
    dense_layers: Annotated[int, Field(ge=0, le=1000)] = 0
    capacity_factor: Annotated[float, Field(ge=1, le=16)] | None = None

    @field_validator("*", mode="before")
    @classmethod
    def _booleans_are_not_numbers(cls, value: Any) -> Any:
        """Every field here is a number: true or false is a mistake, said as the rest of the spec says it."""
        if isinstance(value, bool):
            # the error generator.spec.model.spec_error builds (its loader shows message and hint as written); built
            # here because that module imports this one
            raise PydanticCustomError(
                "trainstack",
                "{message}",
                {
                    "message": f"expected a number, got {str(value).lower()}",
                    "hint": "true and false are not numbers; write the number itself",
                },
            )
        return value

    @model_validator(mode="after")
    def _top_k_of_experts(self) -> MoESpec:
        if self.top_k > self.experts:
            raise ValueError(
                f"top_k ({self.top_k}) is more than the {self.experts} experts a token can be routed to"
            )
        return self
