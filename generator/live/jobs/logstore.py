"""The job logs and exit codes in the checkpoint bucket, read by ``trainstack logs`` and ``jobs`` after the nodes are
gone: the :class:`LogStore` port and :class:`OssLogStore` over Alibaba Cloud's OSS SDK V2 (``alibabacloud-oss-v2``,
in ``trainstack[live]``, imported only when a command reads a log).

The Lingjun invocation index (:mod:`~generator.platforms.lingjun.live.eflo`) is written here too, one object per invocation
(``put``: OSS replaces an object whole, so a reader sees the old object or the new one, never half of it).

Each node's job script (``scripts/job.sh``) writes ``<checkpoint prefix>_trainstack/jobs/JOB/rank-N.log`` and
``rank-N.exit.json`` (``{"job", "rank", "instance_id", "state": "running"|"finished", "exit_code", "time"}``).
Credentials come from the same default chain as the ECS calls (``alibabacloud-credentials``, or the older
``ALICLOUD_ACCESS_KEY`` / ``ALICLOUD_SECRET_KEY``), and ``TRAINSTACK_ALIBABA_ENDPOINT`` sends the OSS calls to the
same one endpoint as every other Alibaba call (path-style bucket addressing there).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from generator.live.errors import EcsSdkMissing
from generator.live.jobs.client import EcsApiError
from generator.live.mountaddr import ENDPOINT_OVERRIDE, INSTALL_LIVE

_RANK_FILE = re.compile(r"rank-([0-9]+|x)\.(log|exit\.json)$")


class LogStore(Protocol):
    def check(self) -> None: ...

    def list(self, bucket: str, prefix: str) -> list[str]: ...

    def get(self, bucket: str, key: str) -> bytes | None: ...

    def put(self, bucket: str, key: str, data: bytes) -> None: ...


@dataclass(frozen=True, slots=True)
class RankLog:
    rank: str
    text: str  # "" when the node has not copied its log yet
    status: dict[str, Any]  # the rank's exit.json ({} when there is none)


def rank_logs(store: LogStore, bucket: str, prefix: str, job: str) -> list[RankLog]:
    """Every rank's log and status under ``prefix + job``, by rank."""
    keys = store.list(bucket, f"{prefix}{job}/")
    by_rank: dict[str, dict[str, str]] = {}
    for key in keys:
        m = _RANK_FILE.search(key)
        if m:
            by_rank.setdefault(m.group(1), {})[m.group(2)] = key
    out = []
    for rank in sorted(by_rank, key=lambda r: (not r.isdigit(), int(r) if r.isdigit() else 0)):
        files = by_rank[rank]
        text = (store.get(bucket, files["log"]) or b"").decode("utf-8", "replace") if "log" in files else ""
        status: dict[str, Any] = {}
        if "exit.json" in files:
            try:
                loaded = json.loads(store.get(bucket, files["exit.json"]) or b"{}")
                status = loaded if isinstance(loaded, dict) else {}
            except ValueError:
                status = {}
        out.append(RankLog(rank, text, status))
    return out


def job_names(store: LogStore, bucket: str, prefix: str) -> list[str]:
    """The jobs whose logs are in the bucket (newest name last: names end in a UTC stamp)."""
    names = {k[len(prefix) :].split("/", 1)[0] for k in store.list(bucket, prefix) if k.startswith(prefix)}
    return sorted(n for n in names if n)


class OssLogStore:
    """:class:`LogStore` over ``alibabacloud-oss-v2`` (public endpoint of the region: this runs outside the VPC)."""

    def __init__(self, region: str, env: Mapping[str, str] | None = None):
        self.region = region
        self.env = os.environ if env is None else env
        self._client: Any = None

    def check(self) -> None:
        try:
            import alibabacloud_credentials  # noqa: F401
            import alibabacloud_oss_v2  # noqa: F401
        except ImportError as e:
            raise EcsSdkMissing(
                f"reading job logs from OSS needs Alibaba Cloud's OSS SDK ({e.name} is not "
                f"installed): {INSTALL_LIVE}."
            ) from None

    def client(self) -> Any:
        if self._client is None:
            import alibabacloud_oss_v2 as oss
            from alibabacloud_credentials.client import Client as CredentialClient

            env = self.env
            key_id, secret = env.get("ALICLOUD_ACCESS_KEY"), env.get("ALICLOUD_SECRET_KEY")
            static = bool(key_id and secret and not env.get("ALIBABA_CLOUD_ACCESS_KEY_ID"))
            chain = None if static else CredentialClient()

            def credentials() -> Any:
                if chain is None:  # the provider's older names, as sdk_config takes them
                    return oss.credentials.Credentials(
                        key_id, secret, env.get("ALICLOUD_SECURITY_TOKEN") or None
                    )
                c = chain.get_credential()
                return oss.credentials.Credentials(
                    c.access_key_id, c.access_key_secret, c.security_token or None
                )

            cfg = oss.config.load_default()
            cfg.credentials_provider = oss.credentials.CredentialsProviderFunc(credentials)
            cfg.region = self.region
            override = env.get(ENDPOINT_OVERRIDE)
            if override:  # the one endpoint of every Alibaba call (sdk_config): buckets as paths on it
                scheme, _, host = override.rpartition("://")
                cfg.endpoint = host.rstrip("/")
                cfg.disable_ssl = scheme == "http"
                cfg.use_path_style = True
            self._client = oss.Client(cfg)
        return self._client

    def list(self, bucket: str, prefix: str) -> list[str]:
        import alibabacloud_oss_v2 as oss

        keys: list[str] = []
        try:
            paginator = self.client().list_objects_v2_paginator()
            for page in paginator.iter_page(oss.ListObjectsV2Request(bucket=bucket, prefix=prefix)):
                keys.extend(o.key for o in page.contents or ())
        except Exception as e:  # noqa: BLE001 one sentence for any SDK or HTTP failure
            raise EcsApiError(f"OSS ListObjectsV2 of oss://{bucket}/{prefix} failed: {e}.") from None
        return keys

    def get(self, bucket: str, key: str) -> bytes | None:
        import alibabacloud_oss_v2 as oss

        try:
            return self.client().get_object(oss.GetObjectRequest(bucket=bucket, key=key)).body.read()
        except Exception as e:  # noqa: BLE001
            if "NoSuchKey" in str(e):
                return None
            raise EcsApiError(f"OSS GetObject of oss://{bucket}/{key} failed: {e}.") from None

    def put(self, bucket: str, key: str, data: bytes) -> None:
        import alibabacloud_oss_v2 as oss

        try:
            self.client().put_object(oss.PutObjectRequest(bucket=bucket, key=key, body=data))
        except Exception as e:  # noqa: BLE001
            raise EcsApiError(f"OSS PutObject of oss://{bucket}/{key} failed: {e}.") from None
