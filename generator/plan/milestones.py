"""checkpoints.milestones in the plan: which checkpoints are kept forever beside keep_last's window, and what that costs.

Three forms (exactly one, :class:`generator.spec.storage.MilestonesSpec`): ``every: M`` (one in every M checkpoints, a
window of M intervals), ``every_hours: H`` (one per H hours of training, a window of H hours) and ``at_steps: [...]``
(the checkpoints of those optimizer steps). Rank 0's trainstack-ckpt-sync (``templates/stack/ckpt_sync.py.j2``) tags
the first checkpoint of each window, or the checkpoints whose name carries a listed step, ``milestone``, and the
others ``rolling``; the keep_last rule expires only ``rolling`` objects. Apart from :mod:`generator.plan.checkpoints`
(the tier, the interval and the bucket) and :mod:`generator.plan.cost` (the bill) because the rule has one home here:
the window, the decision's words, and which checkpoints the cost keeps to the end.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from generator.plan import refusals
from generator.plan.fit import PlanningError
from generator.plan.model import Checkpoints, Decision
from generator.spec.model import Spec
from generator.spec.units import human_seconds

# checkpoints.milestones: with milestones the expiry rule applies only to objects tagged RETENTION_TAG=ROLLING (an OSS
# lifecycle rule with tags applies to objects that carry all of them: "Object tagging and lifecycle management",
# https://www.alibabacloud.com/help/en/oss/developer-reference/use-object-tagging-for-lifecycle-management-1), and
# trainstack-ckpt-sync on rank 0 tags each checkpoint ROLLING or MILESTONE (templates/stack/ckpt_sync.py.j2): an
# untagged object (not yet seen by the tagger) is never expired, so a tagger that stops keeps more, never less.
# The tag and its two values (the node's tagger, templates/stack/ckpt_sync.py.j2, uses the same words).
RETENTION_TAG = "trainstack-retention"
ROLLING = "rolling"
MILESTONE = "milestone"


@dataclass(frozen=True, slots=True)
class Rule:
    """The plan's milestone rule: ``every`` (M), ``seconds`` (the window of ``every`` or ``hours``; 0 without one),
    ``hours`` (H) and ``steps`` (sorted); all empty without milestones."""

    every: int | None = None
    seconds: int = 0
    hours: float | None = None
    steps: tuple[int, ...] = ()


def rule(spec: Spec, interval: int) -> Rule:
    """The milestone rule of ``spec`` at a checkpoint interval of ``interval`` seconds (none without keep_last, which
    the spec check refuses). An ``every_hours`` window that is not longer than the interval keeps every checkpoint,
    which is no milestone: refused (TSP023)."""
    m, k = spec.checkpoints.milestones, spec.checkpoints
    if m is None or k.keep_last is None:
        return Rule()
    if m.every is not None:
        return Rule(every=m.every, seconds=m.every * interval)
    if m.every_hours is not None:
        seconds = round(m.every_hours * 3600)
        if seconds <= interval:
            raise PlanningError([refusals.MilestoneWindowShort(m.every_hours, interval).problem()])
        return Rule(seconds=seconds, hours=m.every_hours)
    return Rule(steps=tuple(m.at_steps or ()))


def decision(r: Rule, interval: int, prefix: str) -> Decision | None:
    """The "checkpoint milestones" decision: what is kept and how the node tags it."""
    tagged = (
        f"tagged {RETENTION_TAG}={MILESTONE} and the others {RETENTION_TAG}={ROLLING} by trainstack-ckpt-sync on "
        f"rank 0 (a checkpoint is a top-level folder or file under {prefix}"
    )
    stays = f"the keep_last rule expires only objects tagged {ROLLING}, so milestones and anything not yet tagged stay"
    if r.every is not None:
        return Decision(
            "checkpoint milestones",
            f"one in every {r.every}: kept forever",
            f"checkpoints.milestones.every {r.every} at one checkpoint every {human_seconds(interval)}: of the "
            f"checkpoints written in each {human_seconds(r.seconds)} window (counted from 1970-01-01 UTC) the first is "
            f"{tagged}, its time its oldest object's); {stays}; about one in every {r.every} checkpoints is billed to "
            "the end of the run and after it",
        )
    if r.hours is not None:
        per = max(1, round(r.seconds / interval))
        return Decision(
            "checkpoint milestones",
            f"one per {r.hours:g} h: kept forever",
            f"checkpoints.milestones.every_hours {r.hours:g} at one checkpoint every {human_seconds(interval)}: of "
            f"the checkpoints written in each {human_seconds(r.seconds)} window (counted from 1970-01-01 UTC) the "
            f"first is {tagged}, its time its oldest object's); {stays}; about one in every {per} checkpoints, one per "
            f"{r.hours:g} h of the run, is billed to the end of the run and after it",
        )
    if r.steps:
        shown = ", ".join(f"{s:,}" for s in r.steps[:8]) + (
            f" and {len(r.steps) - 8} more" if len(r.steps) > 8 else ""
        )
        return Decision(
            "checkpoint milestones",
            f"{len(r.steps)} step(s): kept forever",
            f"checkpoints.milestones.at_steps {shown}: the checkpoints whose name ends in one of these step numbers "
            f"(the last number in the name: step-1000, iter_0001000, global_step1000) are {tagged}; a name without a "
            f"number is {ROLLING}); {stays}; the job reads the steps in TRAINSTACK_CHECKPOINT_MILESTONE_STEPS to save a "
            "checkpoint at each; each is billed from its step to the end of the run and after it",
        )
    return None


def total_steps(spec: Spec) -> int | None:
    """The run's optimizer steps, model.tokens / model.global_batch_tokens, when both are given."""
    m = spec.model
    return m.tokens // m.global_batch_tokens if m.tokens and m.global_batch_tokens else None


def every_window(kept: int, wall_hours: float, ckpt: Checkpoints) -> Callable[[int], bool] | None:
    """Whether checkpoint i (1-based, of ``kept`` written over ``wall_hours``) is a window's milestone, or None
    when the rule has no window: ``every``: (i - 1) mod M = 0; ``every_hours``: the first written in each H hours
    (checkpoint i at (i - 1) / kept of the wall clock)."""
    if ckpt.milestone_every is not None:
        every = ckpt.milestone_every
        return lambda i: (i - 1) % every == 0
    if ckpt.milestone_hours and kept:
        step_h, hours = wall_hours / kept, ckpt.milestone_hours
        return lambda i: i == 1 or math.floor((i - 1) * step_h / hours) > math.floor((i - 2) * step_h / hours)
    return None


def step_shares(ckpt: Checkpoints, steps: int | None) -> list[float]:
    """At what share of the run each at_steps checkpoint is written: s / total steps for the steps the run reaches
    (a step past the end is never written), or 0 for each (kept from the start: the most it can cost) when the run's
    steps are not known (no model.tokens or model.global_batch_tokens)."""
    if steps is None:
        return [0.0 for _ in ckpt.milestone_steps]
    return [s / steps for s in ckpt.milestone_steps if s <= steps]
