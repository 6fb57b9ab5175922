"""Errors that carry a place in the spec file, and how they are shown.

Every problem a user can fix is a :class:`Problem` (file, line, column, field path, message, hint).
Stages collect all the problems they find and raise one :class:`SpecErrors`; only the CLI prints them.
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Exit codes shared by every command (documented in README.md). `trainstack diff` uses 2 for "changes" and the
# live engine uses 20-30 for its preflight and engine failures (generator/live/, docs/live.md).
EXIT_FAILURE = 1  # an operation failed (drift, stale stack, a lint finding, a live engine error)
EXIT_USAGE = 2  # bad input: the spec or the command line is wrong


class TrainstackError(Exception):
    """Base class of the errors trainstack reports without a traceback."""

    exit_code = EXIT_FAILURE


class BadInput(TrainstackError):
    """The command line names something trainstack cannot use (bad input, exit code 2)."""

    exit_code = EXIT_USAGE


def not_a_stack_folder(path: object) -> str:
    """The sentence every command says when a folder it is given is not one trainstack rendered."""
    return (
        f"{path} is a folder but not a stack folder rendered by trainstack (one has __main__.py and "
        ".trainstack/); give a spec file or a stack folder"
    )


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a spec, at a place the user can find. A problem the planner raises as an event
    (:mod:`generator.plan.refusals`) also carries its ``code`` and typed ``fields``, so a script or a test reads
    those rather than the message; the printed form (file, line, field, message, hint) is the same either way."""

    path: tuple[str | int, ...]
    message: str
    hint: str = ""
    file: str = ""
    line: int = 0  # 1-based; 0 when unknown
    column: int = 0  # 1-based; 0 when unknown
    code: str = ""  # "TSP001"...; "" for a problem not (yet) raised as an event
    fields: tuple[tuple[str, object], ...] = ()  # the event's fields by name, in declaration order

    @property
    def dotted(self) -> str:
        return dotted(self.path)

    def located(self, file: str, line: int, column: int) -> Problem:
        return Problem(self.path, self.message, self.hint, file, line, column, self.code, self.fields)

    def headline(self) -> str:
        where = clip(_visible(self.file) or "<spec>", MAX_MESSAGE_CHARS)
        if self.line:
            where = f"{where}:{self.line}:{self.column or 1}"
        field_ = f" {self.dotted}:" if self.path else ""
        return f"{where}:{field_} {clip(self.message, MAX_MESSAGE_CHARS)}"


# Bounds on what an error prints, so no input makes a failing command print more than a few screens: a value is
# quoted as an excerpt of at most EXCERPT_CHARS characters, a message or hint is cut at MAX_MESSAGE_CHARS, and
# at most MAX_PROBLEMS_SHOWN problems are listed (the count of all of them is still printed). docs/spec.md, "Limits".
EXCERPT_CHARS = 40
MAX_MESSAGE_CHARS = 1200
MAX_PROBLEMS_SHOWN = 50

_EXCERPT = reprlib.Repr()
_EXCERPT.maxstring = EXCERPT_CHARS + 2  # the quotes
_EXCERPT.maxother = EXCERPT_CHARS
_EXCERPT.maxlist = _EXCERPT.maxtuple = _EXCERPT.maxset = 4
_EXCERPT.maxdict = 3
_EXCERPT.maxlevel = 2


def excerpt(value: object, width: int = EXCERPT_CHARS) -> str:
    """A value quoted for an error message: its repr, cut to about ``width`` characters (with '...' and, for long
    text, its length), so a pasted blob or an alias of one never fills the terminal. Invisible and control
    characters are spelt as escapes (repr does), so the excerpt cannot reorder or hide the line it is in."""
    if isinstance(value, str):
        if len(value) <= width:
            return repr(value)
        return f"{value[:width]!r}... ({len(value):,} characters)"
    return clip(_EXCERPT.repr(value), width + 20)


def _visible(text: str) -> str:
    """A file name as the terminal should show it: invisible and control characters as escapes, never raw."""
    return text if text.isprintable() else repr(text)[1:-1]


def clip(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` characters, with '...' where it was cut."""
    return text if len(text) <= width else text[: width - 3] + "..."


def dotted(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif len(part) > 60:
            out += f"[{part[:40]!r}...]"  # a huge key (a pasted blob) would make every headline a screen long
        elif not part or not part.isprintable() or part != part.strip() or "." in part:
            out += f"[{part!r}]"  # a key the user can only find when it is quoted: '', ' ', '\r', 'a.b'
        else:
            out += ("." if out else "") + str(part)
    return out


class SpecErrors(TrainstackError):
    """One or more problems in a spec; raised once, after collecting all of them."""

    exit_code = EXIT_USAGE

    def __init__(self, problems: Iterable[Problem], source_lines: Sequence[str] = ()):
        self.problems: tuple[Problem, ...] = tuple(sorted(problems, key=_order))
        self.source_lines = tuple(source_lines)
        super().__init__(self.render(show_source=False))

    def render(self, show_source: bool = True) -> str:
        shown = self.problems[:MAX_PROBLEMS_SHOWN]
        blocks = [render_problem(p, self.source_lines if show_source else ()) for p in shown]
        if len(self.problems) > len(shown):
            blocks.append(
                f"... and {len(self.problems) - len(shown):,} more problems not shown; fix these first"
            )
        return "\n".join(blocks)


def _order(p: Problem) -> tuple[int, int, str]:
    return (p.line or 10**9, p.column, p.dotted)


def render_problem(p: Problem, source_lines: Sequence[str] = ()) -> str:
    """``FILE:LINE:COL: field.path: message``, then the source line with a caret, then the hint."""
    out = [p.headline()]
    if source_lines and 0 < p.line <= len(source_lines):
        text, caret = clip_line(
            source_lines[p.line - 1].rstrip("\n").replace("\t", " "), max(p.column - 1, 0)
        )
        gutter = f"{p.line:>4} | "
        out.append(gutter + text)
        out.append(" " * (len(gutter) + caret) + "^")
    if p.hint:
        out.append(f"  hint: {clip(p.hint, MAX_MESSAGE_CHARS)}")
    return "\n".join(out)


ECHO_WIDTH = 120  # the longest source line an error echoes; longer ones are cut around the caret


def clip_line(text: str, caret: int, width: int = ECHO_WIDTH) -> tuple[str, int]:
    """A window of at most ``width`` characters of ``text`` around the 0-based ``caret``, with '...' where text was
    cut, and the caret's position in the window. Control characters show as '?' so the echo stays one line."""
    text = "".join(ch if ch.isprintable() or ch == " " else "?" for ch in text)
    if len(text) <= width:
        return text, caret
    dots = "..."
    start = max(0, min(caret - width // 2, len(text) - (width - len(dots))))
    end = min(len(text), start + width - (len(dots) if start else 0))
    if end < len(text):
        end -= len(dots)
    head = dots if start else ""
    tail = dots if end < len(text) else ""
    return head + text[start:end] + tail, len(head) + caret - start


def closest(word: str, choices: Iterable[str]) -> str:
    """The choice nearest ``word`` (case-insensitive; the first spelling of a name wins), or "" when none is near."""
    lowered: dict[str, str] = {}
    for c in choices:
        lowered.setdefault(c.lower(), c)  # the first spelling wins: a canonical name before its aliases
    match = difflib.get_close_matches(str(word)[:100].lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else ""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A 'did you mean' hint, or an empty string when nothing is close."""
    near = closest(word, choices)
    return f"did you mean '{near}'?" if near else ""


def one_of(choices: Iterable[str]) -> str:
    return "one of: " + ", ".join(sorted(str(c) for c in choices))
