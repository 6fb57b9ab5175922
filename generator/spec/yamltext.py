"""The spec's YAML read with positions: text -> plain data and a map from each field's path to its line and column.

The bounded parse lives here apart from :mod:`generator.spec.loader` (which turns the data into a ``Spec``): the
refusals of hostile YAML (nesting, aliases that multiply, duplicate keys, tabs, explicit tags, invisible characters)
each located at a line, and :func:`locate`, which gives any problem the position of its field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generator.errors import Problem, SpecErrors, clip
from generator.spec import codes, limits
from generator.spec.source import MAX_SPEC_BYTES


def locate(p: Problem, file: str, positions: Mapping[tuple[str | int, ...], tuple[int, int]]) -> Problem:
    """Give a problem the line and column of its field, or of the nearest enclosing field that exists."""
    path = tuple(p.path)
    while path and path not in positions:
        path = path[:-1]
    line, col = positions.get(path, (1, 1))
    return p.located(file, line, col)


def locate_value(
    p: Problem, file: str, positions: Mapping[tuple[str | int, ...], tuple[int, int]]
) -> Problem:
    """Like :func:`locate`, but point at the value when the problem is with the value, not the key."""
    if p.code not in (codes.UNKNOWN_FIELD.code, codes.MISSING_FIELD.code):
        value = (*p.path, "__value__")
        if value in positions:
            line, col = positions[value]
            return p.located(file, line, col)
    return locate(p, file, positions)


def kind_of(v: Any) -> str:
    """What a YAML value is, in a user's words ("list", "string", "number", "an empty value", ...)."""
    return {
        list: "list",
        str: "string",
        int: "number",
        float: "number",
        bool: "boolean",
        type(None): "an empty value",
        dict: "mapping",
    }.get(type(v), type(v).__name__)


def parse_yaml(text: str, file: str) -> tuple[Any, dict[tuple[str | int, ...], tuple[int, int]]]:
    """YAML -> plain Python data and a map from field path to (line, column), both 1-based.

    The bounded parse is one sequence of refusals, each before the next can run: nesting (streamed, so thousands of
    '[' cost nothing), the YAML itself (:func:`_load`), aliases that expand too far (:func:`_plain`), invisible
    characters. ruamel is imported late so commands that load no spec skip it."""
    lines = text.splitlines()

    def refuse(
        code: codes.SpecCode, message: str, hint: str, at: tuple[int, int], **fields: object
    ) -> SpecErrors:
        return SpecErrors([code.make((), message, hint, fields, file, at[0], at[1])], lines)

    too_deep = _nesting_over(text, MAX_DEPTH)
    if too_deep is not None:
        raise refuse(
            codes.TOO_DEEP,
            f"the YAML nests deeper than {MAX_DEPTH} levels",
            "a spec nests about four levels deep; is a bracket repeated or unclosed?",
            too_deep,
            max_depth=MAX_DEPTH,
        )
    doc = _load(text, lines, refuse)
    positions: dict[tuple[str | int, ...], tuple[int, int]] = {(): (1, 1)}
    try:
        data = _plain(doc, (), positions, depth=0, budget=[MAX_VALUES, MAX_EXPANDED_CHARS])
    except _TooDeep:
        raise refuse(
            codes.TOO_DEEP,
            f"the YAML nests too deeply (over {MAX_DEPTH} levels)",
            "anchors (&) and aliases (*) nested inside each other add up",
            (1, 1),
            max_depth=MAX_DEPTH,
        ) from None
    except _TooLong:
        raise refuse(
            codes.EXPANDS_TOO_LONG,
            f"the YAML expands to over {MAX_EXPANDED_CHARS:,} characters of text",
            "an anchor (&) of long text is repeated by its aliases (*); a spec's text is a few kilobytes",
            (1, 1),
            max_chars=MAX_EXPANDED_CHARS,
        ) from None
    except _TooBig:
        raise refuse(
            codes.TOO_MANY_VALUES,
            f"the YAML expands to over {MAX_VALUES:,} values",
            "anchors (&) and aliases (*) repeated inside each other multiply; a spec needs a few hundred values",
            (1, 1),
            max_values=MAX_VALUES,
        ) from None
    hidden = _invisible_problems(data, file, positions)
    if hidden:
        raise SpecErrors(hidden, lines)
    return data, positions


def _load(text: str, lines: list[str], refuse: Any) -> Any:
    """ruamel's round-trip load of ``text``, or ``refuse(code, message, hint, (line, column), **fields)`` raised."""
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        return yaml.load(text)
    except DuplicateKeyError as e:
        mark, key = e.problem_mark, _dup_key(e)
        raise refuse(
            codes.DUPLICATE_KEY,
            f"duplicate key '{key}'" if key else "duplicate key",
            "each key may appear once in a mapping; remove or merge the repeated one",
            (mark.line + 1, mark.column + 1),
            key=key,
        ) from None
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        code, message, hint, fields = _marked(e, lines)
        at = ((mark.line + 1) if mark else 1, (mark.column + 1) if mark else 1)
        raise refuse(code, f"invalid YAML: {message}", hint, at, **fields) from None
    except YAMLError as e:
        raise refuse(codes.INVALID_YAML, f"invalid YAML: {e}", "", (1, 1), problem=str(e)) from None
    except RecursionError:
        raise refuse(codes.TOO_DEEP, "the YAML nests too deeply", "", (1, 1), max_depth=MAX_DEPTH) from None
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as e:
        # ruamel's constructors raise plain exceptions on some explicit tags: '!!int x', '!!bool maybe', '!!set' on a
        # scalar
        line = next((i + 1 for i, t in enumerate(lines) if "!" in t.split("#")[0]), 1)
        error = f"{type(e).__name__}: {clip(str(e), 80)}"
        raise refuse(
            codes.TAG_MISMATCH,
            f"invalid YAML: a value does not match its explicit tag ({error})",
            "remove the '!!' tags; a spec needs none",
            (line, 1),
            error=error,
        ) from None


def _marked(e: Any, lines: list[str]) -> tuple[codes.SpecCode, str, str, dict[str, object]]:
    """The code, message, hint and fields of a YAML error ruamel marked with a place."""
    mark = e.problem_mark or e.context_mark
    message = (e.problem or e.context or "invalid YAML").strip()
    if "another document" in message:
        return (
            codes.SECOND_DOCUMENT,
            "a spec file holds one YAML document, but '---' starts another here",
            "put each spec in its own file, or remove this '---' line",
            {},
        )
    if "\t" in message or "'\\t'" in message or (mark and _has_tab(lines, mark.line)):
        return (
            codes.TAB,
            "a tab character is not allowed here",
            "YAML indents with spaces; replace the tab characters",
            {},
        )
    hint = ""
    if "mapping values are not allowed" in message:
        hint = "a value containing ': ' must be quoted, or the indentation is off"
    elif e.context and e.context_mark and mark and e.context_mark.line != mark.line:
        what, closer = next(
            ((w, c) for k, (w, c) in _UNCLOSED.items() if k in e.context),
            ("the construct", "a closing bracket or quote"),
        )
        hint = (
            f"{what} opened at line {e.context_mark.line + 1}, column {e.context_mark.column + 1} "
            f"is not closed: is {closer} missing?"
        )
    return codes.INVALID_YAML, message, hint, {"problem": message}


def _invisible_problems(
    data: Any, file: str, positions: Mapping[tuple[str | int, ...], tuple[int, int]]
) -> list[Problem]:
    """A located problem for every key and text value that holds an invisible formatting character."""
    problems = []
    for where, is_key, char in _invisible(data, ()):
        p = codes.INVISIBLE.problem(
            where,
            f"the {'key' if is_key else 'text'} contains {char}, an invisible formatting character",
            "invisible and bidirectional characters can make text read differently from what "
            "it is; retype the text without them (an editor that shows invisibles finds them)",
            character=char,
            in_key=is_key,
        )
        problems.append(locate(p, file, positions) if is_key else locate_value(p, file, positions))
    return problems


def _invisible(data: Any, path: tuple[str | int, ...]) -> Any:
    """(path, is_key, character) for every key and text value holding an invisible format character."""
    if isinstance(data, dict):
        for key, value in data.items():
            char = limits.invisible_character(key) if isinstance(key, str) else None
            if char:
                yield (*path, key), True, char
            yield from _invisible(value, (*path, key))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            yield from _invisible(item, (*path, i))
    elif isinstance(data, str):
        char = limits.invisible_character(data)
        if char:
            yield path, False, char


MAX_VALUES = 100_000  # a spec has a few hundred values; aliases nested in aliases can expand to billions
# text after aliases; one long anchor repeated would make every error huge
MAX_EXPANDED_CHARS = 2 * MAX_SPEC_BYTES
# a spec nests about four levels; ruamel takes seconds (and Python's stack) on thousands of '['
MAX_DEPTH = 50


def _nesting_over(text: str, limit: int) -> tuple[int, int] | None:
    """Where (1-based line, column) the YAML first nests deeper than ``limit`` collections, or None.

    Streams parser events and stops at the first collection too deep, so 5,000 '[' cost what 51 do. Any YAML
    error is left for the real load to report."""
    from ruamel.yaml import YAML
    from ruamel.yaml.events import CollectionEndEvent, CollectionStartEvent

    depth = 0
    try:
        for event in YAML(typ="rt").parse(text):
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > limit:
                    mark = event.start_mark
                    return (mark.line + 1, mark.column + 1) if mark else (1, 1)
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
    except Exception:  # noqa: BLE001 - the real load reports syntax errors with their context
        return None
    return None


_UNCLOSED = {
    "flow sequence": ("the list '['", "']'"),
    "flow mapping": ("the mapping '{'", "'}'"),
    "quoted scalar": ("the quoted text", "the closing quote"),
}


class _TooDeep(Exception):
    pass


class _TooBig(Exception):
    pass


class _TooLong(Exception):
    pass


def _spend(budget: list[int], text: str) -> None:
    budget[1] -= len(text)
    if budget[1] < 0:
        raise _TooLong


def _has_tab(lines: list[str], index: int) -> bool:
    return 0 <= index < len(lines) and "\t" in lines[index]


def _dup_key(e: Exception) -> str:
    text = str(getattr(e, "problem", "") or "")
    if '"' in text:
        return text.split('"')[1]
    return ""


def _plain(node: Any, path: tuple[str | int, ...], positions: dict, depth: int, budget: list[int]) -> Any:
    """ruamel round-trip nodes -> dict/list/scalars, recording each key's and item's position."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if depth > MAX_DEPTH:
        raise _TooDeep
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig
    if isinstance(node, CommentedMap):
        out: dict[Any, Any] = {}
        for key in node:
            k = key if isinstance(key, (str, int, float, bool)) or key is None else str(key)
            k = str(k) if not isinstance(k, str) else k
            _spend(budget, k)
            child = (*path, k)
            try:
                kl, kc = node.lc.key(key)
                positions[child] = (kl + 1, kc + 1)
            except (KeyError, TypeError, AttributeError):
                pass
            try:
                if (
                    node[key] is not None
                ):  # an empty value's mark is the next token, often past the end of the file
                    vl, vc = node.lc.value(key)
                    positions[child + ("__value__",)] = (vl + 1, vc + 1)
            except (KeyError, TypeError, AttributeError):
                pass
            out[k] = _plain(node[key], child, positions, depth + 1, budget)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for i, item in enumerate(node):
            try:
                il, ic = node.lc.item(i)
                positions[path + (i,)] = (il + 1, ic + 1)
            except (KeyError, TypeError, AttributeError, IndexError):
                pass
            items.append(_plain(item, (*path, i), positions, depth + 1, budget))
        return items
    if hasattr(node, "__float__") and type(node).__name__ == "ScalarFloat":
        return float(node)
    if type(node).__name__ in ("ScalarBoolean",):
        return bool(node)
    if isinstance(node, str):
        _spend(budget, node)
        return str(node)
    if isinstance(node, int) and not isinstance(node, bool):
        return int(node)
    if isinstance(node, (list, tuple, set, dict)):
        return node
    if node is None or isinstance(node, (bool, float)):
        return node
    # timestamps and other YAML types: keep their text so the type check can say what is wrong
    return str(node)
