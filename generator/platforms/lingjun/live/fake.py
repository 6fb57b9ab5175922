"""Recorded EFLO controller answers for tests and demos: :class:`RecordedEfloApi`, the transport of
:class:`~generator.platforms.lingjun.live.eflo.EfloJobsApi` and of ``heal --health`` on Lingjun, read from JSON files
as :class:`generator.live.jobs.fake.RecordedEcsApi` reads ECS's (the same folder layout and ``_by`` / ``_sequence``
forms).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generator.live.jobs.fake import RecordedEcsApi
from generator.platforms.lingjun.live.eflo import eflo_request_map


class RecordedEfloApi(RecordedEcsApi):
    """EFLO controller answers (``RunCommand.json``, ``DescribeInvocations.json``, ``StopInvocation.json``), each
    request passed through ``alibabacloud_eflo_controller20221215``'s request model."""

    product = "EFLO controller"

    def request_map(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return eflo_request_map(action, body)
