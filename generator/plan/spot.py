"""The Spot part: which ranks run on spot instances, the spot strategy and price limit, and their decision.

Ranks ``0 .. spot.on_demand_base - 1`` stay on demand (rank 0 is the job's rendezvous); the rest are spot when
``spot.enabled``. :func:`spot_split` is the one place that rule lives: the node table, the checkpoint interval,
the ranking of instance types and the cost all ask it.
"""

from __future__ import annotations

from collections.abc import Iterable

from generator.plan import warns
from generator.plan.fit import Fit
from generator.plan.model import Decision, Node, Spot
from generator.plan.warns import PlanWarning
from generator.spec.model import Spec


def spot_split(spec: Spec, nodes: int) -> tuple[int, int]:
    """How many of ``nodes`` are on demand and how many spot."""
    if not spec.spot.enabled:
        return nodes, 0
    base = min(spec.spot.on_demand_base, nodes)
    return base, nodes - base


def spot_ranks(spec: Spec, nodes: int) -> list[int]:
    """The ranks that run on spot instances: those after the on-demand base."""
    on_demand, spot = spot_split(spec, nodes)
    return list(range(on_demand, on_demand + spot))


def plan_spot(
    spec: Spec, fit: Fit, ranks: Iterable[Node], decisions: list[Decision], warnings: list[PlanWarning]
) -> Spot:
    s = spec.spot
    ranks = tuple(ranks)
    on_demand = tuple(n.rank for n in ranks if not n.spot)
    spot = tuple(n.rank for n in ranks if n.spot)
    limit = None
    if s.enabled and s.strategy == "SpotWithPriceLimit":
        limit = round(fit.itype.price.cny_per_hour * s.max_price_ratio, 3)
    if s.enabled:
        decisions.append(
            Decision(
                "spot",
                f"{len(spot)} spot, {len(on_demand)} on-demand",
                f"{s.strategy}"
                + (
                    f" with a limit of {limit:g} CNY/h (price x {s.max_price_ratio:g}"
                    f"{', an estimated price' if fit.itype.price.estimated else ''})"
                    if limit
                    else ""
                )
                + f"; {_on_demand_text(on_demand)}; a watcher on each spot node polls the "
                f"metadata service and asks training to checkpoint on the 5-minute notice"
                f" [DOC-SPOT-HANDLE]",
            )
        )
        warnings.append(warns.SpotAssumed(s.price_ratio, s.interruptions_per_node_day))
        if not spot:
            warnings.append(warns.SpotAllOnDemand())
        if not on_demand:
            warnings.append(warns.SpotRankZero())
    return Spot(
        s.enabled,
        s.strategy if s.enabled else "NoSpot",
        limit,
        s.protection_hours,
        s.interruption,
        on_demand,
        spot,
        s.price_ratio,
        s.interruptions_per_node_day,
    )


def _on_demand_text(on_demand: tuple[int, ...]) -> str:
    """What the on-demand base buys: rank 0, which hosts the c10d rendezvous, outlives reclaims only if on demand."""
    if not on_demand:
        return (
            "no rank stays on demand (spot.on_demand_base: 0), so rank 0, which hosts the job's rendezvous, can "
            "be reclaimed too, and training stops until it is back"
        )
    ranks = ", ".join(map(str, on_demand)) if len(on_demand) <= 4 else f"0-{on_demand[-1]}"
    many = len(on_demand) > 1
    return (
        f"rank{'s' if many else ''} {ranks} stay{'' if many else 's'} on demand so the job's rendezvous (rank 0) "
        "survives reclaims"
    )
