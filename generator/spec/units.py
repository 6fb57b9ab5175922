"""Quantities as people write them in specs: ``70B`` parameters, ``1T`` tokens, ``12TiB``, ``30m``."""

from __future__ import annotations

import math
import re

from generator.errors import excerpt

_COUNT_SUFFIX = {
    "": 1,
    "K": 10**3,
    "M": 10**6,
    "B": 10**9,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "KI": 2**10,
    "MI": 2**20,
    "GI": 2**30,
    "TI": 2**40,
}
_BYTES_SUFFIX = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
    "PIB": 2**50,
}
_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}

_NUM = r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"


class UnitError(ValueError):
    """A quantity that does not parse; the message says what form is expected."""


def _brief(value: object) -> str:
    """A value as written when short; an excerpt (with its length) when it is a pasted blob."""
    text = str(value)
    return text if len(text) <= 40 else excerpt(value)


def parse_count(value: object, what: str = "count") -> int:
    """``70B`` -> 70_000_000_000, ``7.5e9`` -> 7_500_000_000, ``4M`` -> 4_000_000."""
    if isinstance(value, bool):
        raise UnitError(f"expected a {what} such as 70B or 7.5e9, got a boolean")
    if isinstance(value, int):
        n = value
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise UnitError(f"expected a finite {what}")
        n = round(value)
    elif isinstance(value, str):
        m = re.fullmatch(_NUM + r"\s*([KMBGTP]?|[KMGT]I)", value.strip().upper().replace("_", ""))
        if not m:
            raise UnitError(
                f"{excerpt(value)} is not a {what}: write a number with an optional suffix K, M, B, T "
                "(powers of 1000) or Ki, Mi, Gi (powers of 1024), e.g. 70B, 7.5e9, 4Mi"
            )
        x = float(m.group(1)) * _COUNT_SUFFIX[m.group(2)]
        if not math.isfinite(x):
            raise UnitError(f"expected a finite {what}, got {_brief(value)}")
        n = round(x)
    else:
        raise UnitError(f"expected a {what} such as 70B or 7.5e9")
    if n <= 0:
        raise UnitError(f"{what} must be positive, got {_brief(value)}")
    return n


def parse_bytes(value: object, what: str = "size") -> int:
    """``12TiB`` -> bytes; a bare number is GiB (the unit Alibaba Cloud storage is sold in)."""
    if isinstance(value, bool):
        raise UnitError(f"expected a {what} such as 12TiB or 500GiB")
    if isinstance(value, (int, float)):
        if value <= 0 or (isinstance(value, float) and not math.isfinite(value)):
            raise UnitError(f"{what} must be positive, got {_brief(value)}")
        return round(value * 2**30)
    if isinstance(value, str):
        m = re.fullmatch(_NUM + r"\s*([KMGTP]?I?B)", value.strip().upper().replace("_", ""))
        if not m:
            raise UnitError(f"{excerpt(value)} is not a {what}: write e.g. 500GiB, 12TiB or 2TB")
        x = float(m.group(1)) * _BYTES_SUFFIX[m.group(2)]
        if not math.isfinite(x):
            raise UnitError(f"expected a finite {what}, got {_brief(value)}")
        n = round(x)
        if n <= 0:
            raise UnitError(f"{what} must be positive, got {_brief(value)}")
        return n
    raise UnitError(f"expected a {what} such as 12TiB or 500GiB")


def parse_seconds(value: object, what: str = "duration") -> int:
    """``30m`` -> 1800; a bare number is minutes."""
    if isinstance(value, bool):
        raise UnitError(f"expected a {what} such as 30m or 2h")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise UnitError(f"expected a finite {what}, got {_brief(value)}")
        secs = round(value * 60)
    elif isinstance(value, str):
        m = re.fullmatch(_NUM + r"\s*(s|sec|m|min|h|d)", value.strip().lower())
        if not m:
            raise UnitError(f"{excerpt(value)} is not a {what}: write e.g. 45m, 2h or 1d")
        x = float(m.group(1)) * _SECONDS[m.group(2)]
        if not math.isfinite(x):
            raise UnitError(f"expected a finite {what}, got {_brief(value)}")
        secs = round(x)
    else:
        raise UnitError(f"expected a {what} such as 30m or 2h")
    if secs <= 0:
        raise UnitError(f"{what} must be positive, got {_brief(value)}")
    return secs


def human_count(n: float) -> str:
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g}{suffix}"
    return f"{n:g}"


def human_bytes(n: float) -> str:
    for suffix, scale in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {suffix}"
    return f"{n:.0f} B"


def human_seconds(s: float) -> str:
    if s >= 86400:
        return f"{s / 86400:.1f} d"
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 60:
        return f"{s / 60:.0f} min"
    return f"{s:.0f} s"
