"""Stage 1, load: a YAML file -> a typed :class:`~generator.spec.model.Spec`, or every problem at once.

Problems carry ``FILE:LINE:COL`` taken from ruamel.yaml's position marks, so an error points at the key or
value the user has to change. Nothing here reads the catalog; see :mod:`generator.plan.check` for that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from generator.errors import Problem, SpecErrors, clip, did_you_mean, excerpt, one_of
from generator.spec import limits, source
from generator.spec.model import Spec
from generator.spec.source import MAX_SPEC_BYTES


@dataclass(frozen=True)
class Located:
    """A parsed spec plus where each of its fields sits in the file."""

    spec: Spec
    file: str
    text: str
    positions: Mapping[tuple[str | int, ...], tuple[int, int]]

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def locate(self, problems: Sequence[Problem]) -> list[Problem]:
        return [locate(p, self.file, self.positions) for p in problems]


def locate(p: Problem, file: str, positions: Mapping[tuple[str | int, ...], tuple[int, int]]) -> Problem:
    """Give a problem the line and column of its field, or of the nearest enclosing field that exists."""
    path = tuple(p.path)
    while path and path not in positions:
        path = path[:-1]
    line, col = positions.get(path, (1, 1))
    return p.located(file, line, col)


def locate_value(p: Problem, file: str, positions: Mapping[tuple[str | int, ...], tuple[int, int]]) -> Problem:
    """Like :func:`locate`, but point at the value when the problem is with the value, not the key."""
    if not p.message.startswith(("unknown field", "this field is required")):
        value = (*p.path, "__value__")
        if value in positions:
            line, col = positions[value]
            return p.located(file, line, col)
    return locate(p, file, positions)


def read_text(path: Path) -> str:
    """The spec's text; a missing, huge, binary or non-regular file, or a link out of the repository, is a problem
    that quotes none of its bytes (:func:`generator.spec.source.read_bytes`), not a traceback."""
    return decode(source.read_bytes(path), str(path))


def decode(raw: bytes, name: str) -> str:
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecErrors([Problem((), f"the file holds more than {MAX_SPEC_BYTES:,} bytes (1 MiB), the most a spec may hold",
                                  hint="is this the right file?", file=name, line=1, column=1)])
    if b"\x00" in raw:
        raise SpecErrors([Problem((), "this is a binary file, not YAML text", file=name, line=1, column=1)])
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise SpecErrors([Problem((), "the file is not UTF-8 text", hint="save it as UTF-8",
                                  file=name, line=line, column=1)]) from None
    return text


def load_file(path: str | Path) -> Located:
    path = Path(path)
    return load_text(read_text(path), str(path))


def load_text(text: str, file: str = "<spec>") -> Located:
    """Parse YAML text into a Spec; raise :class:`SpecErrors` with every problem found."""
    data, positions = parse_yaml(text, file)
    lines = text.splitlines()
    if data is None:
        raise SpecErrors([Problem((), "the file is empty; a spec needs at least name, region and model",
                                  hint="see examples/finetune-7b.yaml", file=file, line=1, column=1)], lines)
    if not isinstance(data, dict):
        raise SpecErrors([Problem((), f"the top level must be a mapping of fields, not a {_kind(data)}",
                                  hint="start with 'name: my-run' on the first line", file=file, line=1, column=1)], lines)
    try:
        spec = Spec.model_validate(data)
    except ValidationError as e:
        keys: set[tuple[str | int, ...]] = set()  # problems with a mapping key itself point at the key
        problems = [locate(p, file, positions) if p.path in keys else locate_value(p, file, positions)
                    for p in pydantic_problems(e, Spec, data, keys)]
        raise SpecErrors(problems, lines) from None
    return Located(spec, file, text, positions)


def _kind(v: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "an empty value", dict: "mapping"}.get(type(v), type(v).__name__)


def parse_yaml(text: str, file: str) -> tuple[Any, dict[tuple[str | int, ...], tuple[int, int]]]:
    """YAML -> plain Python data and a map from field path to (line, column), both 1-based.

    Length: the bounded parse is one sequence of refusals (nesting, aliases, duplicate keys, YAML errors with their
    positions), each before the next can run; ruamel is imported here so commands that load no spec skip it.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    lines = text.splitlines()
    too_deep = _nesting_over(text, MAX_DEPTH)
    if too_deep is not None:
        raise SpecErrors([Problem((), f"the YAML nests deeper than {MAX_DEPTH} levels",
                                  hint="a spec nests about four levels deep; is a bracket repeated or unclosed?",
                                  file=file, line=too_deep[0], column=too_deep[1])], lines)
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        doc = yaml.load(text)
    except DuplicateKeyError as e:
        mark = e.problem_mark
        key = _dup_key(e)
        raise SpecErrors([Problem((), f"duplicate key '{key}'" if key else "duplicate key",
                                  hint="each key may appear once in a mapping; remove or merge the repeated one",
                                  file=file, line=mark.line + 1, column=mark.column + 1)], lines) from None
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        message = (e.problem or e.context or "invalid YAML").strip()
        hint = ""
        if "another document" in message:
            message = "a spec file holds one YAML document, but '---' starts another here"
            hint = "put each spec in its own file, or remove this '---' line"
        elif "\t" in message or "'\\t'" in message or (mark and _has_tab(lines, mark.line)):
            hint = "YAML indents with spaces; replace the tab characters"
            message = "a tab character is not allowed here"
        elif "mapping values are not allowed" in message:
            hint = "a value containing ': ' must be quoted, or the indentation is off"
        elif e.context and e.context_mark and mark and e.context_mark.line != mark.line:
            what, closer = next(((w, c) for k, (w, c) in _UNCLOSED.items() if k in e.context),
                                ("the construct", "a closing bracket or quote"))
            hint = (f"{what} opened at line {e.context_mark.line + 1}, column {e.context_mark.column + 1} "
                    f"is not closed: is {closer} missing?")
        raise SpecErrors([Problem((), f"invalid YAML: {message}", hint=hint, file=file,
                                  line=(mark.line + 1) if mark else 1, column=(mark.column + 1) if mark else 1)],
                         lines) from None
    except YAMLError as e:
        raise SpecErrors([Problem((), f"invalid YAML: {e}", file=file, line=1, column=1)], lines) from None
    except RecursionError:
        raise SpecErrors([Problem((), "the YAML nests too deeply", file=file, line=1, column=1)], lines) from None
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as e:
        # ruamel's constructors raise plain exceptions on some explicit tags: '!!int x', '!!bool maybe', '!!set' on a scalar
        line = next((i + 1 for i, t in enumerate(lines) if "!" in t.split("#")[0]), 1)
        raise SpecErrors([Problem((), f"invalid YAML: a value does not match its explicit tag ({type(e).__name__}: {clip(str(e), 80)})",
                                  hint="remove the '!!' tags; a spec needs none", file=file, line=line, column=1)],
                         lines) from None
    positions: dict[tuple[str | int, ...], tuple[int, int]] = {(): (1, 1)}
    try:
        data = _plain(doc, (), positions, depth=0, budget=[MAX_VALUES, MAX_EXPANDED_CHARS])
    except _TooDeep:
        raise SpecErrors([Problem((), f"the YAML nests too deeply (over {MAX_DEPTH} levels)",
                                  hint="anchors (&) and aliases (*) nested inside each other add up", file=file,
                                  line=1, column=1)], lines) from None
    except _TooLong:
        raise SpecErrors([Problem((), f"the YAML expands to over {MAX_EXPANDED_CHARS:,} characters of text",
                                  hint="an anchor (&) of long text is repeated by its aliases (*); a spec's text is "
                                  "a few kilobytes", file=file, line=1, column=1)], lines) from None
    except _TooBig:
        raise SpecErrors([Problem((), f"the YAML expands to over {MAX_VALUES:,} values",
                                  hint="anchors (&) and aliases (*) repeated inside each other multiply; a spec needs "
                                  "a few hundred values", file=file, line=1, column=1)], lines) from None
    hidden = list(_invisible(data, ()))
    if hidden:
        problems = []
        for where, is_key, char in hidden:
            p = Problem(where, f"the {'key' if is_key else 'text'} contains {char}, an invisible formatting character",
                        hint="invisible and bidirectional characters can make text read differently from what "
                        "it is; retype the text without them (an editor that shows invisibles finds them)")
            problems.append(locate(p, file, positions) if is_key else locate_value(p, file, positions))
        raise SpecErrors(problems, lines)
    return data, positions


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
MAX_EXPANDED_CHARS = 2 * MAX_SPEC_BYTES  # text after aliases; one long anchor repeated would make every error huge
MAX_DEPTH = 50  # a spec nests about four levels; ruamel takes seconds (and Python's stack) on thousands of '['


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


_UNCLOSED = {"flow sequence": ("the list '['", "']'"), "flow mapping": ("the mapping '{'", "'}'"),
             "quoted scalar": ("the quoted text", "the closing quote")}


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
                if node[key] is not None:  # an empty value's mark is the next token, often past the end of the file
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


def pydantic_problems(error: ValidationError, root: type[BaseModel], data: Any = None,
                      key_paths: set[tuple[str | int, ...]] | None = None) -> list[Problem]:
    """Translate pydantic's errors into Problems with field paths and hints.

    ``key_paths`` (when given) collects the paths of problems with a mapping's key rather than its value."""
    problems: list[Problem] = []
    seen: set[tuple[tuple[str | int, ...], str]] = set()
    for err in error.errors(include_url=False):
        loc = _clean_loc(err["loc"], data)
        if key_paths is not None and "[key]" in err["loc"]:
            key_paths.add(loc)
        kind = err["type"]
        hint = ""
        if kind == "extra_forbidden":
            parent_model = _model_at(root, loc[:-1])
            fields = list(parent_model.model_fields) if parent_model else []
            key = loc[-1]
            message = f"unknown field '{key}'"
            hint = did_you_mean(str(key), fields) or (f"allowed here: {', '.join(fields)}" if fields else "")
        elif kind == "missing":
            message = "this field is required"
            loc_path = ".".join(str(x) for x in loc)
            hint = {"name": "add e.g. 'name: my-run'", "region": "add e.g. 'region: cn-wulanchabu'",
                    "model": "add e.g. 'model: {parameters: 7B}'"}.get(loc_path, "")
            if loc[:1] == ("waivers",) and loc[-1] == "reason":
                hint = "say why the rule does not apply here, e.g. reason: \"single node: no RDMA traffic to secure\""
        elif kind in ("literal_error", "enum"):
            expected = err.get("ctx", {}).get("expected", "")
            got = err.get("input")
            choices = [c.strip().strip("'") for c in str(expected).replace(" or ", ", ").split(",") if c.strip()]
            message = f"{'an empty value' if got is None else excerpt(got)} is not allowed; expected {expected}"
            hint = did_you_mean(str(got), choices) if isinstance(got, str) else ""
        elif kind == "model_type" or kind == "dict_type":
            message = f"expected a mapping of fields, got {_kind(err.get('input'))}"
            if err.get("input") is None:
                hint = "give its fields indented below it, or remove the line"
            elif isinstance(err.get("input"), list):
                hint = "write its fields as 'key: value' lines without a leading '- '"
        elif kind in ("tuple_type", "list_type"):
            message = f"expected a list, got {_kind(err.get('input'))}"
        elif kind == "trainstack":  # spec.spec_error: the message and hint are written for the user already
            message = str(err.get("ctx", {}).get("message") or err["msg"])
            hint = str(err.get("ctx", {}).get("hint") or "")
        else:
            message = err["msg"]
            for prefix in ("Value error, ", "Assertion failed, "):
                message = message.removeprefix(prefix)
            message = _friendlier(message, err.get("input"))
        if kind == "string_pattern_mismatch":
            message, hint = _pattern_problem(loc, excerpt(err.get("input")), message, hint)
        seen_key = (loc, message)
        if seen_key in seen:
            continue
        seen.add(seen_key)
        problems.append(Problem(loc, message, hint))
    return _merge_auto(problems)


def _pattern_problem(loc: tuple[str | int, ...], got: str, message: str, hint: str) -> tuple[str, str]:
    """The message and hint of a value that does not match its field's pattern, where the field has words for it."""
    if loc and loc[0] in PATTERN_HELP and len(loc) == 1:
        return f"{got} is not a valid {loc[0]}: {PATTERN_HELP[str(loc[0])]}", hint
    if loc and loc[-1] == "rule":
        return f"{got} is not a rule id: rule ids look like TS001 (see trainstack lint --rules)", hint
    if loc == ("compute", "container_registry_instance"):
        return (f"{got} is not a Container Registry Enterprise Edition instance id",
                ("the instance's ID as the ACR console shows it: cri- and lowercase letters and digits "
                 "(cri-kmsiwlxxdcvaduwb)"))
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
        if len(same) > 1 and "expected 'auto'" in p.message:
            continue
        if len(same) > 1 and any("expected 'auto'" in q.message for q in same):
            p = Problem(p.path, p.message + " (or write 'auto')", p.hint)
        out.append(p)
    return out


def _friendlier(message: str, value: Any) -> str:
    if message.startswith("Input should be greater than"):
        return f"{excerpt(value)} is too small: it must be " + message[len("Input should be "):]
    if message.startswith("Input should be less than"):
        return f"{excerpt(value)} is too large: it must be " + message[len("Input should be "):]
    if message.startswith("String should have at least"):
        return f"{excerpt(value)} is too short: use at least " + message[len("String should have at least "):]
    if message.startswith("String should have at most"):
        return f"{excerpt(value)} is too long: use at most " + message[len("String should have at most "):]
    if message.startswith("Input should be a valid integer"):
        return f"expected a whole number, got {excerpt(value)}"
    if message.startswith("Input should be a valid boolean"):
        return f"expected true or false, got {excerpt(value)}"
    if message.startswith("Input should be a valid string"):
        return f"expected text, got {excerpt(value)}"
    if message.startswith("Input should be a valid number"):
        return f"expected a number, got {excerpt(value)}"
    if message.startswith("String should match pattern"):
        return f"{excerpt(value)} has the wrong form ({message[len('String should '):]})"
    return message


def _clean_loc(loc: Sequence[Any], data: Any = None) -> tuple[str | int, ...]:
    """Drop pydantic's union-branch labels (``int``, ``literal['auto']``, ...) from an error location.

    A part that is a key (or index) of the input at that point is the user's, even if it is spelt 'int'."""
    out: list[str | int] = []
    node = data
    for part in loc:
        if (isinstance(node, dict) and part in node
                or isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
            node = node[part]
        elif part == "[key]" and out:
            continue  # pydantic's marker for "the key itself is wrong": keep the key's path
        elif isinstance(part, str) and (part.startswith(("literal[", "function-", "constrained-")) or part in (
                "int", "str", "bool", "float", "tuple[str, ...]", "is-instance[int]")):
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


__all__ = ["Located", "load_file", "load_text", "one_of", "parse_yaml", "pydantic_problems"]
