"""heal's rejoin (generator/live/jobs/rejoin.py): a running job of the stack is stopped and started again on its
remaining nodes and the re-created ones with its own script, a boot wait put first, its tags and a ClientToken of
its own; finished jobs are left alone."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

from generator.live.jobs.cluster import Cluster, Node
from generator.live.jobs.fake import RecordedEcsApi
from generator.live.jobs.rejoin import BOOT_WAIT_SECONDS, rejoin
from generator.live.jobs.request import TAG_JOB, client_token, script, submit_requests, tag_value

CLUSTER = Cluster(
    name="e2e-3",
    stack="dev",
    region="cn-hangzhou",
    platform="ecs",
    instance_type="ecs.gn7e-c16g1.32xlarge",
    gpus_per_node=8,
    rdma="",
    nodes=tuple(Node(r, f"e2e-3-node-00{r}", f"10.0.0.{10 + r}", f"i-new{r}") for r in range(3)),
    bucket="e2e-3-ckpt",
    prefix="checkpoints/",
    endpoint="oss-cn-hangzhou-internal.aliyuncs.com",
)


def _invocation(job: str, status: str, content: str) -> dict[str, Any]:
    return {
        "InvokeId": f"t-{job}",
        "CommandName": job,
        "CommandContent": content,
        "InvocationStatus": status,
        "Timeout": 7200,
        "CreationTime": "2026-12-01T00:00:00Z",
        "Tags": {"Tag": [{"TagKey": t["Key"], "TagValue": t["Value"]} for t in _tags(job)]},
        "InvokeInstances": {"InvokeInstance": [{"InstanceId": "i-new0"}, {"InstanceId": "i-old1"}]},
    }


def _tags(job: str) -> list[dict[str, str]]:
    req = submit_requests(CLUSTER, CLUSTER.nodes, job, ["train.py"])[0]
    return list(req.request["Tag"])


def test_a_running_job_restarts_at_full_size_and_a_finished_one_is_left_alone(tmp_path: Path) -> None:
    content = submit_requests(CLUSTER, CLUSTER.nodes, "run1", ["train.py", "--lr", "0.1"])[0].request
    running = _invocation("run1", "Running", content["CommandContent"])
    done = _invocation("run0", "Success", content["CommandContent"])
    (tmp_path / "DescribeInvocations.json").write_text(
        json.dumps({"TotalCount": 2, "Invocations": {"Invocation": [running, done]}})
    )
    (tmp_path / "StopInvocation.json").write_text("{}")
    (tmp_path / "RunCommand.json").write_text(json.dumps({"InvokeId": "t-rejoin", "CommandId": "c-1"}))
    api = RecordedEcsApi(tmp_path)
    said: list[str] = []
    assert rejoin(api, CLUSTER, [1], said.append) == ["t-rejoin"]
    runs = [body for action, body in api.calls if action == "RunCommand"]
    assert len(runs) == 1
    run = runs[0]
    stops = [body["InvokeId"] for action, body in api.calls if action == "StopInvocation"]
    assert stops == ["t-run1"]  # the running job only, stopped before the new call
    assert [a for a, _ in api.calls].index("StopInvocation") < [a for a, _ in api.calls].index("RunCommand")
    assert run["InstanceId"] == ["i-new0", "i-new1"] and run["Timeout"] == 7200 and run["Name"] == "run1"
    assert tag_value({"Tags": {"Tag": run["Tag"]}}, TAG_JOB) == "run1"
    assert run["ClientToken"] != client_token("run1", 0)  # not the submit's: Cloud Assistant would not run it
    sent = base64.b64decode(run["CommandContent"]).decode()
    original = base64.b64decode(content["CommandContent"]).decode()
    assert sent == f"TRAINSTACK_JOB_BOOT_WAIT={BOOT_WAIT_SECONDS}\n{original}"
    assert any("run1" in line and "rank(s) 0, 1" in line for line in said)


def test_no_healed_instance_no_call(tmp_path: Path) -> None:
    api = RecordedEcsApi(tmp_path)
    assert rejoin(api, CLUSTER, [], lambda _: None) == [] and api.calls == []


def test_job_sh_waits_for_the_bootstrap_only_when_told(tmp_path: Path) -> None:
    """The wait loop of job.sh, run under bash: with TRAINSTACK_JOB_BOOT_WAIT it waits for bootstrap-done."""
    body = script("job.sh")
    start = body.index("waited=0")
    loop = body[start : body.index("done\n", start) + 5]
    run = tmp_path / "run"
    run.mkdir()
    test = f'RUN_DIR={run}\nsleep() {{ touch {run}/bootstrap-done; }}\n{loop}echo "waited=$waited"\n'
    out = subprocess.run(["bash", "-c", test], env={"TRAINSTACK_JOB_BOOT_WAIT": "60", "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "waited=5"
    (run / "bootstrap-done").unlink()
    out = subprocess.run(["bash", "-c", test], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                         check=True)  # fmt: skip
    assert out.stdout.strip() == "waited=0" and not (run / "bootstrap-done").exists()
