"""Escaping for every language a stack folder is written in: Python, shell, YAML and Markdown.

Every value a template prints passes through one of these functions, chosen by where it lands (a Python
literal, a docstring, a comment, a shell word, a double-quoted shell string, an unquoted heredoc, a YAML
scalar, Markdown text or a Markdown code span). Each returns an :class:`Escaped` string; the renderer refuses
to print any other string unless it is made only of characters that are inert in all of those languages
(:data:`INERT`), so a value that was never escaped fails the render instead of reaching a file.
"""

from __future__ import annotations

import json
import re
import shlex
from json.encoder import encode_basestring
from typing import Any

from generator.present import md as _md
from generator.present.md import nonprintable as _escape_nonprintable


class Escaped(str):
    """Text already escaped for the place it is printed."""


class UnsafeValue(ValueError):
    """A value cannot be written safely in the requested context (a bug upstream: validation let it through)."""


# Characters that mean nothing special in Python strings and comments, shell words, double quotes and heredocs,
# YAML plain scalars (no leading indicator, no ": " or " #"), and Markdown text. Numbers, names, regions,
# instance types, CIDRs and internal paths are made of these.
INERT = re.compile(r"[A-Za-z0-9_.:/+=@,%-]*")


def is_inert(text: str) -> bool:
    return INERT.fullmatch(text) is not None and not text.startswith(("-", "@", "%", ":", ","))


# --------------------------------------------------------------------------------------------- Python
def py_literal(value: Any) -> Escaped:
    """A Python literal for a plain value (str, int, float, bool, None, list, dict), deterministic."""
    return Escaped(_py(value))


def _py(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # JSON's string syntax is a subset of Python's; surrogates and separators are escaped, quotes too.
        # Every character that is not printable (separators, bidi and zero-width format characters) as a \\u escape,
        # so the program reads as it runs (no Trojan Source, CVE-2021-42574).
        # json.dumps(value, ensure_ascii=False) without building an encoder per string (~8,000 a 1,024-node render)
        return _py_escaped(encode_basestring(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py(k)}: {_py(v)}" for k, v in sorted(value.items())) + "}"
    raise TypeError(f"cannot render {type(value).__name__} as a Python literal")


def _py_escaped(text: str) -> str:
    """A JSON string literal as a Python one, with every non-printable character a ``\\u``/``\\U`` escape."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}"
        for ch in text
    )


def py_docstring(value: Any) -> Escaped:
    """Text inside a ``\"\"\"...\"\"\"`` docstring: backslashes and quotes escaped, one line, reads back as is."""
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return Escaped(_escape_nonprintable(text))


def comment(value: Any) -> Escaped:
    """Text on one ``#`` comment line (Python or shell): line breaks and control characters spelled out."""
    return Escaped(_escape_nonprintable(str(value).replace("\\", "\\\\")))


# --------------------------------------------------------------------------------------------- shell
def sh_word(value: Any) -> Escaped:
    """One shell word: single-quoted where needed, ``$'...'`` where the text has control characters."""
    text = str(value)
    if all(ch.isprintable() for ch in text):
        return Escaped(shlex.quote(text))
    inner = _escape_nonprintable(text.replace("\\", "\\\\").replace("'", "\\'"))
    return Escaped(f"$'{inner}'")


def sh_double_quoted(value: Any) -> Escaped:
    """Text inside ``"..."`` in bash: ``\\``, ``"``, ``$`` and backquote escaped; no control characters."""
    text = str(value)
    if not all(ch.isprintable() for ch in text):
        raise UnsafeValue(f"{text!r} has control characters and cannot go inside shell double quotes")
    return Escaped(re.sub(r'([\\"$`])', r"\\\1", text))


def heredoc(value: Any) -> Escaped:
    """Text on one line of an unquoted heredoc (``<<EOF``): ``\\``, ``$`` and backquote escaped."""
    text = str(value)
    if "\n" in text or "\r" in text:
        raise UnsafeValue(f"{text!r} spans lines and cannot go on one heredoc line")
    return Escaped(re.sub(r"([\\$`])", r"\\\1", text))


def quoted_heredoc_body(text: str, delimiter: str) -> Escaped:
    """The body of a quoted heredoc (``<<'DELIM'``): taken literally, so only a line equal to DELIM can end it."""
    if any(line.strip() == delimiter for line in text.splitlines()) or "\r" in text:
        raise UnsafeValue(f"heredoc body would end early at a line {delimiter!r}")
    return Escaped(text)


def env_assignment(key: str, value: Any) -> Escaped:
    """``KEY=value`` for a file that bash sources (``set -a; . file``), written through an unquoted heredoc."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        raise UnsafeValue(f"{key!r} is not a shell variable name")
    return heredoc(f"{key}={sh_word(value)}")


# --------------------------------------------------------------------------------------------- YAML
_YAML_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
_YAML_RESERVED = re.compile(r"(?i)(y|yes|n|no|true|false|on|off|null|~|[-+]?(\.inf|\.nan|[0-9][0-9._eE+-]*))")


def yaml_scalar(value: Any) -> Escaped:
    """A YAML scalar: plain when that reads back as the same string, else double-quoted with escapes."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return Escaped(json.dumps(value))
    text = str(value)
    if _YAML_PLAIN.fullmatch(text) and not _YAML_RESERVED.fullmatch(text):
        return Escaped(text)
    # YAML's double-quoted style knows the \\ \" \n \t \xXX \uXXXX \UXXXXXXXX escapes Python uses.
    return Escaped('"' + _escape_nonprintable(text.replace("\\", "\\\\").replace('"', '\\"')) + '"')


# --------------------------------------------------------------------------------------------- Markdown
def markdown(value: Any) -> Escaped:
    """Inline Markdown text (also safe in a table cell): no markup, HTML, links or line breaks get through."""
    return Escaped(_md.text(value))


def markdown_code(value: Any) -> Escaped:
    """An inline code span whose fence is longer than any backquote run inside; control characters spelled out."""
    return Escaped(_md.code(value))


def markdown_fence_body(text: str) -> Escaped:
    """The body of a ```` ``` ```` fenced block (a Mermaid diagram whose labels the plan stage escaped for Mermaid):
    taken literally, so no line may open or close a fence."""
    if any(line.lstrip(" ").startswith(("```", "~~~")) for line in text.splitlines()) or "\r" in text:
        raise UnsafeValue("fenced block body would end early at a line starting with a fence")
    return Escaped(text)


def json_text(value: Any) -> Escaped:
    """A JSON value on one line, ASCII only (for the machine-read lines of plain-text files)."""
    return Escaped(json.dumps(value, sort_keys=True, ensure_ascii=True))


FILTERS = {
    "json": json_text,
    "py": py_literal,
    "pydoc": py_docstring,
    "comment": comment,
    "sh": sh_word,
    "shq": sh_double_quoted,
    "heredoc": heredoc,
    "yaml": yaml_scalar,
    "md": markdown,
    "mdcode": markdown_code,
}


def finalize(value: Any) -> str:
    """Jinja's ``finalize``: print escaped text, numbers and inert strings; refuse anything else."""
    if isinstance(value, Escaped):
        return str(value)
    if isinstance(value, bool):
        raise UnsafeValue(f"a boolean ({value}) reached a template unformatted; print it with a filter")
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str) and is_inert(value):
        return value
    raise UnsafeValue(f"{value!r} reached a template without being escaped for its language")


__all__ = [
    "FILTERS",
    "Escaped",
    "UnsafeValue",
    "comment",
    "env_assignment",
    "finalize",
    "heredoc",
    "is_inert",
    "markdown",
    "markdown_code",
    "markdown_fence_body",
    "py_docstring",
    "py_literal",
    "quoted_heredoc_body",
    "sh_double_quoted",
    "sh_word",
    "yaml_scalar",
]
