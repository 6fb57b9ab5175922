"""The spec's field types and its strict base model: counts, sizes and durations with units, and ``Strict``.

Kept apart from the models (:mod:`generator.spec.model` and the modules it gathers: ``training``, ``compute``,
``storage``) because every section's fields use them: a count with a suffix (70B), a size with a unit (500GiB), a
duration (2h), ``auto`` beside a number, and the rule that a boolean is never a number nor a number a boolean.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, TypeAlias, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)

from generator.spec import limits, units
from generator.spec.tags import spec_error


def shown(value: Any) -> str:
    """A number as the user probably wrote it: 1e30, not 1e+30 or 1000000000000000019884624838656."""
    if isinstance(value, str):
        return value
    return f"{value:,}" if isinstance(value, int) else f"{value:g}".replace("e+", "e")


def _unit(parser: Any, what: str, maximum: int | None = None, too_large: str = "", hint: str = "") -> Any:
    """A units parser as a pydantic before-validator, with an upper bound (``too_large`` says it in words)."""

    def parse(value: Any) -> Any:
        try:
            n = parser(value, what)
        except units.UnitError as e:
            raise ValueError(str(e)) from None
        if maximum is not None and n > maximum:
            raise spec_error(f"{shown(value)} is too large: {too_large}", hint)
        return n

    return parse


def _auto_or(parser: Any, what: str, maximum: int | None = None, too_large: str = "", hint: str = "") -> Any:
    inner = _unit(parser, what, maximum, too_large, hint)

    def parse(value: Any) -> Any:
        if value == "auto":
            return "auto"
        return inner(value)

    return parse


def _count_schema(maximum: int) -> dict[str, Any]:
    return {
        "anyOf": [
            {"type": "integer", "minimum": 1, "maximum": maximum},
            {"type": "string", "pattern": r"^[0-9._eE+-]+\s*([KMBGTPkmbgtp]|[KMGTkmgt][iI])?$"},
        ]
    }


_BYTES_SCHEMA = {
    "anyOf": [
        {"type": "number", "exclusiveMinimum": 0, "maximum": limits.MAX_BYTES // 2**30},
        {"type": "string", "pattern": r"^[0-9._]+([eE][+-]?[0-9]+)?\s*([KMGTPkmgtp][iI]?)?[Bb]$"},
    ]
}
_SECONDS_SCHEMA = {
    "anyOf": [
        {"type": "number", "exclusiveMinimum": 0, "maximum": limits.MAX_CHECKPOINT_INTERVAL_SECONDS // 60},
        {
            "type": "string",
            "pattern": r"^[0-9.]+([eE][+-]?[0-9]+)?\s*([sS]|[sS][eE][cC]|[mM]|[mM][iI][nN]|[hH]|[dD])$",
        },
    ]
}


def _count(maximum: int, too_large: str, hint: str) -> BeforeValidator:
    return BeforeValidator(_unit(units.parse_count, "count", maximum, too_large, hint))


ParameterCount: TypeAlias = Annotated[
    int,
    _count(
        limits.MAX_PARAMETERS,
        "at most 100T (10^14) parameters",
        "the largest published models have about 2T parameters; check "
        "the suffix (B = 10^9, T = 10^12) and the exponent",
    ),
    WithJsonSchema(_count_schema(limits.MAX_PARAMETERS)),
]
TokenCount: TypeAlias = Annotated[
    int,
    _count(
        limits.MAX_TOKENS,
        "at most 1,000T (10^15) tokens",
        "the largest published training runs use tens of T tokens; check "
        "the suffix (B = 10^9, T = 10^12) and the exponent",
    ),
    WithJsonSchema(_count_schema(limits.MAX_TOKENS)),
]
BatchTokens: TypeAlias = Annotated[
    int,
    _count(
        limits.MAX_GLOBAL_BATCH_TOKENS,
        "at most 10B (10^10) tokens per optimizer step",
        "published runs use 4M to 64M tokens per step, e.g. global_batch_tokens: 4Mi",
    ),
    WithJsonSchema(_count_schema(limits.MAX_GLOBAL_BATCH_TOKENS)),
]
_SIZE_TOO_LARGE = "at most 100 PiB"
_SIZE_HINT = "a bare number is GiB; write the unit, e.g. 500GiB or 12TiB"
Bytes = Annotated[
    int,
    BeforeValidator(_unit(units.parse_bytes, "size", limits.MAX_BYTES, _SIZE_TOO_LARGE, _SIZE_HINT)),
    WithJsonSchema(_BYTES_SCHEMA),
]
AutoBytes = Annotated[
    int | Literal["auto"],
    BeforeValidator(_auto_or(units.parse_bytes, "size", limits.MAX_BYTES, _SIZE_TOO_LARGE, _SIZE_HINT)),
    WithJsonSchema({"anyOf": [{"const": "auto"}, *_BYTES_SCHEMA["anyOf"]]}),
]
AutoInterval = Annotated[
    int | Literal["auto"],
    BeforeValidator(
        _auto_or(
            units.parse_seconds,
            "duration",
            limits.MAX_CHECKPOINT_INTERVAL_SECONDS,
            "a checkpoint interval is at most 30 days (30d)",
            "write auto for the Young/Daly optimum, or e.g. 2h; a bare number is minutes",
        )
    ),
    WithJsonSchema({"anyOf": [{"const": "auto"}, *_SECONDS_SCHEMA["anyOf"]]}),
]
AutoInt = Annotated[int, Field(gt=0, le=100_000)] | Literal["auto"]


def accepts(annotation: Any) -> frozenset[str]:
    """What kinds of scalar a field's annotation takes: "bool", "number", "auto" (containers are not looked into)."""
    out: set[str] = set()

    def walk(a: Any) -> None:
        origin = typing.get_origin(a)
        if a is bool:
            out.add("bool")
        elif a in (int, float):
            out.add("number")
        elif origin is Literal:
            for v in typing.get_args(a):
                out.add(
                    "bool"
                    if isinstance(v, bool)
                    else "number"
                    if isinstance(v, (int, float))
                    else "auto"
                    if v == "auto"
                    else "text"
                )
        elif origin is Annotated:
            walk(typing.get_args(a)[0])
        elif origin in (Union, types.UnionType):
            for x in typing.get_args(a):
                walk(x)

    walk(annotation)
    return frozenset(out)


_ACCEPTS: dict[tuple[type, str], frozenset[str]] = {}
_YAML_BOOL_WORDS = (
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
)  # YAML 1.1 booleans, which YAML 1.2 reads as text


class Strict(BaseModel):
    """The base of every spec section: unknown keys are errors, a parsed spec is frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)

    @field_validator("*", mode="before")
    @classmethod
    def _booleans_are_not_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """pydantic's lax mode reads true as 1 and 1 as true; in a spec either is a mistake."""
        key = (cls, info.field_name or "")
        if key not in _ACCEPTS:
            _ACCEPTS[key] = (
                accepts(cls.model_fields[info.field_name].annotation) if info.field_name else frozenset()
            )
        kinds = _ACCEPTS[key]
        if isinstance(value, bool):
            if "number" in kinds and "bool" not in kinds:
                auto = " (or auto)" if "auto" in kinds else ""
                raise spec_error(
                    f"expected a number{auto}, got {str(value).lower()}",
                    "true and false are not numbers; write the number itself",
                )
        elif "bool" in kinds and "number" not in kinds:
            if isinstance(value, (int, float)):
                raise spec_error(
                    f"expected true or false, got {shown(value)}",
                    "numbers are not booleans here; write true or false",
                )
            if (
                isinstance(value, str)
                and value.strip().lower() not in _YAML_BOOL_WORDS
                and ("auto" not in kinds or value != "auto")
            ):
                raise spec_error(
                    f"expected true or false, got {value!r}",
                    "write true or false" + (", or auto" if "auto" in kinds else ""),
                )
        return value
