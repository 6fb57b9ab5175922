"""``trainstack check``, ``submit``, ``jobs`` and ``logs`` on an ECS stack, each a subprocess, through the real SDK
HTTP path (alibabacloud-ecs20140526 and alibabacloud-oss-v2 over HTTP) to the fake OpenAPI endpoint
(``TRAINSTACK_ALIBABA_ENDPOINT``), after a real ``up`` on the Pulumi CLI and the fake provider: Cloud Assistant's
RunCommand reaches every node the fake cloud has, with no SSH and no key pair.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from conftest import Live, make_live

HEALTHY = "\n".join(
    "TRAINSTACK-CHECK " + json.dumps(line)
    for line in (
        {"check": "bootstrap", "ok": True, "detail": "bootstrap-done", "value": None},
        {"check": "gpus", "ok": True, "detail": "8 GPUs", "value": 8},
        {"check": "xid", "ok": True, "detail": "no XID in the kernel log since boot", "value": []},
        {"check": "dcgm", "ok": True, "detail": "dcgmi diag -r 1 passed", "value": None},
        {"check": "fabricmanager", "ok": True, "detail": "nvidia-fabricmanager active", "value": None},
    )
)


def _live(tmp_path: Path, pulumi_bin: Path, pulumi_home: Path, venv: Path) -> Live:
    lv = make_live(tmp_path, pulumi_bin, pulumi_home, "live-4.yaml")
    lv.share_venv(venv)
    return lv


def test_check_submit_jobs_logs_through_cloud_assistant_over_http(
    tmp_path: Path, pulumi_bin: Path, pulumi_home: Path, program_venv: Path
) -> None:
    live = _live(tmp_path, pulumi_bin, pulumi_home, program_venv)
    live.ok("up", str(live.spec), "--yes", "--skip-stock-check")
    node_ids = live.outputs()["node_ids"]
    assert len(node_ids) == 4
    sick = node_ids[2]
    live.openapi_control.write_text(
        json.dumps(
            {
                "commands": {
                    "*": {"exit_code": 0, "output": HEALTHY + "\nstep 10 loss 2.31\n"},
                    sick: {"exit_code": 0, "output": HEALTHY.replace('"value": 8', '"value": 7').replace(
                        '"check": "gpus", "ok": true', '"check": "gpus", "ok": false'
                    )},
                }
            }
        )
    )
    # check: rank 2 named and quarantined, exit 1
    before = len(live.openapi.calls)
    out = live.run("check", str(live.spec), "--json")
    assert out.returncode == 1, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["failed_ranks"] == [2]
    run = [c for c in live.openapi.calls[before:] if c["action"] == "RunCommand"]
    assert len(run) == 1
    sent = {k: v for k, v in run[0]["params"].items() if k.startswith("InstanceId")}
    assert sorted(sent.values()) == sorted(node_ids)
    # submit: the gate leaves rank 2 out, the job starts on the other 3 with the argv as data
    out = live.ok("submit", str(live.spec), "--yes", "--json", "--", "train.py", "$(touch /tmp/PWNED)")
    started = json.loads(out.stdout)
    assert started["ranks"] == [0, 1, 3] and started["left_out"] == [2]
    job = started["job"]
    job_run = [c for c in live.openapi.calls if c["action"] == "RunCommand"][-1]["params"]
    assert sick not in json.dumps(job_run) and job_run["Tag.3.Value"] == job
    script = base64.b64decode(job_run["CommandContent"]).decode()
    assert "touch" not in script and "TRAINSTACK_JOB_NNODES=3\n" in script
    # jobs: the stack's jobs, by their tags
    listed = json.loads(live.ok("jobs", str(live.spec), "--json").stdout)
    assert [j["job"] for j in listed] == [job] and listed[0]["nodes"] == 3
    # logs: the bucket (empty on the fake OSS) first, then Cloud Assistant's output
    logs = live.ok("logs", str(live.spec), job, "--rank", "1")
    assert "step 10 loss 2.31" in logs.stdout
    assert any(c["action"] == "ListObjectsV2" for c in live.openapi.calls)
