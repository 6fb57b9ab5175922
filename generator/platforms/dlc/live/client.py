"""The PAI-DLC API behind a small port: :class:`DlcClient`, :class:`SdkDlcClient` over Alibaba Cloud's official SDK
(``alibabacloud-pai-dlc20201203``, the optional ``trainstack[dlc]`` extra, imported only when a job command runs),
and the errors those commands raise, each one sentence with its exit code (docs/live.md).

Requests and responses cross the port as maps in the API's shape. The SDK client turns a request map into the SDK's
model (``CreateJobRequest().from_map(...)``), so what ``submit --dry-run`` prints (:func:`sdk_request_map`, the model's
``to_map()``) is what the SDK sends. Credentials come from ``alibabacloud-credentials``' default chain, like the NAS
and ECS lookups (:func:`generator.live.mountaddr.sdk_config`); the SDK picks the region's DLC endpoint
(``pai-dlc.<region>.aliyuncs.com``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from generator.live.errors import EXIT_NO_SDK, EngineFailed, LiveError
from generator.live.mountaddr import sdk_config

INSTALL_DLC = "pip install 'trainstack[dlc]'"
DLC_SDK_MODULES = ("alibabacloud_pai_dlc20201203", "alibabacloud_tea_openapi", "alibabacloud_credentials")
API_DOC = "https://www.alibabacloud.com/help/en/pai/developer-reference/api-pai-dlc-2020-12-03-createjob"

T = TypeVar("T")


class DlcSdkMissing(LiveError):
    """The DLC job commands call the PAI-DLC API through its SDK, which is not installed."""

    exit_code = EXIT_NO_SDK


class DlcApiError(LiveError):
    """The PAI-DLC API answered with an error (permissions, quota, a bad request, throttling) or was not reached."""

    exit_code = EngineFailed.exit_code


class DlcClient(Protocol):
    """The PAI-DLC calls the job commands make; maps in and out are in the API's shape (PascalCase keys)."""

    def check(self) -> None:
        """Raise :class:`DlcSdkMissing` when this client cannot run."""

    def request_map(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """The request as the SDK's model prints it (``to_map()``), without sending it."""

    def create_job(self, region: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """CreateJob; the response body ``{"JobId", "RequestId"}``."""

    def list_jobs(self, region: str, query: Mapping[str, Any]) -> dict[str, Any]:
        """ListJobs; the response body ``{"Jobs": [...], "TotalCount", "RequestId"}``."""

    def get_job(self, region: str, job_id: str) -> dict[str, Any]:
        """GetJob; the response body (the job, with ``Pods``)."""

    def get_pod_logs(self, region: str, job_id: str, pod_id: str, query: Mapping[str, Any]) -> dict[str, Any]:
        """GetPodLogs; the response body ``{"Logs": [...], "PodId", "JobId", "RequestId"}``."""

    def stop_job(self, region: str, job_id: str) -> dict[str, Any]:
        """StopJob; the response body ``{"JobId", "RequestId"}``."""


_REQUEST_MODELS = {
    "CreateJob": "CreateJobRequest",
    "ListJobs": "ListJobsRequest",
    "GetPodLogs": "GetPodLogsRequest",
}


def require_dlc_sdk(what: str = "this command") -> None:
    """Raise :class:`DlcSdkMissing` (one sentence, exit 29) unless the DLC SDK and its credential chain import."""
    for module in DLC_SDK_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            raise DlcSdkMissing(
                f"{what} calls Alibaba Cloud's PAI-DLC API through its SDK ({module} is not "
                f"installed): {INSTALL_DLC}."
            ) from None


def sdk_request_map(action: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` through the SDK's request model and back: ``Model().from_map(body).to_map()`` (the SDK must import)."""
    from alibabacloud_pai_dlc20201203 import models

    model = getattr(models, _REQUEST_MODELS[action])().from_map(dict(body))
    return model.to_map()


def api_error(action: str, error: BaseException) -> DlcApiError:
    """One sentence for an SDK failure: the API's code and message when it gave them (a TeaException), else the type."""
    code = getattr(error, "code", None)
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    message = " ".join(str(message).split())
    if len(message) > 300:
        message = message[:297] + "..."
    what = f"{code}: {message}" if code else f"{type(error).__name__}: {message}"
    hint = ""
    if code and any(k in str(code) for k in ("Forbidden", "NoPermission", "NotAuthorized", "Unauthorized")):
        hint = f"; grant the RAM user the PAI-DLC permission for {action} (AliyunPAIDLCFullAccess covers it)"
    elif code and "InvalidAccessKey" in str(code):
        hint = "; check the AccessKey of the credential chain"
    return DlcApiError(f"PAI-DLC {action} failed: {what}{hint}.")


class SdkDlcClient:
    """:class:`DlcClient` over ``alibabacloud-pai-dlc20201203``; one SDK client per region, built on first use."""

    def __init__(self, env: Mapping[str, str] | None = None):
        self.env = os.environ if env is None else env
        self._clients: dict[str, Any] = {}

    def check(self) -> None:
        require_dlc_sdk()

    def request_map(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return sdk_request_map(action, body)

    def client(self, region: str) -> Any:
        if region not in self._clients:
            from alibabacloud_pai_dlc20201203.client import Client

            self._clients[region] = Client(sdk_config(self.env, region))
        return self._clients[region]

    def _call(self, action: str, call: Callable[[], T]) -> T:
        try:
            return call()
        except LiveError:
            raise
        except Exception as e:  # noqa: BLE001 Tea, credential and HTTP errors all become one sentence
            raise api_error(action, e) from None

    def create_job(self, region: str, body: Mapping[str, Any]) -> dict[str, Any]:
        from alibabacloud_pai_dlc20201203 import models

        request = models.CreateJobRequest().from_map(dict(body))
        return self._call("CreateJob", lambda: self.client(region).create_job(request).body.to_map())

    def list_jobs(self, region: str, query: Mapping[str, Any]) -> dict[str, Any]:
        from alibabacloud_pai_dlc20201203 import models

        request = models.ListJobsRequest().from_map(dict(query))
        return self._call("ListJobs", lambda: self.client(region).list_jobs(request).body.to_map())

    def get_job(self, region: str, job_id: str) -> dict[str, Any]:
        from alibabacloud_pai_dlc20201203 import models

        return self._call(
            "GetJob", lambda: self.client(region).get_job(job_id, models.GetJobRequest()).body.to_map()
        )

    def get_pod_logs(self, region: str, job_id: str, pod_id: str, query: Mapping[str, Any]) -> dict[str, Any]:
        from alibabacloud_pai_dlc20201203 import models

        request = models.GetPodLogsRequest().from_map(dict(query))
        return self._call(
            "GetPodLogs", lambda: self.client(region).get_pod_logs(job_id, pod_id, request).body.to_map()
        )

    def stop_job(self, region: str, job_id: str) -> dict[str, Any]:
        return self._call("StopJob", lambda: self.client(region).stop_job(job_id).body.to_map())
