"""Each platform's behaviour for the checks and the planner, one line per platform, next to its declaration in
:mod:`generator.platforms.registry`.

Two tables because of the import direction: the shared plan parts (storage, schedule, cost, ...) ask a platform's
declaration for its capabilities, and each platform's behaviour is built from those shared parts, so the declarations
(data) must not import the behaviour. Only :mod:`generator.plan.check` and :mod:`generator.plan.planner` import this.
"""

from __future__ import annotations

from typing import Any

from generator.platforms import dlc, ecs, lingjun
from generator.platforms.contract import PlanParts
from generator.platforms.dlc.parts import DlcParts
from generator.platforms.ecs.parts import EcsParts
from generator.platforms.lingjun.parts import LingjunParts
from generator.platforms.registry import platform_for

PARTS: dict[str, PlanParts] = {
    ecs.PLATFORM.name: EcsParts(),
    lingjun.PLATFORM.name: LingjunParts(),
    dlc.PLATFORM.name: DlcParts(),
}


def parts_for(subject: Any) -> PlanParts:
    """The behaviour of the platform of a spec, a plan or a ``compute.platform`` value."""
    return PARTS[platform_for(subject).name]
