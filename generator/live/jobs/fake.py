"""Recorded answers for tests and demos: :class:`RecordedEcsApi` (ECS / Cloud Assistant; Lingjun's EFLO controller
answers are :class:`generator.platforms.lingjun.live.fake.RecordedEfloApi`, on the same base) and
:class:`RecordedLogStore` (the checkpoint bucket's objects in a folder: the job logs, the Lingjun invocation
index).

ECS answers are JSON files named after the action (``RunCommand.json``, ``DescribeInvocations.json``, ...) in a folder
such as ``tests/live_fixtures/cloud_assistant/``, each a response body as the API returns it (and as the SDK's
``*ResponseBody.from_map`` reads it). A file may instead hold ``{"_by": FIELD, VALUE: body, ...}``: the body for the
request's FIELD (e.g. the InvokeId of DescribeInvocationResults; ``"None"`` for a request without it, such as
the first page of a NextToken-paged list), or ``{"_sequence": [body, ...]}``: one body per call,
the last one repeating. Every call is kept in :attr:`RecordedEcsApi.calls`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from generator.live.errors import EcsSdkMissing
from generator.live.jobs.client import EcsApiError, sdk_request_map


class RecordedEcsApi:
    def __init__(
        self,
        folder: Path | str,
        *,
        errors: Mapping[str, EcsApiError] | None = None,
        missing_sdk: EcsSdkMissing | None = None,
    ):
        self.folder = Path(folder)
        self.errors = dict(errors or {})
        self.missing_sdk = missing_sdk
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._seen: dict[str, int] = {}

    def check(self) -> None:
        if self.missing_sdk is not None:
            raise self.missing_sdk

    product = "ECS"

    def request_map(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return sdk_request_map(action, body)

    def call(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        self.request_map(action, body)  # a request the SDK's model would not take fails here as it would live
        self.calls.append((action, copy.deepcopy(dict(body))))
        if action in self.errors:
            raise self.errors[action]
        data = json.loads((self.folder / f"{action}.json").read_text(encoding="utf-8"))
        if isinstance(data, dict) and "_sequence" in data:
            n = self._seen.get(action, 0)
            self._seen[action] = n + 1
            seq = data["_sequence"]
            return copy.deepcopy(seq[min(n, len(seq) - 1)])
        if isinstance(data, dict) and "_by" in data:
            key = str(body.get(data["_by"]))
            if key not in data:
                raise EcsApiError(
                    f"{self.product} {action} failed: InvalidParam: no record for {data['_by']} {key}."
                )
            return copy.deepcopy(data[key])
        return data


class RecordedLogStore:
    """Objects of the checkpoint bucket from a folder: ``FOLDER/<key>`` is the object ``key``."""

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)
        self.calls: list[tuple[str, str]] = []

    def check(self) -> None:
        return None

    def list(self, bucket: str, prefix: str) -> list[str]:
        self.calls.append(("list", prefix))
        base = self.folder
        return sorted(
            str(p.relative_to(base))
            for p in base.rglob("*")
            if p.is_file() and str(p.relative_to(base)).startswith(prefix)
        )

    def get(self, bucket: str, key: str) -> bytes | None:
        self.calls.append(("get", key))
        path = self.folder / key
        return path.read_bytes() if path.is_file() else None

    def put(self, bucket: str, key: str, data: bytes) -> None:
        """Write ``FOLDER/<key>`` whole (a temporary file renamed over it), as OSS replaces an object."""
        self.calls.append(("put", key))
        path = self.folder / key
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
