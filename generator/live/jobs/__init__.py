"""Jobs and health checks on ECS and bare-metal stacks through Cloud Assistant, with no SSH, key pair or bastion:
``trainstack submit``, ``jobs``, ``logs``, ``cancel`` and ``check`` for ``compute.platform: ecs`` (docs/jobs.md).

* :mod:`~generator.live.jobs.cluster`: the nodes (plan.json + the ``node_ids`` output), ``--nodes`` and the
  quarantine file;
* :mod:`~generator.live.jobs.request`: the RunCommand / DescribeInvocations / DescribeInvocationResults /
  StopInvocation requests (pure), the job script with the user's words as base64 data, the batching by 100;
* :mod:`~generator.live.jobs.client`: the :class:`EcsApi` port, :class:`SdkEcsApi` over ``alibabacloud-ecs20140526``
  and :func:`ecs_client`, the one factory of SDK clients;
* :mod:`~generator.live.jobs.logstore`: the job logs and exit codes in the checkpoint bucket (OSS SDK V2);
* :mod:`~generator.live.jobs.ops`: what submit, jobs, logs and cancel do;
* :mod:`~generator.live.jobs.health`: the health gate (``check``): its script, the verdicts and the report;
* :mod:`~generator.live.jobs.cure`: the action table of ``heal --health`` (reboot, redeploy, replace, wait);
* :mod:`~generator.live.jobs.stack`: the stack's platform, target and cluster, and ``heal --health``;
* :mod:`~generator.live.jobs.fake`: recorded API answers for tests.

Lingjun stacks are refused with one sentence: their nodes are not ECS instances, and the EFLO controller's own
Cloud Assistant API (RunCommand, DescribeInvocations, StopInvocation of API version 2022-12-15,
https://help.aliyun.com/zh/pai/developer-reference/api-eflo-controller-2022-12-15-describeinvocations) is not driven
by trainstack yet.
"""

from __future__ import annotations

from generator.live.jobs.stack import LINGJUN_SENTENCE

__all__ = ["LINGJUN_SENTENCE"]
