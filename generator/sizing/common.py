"""What every sizing module shares: the error type, byte units, exact rounding and argument checks.

Pure arithmetic, like the rest of :mod:`generator.sizing`. Units: bytes are exact integers; "GB" in notes
means 1e9 bytes (as in [ZeRO]), "GiB" means 2**30 bytes.
"""

from __future__ import annotations

from fractions import Fraction

GB = 10**9
GiB = 2**30


class SizingError(ValueError):
    """An input the sizing model cannot use; the message says what to change."""


def _gb(n: float | Fraction) -> str:
    return f"{float(n) / GB:.2f} GB"


def _ceil(x: int | Fraction) -> int:
    """Exact ceiling of a non-negative int or Fraction."""
    return -(-x.numerator // x.denominator) if isinstance(x, Fraction) else int(x)


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SizingError(f"{name} must be a positive integer, got {value!r}; set it to a whole number >= 1.")


def _positive_number(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise SizingError(f"{name} must be a positive number, got {value!r}.")
