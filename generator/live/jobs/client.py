"""The ECS API calls of the job and check commands behind one small port, :class:`EcsApi`, and
:class:`SdkEcsApi` over Alibaba Cloud's official SDK (``alibabacloud-ecs20140526``, in ``trainstack[live]``, imported
only when a command runs).

Requests and responses cross the port as maps in the API's shape. :func:`sdk_request_map` turns a request map into
the SDK's model and back (``RunCommandRequest().from_map(m).to_map()``), so what ``--dry-run --json`` prints is what
the SDK sends. Every SDK client is built by :func:`ecs_client`, the one place an endpoint override would go.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from typing import Any, Protocol

from generator.live.errors import EcsSdkMissing, EngineFailed, LiveError
from generator.live.mountaddr import INSTALL_LIVE, sdk_config

ECS_SDK_MODULES = ("alibabacloud_ecs20140526", "alibabacloud_tea_openapi", "alibabacloud_credentials")
ACTIONS = (
    "RunCommand",
    "DescribeInvocations",
    "DescribeInvocationResults",
    "StopInvocation",
    "DescribeInstancesFullStatus",
    "DescribeInstanceHistoryEvents",
    "RebootInstance",
    "RedeployInstance",
    "StopInstance",
)


class EcsApiError(LiveError):
    """The ECS API answered with an error (permissions, throttling, a bad request) or was not reached."""

    exit_code = EngineFailed.exit_code


class EcsApi(Protocol):
    """ECS API calls by action name; maps in and out are in the API's shape (PascalCase keys)."""

    def check(self) -> None:
        """Raise :class:`EcsSdkMissing` when this client cannot run."""

    def request_map(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """The request as the SDK's model prints it (``to_map()``), without sending it."""

    def call(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Send the request; the response body as a map."""


def require_ecs_sdk(what: str = "this command") -> None:
    for module in ECS_SDK_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            raise EcsSdkMissing(
                f"{what} calls the ECS API (Cloud Assistant) through Alibaba Cloud's SDK ({module} "
                f"is not installed): {INSTALL_LIVE}."
            ) from None


def _snake(action: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", action).lower()


def sdk_request_map(action: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` through the SDK's request model and back (the SDK must import)."""
    from alibabacloud_ecs20140526 import models

    if action not in ACTIONS:
        raise ValueError(f"unknown ECS action {action}")
    return getattr(models, f"{action}Request")().from_map(dict(body)).to_map()


def ecs_client(env: Mapping[str, str], region: str) -> Any:
    """The SDK client for ``region``: every ECS call of the job, check and heal commands is built here."""
    from alibabacloud_ecs20140526.client import Client

    return Client(sdk_config(env, region))


def api_error(action: str, error: BaseException, product: str = "ECS") -> EcsApiError:
    code = getattr(error, "code", None)
    message = " ".join(str(getattr(error, "message", None) or error or type(error).__name__).split())
    if len(message) > 300:
        message = message[:297] + "..."
    what = f"{code}: {message}" if code else f"{type(error).__name__}: {message}"
    hint = ""
    if (
        product != "ECS"
        and code
        and any(k in str(code) for k in ("Forbidden", "NoPermission", "Unauthorized"))
    ):
        hint = f"; grant the RAM user the {product}'s {action} permission"
    elif code and any(k in str(code) for k in ("Forbidden", "NoPermission", "NotAuthorized", "Unauthorized")):
        hint = (
            f"; grant the RAM user ecs:{action} (Cloud Assistant: AliyunECSAssistantFullAccess covers "
            "RunCommand, DescribeInvocations, DescribeInvocationResults and StopInvocation)"
        )
    elif code and "Throttling" in str(code):
        hint = "; the API throttled the calls, try again in a minute"
    return EcsApiError(f"{product} {action} failed: {what}{hint}.")


class SdkEcsApi:
    """:class:`EcsApi` over ``alibabacloud-ecs20140526``; one SDK client per region, built on first use."""

    def __init__(self, region: str, env: Mapping[str, str] | None = None):
        self.region = region
        self.env = os.environ if env is None else env
        self._client: Any = None

    def check(self) -> None:
        require_ecs_sdk()

    def request_map(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return sdk_request_map(action, body)

    def call(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        from alibabacloud_ecs20140526 import models

        request = getattr(models, f"{action}Request")().from_map(dict(body))
        try:
            if self._client is None:
                self._client = ecs_client(self.env, self.region)
            answer = getattr(self._client, _snake(action))(request)
            return answer.body.to_map()
        except LiveError:
            raise
        except Exception as e:  # noqa: BLE001 Tea, credential and HTTP errors all become one sentence
            raise api_error(action, e) from None
