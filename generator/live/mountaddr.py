"""The CPFS export's mount address for ``trainstack up``: looked up in the NAS API between the two passes of a CPFS
stack's first deploy, through the :class:`MountAddressResolver` port, and set as ``trainstack:sharedFsAddress``.

A CPFS program declares its nodes only once that config is set, because node-init.sh mounts CPFS once, at first
boot. pulumi-alicloud 4.0.0 returns no such address (``nas.ProtocolMountTarget`` has no domain output); only the NAS
API's DescribeProtocolMountTarget does, as ``ProtocolMountTargetDomain``
(https://help.aliyun.com/zh/cpfs/api-describeprotocolmounttarget). :class:`SdkMountAddressResolver` calls it with
Alibaba Cloud's official Python SDK (``alibabacloud-nas20170626``, the optional ``trainstack[live]`` extra), and the
tests replay recorded responses through the same port.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from generator.live.engine import OutputValue, Target
from generator.live.errors import EngineFailed, LiveError, NasSdkMissing, StackNotDeployed
from generator.platforms.base import Capability
from generator.platforms.registry import platform_for
from generator.render.stackdir import load_yaml

SHARED_FS_ADDRESS_KEY = "trainstack:sharedFsAddress"
INSTALL_LIVE = "pip install 'trainstack[live]'"
NAS_SDK_MODULES = ("alibabacloud_nas20170626", "alibabacloud_tea_openapi", "alibabacloud_credentials")
API_DOC = "https://help.aliyun.com/zh/cpfs/api-describeprotocolmounttarget"
# the provider waits for AVAILABLE after CreateProtocolMountTarget; ACTIVE is accepted too (the spelling of NAS's
# other mount targets), so a renamed state cannot hold a deploy
READY_STATUSES = ("AVAILABLE", "ACTIVE")
WAIT_SECONDS = 300.0  # the export is usually ready when the first pass ends: Pulumi waited for it
RETRYABLE_CODES = ("Throttling", "ServiceUnavailable", "InternalError", "Timeout")

Say = Callable[[str], None]


class MountAddressError(LiveError):
    """The export's mount address could not be read (an API error, or none appeared in time)."""

    exit_code = EngineFailed.exit_code


class MountAddressResolver(Protocol):
    """One call of the NAS API's DescribeProtocolMountTarget, for one export of one CPFS file system."""

    def check(self) -> None:
        """Raise :class:`NasSdkMissing` when this resolver cannot run (its SDK is not installed)."""

    def describe(self, region: str, file_system_id: str, export_id: str) -> Mapping[str, Any]:
        """The response body as documented: ``{"RequestId", "NextToken", "ProtocolMountTargets": [...]}``."""


class SdkMountAddressResolver:
    """:class:`MountAddressResolver` over ``alibabacloud-nas20170626`` at ``nas.<region>.aliyuncs.com``.

    Credentials come from ``alibabacloud-credentials``' default chain (``ALIBABA_CLOUD_*`` variables, OIDC, the
    ``aliyun`` CLI profile, an ECS RAM role, a credentials URI); the older ``ALICLOUD_ACCESS_KEY`` /
    ``ALICLOUD_SECRET_KEY`` names, which the alicloud provider also reads, are passed on as a static AccessKey.
    """

    def __init__(self, env: Mapping[str, str] | None = None):
        self.env = os.environ if env is None else env

    def check(self) -> None:
        import importlib

        for module in NAS_SDK_MODULES:
            try:
                importlib.import_module(module)
            except ImportError:
                raise NasSdkMissing(
                    f"this stack's CPFS mount address is looked up with Alibaba Cloud's NAS SDK ({module} is not "
                    f"installed), so nothing was deployed: {INSTALL_LIVE}."
                ) from None

    @staticmethod
    def endpoint(region: str) -> str:
        return f"nas.{region}.aliyuncs.com"

    @staticmethod
    def request(file_system_id: str, export_id: str) -> Any:
        """The DescribeProtocolMountTarget request for one export (filter ``ExportIds``)."""
        from alibabacloud_nas20170626 import models as nas_models

        return nas_models.DescribeProtocolMountTargetRequest(
            file_system_id=file_system_id,
            filters=[nas_models.DescribeProtocolMountTargetRequestFilters(key="ExportIds", value=export_id)],
        )

    def client(self, region: str) -> Any:
        from alibabacloud_nas20170626.client import Client

        return Client(sdk_config(self.env, region, self.endpoint(region)))

    def describe(self, region: str, file_system_id: str, export_id: str) -> Mapping[str, Any]:
        response = self.client(region).describe_protocol_mount_target(self.request(file_system_id, export_id))
        return response.body.to_map()


ENDPOINT_OVERRIDE = "TRAINSTACK_ALIBABA_ENDPOINT"  # e.g. http://127.0.0.1:8080: every SDK call goes there


def sdk_config(env: Mapping[str, str], region: str, endpoint: str | None = None) -> Any:
    """An OpenAPI client config for Alibaba Cloud's official SDKs (NAS here, ECS in :mod:`~generator.live.stock`).

    ``TRAINSTACK_ALIBABA_ENDPOINT`` (``[http://|https://]HOST[:PORT]``) sends every call, of every product, to that
    one endpoint instead of the product's regional one (docs/live.md, "Testing the live commands").

    Credentials come from ``alibabacloud-credentials``' default chain; the older ``ALICLOUD_ACCESS_KEY`` /
    ``ALICLOUD_SECRET_KEY`` names, which the alicloud provider also reads, are passed on as a static AccessKey.
    Without ``endpoint`` the SDK picks the product's endpoint for ``region`` itself.
    """
    from alibabacloud_tea_openapi import models as openapi_models

    key_id, secret = env.get("ALICLOUD_ACCESS_KEY"), env.get("ALICLOUD_SECRET_KEY")
    if key_id and secret and not env.get("ALIBABA_CLOUD_ACCESS_KEY_ID"):
        config = openapi_models.Config(
            access_key_id=key_id,
            access_key_secret=secret,
            security_token=env.get("ALICLOUD_SECURITY_TOKEN") or None,
        )
    else:
        from alibabacloud_credentials.client import Client as CredentialClient

        config = openapi_models.Config(credential=CredentialClient())
    config.region_id = region
    if endpoint:
        config.endpoint = endpoint
    override = env.get(ENDPOINT_OVERRIDE)
    if override:  # one endpoint for every product: a test double (tests/live/fake_openapi.py) or a proxy
        scheme, _, host = override.rpartition("://")
        config.endpoint = host.rstrip("/")
        config.protocol = scheme or "https"
    return config


def configured_address(target: Target) -> str:
    """``trainstack:sharedFsAddress`` in the folder's stack config ("" when unset)."""
    return str(_config(target).get(SHARED_FS_ADDRESS_KEY) or "")


def stack_region(target: Target) -> str:
    region = _config(target).get("alicloud:region")
    if not isinstance(region, str) or not region:
        raise MountAddressError(
            f"{target.config_file} sets no alicloud:region, so the NAS API endpoint for the CPFS "
            "mount address is unknown; re-render the folder with `trainstack render`."
        )
    return region


def _config(target: Target) -> Mapping[str, Any]:
    path = target.config_file
    data = load_yaml(path.read_text(encoding="utf-8")) if path.is_file() else None
    config = data.get("config") if isinstance(data, dict) else None
    return config if isinstance(config, dict) else {}


def needs_mount_address(target: Target) -> bool:
    """True for a CPFS stack whose config lacks the export's address: its nodes wait for a second pass of ``up``.
    A platform without NODES (PAI-DLC) declares no node (DLC mounts CPFS as a workspace dataset by file system id),
    so it never waits."""
    return (
        target.shared_fs == "cpfs"
        and platform_for(target.platform).has(Capability.NODES)
        and not configured_address(target)
    )


def require_mount_address_sdk(target: Target, resolver: MountAddressResolver) -> None:
    """Preflight: a CPFS stack without its address needs the resolver, so it must run before anything is deployed."""
    if needs_mount_address(target):
        resolver.check()


def export_of(outputs: Mapping[str, OutputValue]) -> tuple[str, str]:
    """The CPFS file system and export IDs from the stack outputs ``shared_fs_id`` and ``shared_fs_export_id``."""
    ids = tuple(
        str(getattr(outputs.get(key), "value", "") or "") for key in ("shared_fs_id", "shared_fs_export_id")
    )
    if not all(ids):
        raise MountAddressError(
            "the deployed stack has no shared_fs_id / shared_fs_export_id outputs, so the CPFS "
            "mount address cannot be looked up: re-render the folder with this trainstack "
            "(`trainstack up SPEC`) and run it again."
        )
    return ids[0], ids[1]


def deployed_export(engine: Any, target: Target) -> Mapping[str, OutputValue] | None:
    """The outputs of an earlier deploy when they name the CPFS export (so its address can be read before ``up``).

    That covers a rerun after a failed lookup, and a stack whose nodes an older trainstack created without the
    address: without it the program would delete them.
    """
    try:
        outputs = engine.outputs(target)
    except StackNotDeployed:
        return None
    return (
        outputs
        if all(getattr(outputs.get(k), "value", None) for k in ("shared_fs_id", "shared_fs_export_id"))
        else None
    )


def _status(body: Mapping[str, Any], export_id: str) -> tuple[str, str]:
    """(status, domain) of ``export_id`` in a response body; ("", "") when it is not listed (yet)."""
    for target in body.get("ProtocolMountTargets") or ():
        if isinstance(target, Mapping) and target.get("ExportId") == export_id:
            return str(target.get("Status") or ""), str(target.get("ProtocolMountTargetDomain") or "")
    return "", ""


def _retryable(e: Exception) -> bool:
    code = str(getattr(e, "code", "") or "")
    return isinstance(e, (TimeoutError, ConnectionError)) or any(c in code for c in RETRYABLE_CODES)


def wait_for_mount_address(
    resolver: MountAddressResolver,
    region: str,
    file_system_id: str,
    export_id: str,
    *,
    say: Say,
    timeout: float | None = None,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] | None = None,
) -> str:
    """Ask DescribeProtocolMountTarget until the export is ready and has a domain, backing off 2, 4, ... 30 s.

    Raises :class:`MountAddressError` on a non-retryable API error, or when ``timeout`` seconds (default
    :data:`WAIT_SECONDS`) pass first.
    """
    timeout = WAIT_SECONDS if timeout is None else timeout
    sleep, clock = sleep or time.sleep, clock or time.monotonic
    deadline, delay, last = clock() + timeout, 2.0, "not listed"
    while True:
        try:
            status, domain = _status(resolver.describe(region, file_system_id, export_id), export_id)
            last = status or "not listed"
        except Exception as e:  # noqa: BLE001 the SDK's exceptions (Tea, credentials, HTTP) become one sentence
            if not _retryable(e):
                raise MountAddressError(
                    f"DescribeProtocolMountTarget for export {export_id} of {file_system_id} "
                    f"failed: {type(e).__name__}: {e}; {_by_hand(region)}"
                ) from None
            last = f"API error {getattr(e, 'code', '') or type(e).__name__}"
            status, domain = "", ""
        if domain and status.upper() in READY_STATUSES:
            return domain
        if clock() + delay > deadline:
            raise MountAddressError(
                f"export {export_id} of {file_system_id} has no mount address after "
                f"{timeout:.0f} s (last: {last}), so no nodes were deployed. "
                f"Run `trainstack up` again to retry, or {_by_hand(region)}"
            )
        say(f"CPFS: export {export_id} is {last}, without a mount address yet; asking again in {delay:.0f} s")
        sleep(delay)
        delay = min(delay * 2, 30.0)


def _by_hand(region: str) -> str:
    return (
        f"set it by hand (CPFS console in {region} > Protocol service > Export): "
        f"`pulumi config set {SHARED_FS_ADDRESS_KEY} ADDRESS` in the stack folder, then `trainstack up` again."
    )


def resolve_mount_address(
    engine: Any,
    target: Target,
    outputs: Mapping[str, OutputValue],
    resolver: MountAddressResolver,
    say: Say,
    **wait: Any,
) -> str:
    """Look up the CPFS export's mount address after the first pass and set it in the stack's config.

    ``engine`` is the :class:`~generator.live.engine.Engine` (``set_config``); ``wait`` goes to
    :func:`wait_for_mount_address` (``timeout``, ``sleep``, ``clock``).
    """
    file_system_id, export_id = export_of(outputs)
    region = stack_region(target)
    say(
        f"CPFS: looking up the mount address of export {export_id} of {file_system_id} (NAS API "
        f"DescribeProtocolMountTarget at {SdkMountAddressResolver.endpoint(region)})"
    )
    address = wait_for_mount_address(resolver, region, file_system_id, export_id, say=say, **wait)
    say(
        f"CPFS: export {export_id} mounts at {address}; setting {SHARED_FS_ADDRESS_KEY} in {target.config_file.name}"
    )
    engine.set_config(target, SHARED_FS_ADDRESS_KEY, address)
    return address
