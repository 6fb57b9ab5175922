"""A cross-node NCCL failure is bisected down to the node: ``bisect`` over simulated fabrics (pure), and
``trainstack check --level full`` against recorded Cloud Assistant answers where rank 37 of 64 breaks every
all-reduce it joins.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from generator.live.jobs.bisect import bisect
from generator.live.jobs.fake import RecordedEcsApi
from tests.test_ecs_jobs import BIG, FIXTURES, credentials, deploy, ids, run, workspace  # noqa: F401 (fixtures)


def fabric(bad: set[int] = frozenset(), together: set[int] = frozenset(), everything: bool = False) -> Any:
    """A test: a group fails when it holds a bad node, or all of ``together``, or always."""
    seen: list[list[tuple[int, ...]]] = []

    def test(groups: Any) -> list[bool]:
        seen.append([tuple(g) for g in groups])
        for g in groups:  # a round never puts one node in two groups
            assert not set(g) & {r for h in groups if h is not g for r in h}
        return [
            not (everything or bad & set(g) or (together and together <= set(g))) for g in groups
        ]

    test.seen = seen  # type: ignore[attr-defined]
    return test


@pytest.mark.parametrize("n,bad", [(64, 37), (64, 0), (64, 63), (7, 4), (3, 2), (256, 200)])
def test_one_bad_node_is_named(n: int, bad: int) -> None:
    test = fabric({bad})
    found = bisect(range(n), test)
    assert found.bad == [bad] and not found.unresolved
    assert bad not in found.good and found.partner[bad] in found.good
    assert len(found.rounds) <= max(2, n.bit_length() + 1)


def test_two_nodes_alone_cannot_tell_which_is_bad() -> None:
    found = bisect(range(2), fabric({1}))
    assert found.bad == [] and found.unresolved == [(0, 1)]


def test_two_bad_nodes_in_different_halves_are_both_named() -> None:
    found = bisect(range(16), fabric({2, 13}))
    assert sorted(found.bad) == [2, 13] and not found.unresolved


def test_a_fault_only_two_nodes_make_together_stays_unresolved() -> None:
    found = bisect(range(16), fabric(together={3, 4}))
    assert found.bad == [] and found.unresolved == [tuple(range(8))]
    assert found.good >= set(range(8, 16))


def test_a_fabric_wide_fault_names_no_node() -> None:
    found = bisect(range(8), fabric(everything=True))
    assert found.bad == [] and found.good == set()
    assert sorted(r for g in found.unresolved for r in g) == list(range(8))


# ------------------------------------------------------------------------------------------- through the command
GOOD = [
    '{"check": "bootstrap", "ok": true, "detail": "bootstrap-done"}',
    '{"check": "gpus", "ok": true, "detail": "8 GPUs", "value": 8}',
    '{"check": "xid", "ok": true, "detail": "none", "value": []}',
    '{"check": "dcgm", "ok": true, "detail": "dcgmi diag -r 3 passed"}',
    '{"check": "fabricmanager", "ok": true, "detail": "active"}',
    '{"check": "erdma", "ok": true, "detail": "2 ACTIVE", "value": 2}',
    '{"check": "nccl-intra", "ok": true, "detail": "", "value": 190.5, "net": "none"}',
]
INTER_OK = '{"check": "nccl-inter", "ok": true, "detail": "", "value": 18.2, "net": "ib"}'
INTER_FAILED = '{"check": "nccl-inter", "ok": false, "detail": "all-reduce failed (exit 1): NCCL error"}'
# the groups the bisection tests, round by round, when rank 37 breaks every all-reduce it joins
ROUNDS = [
    [range(32), range(32, 64)],
    [range(32, 48), range(48, 64)],
    [range(32, 40), range(40, 48)],
    [range(32, 36), range(36, 40)],
    [range(36, 38), range(38, 40)],
    [(0, 36), (1, 37)],
]


def _records(invoke: str, ranks: Any, lines: Any) -> dict[str, Any]:
    rs = [
        {
            "InvokeId": invoke,
            "InstanceId": ids(64)[r],
            "InvokeRecordStatus": "Finished",
            "ExitCode": 0,
            "Output": "\n".join("TRAINSTACK-CHECK " + x for x in lines(r)),
        }
        for r in ranks
    ]
    return {"RequestId": "R", "Invocation": {"TotalCount": len(rs), "InvocationResults": {"InvocationResult": rs}}}


@pytest.mark.usefixtures("credentials")
def test_check_full_bisects_the_cross_node_failure_to_rank_37(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    engine = deploy(monkeypatch, BIG, ids(64))
    folder = tmp_path / "recorded"
    shutil.copytree(FIXTURES, folder)
    invokes = ["t-bisect000"] + [f"t-bisect{i + 1:02d}{j}" for i, r in enumerate(ROUNDS) for j in range(len(r))]
    (folder / "RunCommand.json").write_text(
        json.dumps({"_sequence": [{"InvokeId": i, "RequestId": f"R-{i}"} for i in invokes]})
    )
    by_invoke: dict[str, Any] = {"_by": "InvokeId"}
    by_invoke["t-bisect000"] = _records("t-bisect000", range(64), lambda r: [*GOOD, INTER_FAILED])
    for i, groups in enumerate(ROUNDS):
        for j, g in enumerate(groups):
            inv = f"t-bisect{i + 1:02d}{j}"
            verdict = INTER_FAILED if 37 in g else INTER_OK
            by_invoke[inv] = _records(inv, g, lambda r, v=verdict: [v])
    (folder / "DescribeInvocationResults.json").write_text(json.dumps(by_invoke))
    ecs = RecordedEcsApi(folder)
    result = run(["check", BIG, "--level", "full", "--json"], engine, ecs)
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["failed_ranks"] == [37]
    assert report["bisection"]["bad_ranks"] == [37] and report["bisection"]["unresolved"] == []
    (bad,) = [n for n in report["nodes"] if n["rank"] == 37]
    assert bad["failed"] == ["nccl-inter"]
    assert all(n["healthy"] for n in report["nodes"] if n["rank"] != 37)
    sent = [b for a, b in ecs.calls if a == "RunCommand"]
    expected = [list(range(64))] + [list(g) for r in ROUNDS for g in r]
    assert [[ids(64).index(i) for i in b["InstanceId"]] for b in sent] == expected
    assert "bisection round 6" in result.stderr
    quarantine = json.loads((Path("stacks/pretrain-70b/.trainstack/quarantine.json")).read_text())
    assert list(quarantine["nodes"]) == ["37"]
