"""A :class:`~generator.platforms.dlc.live.client.DlcClient` that answers from recorded PAI-DLC responses, for tests and demos.

Responses are JSON files (response bodies shaped as the API returns them and as the SDK's ``*ResponseBody.from_map``
reads them) in a folder such as ``tests/live_fixtures/dlc/``: ``create_job.json``, ``list_jobs.json``,
``get_job.json`` (a map of job id to body), ``get_pod_logs.json`` (a map of pod id to body) and ``stop_job.json``.
Every call is recorded in :attr:`RecordedDlcClient.calls`; ``errors`` makes an action raise (e.g. a recorded
Forbidden answer turned into :class:`DlcApiError` by :func:`api_error`).

When the SDK is installed, :meth:`request_map` is the SDK model's ``to_map()`` exactly like the real client; without
it the request map is returned as built (sorted keys), so offline tests run without the extra.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from generator.platforms.dlc.live.client import DlcApiError, DlcSdkMissing, sdk_request_map


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


class RecordedDlcClient:
    def __init__(
        self,
        folder: Path | str,
        *,
        errors: Mapping[str, DlcApiError] | None = None,
        missing_sdk: DlcSdkMissing | None = None,
        use_sdk: bool = True,
    ):
        self.folder = Path(folder)
        self.errors = dict(errors or {})
        self.missing_sdk = missing_sdk
        self.use_sdk = use_sdk
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _body(self, name: str) -> dict[str, Any]:
        return json.loads((self.folder / f"{name}.json").read_text(encoding="utf-8"))

    def _call(self, action: str, **kwargs: Any) -> None:
        self.calls.append((action, copy.deepcopy(kwargs)))
        if action in self.errors:
            raise self.errors[action]

    def check(self) -> None:
        if self.missing_sdk is not None:
            raise self.missing_sdk

    def request_map(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        if self.use_sdk:
            try:
                return sdk_request_map(action, body)
            except ImportError:
                pass
        return _sorted(copy.deepcopy(dict(body)))

    def create_job(self, region: str, body: Mapping[str, Any]) -> dict[str, Any]:
        self._call("CreateJob", region=region, body=dict(body))
        return self._body("create_job")

    def list_jobs(self, region: str, query: Mapping[str, Any]) -> dict[str, Any]:
        self._call("ListJobs", region=region, query=dict(query))
        return self._body("list_jobs")

    def get_job(self, region: str, job_id: str) -> dict[str, Any]:
        self._call("GetJob", region=region, job_id=job_id)
        jobs = self._body("get_job")
        if job_id not in jobs:
            raise DlcApiError(f"PAI-DLC GetJob failed: JobNotFound: The job {job_id} does not exist.")
        return jobs[job_id]

    def get_pod_logs(self, region: str, job_id: str, pod_id: str, query: Mapping[str, Any]) -> dict[str, Any]:
        self._call("GetPodLogs", region=region, job_id=job_id, pod_id=pod_id, query=dict(query))
        return self._body("get_pod_logs")[pod_id]

    def stop_job(self, region: str, job_id: str) -> dict[str, Any]:
        self._call("StopJob", region=region, job_id=job_id)
        return self._body("stop_job")
