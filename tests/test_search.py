"""The one node-count search (generator/plan/search.py): first_true for monotone bounds (memory), first_within for
unimodal costs (wall time against a deadline), checked against brute force on random inputs, with O(log n) calls."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from generator.plan.search import first_true, first_within


@given(n=st.integers(1, 5000), at=st.integers(0, 5001), start=st.integers(0, 5000))
def test_first_true_matches_brute_force_in_log_calls(n: int, at: int, start: int) -> None:
    calls: list[int] = []

    def ok(i: int) -> bool:
        calls.append(i)
        return i >= at

    want = next((i for i in range(start, n) if i >= at), None)
    assert first_true(n, ok, start) == want
    assert len(calls) <= 2 * math.log2(n + 1) + 3


@st.composite
def unimodal(draw: st.DrawFn) -> list[float]:
    """Strictly falling then strictly rising (either part may be empty), with an optional plateau of 'never' values
    at the end, as wall time against node count has when interruptions outpace progress."""
    fall = sorted(set(draw(st.lists(st.integers(1, 10**6), max_size=60))), reverse=True)
    rise = sorted({x for x in draw(st.lists(st.integers(1, 10**6), max_size=60)) if not fall or x > fall[-1]})
    never = [1e9] * draw(st.integers(0, 5))
    return [float(x) for x in fall + rise] + never or [1.0]


@given(costs=unimodal(), limit=st.integers(0, 10**6), start=st.integers(0, 130))
def test_first_within_matches_brute_force(costs: list[float], limit: int, start: int) -> None:
    calls: set[int] = set()

    def cost(i: int) -> float:
        calls.add(i)
        return costs[i]

    want = next((i for i in range(start, len(costs)) if costs[i] <= limit), None)
    assert first_within(len(costs), cost, limit, start) == want
    assert len(calls) <= 4 * math.log2(len(costs) + 1) + 6


def test_first_within_does_not_jump_over_a_short_feasible_interval() -> None:
    """The deadline is met only on nodes 5..6 of 1..100; a galloping search assuming monotonicity (4 fails, 8 fails:
    wall time rises again) would miss it."""
    wall = [100 - 10 * i if i < 6 else 40 + 20 * (i - 6) for i in range(100)]
    assert [i for i, w in enumerate(wall) if w <= 50] == [5, 6]
    assert first_within(100, lambda i: wall[i], 50) == 5
