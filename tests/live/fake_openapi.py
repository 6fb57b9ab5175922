"""A fake Alibaba Cloud OpenAPI endpoint on loopback, for the SDK calls trainstack makes itself (tests/live).

trainstack sends every Alibaba SDK call to one endpoint when ``TRAINSTACK_ALIBABA_ENDPOINT`` is set
(:func:`generator.live.mountaddr.sdk_config`); this server answers, in the shapes Alibaba's API references
document:

* ECS (2014-05-26, RPC style) ``DescribeAvailableResource``: every zone has stock of every instance type, except
  the zones the control file lists under ``sold_out``;
* NAS (2017-06-26) ``DescribeProtocolMountTarget``: the exports the fake provider created
  (its state file), ``AVAILABLE`` with a domain;
* ECS Cloud Assistant ``RunCommand``, ``InvokeCommand``, ``DescribeInvocations``, ``DescribeInvocationResults``,
  ``StopInvocation`` (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-runcommand
  and its siblings): a command "runs" at once on every instance that exists in the fake cloud and finishes with
  the exit code and output the control file gives (``commands``: ``{"INSTANCE_ID or *": {"exit_code": 0,
  "output": "...", "status": "Success"}}``; default exit 0, empty output); an instance the fake cloud does not
  have fails the call with ``InvalidInstance.NotFound``. With ``machines`` set (tests/e2e/cloud.py's FakeCloud,
  whose nodes the fake cloud's instances boot), a command runs for real inside the instance's node instead: its
  status is ``Running`` until it ends, then its real exit code and output; StopInvocation ends its process tree
  (every descendant, as TerminationMode ProcessTree does, also torchrun's workers in sessions of their own);
  RunCommand's tags are kept and DescribeInvocations filters on them; ``ContentEncoding: PlainText`` is honoured;
* OSS ``ListObjectsV2`` (path-style, ``GET /BUCKET/?list-type=2``): every bucket is empty;
* PAI-DLC (2020-12-03, ROA style) ``CreateJob``, ``ListJobs``, ``GetJob``, ``GetPodLogs``, ``StopJob``, jobs kept in
  memory.

The fake cloud is the fake provider's state file and the control file a JSON file, both given to the constructor
and read at every request. Every request is appended to
``self.calls`` (action and parameters) for the tests to read. Signatures are not checked; an AccessKeyId (or the
``Authorization`` header) must be present.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import re
import signal
import threading
import uuid
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

INSTANCE = "alicloud:ecs/instance:Instance"
EXPORT = "alicloud:nas/protocolMountTarget:ProtocolMountTarget"


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _indexed(params: Mapping[str, str], name: str) -> list[str]:
    """``InstanceId.1``, ``InstanceId.2``, ... (RPC flat lists) or a JSON list in ``InstanceId``."""
    out = [v for k, v in sorted(params.items(), key=lambda kv: kv[0]) if re.fullmatch(rf"{name}\.\d+", k)]
    if not out and params.get(name):
        value = params[name]
        out = json.loads(value) if value.startswith("[") else [value]
    return out


def _tags(params: Mapping[str, str]) -> list[dict[str, str]]:
    """``Tag.N.Key`` / ``Tag.N.Value`` (RPC flat lists) as DescribeInvocations returns them."""
    keys = {m.group(1): v for k, v in params.items() if (m := re.fullmatch(r"Tag\.(\d+)\.Key", k))}
    return [{"TagKey": v, "TagValue": params.get(f"Tag.{n}.Value", "")} for n, v in sorted(keys.items())]


def _oss_list(bucket: str, prefix: str) -> bytes:
    """OSS ListObjectsV2 (https://help.aliyun.com/zh/oss/developer-reference/listobjectsv2): an empty bucket."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult><Name>'
        f"{bucket}</Name><Prefix>{prefix}</Prefix><MaxKeys>100</MaxKeys><KeyCount>0</KeyCount>"
        "<IsTruncated>false</IsTruncated></ListBucketResult>"
    ).encode()


class FakeOpenApi:
    """The server; ``url`` is what TRAINSTACK_ALIBABA_ENDPOINT gets."""

    def __init__(self, cloud_file: Path, control_file: Path) -> None:
        self.cloud_file, self.control_file = cloud_file, control_file
        self.calls: list[dict[str, Any]] = []
        self.jobs: dict[str, dict[str, Any]] = {}
        self.invocations: dict[str, dict[str, Any]] = {}
        self.machines: Any = None  # tests/e2e/cloud.py's FakeCloud: commands run inside the nodes
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"api": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FakeOpenApi:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def actions(self) -> list[str]:
        return [c["action"] for c in self.calls]

    def _control(self) -> dict[str, Any]:
        if not self.control_file.exists():
            return {}
        return json.loads(self.control_file.read_text() or "{}")

    def _cloud(self) -> dict[str, Any]:
        """The fake provider's resources (its state file) by id."""
        if not self.cloud_file.exists():
            return {}
        return {r["id"]: r for r in json.loads(self.cloud_file.read_text()).get("resources", {}).values()}

    def _id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):012x}"

    # ------------------------------------------------------------------------------------------ dispatch
    def handle(
        self, method: str, path: str, action: str, params: dict[str, str], body: Any
    ) -> dict[str, Any]:
        with self._lock:
            self.calls.append(
                {"action": action, "method": method, "path": path, "params": params, "body": body}
            )
        if path.startswith("/api/v1/"):
            return self._dlc(method, path, params, body)
        handler = getattr(self, "_" + action, None)
        if handler is None:
            raise ApiError(400, "InvalidAction.NotFound", f"the fake endpoint has no action {action!r}")
        return handler(params)

    # ------------------------------------------------------------------------------------------ ECS stock
    def _DescribeAvailableResource(self, p: Mapping[str, str]) -> dict[str, Any]:
        zone, itype = p.get("ZoneId", ""), p.get("InstanceType", "")
        sold_out = zone in self._control().get("sold_out", [])
        status, category = ("SoldOut", "WithoutStock") if sold_out else ("Available", "WithStock")
        resource = {
            "Value": itype,
            "Status": status,
            "StatusCategory": category,
            "Min": 0,
            "Max": 0,
            "Unit": "",
        }
        return {
            "AvailableZones": {
                "AvailableZone": [
                    {
                        "ZoneId": zone,
                        "RegionId": p.get("RegionId", ""),
                        "Status": status,
                        "StatusCategory": category,
                        "AvailableResources": {
                            "AvailableResource": [
                                {
                                    "Type": "InstanceType",
                                    "SupportedResources": {"SupportedResource": [resource]},
                                }
                            ]
                        },
                    }
                ]
            }
        }

    # ------------------------------------------------------------------------------------------ NAS
    def _DescribeProtocolMountTarget(self, p: Mapping[str, str]) -> dict[str, Any]:
        wanted = {v for k, v in p.items() if k.startswith("Filters.") and k.endswith(".Value")}
        targets = []
        for rid, res in self._cloud().items():
            if res["type"] != EXPORT:
                continue
            export = res["outputs"].get("exportId", "")
            if wanted and not any(export in w.split(",") for w in wanted):
                continue
            targets.append(
                {
                    "ExportId": export,
                    "ProtocolServiceId": res["inputs"].get("protocolServiceId", ""),
                    "ProtocolMountTargetDomain": f"{rid[-10:]}.cn-hangzhou.cpfs.aliyuncs.com",
                    "Status": "AVAILABLE",
                    "ProtocolType": "NFS",
                    "Path": "/",
                    "VpcId": res["inputs"].get("vpcId", ""),
                    "VSwitchId": res["inputs"].get("vswitchId", ""),
                }
            )
        return {"NextToken": "", "ProtocolMountTargets": targets}

    # ------------------------------------------------------------------------------------------ Cloud Assistant
    def _instances(self, p: Mapping[str, str]) -> list[str]:
        wanted = _indexed(p, "InstanceId")
        if not wanted:
            raise ApiError(400, "MissingParameter.InstanceId", "InstanceId is mandatory for this action.")
        known = {rid for rid, res in self._cloud().items() if res["type"] == INSTANCE}
        missing = [i for i in wanted if i not in known]
        if missing:
            raise ApiError(
                404, "InvalidInstance.NotFound", f"The specified instance does not exist: {missing[0]}"
            )
        return wanted

    def _invoke(
        self, command_id: str, content: str, name: str, instances: list[str], encoding: str = ""
    ) -> str:
        commands = self._control().get("commands", {})
        invoke_id = self._id("t-")
        results = []
        if self.machines is not None:
            script = base64.b64decode(content).decode() if encoding.lower() == "base64" else content
            for iid in instances:
                proc = self.machines.run(iid, script, f"{invoke_id}-{iid}")
                results.append(
                    {
                        "InstanceId": iid,
                        "InvokeId": invoke_id,
                        "CommandId": command_id,
                        "ExitCode": 0,
                        "InvocationStatus": "Running",
                        "InvokeRecordStatus": "Running",
                        "Output": "",
                        "ErrorCode": "",
                        "ErrorInfo": "",
                        "StartTime": "2026-12-01T00:00:00Z",
                        "FinishedTime": "",
                        "Dropped": 0,
                        "Repeats": 1,
                        "proc": proc,
                    }
                )
        for iid in instances if self.machines is None else ():
            spec = commands.get(iid) or commands.get("*") or {}
            status = spec.get("status", "Success" if int(spec.get("exit_code", 0)) == 0 else "Failed")
            results.append(
                {
                    "InstanceId": iid,
                    "InvokeId": invoke_id,
                    "CommandId": command_id,
                    "ExitCode": int(spec.get("exit_code", 0)),
                    "InvocationStatus": status,
                    "InvokeRecordStatus": "Finished" if status != "Running" else "Running",
                    "Output": base64.b64encode(spec.get("output", "").encode()).decode(),
                    "ErrorCode": "" if status == "Success" else "NonZeroExitCode",
                    "ErrorInfo": "",
                    "StartTime": "2026-12-01T00:00:00Z",
                    "FinishedTime": "2026-12-01T00:00:01Z",
                    "Dropped": 0,
                    "Repeats": 1,
                }
            )
        self.invocations[invoke_id] = {
            "InvokeId": invoke_id,
            "CommandId": command_id,
            "CommandName": name,
            "CommandContent": content,
            "CommandType": "RunShellScript",
            "InvocationStatus": _overall(results),
            "InvokeStatus": "Finished" if _overall(results) != "Running" else "Running",
            "CreationTime": "2026-12-01T00:00:00Z",
            "results": results,
        }
        return invoke_id

    def _RunCommand(self, p: Mapping[str, str]) -> dict[str, Any]:
        instances = self._instances(p)
        command_id = self._id("c-")
        invoke_id = self._invoke(
            command_id, p.get("CommandContent", ""), p.get("Name", ""), instances, p.get("ContentEncoding", "")
        )
        self.invocations[invoke_id]["Tags"] = {"Tag": _tags(p)}  # RunCommand's Tag.N.Key / Tag.N.Value
        self.invocations[invoke_id]["Timeout"] = int(p.get("Timeout") or 60)
        return {"CommandId": command_id, "InvokeId": invoke_id}

    def _InvokeCommand(self, p: Mapping[str, str]) -> dict[str, Any]:
        if not p.get("CommandId"):
            raise ApiError(400, "MissingParameter.CommandId", "CommandId is mandatory for this action.")
        return {"InvokeId": self._invoke(p["CommandId"], "", "", self._instances(p))}

    def _find(self, p: Mapping[str, str]) -> dict[str, Any]:
        invocation = self.invocations.get(p.get("InvokeId", ""))
        if invocation is None:
            raise ApiError(404, "InvalidInvokeId.NotFound", "The specified InvokeId does not exist.")
        return self._refresh(invocation)

    def _refresh(self, inv: dict[str, Any]) -> dict[str, Any]:
        """A command running in a node: its output so far, and its exit code once it has ended."""
        for r in inv["results"]:
            proc = r.get("proc")
            if proc is None:
                continue
            r["Output"] = base64.b64encode(proc.output_path.read_bytes()[-24000:]).decode()
            if r["InvocationStatus"] == "Running" and proc.poll() is not None:
                ok = proc.returncode == 0
                r["ExitCode"] = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
                r["InvocationStatus"], r["InvokeRecordStatus"] = ("Success" if ok else "Failed"), "Finished"
                r["ErrorCode"] = "" if ok else "NonZeroExitCode"
                r["FinishedTime"] = "2026-12-01T00:00:02Z"
        inv["InvocationStatus"] = _overall(inv["results"])
        inv["InvokeStatus"] = "Finished" if inv["InvocationStatus"] != "Running" else "Running"
        return inv

    def _DescribeInvocations(self, p: Mapping[str, str]) -> dict[str, Any]:
        found = (
            [self._find(p)]
            if p.get("InvokeId")
            else [self._refresh(i) for i in list(self.invocations.values())]
        )
        wanted = {(t["TagKey"], t["TagValue"]) for t in _tags(p)}  # every Tag.N given must match
        found = [i for i in found if wanted <= {(t["TagKey"], t["TagValue"]) for t in i.get("Tags", {}).get("Tag", [])}]
        out = []
        for inv in found:
            instances = [
                {
                    "InstanceId": r["InstanceId"],
                    "InvocationStatus": r["InvocationStatus"],
                    "InstanceInvokeStatus": r["InvokeRecordStatus"],
                    "ExitCode": r["ExitCode"],
                    "Output": r["Output"],
                    "ErrorCode": r["ErrorCode"],
                    "Dropped": 0,
                    "Repeats": 1,
                    "StartTime": r["StartTime"],
                    "FinishTime": r["FinishedTime"],
                }
                for r in inv["results"]
            ]
            out.append(
                {k: v for k, v in inv.items() if k != "results"}
                | {"InvokeInstances": {"InvokeInstance": instances}}
            )
        return {
            "TotalCount": len(out),
            "PageNumber": 1,
            "PageSize": max(len(out), 10),
            "Invocations": {"Invocation": out},
        }

    def _DescribeInvocationResults(self, p: Mapping[str, str]) -> dict[str, Any]:
        results = [{k: v for k, v in r.items() if k != "proc"} for r in self._find(p)["results"]]
        if p.get("ContentEncoding") == "PlainText":  # the API's default is Base64
            for r in results:
                r["Output"] = base64.b64decode(r["Output"]).decode(errors="replace")
        if p.get("InstanceId"):
            results = [r for r in results if r["InstanceId"] == p["InstanceId"]]
        return {
            "Invocation": {
                "TotalCount": len(results),
                "PageNumber": 1,
                "PageSize": max(len(results), 10),
                "InvocationResults": {"InvocationResult": results},
            }
        }

    def _StopInvocation(self, p: Mapping[str, str]) -> dict[str, Any]:
        inv = self._find(p)
        for r in inv["results"]:
            if r["InvocationStatus"] == "Running":
                if r.get("proc") is not None:  # TerminationMode ProcessTree: every descendant, in any session
                    for pid in [r["proc"].pid, *_descendants(r["proc"].pid)]:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                    r["proc"].wait()
                r["InvocationStatus"], r["InvokeRecordStatus"] = "Stopped", "Finished"
        return {}

    # ------------------------------------------------------------------------------------------ PAI-DLC
    def _dlc(self, method: str, path: str, params: Mapping[str, str], body: Any) -> dict[str, Any]:
        parts = path.strip("/").split("/")[2:]  # after api/v1
        if parts == ["jobs"] and method == "POST":
            job_id = "dlc" + uuid.uuid4().hex[:13]
            spec = body if isinstance(body, dict) else {}
            pods = [
                {
                    "PodId": f"{job_id}-{'master' if i == 0 else 'worker'}-{max(i - 1, 0)}",
                    "Type": "master" if i == 0 else "worker",
                    "Status": "Running",
                    "Ip": f"10.0.1.{10 + i}",
                    "GmtCreateTime": "2026-12-01T00:00:10Z",
                }
                for i in range(sum(int(s.get("PodCount", 1)) for s in spec.get("JobSpecs", [{}])))
            ]
            self.jobs[job_id] = {
                **spec,
                "JobId": job_id,
                "Status": "Running",
                "Pods": pods,
                "GmtCreateTime": "2026-12-01T00:00:00Z",
            }
            return {"JobId": job_id}
        if parts == ["jobs"]:
            jobs = [
                j
                for j in self.jobs.values()
                if not params.get("WorkspaceId") or j.get("WorkspaceId") == params["WorkspaceId"]
            ]
            return {"Jobs": jobs, "TotalCount": len(jobs)}
        if len(parts) >= 2 and parts[0] == "jobs":
            job = self.jobs.get(parts[1])
            if job is None:
                raise ApiError(404, "JobNotFound", f"job {parts[1]} does not exist")
            if len(parts) == 2:
                return dict(job)
            if parts[2:] == ["stop"]:
                job["Status"] = "Stopping"
                return {"JobId": parts[1]}
            if len(parts) == 5 and parts[2] == "pods" and parts[4] == "logs":
                return {"JobId": parts[1], "PodId": parts[3], "Logs": [f"fake log of {parts[3]}"]}
        raise ApiError(404, "InvalidAction.NotFound", f"the fake endpoint has no {method} {path}")


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (by parent, through new sessions), read from /proc before any is killed."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _overall(results: list[dict[str, Any]]) -> str:
    if all(r["InvocationStatus"] == "Success" for r in results):
        return "Success"
    return "Running" if any(r["InvocationStatus"] == "Running" for r in results) else "Failed"


class _Handler(BaseHTTPRequestHandler):
    api: FakeOpenApi

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        url = urlsplit(self.path)
        params = dict(parse_qsl(url.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = None
        ctype = self.headers.get("Content-Type", "")
        if raw and "json" in ctype:
            body = json.loads(raw)
        elif raw:
            params.update(parse_qsl(raw.decode(), keep_blank_values=True))
        action = self.headers.get("x-acs-action") or params.get("Action", "")
        request_id = str(uuid.uuid4()).upper()
        if "list-type" in params and self.command == "GET":  # OSS ListObjectsV2, path-style: /BUCKET/
            self.api.calls.append({"action": "ListObjectsV2", "method": "GET", "path": url.path, "params": params})
            data = _oss_list(url.path.strip("/"), params.get("prefix", ""))
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("x-oss-request-id", request_id)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        try:
            if not (params.get("AccessKeyId") or self.headers.get("Authorization")):
                raise ApiError(400, "MissingAccessKeyId", "AccessKeyId is mandatory for this action.")
            status, out = (
                200,
                {"RequestId": request_id, **self.api.handle(self.command, url.path, action, params, body)},
            )
        except ApiError as e:
            status, out = e.status, {"RequestId": request_id, "Code": e.code, "Message": e.message}
        data = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _serve
