"""Markdown escaping and tables, shared by the plan's Markdown report and the rendered stack's README.

The plan stage comes before render, so the helpers live here: :mod:`generator.render.escape` wraps them in its
``Escaped`` type (its ``md`` and ``mdcode`` filters), and :mod:`generator.present.markdown` uses them for
``trainstack plan --format markdown``. Every function returns plain ``str``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<|#~])")


def nonprintable(text: str, keep: str = "") -> str:
    """Backslash escapes (as in a Python string) for every character that is not printable, except ``keep``."""
    out = []
    for ch in text:
        if ch.isprintable() or ch in keep:
            out.append(ch)
        else:
            code = ord(ch)
            out.append(
                {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch)
                or (
                    f"\\x{code:02x}"
                    if code < 0x100
                    else f"\\u{code:04x}"
                    if code < 0x10000
                    else f"\\U{code:08x}"
                )
            )
    return "".join(out)


# What GitHub turns into a live link or a notification in plain text, whatever backslashes say (it finds them in
# the rendered text, after Markdown's escapes are gone): @mentions (users, teams), URLs and www. autolinks, e-mail
# addresses, issue references (#12, GH-12, owner/repo#12) and commit SHAs (7-40 hex digits, owner/repo@sha).
# Outside a code span GitHub links none of them.
_LIVE = re.compile(
    r"(?i)(?:https?|ftp|mailto|xmpp|file)://[^\s`|<>]*"  # URLs
    r"|(?<![\w.-])www\.[^\s`|<>]*"  # GFM's www. autolinks
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # e-mail autolinks
    r"|(?<![\w`])@[\w-]+(?:/[\w.-]+)?"  # mentions of users and teams
    r"|(?<![\w`])(?:[\w.-]+/[\w.-]+)?#[0-9]+\b|(?<![\w`])GH-[0-9]+\b"  # issue and pull-request references
    r"|(?<![\w`@/])(?:[\w.-]+/[\w.-]+@)?(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"  # commit SHAs
)


def text(value: Any) -> str:
    """Inline Markdown text (also safe in a table cell): no markup, HTML, links, mentions, references or line breaks
    get through. Mentions, URLs, ``www.`` names, e-mail addresses and issue references are set in code spans, the
    one place GitHub leaves them inert."""
    raw = re.sub(r"[\r\n]+", " ", str(value))
    out, at = [], 0
    for m in _LIVE.finditer(raw):
        out.append(_plain(raw[at : m.start()]))
        out.append(code(m.group()))
        at = m.end()
    out.append(_plain(raw[at:]))
    return "".join(out)


def _plain(value: str) -> str:
    return nonprintable(_MD_SPECIAL.sub(r"\\\1", value).replace("&", "&amp;"))


def code(value: Any, cell: bool = False) -> str:
    """An inline code span whose fence is longer than any backquote run inside; control characters spelled out.

    ``cell=True`` for a span inside a table cell: GFM splits cells at ``|`` even inside a code span, so a pipe is
    written ``\\|`` there (which the table reads back as ``|``).
    """
    body = nonprintable(str(value))
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body.strip() else ""
    span = f"{fence}{pad}{body}{pad}{fence}"
    return span.replace("|", "\\|") if cell else span


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] = ()) -> str:
    """A GFM table. Headers and cells are printed as given: escape them (:func:`text`, ``code(cell=True)``) first."""

    def row(cells: Sequence[Any]) -> str:
        return "| " + " | ".join("" if c is None else str(c) for c in cells) + " |"

    align = ["---:" if i in right else "---" for i in range(len(headers))]
    return "\n".join([row(headers), "|" + "|".join(align) + "|", *(row(r) for r in rows)])


__all__ = ["code", "nonprintable", "table", "text"]
