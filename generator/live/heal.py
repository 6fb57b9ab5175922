"""``trainstack heal``: find the GPU nodes of a deployed stack that are gone or stopped, and re-create exactly those
at their ranks, names and private addresses with a targeted update.

How a sick node is found. The program's nodes are plan.json's ``compute.ranks`` (rank, name, private IP, zone,
spot); each is the ``alicloud:ecs/instance:Instance`` named after it, URN
``urn:pulumi:STACK::PROJECT::alicloud:ecs/instance:Instance::NAME``. Heal refreshes those instances
(``pulumi refresh --target``): the provider reads each one with DescribeInstances, drops an instance ECS no longer
has from the state (a spot reclaim with ``SpotInterruptionBehavior=Terminate`` releases it) and records the
``status`` output of the rest. Then, in the state:

* **missing**: no instance of that name (released, or deleted by hand);
* **stopped**: the instance's ``status`` is ``Stopped`` (a spot reclaim in stop mode, a stop after a hardware
  event, a person).

A missing node is created by ``pulumi up --target URN --target-dependents`` (its RAM role attachment follows). A
stopped node is replaced, deleted first and then created: a plain ``pulumi up --replace`` creates the new instance
before deleting the old one, and the new one asks for the same fixed private IP, which ECS refuses while the old one
holds it. So heal runs ``pulumi destroy --target URN --target-dependents`` and then the targeted ``up``.

Before creating anything, heal asks for stock (:mod:`~generator.live.stock`) and, while the zone has none, asks
again with backoff, a bounded number of times.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.live.engine import OnEvent, StateResource, Target, _ignore
from generator.live.errors import (
    BadTarget,
    EngineFailed,
    Interrupted,
    NoStock,
    StackLocked,
    StackNotDeployed,
    StaleStack,
)
from generator.live.mountaddr import needs_mount_address
from generator.live.stock import (
    ECS_INSTANCE,
    Fleet,
    PlannedNode,
    StockChecker,
    StockCheckFailed,
    fleet_of,
    short_stock,
)
from generator.live.target import check_fresh
from generator.platforms.base import Capability
from generator.platforms.registry import platform_for

STOCK_ATTEMPTS = 5  # questions for stock before heal gives up on a round
STOCK_BACKOFF = (60.0, 120.0, 240.0, 480.0)  # seconds between them (the last repeats)

Say = Callable[[str], None]
Confirm = Callable[[Sequence["SickNode"]], None]


@dataclass(frozen=True, slots=True)
class SickNode:
    node: PlannedNode
    urn: str
    why: str  # "missing" or "stopped"

    @property
    def cure(self) -> str:
        return "re-created" if self.why == "missing" else "replaced"

    @property
    def label(self) -> str:
        return f"rank {self.node.rank} ({self.node.name})"


def node_urn(target: Target, name: str) -> str:
    """The URN of the program's node ``name`` (a top-level ``ecs.Instance``; no parent)."""
    return f"urn:pulumi:{target.stack}::{target.project}::{ECS_INSTANCE}::{name}"


def diagnose(target: Target, fleet: Fleet, state: Sequence[StateResource]) -> list[SickNode]:
    """The planned nodes missing from the (refreshed) state or stopped in it, by rank.

    Heal restores a deployed cluster; it does not deploy one. So at least one node must have left a trace in the
    state: its instance, or a resource named after it (its RAM role attachment ``NAME-role``, which a reclaim
    leaves behind and a destroy deletes). Otherwise the nodes were never deployed, or destroyed on purpose.
    """
    instances = {r.name: r for r in state if r.type == ECS_INSTANCE}
    names = {n.name for n in fleet.nodes}
    traces = [r for r in state if r.name in names or r.name.rsplit("-", 1)[0] in names]
    if not traces:
        raise StackNotDeployed(
            f"none of the {len(fleet.nodes)} nodes of {target.project} is in the stack's state: "
            "heal restores nodes a deploy made; deploy the cluster with `trainstack up`."
        )
    sick = []
    for node in sorted(fleet.nodes, key=lambda n: n.rank):
        found = instances.get(node.name)
        if found is None:
            sick.append(SickNode(node, node_urn(target, node.name), "missing"))
        elif found.status.lower() == "stopped":
            sick.append(SickNode(node, node_urn(target, node.name), "stopped"))
    return sick


def require_healable(target: Target) -> Fleet:
    """A folder heal can work on: ECS nodes, fresh against its spec, and nodes that a deploy has declared."""
    fleet = fleet_of(target.stack_dir)
    if not platform_for(fleet.platform).has(Capability.ECS_INSTANCES):
        raise BadTarget(
            f"{target.stack_dir} runs Lingjun nodes; heal re-creates ECS instances only, so use "
            "`trainstack up` to restore Lingjun nodes."
        )
    fresh = check_fresh(Path(target.stack_dir))
    if fresh.stale:
        raise StaleStack(
            f"{target.stack_dir} is stale against {fresh.spec} ({', '.join(fresh.stale)} differ), so heal "
            "would re-create nodes from an outdated program: run `trainstack up` with the spec first."
        )
    if needs_mount_address(target):
        raise StackNotDeployed(
            f"the nodes of {target.project} are not deployed yet (the CPFS mount address is not "
            "set): run `trainstack up` first."
        )
    return fleet


def wait_for_stock(
    checker: StockChecker,
    fleet: Fleet,
    nodes: list[PlannedNode],
    say: Say,
    *,
    sleep: Callable[[float], None],
    attempts: int | None = None,
    backoff: Sequence[float] | None = None,
) -> None:
    """Ask for stock up to ``attempts`` times, sleeping ``backoff`` between; raise the last :class:`NoStock`."""
    attempts = STOCK_ATTEMPTS if attempts is None else attempts
    backoff = STOCK_BACKOFF if backoff is None else backoff
    for attempt in range(1, attempts + 1):
        error = short_stock(checker, fleet, nodes, say)
        if error is None:
            return
        if attempt == attempts:
            raise error
        delay = backoff[min(attempt - 1, len(backoff) - 1)]
        say(
            f"heal: no stock yet ({error.args[0].split(' for the ')[0]}); asking again in {delay:.0f} s "
            f"({attempt} of {attempts})"
        )
        sleep(delay)


def heal_once(
    engine: Any,
    target: Target,
    fleet: Fleet,
    checker: StockChecker | None,
    say: Say,
    *,
    confirm: Confirm | None = None,
    on_event: OnEvent = _ignore,
    sleep: Callable[[float], None] | None = None,
    stock_attempts: int | None = None,
    quiet_when_healthy: bool = False,
) -> list[SickNode]:
    """One round: refresh the nodes, find the sick ones, re-create them; returns what was healed."""
    sleep = sleep or time.sleep
    if fleet.paused:  # compute.paused: no node is meant to run, so none is missing
        if not quiet_when_healthy:
            say("heal: the cluster is paused (compute.paused): no node to heal")
        return []
    present = [node_urn(target, r.name) for r in engine.resources(target) if r.type == ECS_INSTANCE]
    if present:
        engine.refresh(target, on_event, targets=present)
    sick = diagnose(target, fleet, engine.resources(target))
    if not sick:
        if not quiet_when_healthy:
            say(f"heal: all {len(fleet.nodes)} nodes are there and not stopped")
        return []
    for s in sick:
        say(f"heal: {s.label} {s.why}")
    if checker is not None:
        wait_for_stock(checker, fleet, [s.node for s in sick], say, sleep=sleep, attempts=stock_attempts)
    if confirm is not None:
        confirm(sick)
    stopped = [s.urn for s in sick if s.why == "stopped"]
    if stopped:  # delete first: the new instance takes the same private IP
        engine.destroy(target, on_event, exclude_protected=False, targets=stopped)
    engine.up(target, on_event, targets=[s.urn for s in sick])
    for s in sick:
        say(f"heal: {s.label} {s.why} -> {s.cure}")
    return sick


# failures a watcher logs and outlives: the next round may succeed
PASSING = (NoStock, StockCheckFailed, EngineFailed, StackLocked)


def watch(
    engine: Any,
    target: Target,
    fleet: Fleet,
    checker: StockChecker | None,
    say: Say,
    seconds: float,
    *,
    rounds: int | None = None,
    sleep: Callable[[float], None] | None = None,
    after_round: Callable[[], None] | None = None,
    **once: Any,
) -> int:
    """Heal every ``seconds`` until Ctrl-C (or ``rounds`` rounds, for tests); returns how many nodes it healed.
    ``after_round`` runs after each round's re-creation (``heal --health --watch``: the health actions).

    No stock, an engine failure or a locked stack ends a round with a log line, not the watch; setup errors
    (credentials, passphrase, a stale folder) end it. Ctrl-C between rounds is :class:`Interrupted` with its own
    sentence; during a round it reaches the caller as ``KeyboardInterrupt``.
    """
    sleep = sleep or time.sleep
    healed, done, healthy_said = 0, 0, False
    while True:
        try:
            cured = heal_once(
                engine, target, fleet, checker, say, sleep=sleep, quiet_when_healthy=healthy_said, **once
            )
            healed += len(cured)
            healthy_said = not cured
        except PASSING as e:
            say(f"heal: {e} (trying again in {seconds:.0f} s)")
            healthy_said = False
        if after_round is not None:
            after_round()
        done += 1
        if rounds is not None and done >= rounds:
            return healed
        try:
            sleep(seconds)
        except KeyboardInterrupt:
            raise Interrupted(
                f"heal --watch stopped (Ctrl-C) between checks, with nothing in flight; it healed "
                f"{healed} node{'s' if healed != 1 else ''}."
            ) from None
