"""The one node-count search the planner uses: the first of an ordered list of node counts that meets a bound.

Two shapes of bound occur, and each has one search here:

* :func:`first_true` for a *monotone* predicate (false, ..., false, true, ..., true): per-GPU memory never grows
  with the data-parallel degree, so "fits in memory" stays true once it holds;
* :func:`first_within` for a *unimodal* cost (it falls, reaches its minimum, then rises): wall-clock hours fall
  with more nodes until interruptions, which grow with the node count, outweigh them. "Meets the deadline" is
  then true on one interval of node counts, which a monotone search could jump over.

Both gallop from ``start`` (1, 2, 4, ... steps) and then bisect, so they evaluate the bound O(log n) times, and
both return the smallest index that meets it (None if none does). Pure functions; the plan's layout, deadline,
elastic minimum and reasons all go through them.
"""

from __future__ import annotations

from collections.abc import Callable


def first_true(n: int, ok: Callable[[int], bool], start: int = 0) -> int | None:
    """The smallest i in [start, n) with ``ok(i)``, for ``ok`` monotone in i (once true, true for every larger i);
    None if ``ok(n - 1)`` is false. Galloping then bisection: the index before the one returned fails ``ok``."""
    if start >= n:
        return None
    if ok(start):
        return start
    fail, step = start, 1
    while True:
        probe = min(fail + step, n - 1)
        if ok(probe):
            break
        if probe == n - 1:
            return None
        fail, step = probe, step * 2
    return _bisect(fail, probe, ok)


def first_within(n: int, cost: Callable[[int], float], limit: float, start: int = 0) -> int | None:
    """The smallest i in [start, n) with ``cost(i) <= limit``, for ``cost`` unimodal in i (strictly falling, then
    rising; either part may be empty); None if no i meets it.

    Gallops while the cost falls; a probe that meets the limit ends the gallop (the indices meeting it form one
    interval, so bisecting between the last failing probe and it finds its start); a probe that costs no less than
    the one before means the minimum was passed: a ternary search in that bracket finds the minimum, and if it meets
    the limit, bisection on the falling side finds the first index that does."""
    if start >= n:
        return None
    memo: dict[int, float] = {}

    def c(i: int) -> float:
        if i not in memo:
            memo[i] = cost(i)
        return memo[i]

    def meets(i: int) -> bool:
        return c(i) <= limit

    if meets(start):
        return start
    before, last, step = start, start, 1  # the probes before the last, and the last (both fail the limit)
    while last < n - 1:
        probe = min(last + step, n - 1)
        if meets(probe):
            return _bisect(last, probe, meets)
        if c(probe) >= c(last):  # the minimum lies in [before, probe]
            low = _argmin(before, probe, c)
            return _bisect(before, low, meets) if meets(low) else None
        before, last, step = last, probe, step * 2
    return None


def _bisect(fail: int, hit: int, ok: Callable[[int], bool]) -> int:
    """The first index in (fail, hit] with ``ok``, given ``ok(hit)`` and not ``ok(fail)``, ``ok`` monotone between."""
    lo, hi = fail + 1, hit
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def _argmin(lo: int, hi: int, c: Callable[[int], float]) -> int:
    """The index of the minimum of a unimodal ``c`` on [lo, hi] (integer ternary search on the slope)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if c(mid) < c(mid + 1):
            hi = mid
        else:
            lo = mid + 1
    return lo
