"""The codes of the spec's own problems (``TSS...``): a file that cannot be read, YAML that cannot be parsed, a field
pydantic refuses, a training setup that cannot run. Each code names one kind of problem and the fields it carries.

In the manner of the planner's refusals (:mod:`generator.plan.refusals`, ``TSP...``): the
:class:`~generator.errors.Problem` a loader makes carries ``code`` and ``fields`` beside its words, so the CLI prints
the same ``FILE:LINE:COL: field: message`` and ``hint:`` lines as ever while tests and scripts read the code (and
the loader itself decides by code, never by wording). Unlike a refusal, one code covers many messages: a value the
field's own rule refuses (``REFUSED_VALUE``) says why in words written where the rule is. ``docs/codes.md`` lists
every code (``tests/test_codes.py`` checks it against :func:`codes`). Standard library only, so
:mod:`generator.spec.conflicts` (which ``trainstack estimate`` imports without pydantic) can use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from generator.errors import Problem


@dataclass(frozen=True, slots=True)
class SpecCode:
    """One kind of spec problem: its stable ``code``, a name for docs and tests, a one-line summary and the names of
    the fields every problem of this kind carries."""

    code: str
    name: str
    summary: str
    fields: tuple[str, ...] = ()

    def problem(
        self,
        path: tuple[str | int, ...],
        message: str,
        hint: str = "",
        *,
        file: str = "",
        line: int = 0,
        column: int = 0,
        **fields: object,
    ) -> Problem:
        """The problem with this code; ``fields`` must be exactly the code's fields (a programming error otherwise)."""
        return self.make(path, message, hint, fields, file, line, column)

    def make(
        self,
        path: tuple[str | int, ...],
        message: str,
        hint: str,
        fields: Mapping[str, object],
        file: str = "",
        line: int = 0,
        column: int = 0,
    ) -> Problem:
        """:meth:`problem` with the fields as a mapping."""
        if tuple(fields) != self.fields:
            raise ValueError(f"{self.code} carries the fields {self.fields}, not {tuple(fields)}")
        return Problem(path, message, hint, file, line, column, self.code, tuple(fields.items()))


_ALL: list[SpecCode] = []


def _code(code: str, name: str, summary: str, *fields: str) -> SpecCode:
    c = SpecCode(code, name, summary, fields)
    _ALL.append(c)
    return c


# the file (generator/spec/source.py, generator/spec/loader.py)
NO_FILE = _code("TSS001", "NoFile", "the spec file does not exist")
FOLDER = _code("TSS002", "Folder", "the path is a folder, not a spec file")
NOT_REGULAR = _code(
    "TSS003", "NotRegular", "the path is a pipe, socket or device, not a regular file", "kind"
)
UNREADABLE = _code("TSS004", "Unreadable", "the file cannot be read (the operating system's error)", "error")
LINK_OUT = _code(
    "TSS005", "LinkOut", "the spec is reached through a symbolic link that leaves its repository"
)
SLOW_READ = _code(
    "TSS006", "SlowRead", "reading the file took too long (a spec is a small local file)", "seconds"
)
TOO_LARGE = _code("TSS007", "TooLarge", "the file holds more bytes than a spec may", "max_bytes")
BINARY = _code("TSS008", "Binary", "the file is binary (it holds a NUL byte), not YAML text")
NOT_UTF8 = _code("TSS009", "NotUtf8", "the file is not UTF-8 text")

# the YAML (generator/spec/yamltext.py, generator/spec/loader.py)
EMPTY = _code("TSS020", "Empty", "the file holds no YAML value (empty, or comments only)")
TOP_NOT_MAPPING = _code(
    "TSS021", "TopNotMapping", "the top level is a list or a scalar, not a mapping", "kind"
)
TOO_DEEP = _code("TSS022", "TooDeep", "the YAML nests deeper than the loader reads", "max_depth")
DUPLICATE_KEY = _code("TSS023", "DuplicateKey", "a key appears twice in one mapping", "key")
INVALID_YAML = _code("TSS024", "InvalidYaml", "the text is not valid YAML (the parser's problem)", "problem")
TAB = _code("TSS025", "Tab", "a tab character where YAML allows none (indentation)")
SECOND_DOCUMENT = _code("TSS026", "SecondDocument", "'---' starts a second YAML document")
TAG_MISMATCH = _code("TSS027", "TagMismatch", "a value does not match its explicit '!!' tag", "error")
EXPANDS_TOO_LONG = _code(
    "TSS028", "ExpandsTooLong", "aliases expand to more text than a spec may hold", "max_chars"
)
TOO_MANY_VALUES = _code(
    "TSS029", "TooManyValues", "aliases expand to more values than a spec may hold", "max_values"
)
INVISIBLE = _code(
    "TSS030",
    "Invisible",
    "a key or text holds an invisible or bidirectional formatting character",
    "character",
    "in_key",
)

# the fields (generator/spec/pydantic_errors.py: pydantic's errors by type)
UNKNOWN_FIELD = _code("TSS101", "UnknownField", "a key the spec section does not have", "key", "allowed")
MISSING_FIELD = _code("TSS102", "MissingField", "a required field is missing")
NOT_A_CHOICE = _code("TSS103", "NotAChoice", "a value outside the field's choices", "value", "expected")
EXPECTED_MAPPING = _code(
    "TSS104", "ExpectedMapping", "a section is a list or a scalar, not a mapping", "kind"
)
EXPECTED_LIST = _code("TSS105", "ExpectedList", "a list field holds a scalar or a mapping", "kind")
WRONG_FORM = _code("TSS106", "WrongForm", "a text value that does not match the field's pattern", "value")
OUT_OF_RANGE = _code(
    "TSS107",
    "OutOfRange",
    "a number, text or list past the field's bound (bound: gt, ge, lt, le, min_length, ...)",
    "value",
    "bound",
    "limit",
)
WRONG_TYPE = _code(
    "TSS108", "WrongType", "a value of the wrong type (text for a number, a number for a boolean)", "value"
)
REFUSED_VALUE = _code(
    "TSS109", "RefusedValue", "a value the field's own rule refuses; the message says why", "value"
)
MILESTONE_FORM = _code(
    "TSS110",
    "MilestoneForm",
    "checkpoints.milestones gives none or several of every, every_hours, at_steps",
    "given",
)
OTHER_FIELD_ERROR = _code(
    "TSS199", "OtherFieldError", "any other validation error (its pydantic type)", "type", "value"
)

# the training setup (generator/spec/conflicts.py; reported by the spec check and by `trainstack estimate`)
QLORA_FP8 = _code("TSS301", "QloraFp8", "QLoRA with model.precision fp8", "method", "precision")
QLORA_FP32 = _code("TSS302", "QloraFp32", "QLoRA with model.precision fp32", "method", "precision")
PAGED_OPTIMIZER_MEGATRON = _code(
    "TSS303",
    "PagedOptimizerMegatron",
    "a paged optimizer in full training under Megatron-LM (framework megatron, or auto at ZeRO 0-1)",
    "method",
    "framework",
    "zero_stage",
)
PURE_BF16_PRECISION = _code(
    "TSS304",
    "PureBf16Precision",
    "a pure-bf16 optimizer under a precision without bf16 weights",
    "optimizer",
    "precision",
)
PAGED_OPTIMIZER_OFFLOAD = _code(
    "TSS305",
    "PagedOptimizerOffload",
    "a paged optimizer in full training with CPU offload",
    "paged_optimizer",
    "offload",
)


def codes() -> tuple[SpecCode, ...]:
    """Every spec problem code, in the order of docs/codes.md."""
    return tuple(_ALL)


def code_of(problem: Problem) -> SpecCode | None:
    """The spec code a problem carries, if any."""
    return by_code(problem.code)


def by_code(code: str) -> SpecCode | None:
    """The spec code named ``code``, if it is one."""
    return next((c for c in _ALL if c.code == code), None)
