#!/usr/bin/env python3
"""A fake ``alicloud`` resource provider plugin for tests/live: Alibaba Cloud as a JSON file.

``tests/live/install-pulumi.sh`` installs it as plugin ``resource alicloud`` at the version pulumi_alicloud asks
for, so the real Pulumi CLI deploys trainstack's programs against it. It speaks the ResourceProvider gRPC protocol
(``pulumi/proto/pulumi/provider.proto``): GetPluginInfo, GetSchema, Handshake, CheckConfig, DiffConfig,
Configure, Check, Diff, Create, Read, Update, Delete, Invoke, Cancel; for any ``alicloud:*`` resource type.

* **State**: the "cloud" is ``$FAKE_ALICLOUD_STATE`` (JSON, written atomically under a file lock): one entry per
  resource (type and id) with its type, name, inputs and outputs. Ids look like Alibaba's (``i-...``, ``vpc-...``); computed
  outputs the programs read are filled in (an instance's ``status``, an export's ``exportId``, ...).
* **Update or replace** comes from the replacement data the offline diff uses
  (``generator/preview/data/replacement/*.csv``, ForceNew from the Terraform provider's schema): a changed input
  whose row says ``replace`` replaces the resource, any other change is an update in place.
* **Protect** is the engine's: a protected resource never reaches Delete (the log shows it).
* **Faults**, from ``$FAKE_ALICLOUD_CONTROL`` (JSON, read at every call): ``{"fail": [{"method": "Create",
  "name": "x-node-002", "message": "..."}], "slow": [{"method": "Create", "type": "alicloud:ecs/instance:Instance",
  "seconds": 5}]}``; a rule matches when each of its ``method``, ``name`` (exact) and ``type`` it names matches.
  A lost resource (a spot reclaim) is one taken out of the state file (:func:`lose`): Read then says it is gone.
* **Log**: every call is one JSON object per line in ``$FAKE_ALICLOUD_LOG``: ``method``, ``urn``, ``type``,
  ``name``, ``id``, ``inputs`` (Check, Create, Update: the new inputs; Diff: also ``replaces`` and ``changes``).
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import plugin_pb2, provider_pb2, provider_pb2_grpc

VERSION = "4.0.0"  # overwritten by nothing: the plugin folder's version is what the engine asks for
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's "computed, not known yet" sentinel
INSTANCE = "alicloud:ecs/instance:Instance"
REPLACEMENT_DATA = (
    Path(__file__).resolve().parent.parent.parent / "generator" / "preview" / "data" / "replacement"
)

# id prefixes, as Alibaba Cloud's APIs return them
PREFIX = {
    "alicloud:ecs/instance:Instance": "i-",
    "alicloud:vpc/network:Network": "vpc-",
    "alicloud:vpc/switch:Switch": "vsw-",
    "alicloud:ecs/securityGroup:SecurityGroup": "sg-",
    "alicloud:vpc/natGateway:NatGateway": "ngw-",
    "alicloud:ecs/eipAddress:EipAddress": "eip-",
    "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet": "ds-",
    "alicloud:ecs/hpcCluster:HpcCluster": "hpc-",
    "alicloud:nas/fileSystem:FileSystem": "cpfs-",
    "alicloud:pai/workspaceWorkspace:WorkspaceWorkspace": "",
}
# ids that are a name the program chose (Terraform's d.SetId(name))
ID_FROM = {
    "alicloud:oss/bucket:Bucket": "bucket",
    "alicloud:oss/bucketAcl:BucketAcl": "bucket",
    "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock": "bucket",
    "alicloud:ram/role:Role": "roleName",
    "alicloud:ram/policy:Policy": "policyName",
    "alicloud:ram/user:User": "name",
}


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value) if value else None


def _load_rules() -> dict[tuple[str, str], str]:
    rules: dict[tuple[str, str], str] = {}
    for file in sorted(REPLACEMENT_DATA.glob("*.csv")):
        with file.open(encoding="utf-8") as f:
            for row in csv.DictReader(f):
                rules[(row["type"].strip(), row["property"].strip())] = row["effect"].strip()
    return rules


RULES = _load_rules()


# ------------------------------------------------------------------------------------------------- the "cloud"
@contextlib.contextmanager
def _locked_state(path: Path) -> Iterator[dict[str, Any]]:
    """The state file, read and (on success) written back atomically, under an exclusive lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(str(path) + ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            state = json.loads(path.read_text()) if path.exists() else {}
        except ValueError:
            state = {}
        state.setdefault("resources", {})
        state.setdefault("serial", 0)
        yield state
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
        os.replace(tmp, path)


def _key(type_: str, rid: str) -> str:
    """Resources are kept by type and id: an OSS bucket, its ACL and its public access block share one id."""
    return f"{type_}::{rid}"


def read_state(path: Path) -> dict[str, Any]:
    """The fake cloud's resources by id (for tests); only ids of one type are unique."""
    with _locked_state(path) as state:
        return {res["id"]: res for res in state["resources"].values()}


def lose(path: Path, name: str, type_: str = "alicloud:ecs/instance:Instance") -> str:
    """Take the resource ``name`` out of the fake cloud, as a spot reclaim releases an instance; its id."""
    with _locked_state(path) as state:
        for key, res in list(state["resources"].items()):
            if res["name"] == name and res["type"] == type_:
                del state["resources"][key]
                return str(res["id"])
    raise KeyError(f"no {type_} named {name} in {path}")


def set_status(path: Path, name: str, status: str, type_: str = "alicloud:ecs/instance:Instance") -> None:
    """Set a resource's ``status`` output in the fake cloud (``Stopped``: a stop after a hardware event)."""
    with _locked_state(path) as state:
        for res in state["resources"].values():
            if res["name"] == name and res["type"] == type_:
                res["outputs"]["status"] = status
                return
    raise KeyError(f"no {type_} named {name} in {path}")


def _new_id(state: dict[str, Any], type_: str, name: str, inputs: Mapping[str, Any]) -> str:
    state["serial"] += 1
    key = ID_FROM.get(type_)
    if key and isinstance(inputs.get(key), str) and inputs[key] != UNKNOWN:
        return inputs[key]
    digest = hashlib.sha256(f"{type_}|{name}|{state['serial']}".encode()).hexdigest()[:17]
    prefix = PREFIX.get(type_, type_.rsplit(":", 1)[-1].lower()[:8] + "-")
    return prefix + digest


def _computed(type_: str, rid: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The outputs Alibaba Cloud computes that trainstack's programs read or show."""
    out: dict[str, Any] = {}
    if type_ == "alicloud:ecs/instance:Instance":
        out = {
            "status": "Running",
            "instanceName": inputs.get("instanceName", ""),
            "privateIp": inputs.get("privateIp") or "192.168.0.10",
            "publicIp": "",
        }
    elif type_ == "alicloud:vpc/network:Network":
        out = {"routeTableId": "vtb-" + rid[4:], "routerId": "vrt-" + rid[4:], "status": "Available"}
    elif type_ == "alicloud:nas/protocolService:ProtocolService":
        out = {"protocolServiceId": "ptc-" + rid[-12:]}
    elif type_ == "alicloud:nas/protocolMountTarget:ProtocolMountTarget":
        out = {"exportId": "exp-" + rid[-12:], "status": "CREATED"}
    elif type_ == "alicloud:nas/mountTarget:MountTarget":
        out = {"mountTargetDomain": f"{rid[-8:]}.cn-hangzhou.extreme.nas.aliyuncs.com", "status": "Active"}
    elif type_ == "alicloud:nas/fileset:Fileset":
        out = {"filesetId": "fset-" + rid[-12:]}
    elif type_ == "alicloud:ram/role:Role":
        out = {"arn": f"acs:ram::1234567890123456:role/{rid}", "roleId": "3" + rid[-8:]}
    elif type_ in (
        "alicloud:pai/workspaceWorkspace:WorkspaceWorkspace",
        "alicloud:pai/workspaceDataset:WorkspaceDataset",
    ):
        out = {"status": "ENABLED"}
    return {k: v for k, v in out.items() if k not in inputs or inputs[k] in (None, "", UNKNOWN)}


# ------------------------------------------------------------------------------------------------- helpers
def _dict(s: struct_pb2.Struct) -> dict[str, Any]:
    return json_format.MessageToDict(s) if s is not None else {}


def _struct(d: Mapping[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(dict(d))
    return s


def _name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def _type(urn: str) -> str:
    return urn.split("::")[2].rsplit("$", 1)[-1] if urn.count("::") >= 3 else ""


def _log(method: str, urn: str = "", **fields: Any) -> None:
    path = _env_path("FAKE_ALICLOUD_LOG")
    if path is None:
        return
    entry = {"method": method, "urn": urn, "type": _type(urn), "name": _name(urn) if urn else "", **fields}
    line = json.dumps(entry, sort_keys=True, default=str) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _rules_for(method: str, urn: str, kind: str) -> list[dict[str, Any]]:
    path = _env_path("FAKE_ALICLOUD_CONTROL")
    if path is None or not path.exists():
        return []
    try:
        control = json.loads(path.read_text() or "{}")
    except ValueError:
        return []
    return [
        r
        for r in control.get(kind, [])
        if r.get("method", method) == method
        and r.get("name", _name(urn)) == _name(urn)
        and r.get("type", _type(urn)) == _type(urn)
    ]


def _faults(method: str, urn: str, context: Any) -> None:
    for rule in _rules_for(method, urn, "slow"):
        time.sleep(float(rule.get("seconds", 5)))
    for rule in _rules_for(method, urn, "fail"):
        _log(method + ":failed", urn, message=rule.get("message", ""))
        context.abort(
            grpc.StatusCode.UNKNOWN, rule.get("message") or f"fake alicloud: {method} failed as told"
        )


def _changed(olds: Mapping[str, Any], news: Mapping[str, Any]) -> list[str]:
    keys = sorted(set(olds) | set(news))
    return [
        k for k in keys if olds.get(k) != news.get(k) and not (k not in news and olds.get(k) in (None, ""))
    ]


def _state_path() -> Path:
    path = _env_path("FAKE_ALICLOUD_STATE")
    if path is None:
        raise RuntimeError(
            "FAKE_ALICLOUD_STATE is not set: the fake alicloud provider has no cloud to talk to"
        )
    return path


class FakeAlicloud(provider_pb2_grpc.ResourceProviderServicer):
    def GetPluginInfo(self, request: Any, context: Any) -> Any:
        _log("GetPluginInfo")
        return plugin_pb2.PluginInfo(version=VERSION)

    def GetSchema(self, request: Any, context: Any) -> Any:
        _log("GetSchema")
        return provider_pb2.GetSchemaResponse(schema=json.dumps({"name": "alicloud", "version": VERSION}))

    def Handshake(self, request: Any, context: Any) -> Any:
        _log("Handshake")
        return provider_pb2.ProviderHandshakeResponse(accept_secrets=False, accept_resources=False)

    def CheckConfig(self, request: Any, context: Any) -> Any:
        news = _dict(request.news)
        _log("CheckConfig", request.urn, inputs=news)
        return provider_pb2.CheckResponse(inputs=request.news)

    def DiffConfig(self, request: Any, context: Any) -> Any:
        _log("DiffConfig", request.urn)
        return provider_pb2.DiffResponse(changes=provider_pb2.DiffResponse.DIFF_NONE)

    def Configure(self, request: Any, context: Any) -> Any:
        variables = dict(request.variables)
        _log(
            "Configure",
            inputs={k: v for k, v in variables.items() if "ecret" not in k and "ccessKey" not in k},
        )
        has_key = (
            "alicloud:config:accessKey" in variables
            or os.environ.get("ALIBABA_CLOUD_ACCESS_KEY_ID")
            or os.environ.get("ALICLOUD_ACCESS_KEY")
            or os.environ.get("ALIBABA_CLOUD_PROFILE")
            or os.environ.get("ALICLOUD_PROFILE")
        )
        if not has_key:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                "[ERROR] Configuring Terraform Alicloud Provider: no valid credential sources found",
            )
        return provider_pb2.ConfigureResponse(
            acceptSecrets=False, supportsPreview=True, acceptResources=False, acceptOutputs=False
        )

    def Invoke(self, request: Any, context: Any) -> Any:
        args = _dict(request.args)
        _log("Invoke", inputs={"tok": request.tok, **args})
        if request.tok == "alicloud:ecs/getImages:getImages":
            image = {
                "id": "m-fakeimage00000001",
                "name": "aliyun_3_x64_20G_alibase_20260101.vhd",
                "imageId": "m-fakeimage00000001",
                "osType": "linux",
                "status": "Available",
            }
            return provider_pb2.InvokeResponse(
                **{"return": _struct({**args, "ids": [image["id"]], "images": [image], "id": "fake"})}
            )
        context.abort(
            grpc.StatusCode.UNIMPLEMENTED, f"the fake alicloud provider has no function {request.tok}"
        )

    def Check(self, request: Any, context: Any) -> Any:
        news = _dict(request.news)
        _log("Check", request.urn, inputs=news)
        _faults("Check", request.urn, context)
        return provider_pb2.CheckResponse(inputs=request.news)

    def Diff(self, request: Any, context: Any) -> Any:
        olds = _dict(request.old_inputs) if request.HasField("old_inputs") else _dict(request.olds)
        news = _dict(request.news)
        type_ = _type(request.urn)
        changes = [k for k in _changed(olds, news) if not k.startswith("__")]
        replaces = [k for k in changes if RULES.get((type_, k)) == "replace"]
        _log("Diff", request.urn, id=request.id, inputs=news, changes=changes, replaces=replaces)
        _faults("Diff", request.urn, context)
        detailed = {}
        for k in changes:
            kind = provider_pb2.PropertyDiff.UPDATE
            if k not in olds:
                kind = provider_pb2.PropertyDiff.ADD
            elif k not in news:
                kind = provider_pb2.PropertyDiff.DELETE
            if k in replaces:
                kind += 1  # ADD_REPLACE, DELETE_REPLACE, UPDATE_REPLACE follow their plain kinds
            detailed[k] = provider_pb2.PropertyDiff(kind=kind, inputDiff=True)
        return provider_pb2.DiffResponse(
            changes=provider_pb2.DiffResponse.DIFF_SOME if changes else provider_pb2.DiffResponse.DIFF_NONE,
            replaces=replaces,
            diffs=changes,
            detailedDiff=detailed,
            hasDetailedDiff=True,
            deleteBeforeReplace=False,
        )

    def Create(self, request: Any, context: Any) -> Any:
        inputs = _dict(request.properties)
        type_ = _type(request.urn)
        _log("Create", request.urn, inputs=inputs, preview=request.preview)
        if request.preview:
            return provider_pb2.CreateResponse(id="", properties=request.properties)
        _faults("Create", request.urn, context)
        with _locked_state(_state_path()) as state:
            if type_ == INSTANCE and inputs.get("privateIp"):
                for other in state["resources"].values():
                    if (
                        other["type"] == INSTANCE
                        and other["inputs"].get("privateIp") == inputs["privateIp"]
                        and (other["inputs"].get("vswitchId") == inputs.get("vswitchId"))
                    ):
                        context.abort(
                            grpc.StatusCode.UNKNOWN,
                            (
                                f"[ERROR] RunInstances: InvalidPrivateIpAddress.Duplicated: the private IP address "
                                f"{inputs['privateIp']} is already used by {other['id']} ({other['name']})"
                            ),
                        )
            rid = _new_id(state, type_, _name(request.urn), inputs)
            outputs = {**inputs, **_computed(type_, rid, inputs)}
            state["resources"][_key(type_, rid)] = {
                "id": rid,
                "type": type_,
                "name": _name(request.urn),
                "urn": request.urn,
                "inputs": inputs,
                "outputs": outputs,
            }
        _log("Create:done", request.urn, id=rid)
        return provider_pb2.CreateResponse(id=rid, properties=_struct(outputs))

    def Read(self, request: Any, context: Any) -> Any:
        _log("Read", request.urn, id=request.id)
        _faults("Read", request.urn, context)
        with _locked_state(_state_path()) as state:
            res = state["resources"].get(_key(_type(request.urn), request.id))
        if res is None:
            _log("Read:gone", request.urn, id=request.id)
            return provider_pb2.ReadResponse(id="")
        return provider_pb2.ReadResponse(
            id=request.id, properties=_struct(res["outputs"]), inputs=_struct(res["inputs"])
        )

    def Update(self, request: Any, context: Any) -> Any:
        news = _dict(request.news)
        type_ = _type(request.urn)
        _log("Update", request.urn, id=request.id, inputs=news, preview=request.preview)
        if request.preview:
            return provider_pb2.UpdateResponse(properties=request.news)
        _faults("Update", request.urn, context)
        with _locked_state(_state_path()) as state:
            res = state["resources"].get(_key(type_, request.id))
            if res is None:
                context.abort(
                    grpc.StatusCode.NOT_FOUND, f"fake alicloud: {type_} {request.id} does not exist"
                )
            res["inputs"] = news
            res["outputs"] = {
                **news,
                **_computed(type_, request.id, news),
                **{k: v for k, v in res["outputs"].items() if k == "status"},
            }
            outputs = res["outputs"]
        return provider_pb2.UpdateResponse(properties=_struct(outputs))

    def Delete(self, request: Any, context: Any) -> Any:
        _log("Delete", request.urn, id=request.id)
        _faults("Delete", request.urn, context)
        with _locked_state(_state_path()) as state:
            state["resources"].pop(_key(_type(request.urn), request.id), None)
        return empty_pb2.Empty()

    def Cancel(self, request: Any, context: Any) -> Any:
        _log("Cancel")
        return empty_pb2.Empty()


def main() -> None:
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=16),
        options=[("grpc.max_receive_message_length", 400 * 1024 * 1024)],
    )
    provider_pb2_grpc.add_ResourceProviderServicer_to_server(FakeAlicloud(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    _log("start", pid=os.getpid(), argv=sys.argv[1:])
    print(port, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    server.stop(0)


if __name__ == "__main__":
    main()
