"""Tag keys and values as Alibaba Cloud accepts them, and the validation error every spec model raises.

``spec_error`` lives here, below :mod:`generator.spec.model`, so both the models and the tag types can use it
without an import cycle; the loader shows its message and hint as written (``loader.pydantic_problems``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError

from generator.spec import limits


def spec_error(
    message: str, hint: str = "", code: str = "", fields: dict[str, object] | None = None
) -> PydanticCustomError:
    """A validation error whose message and hint reach the user as written (see loader.pydantic_problems); ``code``
    (a TSS code of :mod:`generator.spec.codes` with its ``fields``) when the rule has its own, else TSS109."""
    ctx: dict[str, object] = {"message": message, "hint": hint}
    if code:
        ctx.update(code=code, fields=fields or {})
    return PydanticCustomError("trainstack", "{message}", ctx)


def _tag_text(v: Any, what: str, maximum: int) -> Any:
    if not isinstance(v, str):
        return v
    shown = f"{v[:40]!r}{'...' if len(v) > 40 else ''}"
    ctrl = limits.control_character(v)
    if ctrl:
        raise spec_error(
            f"tag {what} {shown} contains {ctrl}; tags are one line of printable text",
            "remove the control character (a quoted YAML string turns \\t, \\n and \\r into them)",
        )
    if len(v) > maximum:
        raise spec_error(
            f"tag {what} {shown} is {len(v)} characters; Alibaba Cloud allows at most {maximum}", "shorten it"
        )
    if re.search("https?://", v, flags=re.IGNORECASE):
        raise spec_error(
            f"tag {what} {shown} contains http:// or https://, which Alibaba Cloud refuses in tags",
            "drop the scheme, e.g. wiki.example.com/llm",
        )
    return v


def _tag_key(v: Any) -> Any:
    v = _tag_text(v, "key", limits.TAG_KEY_MAX)
    if isinstance(v, str) and v.lower().startswith(("aliyun", "acs:")):
        raise spec_error(
            f"tag key {v[:40]!r} starts with a prefix Alibaba Cloud reserves (aliyun, acs:)",
            "rename the key, e.g. team or cost-center",
        )
    # checked per key, beside the values' checks, so a reserved key is reported with every other tag problem at once
    if isinstance(v, str) and (v == "managed-by" or v.startswith("trainstack-")):
        raise spec_error(
            f"tag key {v[:40]!r} is reserved for trainstack's own tags (managed-by, trainstack-*)",
            "rename the key, e.g. team or cost-center; trainstack sets its own tags on every resource",
        )
    return v


def _tag_value(v: Any) -> Any:
    v = _tag_text(v, "value", limits.TAG_VALUE_MAX)
    if isinstance(v, str) and v.lower().startswith("acs:"):
        raise spec_error(
            f"tag value {v[:40]!r} starts with acs:, a prefix Alibaba Cloud reserves", "change the value"
        )
    return v


# Field before BeforeValidator: in the other order pydantic leaves the pattern out of the JSON Schema
TagKey = Annotated[
    str,
    Field(min_length=1, max_length=limits.TAG_KEY_MAX, pattern=limits.NO_CONTROL_RE),
    BeforeValidator(_tag_key),
]
TagValue = Annotated[
    str, Field(max_length=limits.TAG_VALUE_MAX, pattern=limits.NO_CONTROL_RE), BeforeValidator(_tag_value)
]
