"""Naming the node behind a cross-node NCCL failure: when the all-reduce across every node fails, ``trainstack check
--level full`` reruns the cross-node test on halves of the node set, then on the failing halves' halves, down to a
pair, and tests each node of a failing pair (or triple) with a node already seen healthy. The node that fails with a
healthy partner is the bad one; the rest leave the quarantine.

:func:`bisect` (pure) decides which groups to test in each round and reads their verdicts from ``test`` (one call per
round; the groups of a round share no node, so they run at the same time, each with its own rendezvous).

What cannot be pinned to a node is said so: a group whose halves both pass (the fault shows only at that scale, or
between the halves: a switch, the fabric) and a pair that fails together but not with healthy partners stay failed
as ``unresolved``; when no subset ever passes, the fault is the fabric's or the settings', not one node's.
:func:`name_cross_node_fault` drives it through Cloud Assistant after ``check --level full`` (the cross-node
all-reduce alone, ``TRAINSTACK_CHECK_ONLY=nccl-inter`` in ``scripts/check.sh``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from generator.live.jobs.cluster import Cluster, Node

Group = tuple[int, ...]  # ranks
Test = Callable[
    [Sequence[Group]], Sequence[bool]
]  # one round: the groups' verdicts (True: the all-reduce passed)
MAX_ROUNDS = 16  # 2 x log2(1024 nodes) with room: a bound, never reached by a fault the halving can corner


@dataclass
class Bisection:
    """What the bisection found: the bad ranks, the groups it could not narrow, the ranks seen healthy, each round."""

    bad: list[int] = field(default_factory=list)
    unresolved: list[Group] = field(default_factory=list)
    good: set[int] = field(default_factory=set)
    rounds: list[list[tuple[Group, bool]]] = field(default_factory=list)
    partner: dict[int, int] = field(default_factory=dict)  # bad rank -> the healthy rank it failed with

    def to_json(self) -> dict[str, object]:
        return {
            "bad_ranks": sorted(self.bad),
            "unresolved": [list(g) for g in self.unresolved],
            "healthy_ranks": sorted(self.good),
            "rounds": [[{"ranks": list(g), "ok": ok} for g, ok in r] for r in self.rounds],
        }


def _halves(group: Group) -> tuple[Group, Group]:
    mid = len(group) // 2
    return group[:mid], group[mid:]


@dataclass
class _Round:
    """One round's groups and what each stands for: a half of a failing group (``parent``), a member of a small
    failing group paired with a healthy node (``pairs``: the group and the member), or the first pair of a triple
    tested alone while no node is known healthy (``probes``)."""

    groups: list[Group] = field(default_factory=list)
    parent: dict[Group, Group] = field(default_factory=dict)
    pairs: dict[Group, tuple[Group, int]] = field(default_factory=dict)
    probes: dict[Group, Group] = field(default_factory=dict)


def _plan_round(split: Sequence[Group], suspects: list[Group], good: set[int]) -> tuple[_Round, list[Group]]:
    """The groups of the next round (no node in two of them), and the suspects that must wait for free healthy
    partners. Groups of 4 or more are halved; smaller ones become suspects."""
    rnd = _Round()
    for g in split:
        if len(g) >= 4:
            for h in _halves(g):
                rnd.groups.append(h)
                rnd.parent[h] = g
        else:
            suspects.append(g)
    pool = sorted(good)
    busy = {r for g in rnd.groups for r in g}
    waiting: list[Group] = []
    for g in suspects:
        free = [r for r in pool if r not in busy]
        if len(free) < len(g):
            if len(g) == 3 and not good and not set(g) & busy:
                rnd.groups.append(g[:2])  # no healthy node yet: does the triple's first pair pass alone?
                rnd.probes[g[:2]] = g
                busy.update(g)
            else:
                waiting.append(g)
            continue
        for member, ref in zip(g, free):
            pair = (ref, member)
            rnd.groups.append(pair)
            rnd.pairs[pair] = (g, member)
            busy.update(pair)
    return rnd, waiting


def _read_round(out: Bisection, rnd: _Round, verdicts: Sequence[bool], suspects: list[Group]) -> list[Group]:
    """Record a round's verdicts in ``out`` (and new suspects in ``suspects``); the failing halves to split next."""
    split: list[Group] = []
    halved: dict[Group, list[bool]] = {}
    failed_with_partner: dict[Group, list[int]] = {}
    for g, ok in zip(rnd.groups, verdicts):
        if g in rnd.probes:
            if ok:
                out.good.update(g)
                suspects.append(rnd.probes[g][2:])
            else:
                out.unresolved.append(rnd.probes[g])
            continue
        if g in rnd.pairs:
            group, member = rnd.pairs[g]
            failed_with_partner.setdefault(group, [])
            if ok:
                out.good.add(member)
            else:
                failed_with_partner[group].append(member)
                out.partner[member] = g[0]
            continue
        halved.setdefault(rnd.parent[g], []).append(ok)
        if ok:
            out.good.update(g)
        else:
            split.append(g)
    for group, members in failed_with_partner.items():
        if members:
            out.bad.extend(m for m in members if m not in out.bad)
        else:
            out.unresolved.append(group)  # each member passes with a healthy partner: only together they fail
    for g, oks in halved.items():
        if all(oks):
            out.unresolved.append(g)  # both halves pass: the fault shows only with all of g
    return split


def bisect(ranks: Sequence[int], test: Test, max_rounds: int = MAX_ROUNDS) -> Bisection:
    """Narrow a failing cross-node all-reduce over ``ranks`` (known to fail together) down to nodes."""
    out = Bisection()
    split: list[Group] = [tuple(sorted(ranks))] if len(ranks) >= 2 else []  # failing groups to halve
    suspects: list[Group] = []  # failing groups of 2 or 3: each member is tested with a healthy partner
    while (split or suspects) and len(out.rounds) < max_rounds:
        rnd, suspects = _plan_round(split, suspects, out.good)
        split = []
        if not rnd.groups:
            break  # only suspects and no healthy partner for them
        verdicts = list(test(rnd.groups))
        out.rounds.append(list(zip(rnd.groups, verdicts)))
        split = _read_round(out, rnd, verdicts, suspects)
    # what is left when the rounds or the healthy partners ran out
    out.unresolved.extend(split)
    out.unresolved.extend(suspects)
    out.good -= set(out.bad)
    return out


def name_cross_node_fault(
    api: Any,
    cluster: Cluster,
    nodes: Sequence[Node],
    node_reports: Sequence[Any],
    exp: Any,
    check_id: str,
    say: Callable[[str], None],
    sleep: Callable[[float], None],
) -> Bisection | None:
    """After a full check: when the cross-node all-reduce failed on two or more nodes, bisect it over the nodes
    that passed every other check, rewrite their ``nccl-inter`` findings and return what was found (None: nothing
    to bisect)."""
    from generator.live.jobs import health

    candidates = _candidates(node_reports)
    if candidates is None:
        return None
    test = _group_test(api, cluster, {n.rank: n for n in nodes}, exp, check_id, say, sleep)
    # without the nodes that failed other checks, the rest may pass together
    if len(candidates) < len(nodes) and test([candidates])[0]:
        found = Bisection(good=set(candidates))
        health.apply_bisection(node_reports, found)
        return found
    found = bisect(candidates, test)
    health.apply_bisection(node_reports, found)
    if found.bad:
        say(
            f"bisection: the cross-node all-reduce fails with rank(s) {', '.join(map(str, sorted(found.bad)))}"
        )
    for g in found.unresolved:
        say(f"bisection: ranks {_span(g)} fail only together (a switch, the fabric or the NCCL settings)")
    return found


def _candidates(node_reports: Sequence[Any]) -> Group | None:
    """The ranks to bisect over: those whose only failed check is the cross-node all-reduce (nodes failing another
    check are quarantined already), or None when fewer than two nodes failed it or fewer than two are left."""
    inter_failed = {r.rank for r in node_reports if any(f.check == "nccl-inter" for f in r.failed)}
    if len(inter_failed) < 2:
        return None
    candidates = tuple(
        r.rank
        for r in node_reports
        if r.rank in inter_failed and all(f.check == "nccl-inter" for f in r.failed)
    )
    return candidates if len(candidates) >= 2 else None


def _group_test(
    api: Any,
    cluster: Cluster,
    by_rank: dict[int, Node],
    exp: Any,
    check_id: str,
    say: Callable[[str], None],
    sleep: Callable[[float], None],
) -> Test:
    """The bisection's test: one round of cross-node all-reduces, one per group, run at once through Cloud
    Assistant; a group passes when every member's result passes."""
    from generator.live.jobs import health, ops

    rounds = [0]

    def test(groups: Sequence[Group]) -> list[bool]:
        rounds[0] += 1
        members = [[by_rank[r] for r in g] for g in groups]
        per_group = health.inter_requests(cluster, members, f"{check_id}-b{rounds[0]}", exp)
        say(
            f"bisection round {rounds[0]}: cross-node all-reduce on "
            + ", ".join(f"ranks {_span(g)}" for g in groups)
        )
        invoke: list[list[str]] = [ops.send(api, requests, lambda s: None) for requests in per_group]
        flat = [n for m in members for n in m]
        ids = [i for group_ids in invoke for i in group_ids]
        ops.wait_started(api, cluster, ids, flat, lambda s: None, sleep=sleep)
        records = ops.finished_results(api, cluster, ids, flat, timeout=1500.0, sleep=sleep)
        verdicts = [health.inter_passed((records.get(n.instance_id) for n in m), exp) for m in members]
        say(
            "  "
            + "; ".join(f"ranks {_span(g)}: {'ok' if ok else 'FAILED'}" for g, ok in zip(groups, verdicts))
        )
        return verdicts

    return test


def _span(group: Group) -> str:
    g = sorted(group)
    if len(g) > 2 and g == list(range(g[0], g[-1] + 1)):
        return f"{g[0]}-{g[-1]}"
    return ",".join(map(str, g))
