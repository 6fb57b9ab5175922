"""Lingjun's own live operations (the declaration's ``live``; reached through
:func:`generator.platforms.registry.live_for`):

* :mod:`~generator.platforms.lingjun.live.eflo`: the Cloud Assistant port over the EFLO controller's RunCommand,
  DescribeInvocations and StopInvocation (Lingjun nodes are not ECS instances), with the invocation index the job
  commands list (:func:`jobs_api`, which ``generator.live.jobs.stack.jobs_api`` asks);
* :mod:`~generator.platforms.lingjun.live.eflo_cure`: the action table of ``heal --health`` over the EFLO controller
  (ListClusterNodes, ListFaultReports, RebootNodes, ReportNodeStatus);
* :mod:`~generator.platforms.lingjun.live.fake`: :class:`RecordedEfloApi`, which answers from recorded responses.
"""

from __future__ import annotations

from generator.platforms.lingjun.live.eflo import (
    API,
    JOURNAL_FILE,
    BucketIndex,
    EfloJobsApi,
    SdkEfloApi,
    eflo_request_map,
    jobs_api,
    to_eflo,
)
from generator.platforms.lingjun.live.eflo_cure import (
    HEAL_VERBS,
    action_requests,
    apply,
    health_actions,
    node_status,
    plan_actions,
)
from generator.platforms.lingjun.live.fake import RecordedEfloApi

__all__ = [
    "API",
    "HEAL_VERBS",
    "JOURNAL_FILE",
    "BucketIndex",
    "EfloJobsApi",
    "RecordedEfloApi",
    "SdkEfloApi",
    "action_requests",
    "apply",
    "eflo_request_map",
    "health_actions",
    "jobs_api",
    "node_status",
    "plan_actions",
    "to_eflo",
]
