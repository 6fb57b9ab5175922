"""How a changed value reads in one line: documents diffed by leaf, user data decoded, long values digested.

The boot script travels base64-encoded (and gzip-compressed on ECS) in ``userData``, so it is decoded and diffed line by line; RAM policy
documents are JSON text, so they are parsed and compared structurally.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import gzip
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

LONG_VALUE = 200  # characters; longer values (user data, policy documents) are shown as a digest


def summarize(name: str, old: Any, new: Any) -> str:
    """A one-line, human summary of a changed value; user data is decoded and diffed, not shown as base64."""
    if name == "userData":
        return _summarize_user_data(old, new)
    old, new = _json_document(old), _json_document(new)  # RAM policy documents are JSON text
    if isinstance(old, (Mapping, list)) and isinstance(new, (Mapping, list)):
        leaves = list(_leaf_diffs(old, new, name))
        shown = [f"{path}: {_short(a)} -> {_short(b)}" for path, a, b in leaves[:3]]
        more = f"; +{len(leaves) - 3} more" if len(leaves) > 3 else ""
        return "; ".join(shown) + more if shown else "reordered"
    return f"{_short(old)} -> {_short(new)}"


def _json_document(value: Any) -> Any:
    """A string holding a JSON object or array, parsed; anything else unchanged."""
    if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _leaf_diffs(old: Any, new: Any, path: str) -> Iterable[tuple[str, Any, Any]]:
    """(path, old, new) for every differing leaf; list items with an ``id`` (lifecycle rules) match by id."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            a, b = old.get(key), new.get(key)
            if a != b:
                yield from _leaf_diffs(a, b, f"{path}.{key}" if path else str(key))
        return
    if isinstance(old, list) and isinstance(new, list):
        if _all_have_ids(old) and _all_have_ids(new):
            olds, news = {i["id"]: i for i in old}, {i["id"]: i for i in new}
            for ident in list(olds) + [i for i in news if i not in olds]:
                a, b = olds.get(ident), news.get(ident)
                if a != b:
                    yield from _leaf_diffs(a, b, f"{path}[id={ident}]")
            return
        for i in range(max(len(old), len(new))):
            a = old[i] if i < len(old) else None
            b = new[i] if i < len(new) else None
            if a != b:
                yield from _leaf_diffs(a, b, f"{path}[{i}]")
        return
    yield path, old, new


def _all_have_ids(items: list[Any]) -> bool:
    ids = [i.get("id") for i in items if isinstance(i, Mapping)]
    return len(ids) == len(items) and all(isinstance(i, str) for i in ids) and len(set(ids)) == len(ids)


def _short(value: Any, limit: int = 60) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    if len(text) > LONG_VALUE:
        return digest(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def digest(text: str) -> str:
    """How a long value is shown: its hash prefix and length (stable, short, comparable)."""
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()[:12]} ({len(text):,} chars)"


def _decode_user_data(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        raw = base64.b64decode(value, validate=True)
        if raw[:2] == b"\x1f\x8b":  # gzip-compressed user data (ECS nodes; cloud-init unpacks it)
            raw = gzip.decompress(raw)
        return raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError, OSError, EOFError):
        return None


def _encoding(value: Any) -> str:
    return (
        "gzip" if isinstance(value, str) and value.startswith("H4sI") else "plain"
    )  # base64 of the gzip magic


def _summarize_user_data(old: Any, new: Any) -> str:
    """Which lines of the boot script change (the nodes reboot to run it), e.g. ``NNODES=1 -> NNODES=3``."""
    a, b = _decode_user_data(old), _decode_user_data(new)
    if a is None or b is None:
        return f"{_short(old)} -> {_short(new)}"
    old_lines, new_lines = a.splitlines(), b.splitlines()
    changed = added = removed = 0
    example = fallback = ""
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(
        None, old_lines, new_lines, autojunk=False
    ).get_opcodes():
        if op == "equal":
            continue
        paired = min(i2 - i1, j2 - j1)
        changed += paired
        added += (j2 - j1) - paired
        removed += (i2 - i1) - paired
        if not example and paired:
            example = f"{_short(old_lines[i1].strip(), 40)} -> {_short(new_lines[j1].strip(), 40)}"
        elif not fallback:
            fallback = (
                f"adds {_short(new_lines[j1].strip(), 40)}"
                if j2 > j1
                else f"drops {_short(old_lines[i1].strip(), 40)}"
            )
    if not (changed or added or removed):
        if a == b:  # the same script, encoded differently (plain -> gzip-compressed user data)
            return (
                "boot script: same script, new encoding ("
                + " -> ".join(_encoding(v) for v in (old, new))
                + ")"
            )
        return "boot script: whitespace only"
    example = example or fallback
    counts = ", ".join(
        f"{n} {what}" for n, what in ((changed, "changed"), (added, "added"), (removed, "removed")) if n
    )
    lines = "lines" if changed + added + removed != 1 else "line"
    return f"boot script: {counts} {lines}" + (f" ({example})" if example else "")
