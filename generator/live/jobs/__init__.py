"""Jobs and health checks on ECS, bare-metal and Lingjun stacks through Cloud Assistant, with no SSH, key pair or
bastion: ``trainstack submit``, ``jobs``, ``logs``, ``cancel`` and ``check`` for ``compute.platform: ecs`` and
``lingjun`` (docs/jobs.md).

* :mod:`~generator.live.jobs.cluster`: the nodes (plan.json + the ``node_ids`` output), ``--nodes`` and the
  quarantine file;
* :mod:`~generator.live.jobs.request`: the RunCommand / DescribeInvocations / DescribeInvocationResults /
  StopInvocation requests (pure), the job script with the user's words as base64 data, the batching by 100;
* :mod:`~generator.live.jobs.client`: the :class:`EcsApi` port, :class:`SdkEcsApi` over ``alibabacloud-ecs20140526``
  and :func:`ecs_client`, the one factory of SDK clients;
* :mod:`~generator.live.jobs.logstore`: the job logs and exit codes in the checkpoint bucket (OSS SDK V2);
* :mod:`~generator.live.jobs.ops`: what submit, jobs, logs and cancel do;
* :mod:`~generator.live.jobs.health`: the health gate (``check``): its script, the verdicts and the report;
* :mod:`~generator.live.jobs.cure`: what ``heal --health`` decides for a node (reboot, redeploy, report, replace,
  wait) and its grace period; each platform's action table is its own, reached through ``registry.live_for``:
  ECS's :mod:`~generator.platforms.ecs.live.cure` (RebootInstance, RedeployInstance over ECS health and events)
  and Lingjun's :mod:`~generator.platforms.lingjun.live.eflo_cure` (RebootNodes, ReportNodeStatus over the EFLO
  controller's node list and fault reports);
* :mod:`~generator.live.jobs.stack`: the stack's platform, target and cluster, and ``heal --health``;
* :mod:`~generator.platforms.lingjun.live.eflo` (Lingjun's own, reached through ``registry.live_for``): the same
  port over the EFLO controller's Cloud Assistant (Lingjun nodes are not ECS instances): RunCommand,
  DescribeInvocations and StopInvocation of API version 2022-12-15;
* :mod:`~generator.live.jobs.fake`: recorded API answers for tests.

``heal --health`` reads ECS health and events, or on Lingjun the EFLO controller's node list and fault reports.
"""

from __future__ import annotations
