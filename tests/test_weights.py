"""Base weights (``model.weights``, issue #16): the planner places and sizes them, storage makes room for them, the
program grants read access to exactly their OSS folder, and ``trainstack-weights`` fetches them once for the
cluster: two "nodes" running it at the same time against one shared folder, with fake ``modelscope`` and ``curl`` on
PATH and a fake OSS on 127.0.0.1 (``TRAINSTACK_OSS_URL``) that checks every request's V1 signature with Alibaba's
own SDK (oss2's signer), download once and both see the files. No network, no metadata service."""

from __future__ import annotations

import base64
import gzip
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from generator import api
from generator.errors import SpecErrors
from generator.plan import refusals, warns
from generator.render import files as render_files
from generator.render import userdata

INSTANCE = "alicloud:ecs/instance:Instance"
POLICY = "alicloud:ram/policy:Policy"
ROLE_ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
USER_ATTACHMENT = "alicloud:ram/userPolicyAttachment:UserPolicyAttachment"
FACTS = "alicloud:oss/bucketObject:BucketObject"
IMAGE = "i190982651690986913088"

BASE = """
name: {name}
region: cn-wulanchabu
model: {{preset: llama-2-70b, tokens: 20B, weights: "{weights}"}}
compute: {{nodes: 4}}
"""


def _spec(tmp_path: Path, body: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def _plan(tmp_path: Path, weights: str, extra: str = "", name: str = "wts"):
    return api.plan(_spec(tmp_path, BASE.format(name=name, weights=weights) + extra))


# ------------------------------------------------------------------------------------------------ plan
def test_modelscope_weights_land_once_on_the_shared_file_system(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "modelscope://modelscope/Llama-2-70b-ms@v1.0.1")
    w = plan.weights
    assert plan.storage.kind == "extreme-nas" and w is not None
    assert (w.source_kind, w.model_id, w.revision, w.uri) == (
        "modelscope", "modelscope/Llama-2-70b-ms", "v1.0.1", "modelscope://modelscope/Llama-2-70b-ms@v1.0.1")
    assert w.landing_path == "/mnt/shared/weights/modelscope/Llama-2-70b-ms@v1.0.1"
    assert w.shared and w.fetches == 1 and (w.bucket, w.prefix, w.endpoint) == ("", "", "")
    # parameters x 2 bytes (bf16), labelled an estimate
    assert w.size_bytes == plan.model.parameters * 2 and w.size_basis.startswith("ESTIMATE")
    decision = next(d for d in plan.decisions if d.topic == "base weights")
    assert "fetched once" in decision.reason and "modelscope download --model modelscope/Llama-2-70b-ms" in \
        decision.reason and "ESTIMATE" in decision.reason
    assert "pin a tag" not in decision.reason  # pinned
    data = json.loads(plan.to_json())
    assert data["weights"]["landing_path"] == w.landing_path


def test_an_unpinned_modelscope_source_defaults_to_master_and_says_so(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "modelscope://Qwen/Qwen2-72B")
    assert plan.weights.revision == "master" and plan.weights.uri.endswith("@master")
    assert "pin a tag or commit" in next(d for d in plan.decisions if d.topic == "base weights").reason


def test_oss_weights_land_under_the_bucket_and_prefix(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "oss://my-models/llama-2-70b/hf")
    w = plan.weights
    assert (w.source_kind, w.bucket, w.prefix, w.uri) == ("oss", "my-models", "llama-2-70b/hf/",
                                                           "oss://my-models/llama-2-70b/hf/")
    assert w.landing_path == "/mnt/shared/weights/oss/my-models/llama-2-70b/hf"
    assert w.endpoint == "oss-cn-wulanchabu-internal.aliyuncs.com"


def test_storage_is_sized_for_the_weights(tmp_path: Path) -> None:
    # Extreme NAS: 1024 GiB by default, more when 1.3 x the weights need it (a 500B model: ~931 GiB of bf16 weights)
    small = _plan(tmp_path, "oss://my-models/llama-2-70b/")
    assert small.storage.capacity_gib == 1024
    big = api.plan(_spec(tmp_path, """
        name: wts-big
        region: cn-wulanchabu
        model: {parameters: 500B, weights: "oss://my-models/big/"}
        parallelism: {zero_stage: 3}
        """))
    need = big.weights.size_bytes * 1.3 / 2**30
    assert big.storage.kind == "extreme-nas" and big.storage.capacity_gib >= need > 1024
    # CPFS with a dataset: (dataset + weights) x 1.3, in 1200 GiB steps
    cpfs = _plan(tmp_path, "oss://my-models/llama-2-70b/",
                 "storage: {dataset: {source: 'oss://corpus/tok/', size: 4500GiB}}\n")
    no_w = api.plan(_spec(tmp_path, BASE.format(name="wts", weights="x").replace(', weights: "x"', "")
                          + "storage: {dataset: {source: 'oss://corpus/tok/', size: 4500GiB}}\n", "nw.yaml"))
    assert cpfs.storage.kind == no_w.storage.kind == "cpfs"
    assert cpfs.storage.capacity_gib >= (4500 * 2**30 + cpfs.weights.size_bytes) * 1.3 / 2**30
    assert cpfs.storage.capacity_gib > no_w.storage.capacity_gib
    # a fixed capacity the weights do not fit in is a plan error on storage.capacity
    with pytest.raises(SpecErrors) as e:
        _plan(tmp_path, "oss://my-models/llama-2-70b/", "storage: {shared: extreme-nas, capacity: 100GiB}\n")
    assert [p.path for p in e.value.problems] == [("storage", "capacity")]
    assert e.value.problems[0].code == refusals.WeightsOverCapacity.code
    assert dict(e.value.problems[0].fields)["capacity_gib"] == 100


def test_several_ecs_nodes_without_shared_storage_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecErrors) as e:
        _plan(tmp_path, "modelscope://Qwen/Qwen2-72B", "storage: {shared: none}\n")
    (p,) = e.value.problems
    assert p.path == ("storage", "shared") and p.code == refusals.WeightsNeedShared.code
    assert dict(p.fields)["nodes"] > 1 and "storage.shared: auto" in p.hint


def test_modelscope_without_egress_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecErrors) as e:
        _plan(tmp_path, "modelscope://Qwen/Qwen2-72B", "network: {egress: none}\n")
    (p,) = e.value.problems
    assert p.path == ("model", "weights") and "egress" in p.message and "oss://" in p.hint
    # OSS weights need no internet: the internal endpoint
    assert _plan(tmp_path, "oss://my-models/x/", "network: {egress: none}\n").weights is not None


def test_one_node_without_shared_storage_keeps_the_weights_on_its_disk(tmp_path: Path) -> None:
    plan = api.plan(Path(__file__).resolve().parents[1] / "examples" / "finetune-7b.yaml")
    w = plan.weights
    assert plan.storage.kind == "none" and not w.shared and w.fetches == 1
    assert w.landing_path == "/mnt/local/weights/modelscope/Llama-2-7b-ms@master"
    assert not [x for x in plan.warnings if isinstance(x, (warns.WeightsPerNode, warns.WeightsDiskTight))]  # 12.5 GiB
    # fits on the 200 GiB system disk


def test_lingjun_nodes_each_fetch_the_weights_with_a_warning(tmp_path: Path) -> None:
    plan = api.plan(_spec(tmp_path, f"""
        name: lj-w
        region: cn-wulanchabu
        model: {{preset: llama-2-70b, tokens: 20B, weights: "oss://my-models/llama-2-70b/"}}
        compute: {{platform: lingjun, image_id: {IMAGE}, nodes: 4}}
        """))
    assert plan.weights.fetches == 4 and not plan.weights.shared
    assert warns.WeightsPerNode(4, plan.weights.size_bytes) in plan.warnings


def test_specs_without_weights_keep_their_digest_and_plan_json(tmp_path: Path) -> None:
    plan = api.plan(Path(__file__).resolve().parents[1] / "examples" / "pretrain-70b.yaml")
    assert plan.weights is None and "weights" not in json.loads(plan.to_json())


def test_plan_text_and_markdown_show_where_the_weights_land(tmp_path: Path) -> None:
    from generator.present import markdown as report_markdown
    from generator.present import text as report

    plan = _plan(tmp_path, "modelscope://Qwen/Qwen2-72B@v1")
    text = report.plan_text(plan)
    assert "weights      modelscope://Qwen/Qwen2-72B@v1 -> /mnt/shared/weights/Qwen/Qwen2-72B@v1" in text
    assert "(ESTIMATE), fetched once" in text
    md = report_markdown.plan_markdown(plan)
    assert "| base weights | `modelscope://Qwen/Qwen2-72B@v1` at `/mnt/shared/weights/Qwen/Qwen2-72B@v1`" in md


# ------------------------------------------------------------------------------------------------ program
def _graph(tmp_path: Path, body: str):
    return api.preview(_spec(tmp_path, body)).graph


def test_oss_weights_get_a_read_only_policy_on_exactly_their_folder(tmp_path: Path) -> None:
    g = _graph(tmp_path, BASE.format(name="wts", weights="oss://my-models/llama-2-70b/"))
    policies = {r.get("policy_name"): json.loads(r.get("policy_document")) for r in g.of_type(POLICY)}
    assert policies["wts-weights"]["Statement"] == [
        {"Effect": "Allow", "Action": ["oss:GetObject"], "Resource": ["acs:oss:*:*:my-models/llama-2-70b/*"]},
        {"Effect": "Allow", "Action": ["oss:ListObjects"], "Resource": ["acs:oss:*:*:my-models"],
         "Condition": {"StringLike": {"oss:Prefix": ["llama-2-70b/*"]}}},
    ]
    # the checkpoint policy does not reach the weights' bucket
    assert "my-models" not in json.dumps(policies["wts-checkpoints"])
    attached = {r.get("policy_name"): r.get("role_name") for r in g.of_type(ROLE_ATTACHMENT)}
    assert attached["wts-weights"] == "wts-node"
    # the facts carry the landing path and the script; the nodes' user data does not grow with them
    facts = json.loads(g.one(FACTS).get("content"))
    assert facts["weights"]["dir"] == "/mnt/shared/weights/oss/my-models/llama-2-70b"
    assert facts["weights"]["script"].startswith("#!/bin/bash\n")
    for r in g.of_type(INSTANCE):
        packed = base64.b64decode(r.get("user_data"))  # gzip-compressed (docs/bootstrap.md)
        user_data = gzip.decompress(packed).decode()
        assert "/usr/local/bin/trainstack-weights" in user_data and "my-models" not in user_data
        assert len(packed) <= 16 * 1024


def test_modelscope_weights_get_no_oss_grant(tmp_path: Path) -> None:
    g = _graph(tmp_path, BASE.format(name="wts", weights="modelscope://Qwen/Qwen2-72B"))
    assert {r.get("policy_name") for r in g.of_type(POLICY)} == {"wts-checkpoints"}


def test_lingjun_oss_weights_policy_goes_to_the_ram_user_and_the_script_into_user_data(tmp_path: Path) -> None:
    result = api.render_stack(_spec(tmp_path, f"""
        name: lj-w
        region: cn-wulanchabu
        model: {{preset: llama-2-70b, tokens: 20B, weights: "oss://my-models/llama-2-70b/"}}
        compute: {{platform: lingjun, image_id: {IMAGE}, nodes: 4}}
        checkpoints: {{enabled: false}}
        """), tmp_path / "stack")
    g = api.preview(result.dest).graph
    assert {r.get("policy_name") for r in g.of_type(POLICY)} == {"lj-w-weights"}
    assert [r.get("policy_name") for r in g.of_type(USER_ATTACHMENT)] == ["lj-w-weights"]
    script = (result.dest / "node-init.sh").read_text()
    assert "cat > /usr/local/bin/trainstack-weights <<'WEIGHTS'" in script and 'ROLE=""' in script
    assert "TRAINSTACK_WEIGHTS_DIR=/mnt/local/weights/oss/my-models/llama-2-70b" in script
    assert len(userdata.wrapped_user_data("lingjun", script).encode()) <= 16 * 1024
    subprocess.run(["bash", "-n", str(result.dest / "node-init.sh")], check=True)


# ------------------------------------------------------------------------------------------------ the script
FAKE_MODELSCOPE = r"""#!/bin/bash
# fake `modelscope download --model M --revision R --local_dir D`: counts calls, writes two files slowly
set -eu
[ "$1" = download ] || exit 2
while [ $# -gt 0 ]; do case "$1" in --local_dir) dir="$2"; shift ;; --model) model="$2"; shift ;;
  --revision) rev="$2"; shift ;; esac; shift; done
echo "$model@$rev" >> "$FAKE_LOG"
[ -z "${FAKE_FAIL:-}" ] || exit 1
mkdir -p "$dir"; echo '{"model_type": "llama"}' > "$dir/config.json"; sleep 1
echo weights > "$dir/model.safetensors"
"""
FAKE_CURL = r"""#!/bin/bash
# fake metadata service: a token for PUT api/token, the role's STS credentials for security-credentials/ROLE
case "$*" in
  *api/token*) echo token-123 ;;
  *security-credentials/wts-node*) echo '{"AccessKeyId": "STS.id", "AccessKeySecret": "sec", "SecurityToken": "sts-tok"}' ;;
  *) exit 22 ;;
esac
"""


class FakeOss(BaseHTTPRequestHandler):
    """GetBucket (ListObjects, V1: prefix, marker, max-keys) and GetObject of the objects in ``store``; every request
    must carry the V1 signature oss2 computes for ``creds`` (and their STS token, when they have one)."""

    protocol_version = "HTTP/1.1"
    store: ClassVar[dict[str, bytes]] = {}
    creds: ClassVar[tuple[str, str, str | None]] = ("", "", None)
    seen: ClassVar[list[str]] = []

    def log_message(self, *args: object) -> None:
        pass

    def reply(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        import oss2.auth
        import oss2.credentials
        import oss2.http

        host = self.headers.get("Host", "")
        bucket = host.split(".", 1)[0]
        url = urllib.parse.urlsplit(self.path)
        key = urllib.parse.unquote(url.path.lstrip("/"))
        params = {k: v[0] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        key_id, secret, token = self.creds
        auth = oss2.auth.ProviderAuth(oss2.credentials.StaticCredentialsProvider(key_id, secret, token))
        req = oss2.http.Request("GET", f"https://{host}{self.path}", params=params, headers=dict(self.headers.items()))
        want = auth._ProviderAuth__make_signature(req, bucket, key, auth.credentials_provider.get_credentials())
        if self.headers.get("Authorization") != f"OSS {key_id}:{want}" or self.headers.get("x-oss-security-token") != token:
            self.seen.append(f"403 {key}")
            return self.reply(403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>")
        self.seen.append(f"GET {bucket}/{key}?{url.query}" if not key else f"GET {bucket}/{key}")
        if key:
            return self.reply(200, self.store[key]) if key in self.store else self.reply(404, b"<Error><Code>NoSuchKey</Code></Error>")
        keys = sorted(k for k in self.store if k.startswith(params.get("prefix", "")) and k > params.get("marker", ""))
        page, more = keys[:int(params.get("max-keys", "1000"))], len(keys) > int(params.get("max-keys", "1000"))
        items = "".join(f"<Contents><Key>{k}</Key><Size>{len(self.store[k])}</Size></Contents>" for k in page)
        self.reply(200, ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://doc.oss-cn-hangzhou.aliyuncs.com">'
                         f"<IsTruncated>{'true' if more else 'false'}</IsTruncated>{items}</ListBucketResult>").encode())


@pytest.fixture
def oss() -> Iterator[tuple[str, type[FakeOss]]]:
    FakeOss.store, FakeOss.seen, FakeOss.creds = {}, [], ("STS.id", "sec", "sts-tok")
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOss)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", FakeOss
    server.shutdown()


def _bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("modelscope", FAKE_MODELSCOPE), ("curl", FAKE_CURL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return bin_dir


def _script(tmp_path: Path, weights: str) -> Path:
    plan = _plan(tmp_path, weights)
    path = tmp_path / "trainstack-weights"
    path.write_text(render_files.weights_script(plan))
    path.chmod(0o755)
    return path


def _env(tmp_path: Path, dest: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PATH": f"{_bin(tmp_path)}:{os.environ['PATH']}", "FAKE_LOG": str(tmp_path / "calls.log"),
            "TRAINSTACK_WEIGHTS_DIR": str(dest), "TRAINSTACK_WEIGHTS_MOUNT": "", "TRAINSTACK_WEIGHTS_POLL": "0.2",
            "TRAINSTACK_ETC": str(tmp_path / "etc"), **extra}


def _two_nodes(script: Path, env: dict[str, str], nodes: int = 2) -> list[subprocess.CompletedProcess]:
    procs = [subprocess.Popen(["bash", str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(nodes)]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=60)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def test_the_script_passes_bash_n_and_shellcheck_when_available(tmp_path: Path) -> None:
    for weights in ("modelscope://Qwen/Qwen2-72B", "oss://my-models/llama-2-70b/"):
        script = _script(tmp_path, weights)
        subprocess.run(["bash", "-n", str(script)], check=True)
        if shutil.which("shellcheck"):
            subprocess.run(["shellcheck", "-S", "warning", str(script)], check=True)


def test_two_nodes_download_modelscope_weights_once_and_both_see_them(tmp_path: Path) -> None:
    script = _script(tmp_path, "modelscope://Qwen/Qwen2-72B@v1.0")
    dest = tmp_path / "shared" / "weights" / "Qwen" / "Qwen2-72B@v1.0"
    runs = _two_nodes(script, _env(tmp_path, dest))
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert (tmp_path / "calls.log").read_text() == "Qwen/Qwen2-72B@v1.0\n"  # one download
    assert (dest / "model.safetensors").read_text() == "weights\n" and (dest / "config.json").exists()
    assert "source=modelscope://Qwen/Qwen2-72B@v1.0" in (dest / ".trainstack-weights-complete").read_text()
    logs = "".join(r.stderr for r in runs)
    assert "this node fetches modelscope://Qwen/Qwen2-72B@v1.0" in logs and "waiting for" in logs
    assert sorted(p.name for p in dest.parent.iterdir()) == ["Qwen2-72B@v1.0"]  # no lock or partial folder left
    # a later run (the next trainstack-launch) finds them and downloads nothing
    again = subprocess.run(["bash", str(script)], env=_env(tmp_path, dest), capture_output=True, text=True, check=False)
    assert again.returncode == 0 and "is ready" in again.stderr
    assert (tmp_path / "calls.log").read_text().count("\n") == 1


def test_two_nodes_copy_oss_weights_once_with_the_role_credentials(tmp_path: Path, oss) -> None:
    url, fake = oss
    fake.store = {"llama-2-70b/": b"", "llama-2-70b/model.safetensors": b"weights\n",
                  "llama-2-70b/sub/config.json": b"{}", "llama-2-70bx/other": b"not ours"}
    script = _script(tmp_path, "oss://my-models/llama-2-70b/")
    dest = tmp_path / "shared" / "weights" / "oss" / "my-models" / "llama-2-70b"
    runs = _two_nodes(script, _env(tmp_path, dest, TRAINSTACK_OSS_URL=url))
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    # one node listed and fetched, signed with the role's STS credentials (the fake refuses anything else)
    assert [s for s in fake.seen if not s.startswith("GET my-models/?")] == [
        "GET my-models/llama-2-70b/model.safetensors", "GET my-models/llama-2-70b/sub/config.json"]
    assert (dest / "model.safetensors").read_bytes() == b"weights\n" and (dest / "sub" / "config.json").exists()
    assert not (dest.parent / "llama-2-70bx").exists() and (dest / ".trainstack-weights-complete").exists()
    assert "sts-tok" not in "".join(r.stderr + r.stdout for r in runs)  # no secret in the logs


def test_oss_listing_pages_are_followed_and_a_second_attempt_keeps_what_the_first_copied(tmp_path: Path, oss) -> None:
    url, fake = oss
    fake.store = {f"w/part-{i:04d}": b"x" * i for i in range(1, 1203)}  # two pages of 1000
    script = _script(tmp_path, "oss://my-models/w/")
    dest = tmp_path / "shared" / "w"
    dest.mkdir(parents=True)
    run = subprocess.run(["bash", str(script)], env=_env(tmp_path, dest, TRAINSTACK_OSS_URL=url), capture_output=True,
                         text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in dest.iterdir() if not p.name.startswith(".")) == sorted(k[2:] for k in fake.store)
    assert sum(s.startswith("GET my-models/?") for s in fake.seen) == 2


def test_a_refused_oss_request_fails_the_fetch_naming_the_code(tmp_path: Path, oss) -> None:
    url, fake = oss
    fake.store = {"w/a": b"a"}
    fake.creds = ("STS.id", "another-secret", "sts-tok")  # the fake expects other credentials: every signature fails
    script = _script(tmp_path, "oss://my-models/w/")
    dest = tmp_path / "shared" / "w"
    run = subprocess.run(["bash", str(script)], env=_env(tmp_path, dest, TRAINSTACK_OSS_URL=url,
                         TRAINSTACK_WEIGHTS_RETRY_PAUSE="0"), capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 1 and "HTTP 403 SignatureDoesNotMatch" in run.stderr and not dest.exists()


def test_many_nodes_racing_download_once(tmp_path: Path) -> None:
    """A node that loses the race just as the winner finishes re-checks the marker after taking the lock."""
    script = _script(tmp_path, "modelscope://Qwen/Qwen2-72B@v1.0")
    dest = tmp_path / "shared" / "w"
    runs = _two_nodes(script, _env(tmp_path, dest, TRAINSTACK_WEIGHTS_POLL="0.05"), nodes=6)
    assert [r.returncode for r in runs] == [0] * 6, [r.stderr for r in runs]
    assert (tmp_path / "calls.log").read_text() == "Qwen/Qwen2-72B@v1.0\n"


def test_a_failed_download_releases_the_lock_and_the_next_run_retries(tmp_path: Path) -> None:
    script = _script(tmp_path, "modelscope://Qwen/Qwen2-72B@v1.0")
    dest = tmp_path / "shared" / "w"
    env = _env(tmp_path, dest, FAKE_FAIL="1", TRAINSTACK_WEIGHTS_RETRY_PAUSE="0")
    failed = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert failed.returncode == 1 and "could not fetch" in failed.stderr
    assert (tmp_path / "calls.log").read_text().count("\n") == 3  # three attempts
    assert not dest.exists() and not Path(f"{dest}.lock").exists()
    ok = subprocess.run(["bash", str(script)], env=_env(tmp_path, dest), capture_output=True, text=True, check=False)
    assert ok.returncode == 0 and (dest / "config.json").exists()


def test_a_stale_lock_is_taken_over_and_a_live_one_is_waited_for_until_the_timeout(tmp_path: Path) -> None:
    script = _script(tmp_path, "modelscope://Qwen/Qwen2-72B@v1.0")
    dest = tmp_path / "shared" / "w"
    lock = Path(f"{dest}.lock")
    lock.mkdir(parents=True)
    (lock / "owner").write_text("node-7 pid 1\n")
    waited = subprocess.run(["bash", str(script)], env=_env(tmp_path, dest, TRAINSTACK_WEIGHTS_TIMEOUT="1"),
                            capture_output=True, text=True, timeout=60, check=False)
    assert waited.returncode == 1 and "gave up after" in waited.stderr and "node-7 pid 1" in waited.stderr
    dead = Path(f"{dest}.partial.node-7.1")  # what the dead node had downloaded
    dead.mkdir()
    (dead / "half.safetensors").write_text("half")
    old = lock / "owner"
    os.utime(old, (1, 1))
    os.utime(lock, (1, 1))
    took = subprocess.run(["bash", str(script)], env=_env(tmp_path, dest), capture_output=True, text=True, timeout=60, check=False)
    assert took.returncode == 0, took.stderr
    assert "no heartbeat" in took.stderr and (dest / "config.json").exists() and not lock.exists()
    assert sorted(p.name for p in dest.parent.iterdir()) == ["w"]  # the dead node's partial folder is gone


def test_every_character_an_oss_folder_may_have_reaches_oss_unchanged(tmp_path: Path, oss) -> None:
    url, fake = oss
    fake.store = {"v1=a+b/x_y.z-w/model": b"m", "v1=a+b/x_y.z-wx/no": b"n"}
    script = _script(tmp_path, "oss://my-models/v1=a+b/x_y.z-w/")
    dest = tmp_path / "shared" / "w"
    run = subprocess.run(["bash", str(script)], env=_env(tmp_path, dest, TRAINSTACK_OSS_URL=url), capture_output=True,
                         text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    assert "GET my-models/v1=a+b/x_y.z-w/model" in fake.seen and sorted(p.name for p in dest.iterdir()) == [
        ".trainstack-weights-complete", "model"]


def test_lingjun_nodes_copy_oss_weights_with_the_installed_access_key(tmp_path: Path, oss) -> None:
    url, fake = oss
    fake.store, fake.creds = {"llama-2-70b/m": b"m"}, ("LTAIid", "ak-secret", None)
    plan = api.plan(_spec(tmp_path, f"""
        name: lj-w
        region: cn-wulanchabu
        model: {{preset: llama-2-70b, tokens: 20B, weights: "oss://my-models/llama-2-70b/"}}
        compute: {{platform: lingjun, image_id: {IMAGE}, nodes: 4}}
        """))
    script = tmp_path / "trainstack-weights"
    script.write_text(render_files.weights_script(plan))
    dest = tmp_path / "local" / "w"
    missing = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60,
                             env=_env(tmp_path, dest, TRAINSTACK_WEIGHTS_RETRY_PAUSE="0"), check=False)
    assert missing.returncode == 1 and "no " + str(tmp_path / "etc") + "/oss-credentials" in missing.stderr
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "oss-credentials").write_text("OSS_ACCESS_KEY_ID=LTAIid\nOSS_ACCESS_KEY_SECRET=ak-secret\n")
    ok = subprocess.run(["bash", str(script)], env=_env(tmp_path, dest, TRAINSTACK_OSS_URL=url), capture_output=True,
                        text=True, timeout=60, check=False)
    assert ok.returncode == 0, ok.stderr
    # signed with the AccessKey and no STS token (the fake refuses a request with one)
    assert "GET my-models/llama-2-70b/m" in fake.seen and (dest / "m").read_bytes() == b"m"
    assert "ak-secret" not in ok.stderr


def test_modelscope_s_cli_comes_hash_pinned_from_the_catalog_and_oss_scripts_carry_none_of_it(tmp_path: Path) -> None:
    """No unpinned install: without a modelscope in the image, the script installs exactly the catalog's
    modelscope_wheels.csv (pip --require-hashes, pure-Python wheels) into a folder of its own; an OSS script has no
    ModelScope part at all."""
    from generator.catalog import runtime

    text = _script(tmp_path, "modelscope://Qwen/Qwen2-72B@v1.0").read_text()
    installs = [line for line in text.splitlines() if "pip install" in line]
    assert installs and all("--require-hashes --only-binary=:all:" in line for line in installs), installs
    body = text.split("<<'MODELSCOPE_REQUIREMENTS'\n", 1)[1].split("MODELSCOPE_REQUIREMENTS\n", 1)[0]
    assert body == runtime.modelscope_requirements() and body.startswith("modelscope==")
    assert all(w.file.endswith("-py3-none-any.whl") for w in runtime.modelscope_wheels())
    assert 'PIPDIR="${TRAINSTACK_WEIGHTS_PIPDIR:-/opt/trainstack/modelscope}"' in text
    (tmp_path / "oss").mkdir()
    oss = _script(tmp_path / "oss", "oss://my-models/llama-2-70b/").read_text()
    assert "MODELSCOPE" not in oss and "pip install" not in oss and "MODEL_ID" not in oss


def test_the_pinned_modelscope_is_installed_once_with_a_python_of_3_9_or_later(tmp_path: Path) -> None:
    """On a node without modelscope: the first Python 3.9+ on PATH installs the pinned set, once (a second fetch
    finds the same requirements in PIPDIR and installs nothing)."""
    script = _script(tmp_path, "modelscope://Qwen/Qwen2-72B@v1.0")
    bin_dir = tmp_path / "pybin"
    bin_dir.mkdir()
    (tmp_path / "fake-modelscope").write_text(FAKE_MODELSCOPE)
    real = sys.executable
    (bin_dir / "python3").write_text(
        "#!/bin/bash\n"
        'if [ "$1 $2 $3" = "-m pip install" ]; then\n'
        '  echo "pip $*" >> "$FAKE_PIP_LOG"\n'
        '  while [ $# -gt 0 ]; do case "$1" in --target) t="$2"; shift ;; esac; shift; done\n'
        '  mkdir -p "$t/bin" && cp "$FAKE_MODELSCOPE" "$t/bin/modelscope" && chmod 0755 "$t/bin/modelscope"; exit 0\n'
        "fi\n"
        f'exec "{real}" "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    pipdir = tmp_path / "pipdir"
    for attempt in (1, 2):
        dest = tmp_path / f"dest{attempt}"
        env = {**_env(tmp_path, dest), "PATH": f"{bin_dir}:/usr/bin:/bin", "FAKE_PIP_LOG": str(tmp_path / "pip.log"),
               "FAKE_MODELSCOPE": str(tmp_path / "fake-modelscope"), "TRAINSTACK_WEIGHTS_PIPDIR": str(pipdir)}
        run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
        assert run.returncode == 0, run.stderr
        assert (dest / ".trainstack-weights-complete").exists()
    pip = (tmp_path / "pip.log").read_text().splitlines()
    assert len(pip) == 1 and "--require-hashes" in pip[0] and f"--target {pipdir} -r " in pip[0]
