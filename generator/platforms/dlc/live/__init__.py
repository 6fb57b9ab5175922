"""PAI-DLC jobs from the command line: ``trainstack submit``, ``jobs``, ``logs`` and ``cancel`` (docs/live.md).

trainstack provisions what surrounds a DLC job (workspace, VPC, datasets, checkpoint bucket, RAM role) with Pulumi;
the job itself is created through Alibaba Cloud's PAI-DLC API with its official SDK (``alibabacloud-pai-dlc20201203``,
the optional ``trainstack[dlc]`` extra). This facade re-exports the parts:

* :mod:`~generator.platforms.dlc.live.request`: the CreateJob request from the plan and the stack outputs (pure, placeholders
  for outputs a stack has not produced), the command quoting, the stack's tags and the ListJobs filter;
* :mod:`~generator.platforms.dlc.live.client`: the :class:`DlcClient` port, :class:`SdkDlcClient` over the SDK (imported only
  when a job command runs), and the one-sentence errors with their exit codes;
* :mod:`~generator.platforms.dlc.live.jobs`: what the commands do (submit, list, logs, cancel), keeping to this stack's jobs;
* :mod:`~generator.platforms.dlc.live.fake`: :class:`RecordedDlcClient`, which answers from recorded API responses.
"""

from __future__ import annotations

from generator.platforms.dlc.live.client import (
    DLC_SDK_MODULES,
    INSTALL_DLC,
    DlcApiError,
    DlcClient,
    DlcSdkMissing,
    SdkDlcClient,
    api_error,
    require_dlc_sdk,
    sdk_request_map,
)
from generator.platforms.dlc.live.fake import RecordedDlcClient
from generator.platforms.dlc.live.jobs import (
    ACTIVE_STATUSES,
    DEFAULT_LOG_LINES,
    NotThisStacksJob,
    PodLogs,
    Submission,
    cancel,
    follow_logs,
    job_logs,
    job_row,
    job_summary,
    new_lines,
    read_outputs,
    spec_drift,
    stack_job,
    stack_jobs,
    stack_outputs,
    stack_target,
    submit,
    submit_question,
    workspace_id,
)
from generator.platforms.dlc.live.request import (
    PLACEHOLDER,
    TAG_PROJECT,
    TAG_STACK,
    JobRequest,
    check_display_name,
    create_job_request,
    display_name,
    is_stack_job,
    list_jobs_request,
    require_dlc,
    stack_tags,
    user_command,
)

__all__ = [
    "ACTIVE_STATUSES",
    "DEFAULT_LOG_LINES",
    "DLC_SDK_MODULES",
    "INSTALL_DLC",
    "PLACEHOLDER",
    "TAG_PROJECT",
    "TAG_STACK",
    "DlcApiError",
    "DlcClient",
    "DlcSdkMissing",
    "JobRequest",
    "NotThisStacksJob",
    "PodLogs",
    "RecordedDlcClient",
    "SdkDlcClient",
    "Submission",
    "api_error",
    "cancel",
    "check_display_name",
    "create_job_request",
    "display_name",
    "follow_logs",
    "is_stack_job",
    "job_logs",
    "job_row",
    "job_summary",
    "list_jobs_request",
    "new_lines",
    "read_outputs",
    "require_dlc",
    "require_dlc_sdk",
    "sdk_request_map",
    "spec_drift",
    "stack_job",
    "stack_jobs",
    "stack_outputs",
    "stack_tags",
    "stack_target",
    "submit",
    "submit_question",
    "user_command",
    "workspace_id",
]
