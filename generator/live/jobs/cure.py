"""What ``trainstack heal --health`` decides for a node, whatever the platform: the :class:`Action` and the grace
period after a heal. Each platform's action table, its reads and its calls are its own live operations, reached
through :func:`generator.platforms.registry.live_for` (ECS's: :mod:`generator.platforms.ecs.live.cure`, Lingjun's:
:mod:`generator.platforms.lingjun.live.eflo_cure`); :mod:`generator.live.jobs.stack` runs them.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

GRACE_MINUTES = 15


@dataclass(frozen=True, slots=True)
class Action:
    rank: int
    instance_id: str
    kind: str  # "reboot", "redeploy", "report", "replace", "wait" or "none"
    why: str


def _when(text: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
