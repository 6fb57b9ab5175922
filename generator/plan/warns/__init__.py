"""What the plan warns about: one event class per warning, each with a stable code (``TSW...``) and typed fields;
the English is rendered from them here only.

In the manner of :mod:`generator.plan.rejections` and dbt's events (``core/dbt/events/types.py`` in
dbt-labs/dbt-core: a class per event with a ``code()`` and a ``message()`` built from its fields). The planner's
parts append instances to the plan's warnings; ``plan.json`` carries each as ``{"code", "fields", "text"}``,
``plan`` and ``validate`` print :meth:`PlanWarning.text`, and tests assert codes and fields, never the words.
``docs/codes.md`` lists every code (``tests/test_codes.py`` checks it against :func:`codes`).
"""

from __future__ import annotations

from generator.plan.warns.base import MOE_PRESETS, PlanWarning
from generator.plan.warns.cluster import (
    CheckpointsExpire,
    CheckpointsKeptForever,
    CpfsNotOffered,
    CpfsThroughputShort,
    DataflowBucketTag,
    DeadlineMissed,
    DlcSpotAssumed,
    DlcWeightsRefetch,
    Fp16LossScaling,
    Fp32Slow,
    HostMemoryLow,
    IntervalOverMtbf,
    IntervalOverRun,
    JumboNotEnabled,
    LingjunRdmaOff,
    MoeSizedDense,
    NotGenerallyAvailable,
    RdmaOff,
    RunOverAYear,
    SpotAllOnDemand,
    SpotAssumed,
    SpotRankZero,
    WeightsDiskTight,
    WeightsPerNode,
)
from generator.plan.warns.platforms import (
    DlcActivation,
    DlcQuota,
    FieldIgnored,
    LingjunGpusUndocumented,
    LingjunNoOssCredentials,
    LingjunStock,
    SubscriptionNotDestroyed,
    SubscriptionPrepaid,
)

__all__ = [
    "MOE_PRESETS",
    "CheckpointsExpire",
    "CheckpointsKeptForever",
    "CpfsNotOffered",
    "CpfsThroughputShort",
    "DataflowBucketTag",
    "DeadlineMissed",
    "DlcActivation",
    "DlcQuota",
    "DlcSpotAssumed",
    "DlcWeightsRefetch",
    "FieldIgnored",
    "Fp16LossScaling",
    "Fp32Slow",
    "HostMemoryLow",
    "IntervalOverMtbf",
    "IntervalOverRun",
    "JumboNotEnabled",
    "LingjunGpusUndocumented",
    "LingjunNoOssCredentials",
    "LingjunRdmaOff",
    "LingjunStock",
    "MoeSizedDense",
    "NotGenerallyAvailable",
    "PlanWarning",
    "RdmaOff",
    "RunOverAYear",
    "SpotAllOnDemand",
    "SpotAssumed",
    "SpotRankZero",
    "SubscriptionNotDestroyed",
    "SubscriptionPrepaid",
    "WeightsDiskTight",
    "WeightsPerNode",
]


def codes() -> list[type[PlanWarning]]:
    """Every warning class, by code (docs/codes.md lists them)."""
    # the module's names, not __subclasses__(): slots=True replaces each class, and the replaced one lingers
    found = {
        v
        for v in globals().values()
        if isinstance(v, type) and issubclass(v, PlanWarning) and v is not PlanWarning
    }
    return sorted(found, key=lambda c: c.code)
