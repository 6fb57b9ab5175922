"""Jobs and checks on Lingjun stacks: the :class:`~generator.live.jobs.client.EcsApi` port over the EFLO controller's
own Cloud Assistant API (``eflo-controller``, API version 2022-12-15), through Alibaba Cloud's official SDK
``alibabacloud-eflo-controller20221215`` (in ``trainstack[live]``, imported only when a command runs).

Lingjun nodes are not ECS instances, so ECS RunCommand cannot reach them; the EFLO controller has its own RunCommand,
DescribeInvocations and StopInvocation
(https://help.aliyun.com/zh/pai/developer-reference/api-eflo-controller-2022-12-15-runcommand,
https://help.aliyun.com/zh/pai/developer-reference/api-eflo-controller-2022-12-15-describeinvocations,
https://help.aliyun.com/zh/pai/developer-reference/api-eflo-controller-2022-12-15-stopinvocation). The job and check
modules build their requests in the ECS shape once; :func:`to_eflo` turns each into the EFLO request, field by field
from the SDK's models (``RunCommandRequest``, ``DescribeInvocationsRequest``, ``StopInvocationRequest`` of
alibabacloud-eflo-controller20221215 3.2.0), and :class:`EfloJobsApi` turns the answers back. Where the two differ:

* **Node ids, not instance ids**: ``NodeIdList`` (RunCommand, StopInvocation) and ``NodeId`` (DescribeInvocations)
  take the node ids of the stack's ``node_ids`` output (``eflo.Node`` ids).
* **No region in the request**: the region is the SDK client's (endpoint ``eflo-controller.REGION.aliyuncs.com``).
* **No tags and no list**: EFLO's RunCommand takes no ``Tag`` and its DescribeInvocations requires ``InvokeId``, so
  there is no call that lists "this stack's jobs". :class:`EfloJobsApi` writes each invocation it starts (the job
  name, kind tags, node ids and time of each InvokeId) to the checkpoint bucket, one object per invocation under
  ``<checkpoint prefix>_trainstack/invocations/`` (:class:`BucketIndex`), and to a local journal,
  ``STACK_DIR/.trainstack/eflo-invocations.json``, which caches the bucket's entries; the job listing reads both,
  each invocation's status read back with DescribeInvocations. So ``jobs``, ``logs`` and ``cancel`` see the jobs
  started from any machine; a stack without a checkpoint bucket has the local journal only.
* **No ``Type``, ``KeepCommand`` or ``DescribeInvocationResults``**: a Lingjun command is a shell script and is not
  kept; each node's status, exit code and output come from DescribeInvocations with ``IncludeOutput`` (its
  ``InvokeNodes``), asked as ``ContentEncoding: PlainText`` (the API's default is Base64). The output holds the last
  24 KB only (``Dropped`` counts what was cut), as on ECS.
* **Batches**: neither the SDK's docstring of ``NodeIdList`` nor the RunCommand API reference
  (https://help.aliyun.com/en/intelligent-computing-lingjun/api-eflo-controller-2022-12-15-runcommand, updated
  2026-07-22) names a per-call limit; trainstack keeps ECS's documented 100 nodes per call
  (:data:`~generator.live.jobs.request.MAX_INSTANCES_PER_CALL`), a bound the EFLO API is not known to exceed
  (unverified: searched again 2026-12-02 in documentation, web pages and issue threads, no limit found).
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from generator import atomic
from generator.live.errors import EcsSdkMissing, LiveError
from generator.live.jobs.client import EcsApiError
from generator.live.jobs.logstore import LogStore
from generator.live.mountaddr import INSTALL_LIVE, sdk_config

EFLO_SDK_MODULES = (
    "alibabacloud_eflo_controller20221215",
    "alibabacloud_tea_openapi",
    "alibabacloud_credentials",
)
EFLO_ACTIONS = (
    "RunCommand",
    "DescribeInvocations",
    "StopInvocation",
    # heal --health on Lingjun (eflo_cure.py)
    "ListClusterNodes",
    "ListFaultReports",
    "RebootNodes",
    "ReportNodeStatus",
)
API = "eflo-controller/2022-12-15"
JOURNAL_FILE = ".trainstack/eflo-invocations.json"
INDEX_DIR = "_trainstack/invocations/"  # under the checkpoint prefix, beside _trainstack/jobs/ (the job logs)
JOURNAL_KEEP = 500  # the newest invocations kept in the journal
PAGE = 50
# the RunCommand fields both APIs have (the EFLO model's to_map() keys); the rest of an ECS request is dropped
_RUN_FIELDS = (
    "ClientToken",
    "CommandContent",
    "ContentEncoding",
    "Description",
    "EnableParameter",
    "Name",
    "TerminationMode",
    "Timeout",
)


def require_eflo_sdk(what: str = "this command") -> None:
    for module in EFLO_SDK_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            raise EcsSdkMissing(
                f"{what} calls the EFLO controller API (Lingjun Cloud Assistant) through Alibaba Cloud's SDK "
                f"({module} is not installed): {INSTALL_LIVE}."
            ) from None


def eflo_request_map(action: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` (EFLO shape) through the SDK's request model and back (the SDK must import)."""
    from alibabacloud_eflo_controller20221215 import models

    if action not in EFLO_ACTIONS:
        raise ValueError(f"unknown EFLO controller action {action}")
    return getattr(models, f"{action}Request")().from_map(dict(body)).to_map()


def to_eflo(action: str, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The EFLO controller request for an ECS-shaped request of the job and check modules."""
    if action == "RunCommand":
        out = {k: body[k] for k in _RUN_FIELDS if k in body}
        out["NodeIdList"] = list(body.get("InstanceId") or ())
        return "RunCommand", out
    if action == "DescribeInvocationResults":
        out = {"InvokeId": body["InvokeId"], "IncludeOutput": True, "ContentEncoding": "PlainText"}
        if body.get("InstanceId"):
            out["NodeId"] = body["InstanceId"]
        return "DescribeInvocations", out
    if action == "DescribeInvocations":  # one invocation's status (the job listing reads the journal first)
        return "DescribeInvocations", {
            "InvokeId": body["InvokeId"],
            "IncludeOutput": False,
            "ContentEncoding": "PlainText",
        }
    if action == "StopInvocation":
        out = {"InvokeId": body["InvokeId"]}
        if body.get("InstanceId"):
            out["NodeIdList"] = list(body["InstanceId"])
        return "StopInvocation", out
    raise EcsApiError(
        f"{action} is an ECS call with no EFLO controller counterpart: Lingjun nodes are not ECS instances "
        "(`heal --health` reads their state and fault reports through the EFLO controller instead)."
    )


def _invocation(answer: Mapping[str, Any]) -> dict[str, Any]:
    items = (answer.get("Invocations") or {}).get("Invocation") or []
    return dict(items[0]) if items and isinstance(items[0], Mapping) else {}


def _nodes(inv: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(n) for n in (inv.get("InvokeNodes") or {}).get("InvokeNode") or () if isinstance(n, Mapping)]


def results_body(answer: Mapping[str, Any]) -> dict[str, Any]:
    """An EFLO DescribeInvocations answer (with output) in the shape of ECS DescribeInvocationResults."""
    inv = _invocation(answer)
    records = []
    for n in _nodes(inv):
        records.append(
            {
                "InstanceId": n.get("NodeId"),
                "InvokeId": inv.get("InvokeId"),
                # the node's status; EFLO gives it twice (InvocationStatus, NodeInvokeStatus)
                "InvokeRecordStatus": n.get("InvocationStatus") or n.get("NodeInvokeStatus"),
                "ExitCode": n.get("ExitCode"),
                "Output": n.get("Output") or "",
                "Dropped": n.get("Dropped"),
                "ErrorCode": n.get("ErrorCode"),
                "ErrorInfo": n.get("ErrorInfo"),
                "StartTime": n.get("StartTime"),
                "FinishedTime": n.get("FinishTime"),
            }
        )
    return {
        "RequestId": answer.get("RequestId"),
        "Invocation": {"InvocationResults": {"InvocationResult": records}, "TotalCount": len(records)},
    }


class BucketIndex:
    """The invocation index in the checkpoint bucket: one object per invocation,
    ``<checkpoint prefix>_trainstack/invocations/<InvokeId>.json``, beside the job logs (``_trainstack/jobs/``), so
    that ``jobs``, ``logs`` and ``cancel`` find the invocations from any machine. One object each, never a shared file
    rewritten, so two machines submitting at once cannot lose each other's entry, and OSS replaces an object whole."""

    def __init__(self, store: LogStore, bucket: str, checkpoint_prefix: str):
        self.store, self.bucket = store, bucket
        self.prefix = f"{checkpoint_prefix}{INDEX_DIR}"

    def key(self, invoke_id: str) -> str:
        return f"{self.prefix}{invoke_id}.json"

    def check(self) -> None:
        self.store.check()

    def put(self, entry: Mapping[str, Any]) -> None:
        data = json.dumps({"api": API, "invocation": dict(entry)}, indent=2, sort_keys=True) + "\n"
        self.store.put(self.bucket, self.key(str(entry["InvokeId"])), data.encode())

    def ids(self) -> set[str]:
        keys = self.store.list(self.bucket, self.prefix)
        return {
            k[len(self.prefix) : -len(".json")]
            for k in keys
            if k.startswith(self.prefix) and k.endswith(".json")
        }

    def get(self, invoke_id: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self.store.get(self.bucket, self.key(invoke_id)) or b"{}")
        except ValueError:
            return None
        entry = data.get("invocation") if isinstance(data, dict) else None
        return dict(entry) if isinstance(entry, Mapping) and entry.get("InvokeId") == invoke_id else None


class EfloJobsApi:
    """:class:`~generator.live.jobs.client.EcsApi` for a Lingjun stack: ECS-shaped requests in, EFLO calls out
    through ``transport`` (:class:`SdkEfloApi`, or recorded answers in tests), ECS-shaped answers back. With
    ``index`` (the stack has a checkpoint bucket) every invocation it starts is also written to the bucket and the
    job listing reads the bucket's, the local journal being a cache of them."""

    api = API

    def __init__(
        self,
        transport: Any,
        stack_dir: Path | str,
        index: BucketIndex | None = None,
        *,
        warn: Callable[[str], None] | None = None,
        clock: Callable[[], datetime.datetime] | None = None,
    ):
        self.transport = transport
        self.journal_path = Path(stack_dir) / JOURNAL_FILE
        self.index = index
        self.warn = warn or (lambda line: None)
        self.clock = clock or (lambda: datetime.datetime.now(datetime.timezone.utc))

    def check(self) -> None:
        self.transport.check()
        if self.index is not None:
            self.index.check()

    def request_map(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        eflo_action, eflo_body = to_eflo(action, body)
        return dict(self.transport.request_map(eflo_action, eflo_body))

    def call(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        if action == "DescribeInvocations":
            return self._list(body)
        eflo_action, eflo_body = to_eflo(action, body)
        answer = dict(self.transport.call(eflo_action, eflo_body))
        if action == "RunCommand":
            if answer.get("InvokeId"):
                self._record(str(answer["InvokeId"]), body)
            return answer
        if action == "DescribeInvocationResults":
            return results_body(answer)
        return answer

    # -- the journal ----------------------------------------------------------------------------------------------

    def _local(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.journal_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        items = data.get("invocations") if isinstance(data, dict) else None
        return [dict(i) for i in items or () if isinstance(i, Mapping) and i.get("InvokeId")]

    def _write(self, items: list[dict[str, Any]]) -> None:
        items = sorted(items, key=lambda i: (str(i.get("Created") or ""), str(i["InvokeId"])))
        text = json.dumps({"api": API, "invocations": items[-JOURNAL_KEEP:]}, indent=2, sort_keys=True) + "\n"
        atomic.replace(self.journal_path, (text.encode("utf-8"),), prefix=".eflo-invocations-", suffix="")

    def _upload(self, entry: dict[str, Any]) -> None:
        """Write ``entry`` to the bucket index; a failure leaves it marked ``Pending`` for the next read to retry."""
        if self.index is None:
            return
        clean = {k: v for k, v in entry.items() if k != "Pending"}
        try:
            self.index.put(clean)
        except LiveError as e:
            entry["Pending"] = True
            self.warn(
                f"the invocation {entry['InvokeId']} is in the local journal only ({e}); the next `trainstack jobs` "
                "here writes it to the bucket"
            )
            return
        entry.pop("Pending", None)

    def journal(self) -> list[dict[str, Any]]:
        """The stack's invocations, oldest first: the bucket's index (when the stack has one) merged into the local
        journal, which caches them; entries still pending upload are written first."""
        items = {i["InvokeId"]: i for i in self._local()}
        if self.index is None:
            return list(items.values())
        changed = False
        for entry in items.values():
            if entry.get("Pending"):
                self._upload(entry)
                changed = changed or not entry.get("Pending")
        for invoke_id in sorted(self.index.ids() - set(items)):
            found = self.index.get(invoke_id)
            if found is not None:
                items[invoke_id] = found
                changed = True
        ordered = sorted(items.values(), key=lambda i: (str(i.get("Created") or ""), str(i["InvokeId"])))
        if changed:
            self._write(ordered)
        return ordered

    def _record(self, invoke_id: str, body: Mapping[str, Any]) -> None:
        entry: dict[str, Any] = {
            "InvokeId": invoke_id,
            "Name": str(body.get("Name") or ""),
            "Tags": [dict(t) for t in body.get("Tag") or ()],
            "NodeIdList": list(body.get("InstanceId") or ()),
            "Created": self.clock().strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        self._upload(entry)
        self._write([i for i in self._local() if i["InvokeId"] != invoke_id] + [entry])

    def _list(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """ECS DescribeInvocations by tags, answered from the journal and one EFLO DescribeInvocations each."""
        wanted = {(str(t.get("Key")), str(t.get("Value"))) for t in body.get("Tag") or ()}
        matching = [
            e
            for e in self.journal()
            if wanted <= {(str(t.get("Key")), str(t.get("Value"))) for t in e["Tags"]}
        ][::-1]
        page = int(body.get("PageNumber") or 1)
        out = []
        for e in matching[(page - 1) * PAGE : page * PAGE]:
            eflo_action, eflo_body = to_eflo("DescribeInvocations", {"InvokeId": e["InvokeId"]})
            try:
                inv = _invocation(self.transport.call(eflo_action, eflo_body))
            except EcsApiError:
                inv = {}  # an invocation the controller no longer keeps: listed without a status
            out.append(
                {
                    "InvokeId": e["InvokeId"],
                    "CommandName": inv.get("CommandName") or e["Name"],
                    "CreationTime": inv.get("CreationTime") or "",
                    "InvocationStatus": inv.get("InvocationStatus") or "",
                    "InvokeStatus": inv.get("InvokeStatus") or "",
                    "Tags": {
                        "Tag": [{"TagKey": t.get("Key"), "TagValue": t.get("Value")} for t in e["Tags"]]
                    },
                    "InvokeInstances": {"InvokeInstance": [{"InstanceId": n} for n in e["NodeIdList"]]},
                }
            )
        return {"Invocations": {"Invocation": out}, "TotalCount": len(matching), "PageNumber": page}


def jobs_api(
    cluster: Any,
    stack_dir: Path | str,
    transport: Any = None,
    store: LogStore | None = None,
    warn: Callable[[str], None] | None = None,
) -> EfloJobsApi:
    """The Cloud Assistant of a Lingjun stack's nodes (``generator.live.jobs.stack.jobs_api`` asks it through the
    registry): :class:`EfloJobsApi` over ``transport`` (default :class:`SdkEfloApi` in the cluster's region), its
    invocations indexed in the checkpoint bucket through ``store`` when the stack has one."""
    index = (
        BucketIndex(store, cluster.bucket, cluster.prefix) if store is not None and cluster.bucket else None
    )
    return EfloJobsApi(
        transport if transport is not None else SdkEfloApi(cluster.region), stack_dir, index, warn=warn
    )


class SdkEfloApi:
    """EFLO calls by action name over ``alibabacloud-eflo-controller20221215`` (one client, built on first use,
    through :func:`~generator.live.mountaddr.sdk_config` and so ``TRAINSTACK_ALIBABA_ENDPOINT``)."""

    def __init__(self, region: str, env: Mapping[str, str] | None = None):
        self.region = region
        self.env = os.environ if env is None else env
        self._client: Any = None

    def check(self) -> None:
        require_eflo_sdk()

    def request_map(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return eflo_request_map(action, body)

    def call(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        from alibabacloud_eflo_controller20221215 import models

        from generator.live.jobs.client import _snake, api_error

        request = getattr(models, f"{action}Request")().from_map(dict(body))
        try:
            if self._client is None:
                from alibabacloud_eflo_controller20221215.client import Client

                self._client = Client(sdk_config(self.env, self.region))
            return getattr(self._client, _snake(action))(request).body.to_map()
        except LiveError:
            raise
        except Exception as e:  # noqa: BLE001 Tea, credential and HTTP errors all become one sentence
            raise api_error(action, e, product="EFLO controller") from None
