"""A Plan as JSON that reads back to the same object: ``read(write(plan)) == plan``.

``plan.json`` (:meth:`Plan.to_dict`) is written for people and tools: floats rounded to 6 places, empty fields left
out, each warning's words beside its fields. It cannot be read back into the Plan it came from. This module writes
every field as it is (floats as ``repr`` gives them, ints as ints, tuples as lists, a warning or a rejection as its
code and fields) and reads the document back by the dataclasses' own annotations, so a Plan can be stored in a
cache shared between machines (``diff``'s side cache, :mod:`generator.preview.side_cache`) without pickle: a
pickle restored from a shared CI cache would run whatever code it names, while this reader only builds the plan's
own frozen dataclasses and the warning and rejection classes their registries list (``warns.codes()``,
``rejections.codes()``), checking every value's type on the way. A document that does not match, in any field,
raises :class:`PlanReadError` naming the field.

Both directions are strict: :func:`write` refuses a value its annotation does not allow (a list where a tuple is
declared, a float in an ``int`` field, NaN), since it would not read back equal.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
import typing
from collections.abc import Callable
from typing import Any

from generator.plan.model import PLAN_SCHEMA_VERSION, Plan

FORMAT = "trainstack-plan-exact"
CODEC_VERSION = 1  # bump when the encoding below changes

Decoder = Callable[[Any, Any], Any]  # (JSON data, where it is) -> the value
Encoder = Callable[[Any, Any], Any]  # (value, where it is) -> JSON data


class PlanReadError(ValueError):
    """The document is not an exact plan: the message names the field (``plan.compute.ranks[3].zone``)."""


def write(plan: Plan) -> str:
    """The exact JSON text of ``plan``; ValueError if a field holds a value its annotation does not allow."""
    body = _encoder(Plan)(plan, "plan")
    doc = {"format": FORMAT, "codec": CODEC_VERSION, "schema": PLAN_SCHEMA_VERSION, "plan": body}
    return json.dumps(doc, separators=(",", ":"), allow_nan=False)


def read(text: str | bytes) -> Plan:
    """The Plan :func:`write` wrote; :class:`PlanReadError` for anything else."""
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise PlanReadError(f"not JSON: {e}") from None
    if not isinstance(doc, dict) or set(doc) != {"format", "codec", "schema", "plan"}:
        raise PlanReadError("not an exact plan document (format, codec, schema, plan)")
    if doc["format"] != FORMAT or doc["codec"] != CODEC_VERSION or doc["schema"] != PLAN_SCHEMA_VERSION:
        raise PlanReadError(
            f"format {doc['format']!r} codec {doc['codec']!r} schema {doc['schema']!r}: this trainstack reads "
            f"{FORMAT!r} codec {CODEC_VERSION} schema {PLAN_SCHEMA_VERSION}"
        )
    plan = _decoder(Plan)(doc["plan"], "plan")
    assert isinstance(plan, Plan)
    return plan


# -- the polymorphic fields: an abstract event base and the classes its registry lists


@functools.cache
def _registries() -> dict[type, dict[str, type]]:
    from generator.plan import rejections, warns

    return {
        warns.PlanWarning: {c.code: c for c in warns.codes()},
        rejections.Rejection: {c.code: c for c in rejections.codes()},
    }


@functools.cache
def _hints(cls: type) -> tuple[tuple[str, Any], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


# -- where a value is: "plan", or (parent, ".name") / (parent, index), spelled out only for a message (a string per
# value would cost more than the value's own check)

Where = Any


def _path(where: Where) -> str:
    parts: list[str] = []
    while type(where) is tuple:
        where, step = where
        parts.append(f"[{step}]" if type(step) is int else step)
    return str(where) + "".join(reversed(parts))


# -- writing: one encoder per annotation, built once


@functools.cache
def _encoder(kind: Any) -> Encoder:
    """The function giving ``value`` as JSON data, checked against its annotation ``kind``."""
    origin = typing.get_origin(kind)
    if origin in (types.UnionType, typing.Union):
        return _union_encoder(kind)
    if origin is tuple:
        return _tuple_encoder(typing.get_args(kind))
    if kind in _registries():
        return _event_encoder(kind)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return _dataclass_encoder(kind)
    return _scalar_encoder(kind)


def _union_encoder(kind: Any) -> Encoder:
    options = [(option, _matcher(option)) for option in typing.get_args(kind)]

    def encode(value: Any, where: Where) -> Any:
        for option, matches in options:
            if option is type(None):
                if value is None:
                    return None
            elif matches(value):
                return _encoder(option)(value, where)
        raise ValueError(f"{_path(where)}: {type(value).__name__} is not {kind}")

    return encode


def _tuple_encoder(args: tuple[Any, ...]) -> Encoder:
    if len(args) == 2 and args[1] is Ellipsis:
        item = _encoder(args[0])

        def repeated(value: Any, where: Where) -> Any:
            if type(value) is not tuple:
                raise ValueError(f"{_path(where)}: {type(value).__name__}, not a tuple")
            return [item(v, (where, i)) for i, v in enumerate(value)]

        return repeated
    items = [_encoder(a) for a in args]

    def fixed(value: Any, where: Where) -> Any:
        if type(value) is not tuple:
            raise ValueError(f"{_path(where)}: {type(value).__name__}, not a tuple")
        if len(items) != len(value):
            raise ValueError(f"{_path(where)}: {len(value)} items, not {len(items)}")
        return [e(v, (where, i)) for i, (e, v) in enumerate(zip(items, value, strict=True))]

    return fixed


def _event_encoder(base: type) -> Encoder:
    registry = _registries()[base]

    def encode(value: Any, where: Where) -> Any:
        code: Any = getattr(value, "code", None)
        cls: Any = type(value)
        if type(code) is not str or registry.get(code) is not cls:
            raise ValueError(f"{_path(where)}: {cls.__name__} is not a listed {base}")
        return {"code": code, "fields": _encoder(cls)(value, where)}

    return encode


def _dataclass_encoder(cls: type) -> Encoder:
    fields = tuple((name, "." + name, _encoder(t)) for name, t in _hints(cls))

    def encode(value: Any, where: Where) -> Any:
        if type(value) is not cls:
            raise ValueError(f"{_path(where)}: {type(value).__name__}, not {cls.__name__}")
        return {name: e(getattr(value, name), (where, step)) for name, step, e in fields}

    return encode


def _scalar_encoder(kind: Any) -> Encoder:
    def encode(value: Any, where: Where) -> Any:
        if not _scalar_ok(kind, value):
            raise ValueError(f"{_path(where)}: {value!r} is not {getattr(kind, '__name__', kind)}")
        return value

    def exact(
        value: Any, where: Where
    ) -> Any:  # _scalar_ok for int, str and bool, inline (most of a plan's values)
        if type(value) is not kind:
            raise ValueError(f"{_path(where)}: {value!r} is not {kind.__name__}")
        return value

    return exact if kind in (int, str, bool) else encode


@functools.cache
def _matcher(kind: Any) -> Callable[[Any], bool]:
    """Whether a value is of ``kind`` at its top level (how a union picks its member)."""
    if typing.get_origin(kind) is tuple:
        return lambda value: type(value) is tuple
    registry = _registries().get(kind)
    if registry is not None:
        listed = frozenset(registry.values())
        return lambda value: type(value) in listed
    if dataclasses.is_dataclass(kind):
        return lambda value: type(value) is kind
    return lambda value: _scalar_ok(kind, value)


def _scalar_ok(kind: Any, value: Any) -> bool:
    if kind is float:  # an int in a float field stays an int (0 and 0.0 print differently)
        return type(value) in (int, float) and (type(value) is int or math.isfinite(value))
    return kind in (int, str, bool) and type(value) is kind


# -- reading: one decoder per annotation, built once


@functools.cache
def _decoder(kind: Any) -> Decoder:
    origin = typing.get_origin(kind)
    if origin in (types.UnionType, typing.Union):
        return _union(typing.get_args(kind))
    if origin is tuple:
        return _tuple(typing.get_args(kind))
    if kind in _registries():
        return _event(kind)
    if dataclasses.is_dataclass(kind):
        return _dataclass(kind)  # type: ignore[arg-type]
    if kind in (int, str, bool, float):
        return _scalar(kind)
    raise TypeError(f"no exact JSON reader for {kind!r}")


def _scalar(kind: type) -> Decoder:
    def decode(value: Any, where: Where) -> Any:
        if not _scalar_ok(kind, value):
            raise PlanReadError(f"{_path(where)}: {value!r} is not {kind.__name__}")
        return value

    def exact(
        value: Any, where: Where
    ) -> Any:  # _scalar_ok for int, str and bool, inline (most of a plan's values)
        if type(value) is not kind:
            raise PlanReadError(f"{_path(where)}: {value!r} is not {kind.__name__}")
        return value

    return exact if kind in (int, str, bool) else decode


def _union(options: tuple[Any, ...]) -> Decoder:
    optional = type(None) in options
    members = [o for o in options if o is not type(None)]
    if len(members) != 1:
        raise TypeError(f"no exact JSON reader for a union of {members!r}")
    inner = _decoder(members[0])

    def decode(value: Any, where: Where) -> Any:
        if value is None and optional:
            return None
        return inner(value, where)

    return decode


def _tuple(args: tuple[Any, ...]) -> Decoder:
    if len(args) == 2 and args[1] is Ellipsis:
        item = _decoder(args[0])

        def repeated(value: Any, where: Where) -> Any:
            if type(value) is not list:
                raise PlanReadError(f"{_path(where)}: not a list")
            return tuple(item(v, (where, i)) for i, v in enumerate(value))

        return repeated
    items = [_decoder(a) for a in args]

    def fixed(value: Any, where: Where) -> Any:
        if type(value) is not list or len(value) != len(items):
            raise PlanReadError(f"{_path(where)}: not a list of {len(items)}")
        return tuple(d(v, (where, i)) for i, (d, v) in enumerate(zip(items, value, strict=True)))

    return fixed


def _dataclass(cls: type) -> Decoder:
    fields = tuple((name, "." + name, _decoder(t)) for name, t in _hints(cls))
    names = {name for name, _, _ in fields}

    def decode(value: Any, where: Where) -> Any:
        if type(value) is not dict or value.keys() != names:
            raise PlanReadError(f"{_path(where)}: not an object with exactly the fields of {cls.__name__}")
        return cls(**{name: d(value[name], (where, step)) for name, step, d in fields})

    return decode


def _event(base: type) -> Decoder:
    def decode(value: Any, where: Where) -> Any:
        if type(value) is not dict or value.keys() != {"code", "fields"}:
            raise PlanReadError(f"{_path(where)}: not a {base.__name__} (code, fields)")
        cls = _registries()[base].get(value["code"]) if type(value["code"]) is str else None
        if cls is None:
            raise PlanReadError(f"{_path(where)}: {value['code']!r} is not a {base.__name__} code")
        return _decoder(cls)(value["fields"], where)

    return decode


__all__ = ["CODEC_VERSION", "FORMAT", "PlanReadError", "read", "write"]
