"""The cloud a booted node sees, for tests/boot: run inside the node's network namespace only.

* the instance metadata service at 100.100.100.200:80 in hardened mode (a token from ``PUT /latest/api/token`` is
  required for every read), with the node role's STS credentials and the spot termination notice;
* OSS on 127.0.0.1:443 (TLS, the bucket's internal host name mapped there in the node's /etc/hosts), which checks
  every request's V1 signature with Alibaba's own SDK (``oss2``'s signer, given the credentials it handed out) and
  the STS token, and keeps objects under STATE/oss/BUCKET/KEY (multipart uploads included);
* the VPC-internal mirror host mirrors.cloud.aliyuncs.com on 127.0.0.1:443 (TLS, the same certificate) and :80,
  serving STATE/mirror/PATH;
* the Container Registry API at cr-vpc.REGION.aliyuncs.com on 127.0.0.1:443 (TLS, the same certificate; the node's
  /etc/hosts maps it there when the node is made with that host): GetAuthorizationToken (2018-12-01) of the
  instance named in STATE/acr-instance, which checks the request's RPC signature (version 1.0) with Alibaba's own
  SDK (``alibabacloud_tea_openapi``'s ``get_rpcsignature``) and the STS token, and answers a fresh temporary
  password, also written to STATE/acr-issued ("USER PASSWORD") for the fake docker to check.

Per-node answers are files in STATE too: ``instance-id`` and ``region-id`` (absent: 404), ``role`` (the attached
role's name, instead of the command line's). Switches are files in
STATE: ``no-role`` (the credentials answer 404), ``spot-notice`` (its text is the reclaim
time), ``stall-metadata`` (the next notice read hangs for 60 s, once), ``acr-denied`` (GetAuthorizationToken
answers 403 NoPrivilege, as for a role without cr:GetAuthorizationToken), ``access-key`` ("ID SECRET": OSS expects
that AccessKey and no STS token, as a Lingjun node's RAM user key), ``mirror-no-https`` (the mirror answers 503 over
HTTPS, plain HTTP still works). Every request is logged to STATE/requests.log.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import oss2.auth
import oss2.credentials
import oss2.http

STATE = Path(sys.argv[1])
ROLE = sys.argv[2]
KEY_ID, SECRET, STS = "STS.test-key-id", "test-secret/with+chars", "test-sts-token"
TOKEN = "metadata-token-0123"


def role() -> str:
    """The role attached to the instance: the file STATE/role when there is one (a RamRoleAttachment), else argv."""
    path = STATE / "role"
    return path.read_text().strip() if path.exists() else ROLE


def log(line: str) -> None:
    with open(STATE / "requests.log", "a") as f:
        f.write(line + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # quiet: requests.log has what matters
        pass

    def reply(self, code: int, body: bytes = b"", ctype: str = "text/plain") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))


class Metadata(Handler):
    def do_PUT(self) -> None:
        self.body()
        ok = self.path == "/latest/api/token" and self.headers.get("X-aliyun-ecs-metadata-token-ttl-seconds")
        log(f"metadata PUT {self.path} {'200' if ok else '400'}")
        self.reply(200, TOKEN.encode()) if ok else self.reply(400)

    def do_GET(self) -> None:
        if self.headers.get("X-aliyun-ecs-metadata-token") != TOKEN:  # hardened mode
            log(f"metadata GET {self.path} 401 (no token)")
            return self.reply(401)
        if (
            role()
            and self.path == f"/latest/meta-data/ram/security-credentials/{role()}"
            and not (STATE / "no-role").exists()
        ):
            log(f"metadata GET {self.path} 200")
            expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 6 * 3600))
            return self.reply(
                200,
                json.dumps(
                    {
                        "AccessKeyId": KEY_ID,
                        "AccessKeySecret": SECRET,
                        "SecurityToken": STS,
                        "Expiration": expires,
                        "Code": "Success",
                    }
                ).encode(),
            )
        if self.path == "/latest/meta-data/ram/security-credentials/" and role() and not (STATE / "no-role").exists():
            log(f"metadata GET {self.path} 200")
            return self.reply(200, role().encode())
        plain = {"/latest/meta-data/instance-id": "instance-id", "/latest/meta-data/region-id": "region-id"}
        if self.path in plain and (STATE / plain[self.path]).exists():
            log(f"metadata GET {self.path} 200")
            return self.reply(200, (STATE / plain[self.path]).read_bytes())
        if self.path == "/latest/meta-data/instance/spot/termination-time":
            if (STATE / "stall-metadata").exists():  # once
                (STATE / "stall-metadata").unlink()
                log(f"metadata GET {self.path} stalled")
                time.sleep(60)
            if (STATE / "spot-notice").exists():
                log(f"metadata GET {self.path} 200")
                return self.reply(200, (STATE / "spot-notice").read_bytes())
        log(f"metadata GET {self.path} 404")
        self.reply(404)


class Mirror(Handler):
    def do_GET(self) -> None:
        path = STATE / "mirror" / self.path.lstrip("/")
        log(f"mirror GET {self.headers.get('Host')}{self.path} {200 if path.is_file() else 404}")
        self.reply(200, path.read_bytes()) if path.is_file() else self.reply(404)


class Oss(Handler):
    def handle_oss(self) -> None:
        host = self.headers.get("Host", "")
        if host == "mirrors.cloud.aliyuncs.com" and self.command == "GET":  # the mirror, over HTTPS
            if (STATE / "mirror-no-https").exists():
                log(f"mirror GET {host}{self.path} 503 https")
                return self.reply(503)
            return Mirror.do_GET(self)
        if host.startswith("cr-vpc.") and self.command == "GET":  # the Container Registry API
            return self.handle_acr()
        body = self.body()
        bucket = host.split(".", 1)[0]
        url = urllib.parse.urlsplit(self.path)
        key = urllib.parse.unquote(url.path.lstrip("/"))
        params = {
            k: v[0] if v else "" for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()
        }
        req = oss2.http.Request(
            self.command,
            f"https://{host}{self.path}",
            params=params,
            headers={k: v for k, v in self.headers.items()},
        )
        key_id, secret, sts = KEY_ID, SECRET, STS
        if (STATE / "access-key").exists():
            (key_id, secret), sts = (STATE / "access-key").read_text().split(), None
        auth = oss2.auth.ProviderAuth(oss2.credentials.StaticCredentialsProvider(key_id, secret, sts))
        want = auth._ProviderAuth__make_signature(
            req, bucket, key, auth.credentials_provider.get_credentials()
        )
        given = self.headers.get("Authorization", "")
        if given != f"OSS {key_id}:{want}" or self.headers.get("x-oss-security-token") != sts:
            log(f"oss {self.command} {bucket}/{key} 403 SignatureDoesNotMatch")
            return self.reply(403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>", "application/xml")
        obj = STATE / "oss" / bucket / key
        parts = STATE / "oss-parts" / params.get("uploadId", "none")
        code, out = 200, b""
        if self.command == "GET" and not key:  # GetBucket (ListObjects V1): prefix, marker
            prefix, marker = params.get("prefix", ""), params.get("marker", "")
            root = STATE / "oss" / bucket
            keys = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
            items = "".join(
                f"<Contents><Key>{k}</Key><Size>{(root / k).stat().st_size}</Size></Contents>"
                for k in keys
                if k.startswith(prefix) and k > marker
            )
            out = f"<ListBucketResult><IsTruncated>false</IsTruncated>{items}</ListBucketResult>".encode()
        elif self.command == "GET":
            code, out = (
                (200, obj.read_bytes()) if obj.is_file() else (404, b"<Error><Code>NoSuchKey</Code></Error>")
            )
        elif self.command == "PUT" and "partNumber" in params:
            parts.mkdir(parents=True, exist_ok=True)
            (parts / f"{int(params['partNumber']):05d}").write_bytes(body)
        elif self.command == "PUT":
            obj.parent.mkdir(parents=True, exist_ok=True)
            obj.write_bytes(body)
        elif self.command == "POST" and "uploads" in params:
            upload_id = f"upload-{time.monotonic_ns()}"
            out = f"<InitiateMultipartUploadResult><UploadId>{upload_id}</UploadId></InitiateMultipartUploadResult>".encode()
        elif self.command == "POST" and "uploadId" in params:
            obj.parent.mkdir(parents=True, exist_ok=True)
            obj.write_bytes(b"".join(p.read_bytes() for p in sorted(parts.iterdir())))
        elif self.command == "DELETE":
            pass
        else:
            code = 400
        log(f"oss {self.command} {bucket}/{key}{'?' + url.query if url.query else ''} {code}")
        self.reply(code, out, "application/xml")

    def handle_acr(self) -> None:
        from alibabacloud_tea_openapi.utils import Utils  # the SDK's own RPC signer (the test extra)

        self.body()
        query = {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).items()}
        given = query.pop("Signature", "")
        want = Utils.get_rpcsignature(query, "GET", SECRET)
        action, instance = query.get("Action"), query.get("InstanceId")
        if given != want or query.get("AccessKeyId") != KEY_ID or query.get("SecurityToken") != STS:
            code, answer = 400, {"Code": "SignatureDoesNotMatch"}
        elif not all(query.get(k) for k in ("Timestamp", "SignatureNonce", "Format")) or query.get(
            "SignatureMethod"
        ) != "HMAC-SHA1" or query.get("SignatureVersion") != "1.0":
            code, answer = 400, {"Code": "MissingParameter"}
        elif action != "GetAuthorizationToken" or query.get("Version") != "2018-12-01":
            code, answer = 404, {"Code": "InvalidAction.NotFound"}
        elif (STATE / "acr-denied").exists():
            code, answer = 403, {"Code": "NoPrivilege", "Message": "Access denied for this user."}
        elif not (STATE / "acr-instance").exists() or instance != (STATE / "acr-instance").read_text().strip():
            code, answer = 404, {"Code": "INSTANCE_NOT_EXIST"}
        else:
            password = f"acr-temp-password-{time.monotonic_ns()}"
            (STATE / "acr-issued").write_text(f"temp_user_cr {password}")
            code, answer = 200, {"TempUsername": "temp_user_cr", "AuthorizationToken": password, "IsSuccess": True,
                                 "ExpireTime": int(time.time() + 3600) * 1000, "Code": "success"}
        log(f"acr {action} {instance} {code} {answer['Code']}")
        self.reply(code, json.dumps(answer).encode(), "application/json")

    do_GET = do_PUT = do_POST = do_DELETE = handle_oss


def serve(server: ThreadingHTTPServer) -> None:
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main() -> None:
    serve(ThreadingHTTPServer(("100.100.100.200", 80), Metadata))
    serve(ThreadingHTTPServer(("127.0.0.1", 80), Mirror))
    oss = ThreadingHTTPServer(("127.0.0.1", 443), Oss)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(str(STATE / "tls.crt"), str(STATE / "tls.key"))
    oss.socket = tls.wrap_socket(oss.socket, server_side=True)
    serve(oss)
    (STATE / "fakes-ready").write_text(str(os.getpid()))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
