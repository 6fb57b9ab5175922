"""pydantic's validation errors as the spec's problems: each a field path, a message and a hint in trainstack's words.

Apart from :mod:`generator.spec.loader` because the translation is its own table (an unknown field with the nearest
name, a missing one with an example, a value outside a choice, a pattern the field has words for, the two branches
of a number-or-auto field merged into one), and the loader only calls :func:`pydantic_problems`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from generator.errors import Problem, did_you_mean, excerpt
from generator.spec import codes
from generator.spec.yamltext import kind_of


def pydantic_problems(
    error: ValidationError,
    root: type[BaseModel],
    data: Any = None,
    key_paths: set[tuple[str | int, ...]] | None = None,
) -> list[Problem]:
    """Translate pydantic's errors into Problems with field paths and hints.

    ``key_paths`` (when given) collects the paths of problems with a mapping's key rather than its value."""
    problems: list[Problem] = []
    seen: set[tuple[tuple[str | int, ...], str]] = set()
    for err in error.errors(include_url=False):
        loc = _clean_loc(err["loc"], data)
        if key_paths is not None and "[key]" in err["loc"]:
            key_paths.add(loc)
        message, hint = _words(err, root, loc)
        if err["type"] == "string_pattern_mismatch":
            message, hint = _pattern_problem(loc, excerpt(err.get("input")), message, hint)
        seen_key = (loc, message)
        if seen_key in seen:
            continue
        seen.add(seen_key)
        code, fields = _code(err, root, loc)
        problems.append(code.make(loc, message, hint, fields))
    return _merge_auto(problems)


_CODES = {
    "extra_forbidden": codes.UNKNOWN_FIELD,
    "missing": codes.MISSING_FIELD,
    "literal_error": codes.NOT_A_CHOICE,
    "enum": codes.NOT_A_CHOICE,
    "model_type": codes.EXPECTED_MAPPING,
    "dict_type": codes.EXPECTED_MAPPING,
    "tuple_type": codes.EXPECTED_LIST,
    "list_type": codes.EXPECTED_LIST,
    "string_pattern_mismatch": codes.WRONG_FORM,
    **dict.fromkeys(
        (
            "greater_than",
            "greater_than_equal",
            "less_than",
            "less_than_equal",
            "string_too_short",
            "string_too_long",
            "too_short",
            "too_long",
        ),
        codes.OUT_OF_RANGE,
    ),
    **dict.fromkeys(
        (
            "int_parsing",
            "int_type",
            "int_from_float",
            "bool_parsing",
            "bool_type",
            "string_type",
            "float_parsing",
            "float_type",
        ),
        codes.WRONG_TYPE,
    ),
    **dict.fromkeys(("trainstack", "value_error", "assertion_error"), codes.REFUSED_VALUE),
}


def _code(
    err: Any, root: type[BaseModel], loc: tuple[str | int, ...]
) -> tuple[codes.SpecCode, dict[str, object]]:
    """The code of one pydantic error, by its type, and the fields that code carries."""
    kind, got = err["type"], err.get("input")
    value = got if got is None or isinstance(got, (str, int, float, bool)) else None  # a scalar only
    code = _CODES.get(kind, codes.OTHER_FIELD_ERROR)
    ctx = err.get("ctx") or {}
    own = codes.by_code(str(ctx.get("code", ""))) if kind == "trainstack" else None
    if own is not None:  # a rule with its own code (spec_error's code and fields)
        return own, dict(ctx.get("fields") or {})
    fields: dict[str, object] = {}
    if code is codes.UNKNOWN_FIELD:
        parent = _model_at(root, loc[:-1])
        fields = {"key": loc[-1], "allowed": tuple(parent.model_fields) if parent else ()}
    elif code is codes.NOT_A_CHOICE:
        fields = {"value": value, "expected": str(ctx.get("expected", ""))}
    elif code in (codes.EXPECTED_MAPPING, codes.EXPECTED_LIST):
        fields = {"kind": kind_of(got)}
    elif code is codes.OUT_OF_RANGE:
        bound = next((k for k in ("gt", "ge", "lt", "le", "min_length", "max_length") if k in ctx), "")
        fields = {"value": value, "bound": bound, "limit": ctx.get(bound)}
    elif code is codes.OTHER_FIELD_ERROR:
        fields = {"type": kind, "value": value}
    elif code is not codes.MISSING_FIELD:
        fields = {"value": value}
    return code, fields


def _words(err: Any, root: type[BaseModel], loc: tuple[str | int, ...]) -> tuple[str, str]:
    """The message and hint of one pydantic error, by its type."""
    kind = err["type"]
    if kind == "extra_forbidden":
        return _unknown_field(root, loc)
    if kind == "missing":
        return "this field is required", _missing_hint(loc)
    if kind in ("literal_error", "enum"):
        return _not_a_choice(err)
    if kind in ("model_type", "dict_type"):
        return _not_a_mapping(err.get("input"))
    if kind in ("tuple_type", "list_type"):
        return f"expected a list, got {kind_of(err.get('input'))}", ""
    if kind == "trainstack":  # spec.spec_error: the message and hint are written for the user already
        return str(err.get("ctx", {}).get("message") or err["msg"]), str(err.get("ctx", {}).get("hint") or "")
    message = err["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return _friendlier(message, err.get("input")), ""


def _unknown_field(root: type[BaseModel], loc: tuple[str | int, ...]) -> tuple[str, str]:
    parent_model = _model_at(root, loc[:-1])
    fields = list(parent_model.model_fields) if parent_model else []
    key = loc[-1]
    hint = did_you_mean(str(key), fields) or (f"allowed here: {', '.join(fields)}" if fields else "")
    return f"unknown field '{key}'", hint


def _missing_hint(loc: tuple[str | int, ...]) -> str:
    if loc[:1] == ("waivers",) and loc[-1] == "reason":
        return 'say why the rule does not apply here, e.g. reason: "single node: no RDMA traffic to secure"'
    loc_path = ".".join(str(x) for x in loc)
    return {
        "name": "add e.g. 'name: my-run'",
        "region": "add e.g. 'region: cn-wulanchabu'",
        "model": "add e.g. 'model: {parameters: 7B}'",
    }.get(loc_path, "")


def _not_a_choice(err: Any) -> tuple[str, str]:
    expected = err.get("ctx", {}).get("expected", "")
    got = err.get("input")
    choices = [c.strip().strip("'") for c in str(expected).replace(" or ", ", ").split(",") if c.strip()]
    message = f"{'an empty value' if got is None else excerpt(got)} is not allowed; expected {expected}"
    return message, did_you_mean(str(got), choices) if isinstance(got, str) else ""


def _not_a_mapping(got: Any) -> tuple[str, str]:
    hint = ""
    if got is None:
        hint = "give its fields indented below it, or remove the line"
    elif isinstance(got, list):
        hint = "write its fields as 'key: value' lines without a leading '- '"
    return f"expected a mapping of fields, got {kind_of(got)}", hint


def _pattern_problem(loc: tuple[str | int, ...], got: str, message: str, hint: str) -> tuple[str, str]:
    """The message and hint of a value that does not match its field's pattern, where the field has words for it."""
    if loc and loc[0] in PATTERN_HELP and len(loc) == 1:
        return f"{got} is not a valid {loc[0]}: {PATTERN_HELP[str(loc[0])]}", hint
    if loc and loc[-1] == "rule":
        return f"{got} is not a rule id: rule ids look like TS001 (see trainstack lint --rules)", hint
    if loc == ("compute", "container_registry_instance"):
        return (
            f"{got} is not a Container Registry Enterprise Edition instance id",
            (
                "the instance's ID as the ACR console shows it: cri- and lowercase letters and digits "
                "(cri-kmsiwlxxdcvaduwb)"
            ),
        )
    return message, hint


PATTERN_HELP = {
    "name": "use 3-40 lowercase letters, digits and hyphens, starting with a letter (it names cloud resources)",
    "stack": "use lowercase letters, digits and hyphens, starting with a letter (e.g. dev, prod)",
}


def _merge_auto(problems: list[Problem]) -> list[Problem]:
    """A field that takes a number or 'auto' fails both branches; keep the useful message only."""
    by_loc: dict[tuple[str | int, ...], list[Problem]] = {}
    for p in problems:
        by_loc.setdefault(p.path, []).append(p)
    out: list[Problem] = []
    for p in problems:
        same = by_loc[p.path]
        if len(same) > 1 and _auto_branch(p):
            continue
        if len(same) > 1 and any(_auto_branch(q) for q in same):
            p = dataclasses.replace(p, message=p.message + " (or write 'auto')")
        out.append(p)
    return out


def _auto_branch(p: Problem) -> bool:
    """Whether ``p`` is the failed ``'auto'`` branch of a number-or-auto field."""
    return p.code == codes.NOT_A_CHOICE.code and str(dict(p.fields).get("expected", "")).startswith("'auto'")


def _friendlier(message: str, value: Any) -> str:
    if message.startswith("Input should be greater than"):
        return f"{excerpt(value)} is too small: it must be " + message[len("Input should be ") :]
    if message.startswith("Input should be less than"):
        return f"{excerpt(value)} is too large: it must be " + message[len("Input should be ") :]
    if message.startswith("String should have at least"):
        return (
            f"{excerpt(value)} is too short: use at least " + message[len("String should have at least ") :]
        )
    if message.startswith("String should have at most"):
        return f"{excerpt(value)} is too long: use at most " + message[len("String should have at most ") :]
    if message.startswith("Input should be a valid integer"):
        return f"expected a whole number, got {excerpt(value)}"
    if message.startswith("Input should be a valid boolean"):
        return f"expected true or false, got {excerpt(value)}"
    if message.startswith("Input should be a valid string"):
        return f"expected text, got {excerpt(value)}"
    if message.startswith("Input should be a valid number"):
        return f"expected a number, got {excerpt(value)}"
    if message.startswith(("Tuple should have at least", "List should have at least")):
        return (
            f"{excerpt(value)} is too short: it needs at least "
            + message.split("at least ", 1)[1].split(" after")[0]
        )
    if message.startswith("String should match pattern"):
        return f"{excerpt(value)} has the wrong form ({message[len('String should ') :]})"
    return message


def _clean_loc(loc: Sequence[Any], data: Any = None) -> tuple[str | int, ...]:
    """Drop pydantic's union-branch labels (``int``, ``literal['auto']``, ...) from an error location.

    A part that is a key (or index) of the input at that point is the user's, even if it is spelt 'int'."""
    out: list[str | int] = []
    node = data
    for part in loc:
        if (
            isinstance(node, dict)
            and part in node
            or isinstance(node, list)
            and isinstance(part, int)
            and 0 <= part < len(node)
        ):
            node = node[part]
        elif part == "[key]" and out:
            continue  # pydantic's marker for "the key itself is wrong": keep the key's path
        elif isinstance(part, str) and (
            part.startswith(("literal[", "function-", "constrained-"))
            or part in ("int", "str", "bool", "float", "tuple[str, ...]", "is-instance[int]")
        ):
            continue
        else:
            node = None
        out.append(part)
    return tuple(out)


def _model_at(root: type[BaseModel], path: Sequence[str | int]) -> type[BaseModel] | None:
    import typing

    model: Any = root
    for part in path:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None
        ann = model.model_fields[part].annotation
        model = _first_model(ann, typing)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _first_model(ann: Any, typing: Any) -> Any:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in typing.get_args(ann):
        found = _first_model(arg, typing)
        if found is not None:
            return found
    return None
