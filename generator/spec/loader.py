"""Stage 1, load: a YAML file -> a typed :class:`~generator.spec.model.Spec`, or every problem at once.

Problems carry ``FILE:LINE:COL`` taken from ruamel.yaml's position marks, so an error points at the key or
value the user has to change. Nothing here reads the catalog; see :mod:`generator.plan.check` for that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from generator.errors import Problem, SpecErrors, one_of
from generator.spec import codes, source
from generator.spec.model import Spec
from generator.spec.pydantic_errors import pydantic_problems
from generator.spec.source import MAX_SPEC_BYTES
from generator.spec.yamltext import MAX_DEPTH, kind_of, locate, locate_value, parse_yaml


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


def read_text(path: Path) -> str:
    """The spec's text; a missing, huge, binary or non-regular file, or a link out of the repository, is a problem
    that quotes none of its bytes (:func:`generator.spec.source.read_bytes`), not a traceback."""
    return decode(source.read_bytes(path), str(path))


def decode(raw: bytes, name: str) -> str:
    """The file's bytes as text, or :class:`SpecErrors` when they are too many, binary or not UTF-8."""
    if len(raw) > MAX_SPEC_BYTES:
        message = f"the file holds more than {MAX_SPEC_BYTES:,} bytes (1 MiB), the most a spec may hold"
        raise SpecErrors(
            [
                codes.TOO_LARGE.problem(
                    (),
                    message,
                    "is this the right file?",
                    file=name,
                    line=1,
                    column=1,
                    max_bytes=MAX_SPEC_BYTES,
                )
            ]
        )
    if b"\x00" in raw:
        raise SpecErrors(
            [codes.BINARY.problem((), "this is a binary file, not YAML text", file=name, line=1, column=1)]
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise SpecErrors(
            [
                codes.NOT_UTF8.problem(
                    (), "the file is not UTF-8 text", "save it as UTF-8", file=name, line=line, column=1
                )
            ]
        ) from None
    return text


def load_file(path: str | Path) -> Located:
    path = Path(path)
    return load_text(read_text(path), str(path))


def load_text(text: str, file: str = "<spec>") -> Located:
    """Parse YAML text into a Spec; raise :class:`SpecErrors` with every problem found."""
    data, positions = parse_yaml(text, file)
    lines = text.splitlines()
    if data is None:
        message = "the file is empty; a spec needs at least name, region and model"
        problem = codes.EMPTY.problem(
            (), message, "see examples/finetune-7b.yaml", file=file, line=1, column=1
        )
        raise SpecErrors([problem], lines)
    if not isinstance(data, dict):
        message = f"the top level must be a mapping of fields, not a {kind_of(data)}"
        hint = "start with 'name: my-run' on the first line"
        problem = codes.TOP_NOT_MAPPING.problem(
            (), message, hint, file=file, line=1, column=1, kind=kind_of(data)
        )
        raise SpecErrors([problem], lines)
    try:
        spec = Spec.model_validate(data)
    except ValidationError as e:
        keys: set[tuple[str | int, ...]] = set()  # problems with a mapping key itself point at the key
        problems = [
            locate(p, file, positions) if p.path in keys else locate_value(p, file, positions)
            for p in pydantic_problems(e, Spec, data, keys)
        ]
        raise SpecErrors(problems, lines) from None
    return Located(spec, file, text, positions)


__all__ = [
    "MAX_DEPTH",
    "Located",
    "load_file",
    "load_text",
    "locate",
    "locate_value",
    "one_of",
    "parse_yaml",
    "pydantic_problems",
]
