"""Whether an update makes an OSS bucket delete data sooner: its lifecycle rules' shortest expiry of objects and of
noncurrent versions, before and after (a bucket that stays can still lose what it holds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from generator.preview.mockrun import Resource


def number(value: Any) -> float | None:
    """A JSON number as a float (a bool is not one); None for anything else."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# OSS lifecycle rules delete by age: an update that makes objects (or their noncurrent versions, the copies a
# versioned bucket keeps to restore from) expire sooner deletes data in place, although the bucket stays.
EXPIRY_KEYS = ("expirations", "noncurrentVersionExpirations")


def _expiry_days(bucket: Resource | None, key: str) -> float:
    """The shortest enabled expiration of ``key`` over the bucket's lifecycle rules; infinity when none applies."""
    days = [
        float(e["days"])
        for rule in ((bucket.inputs.get("lifecycleRules") or []) if bucket else [])
        if isinstance(rule, Mapping) and rule.get("enabled", True)
        for e in (rule.get(key) or [])
        if isinstance(e, Mapping) and number(e.get("days")) is not None
    ]
    return min(days, default=float("inf"))


def sooner_expiries(
    old: Resource | None, new: Resource | None
) -> tuple[tuple[str, float, float | None], ...]:
    """``(key, days, was)`` for each of :data:`EXPIRY_KEYS` whose shortest expiry gets shorter (``was`` None: it
    never expired); empty when nothing expires sooner."""
    out = []
    for key in EXPIRY_KEYS:
        a, b = _expiry_days(old, key), _expiry_days(new, key)
        if b < a:
            out.append((key, b, None if a == float("inf") else a))
    return tuple(out)
