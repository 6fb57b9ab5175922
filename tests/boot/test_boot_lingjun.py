"""Booted Lingjun nodes: the user data of a Lingjun node group (the small wrapper that unpacks the gzip+base64
node-init.sh, userdata.wrapped_user_data, the bytes the program gives the node group) run unchanged on a simulated
fresh node (tests/boot/sandbox.py). What differs from ECS: the rank comes from the host name the node group sets
(NAME-node-NNN), the hostfile lists host names, there are no cluster facts, no RAM role and no eRDMA install, and OSS
is reached with the RAM user's AccessKey that the operator installs in /etc/trainstack/oss-credentials (the fake OSS
then expects that key and no STS token). Marker ``boot``; needs root and ``unshare``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from generator import api
from generator.render import userdata
from tests.boot.sandbox import Node, have_sandbox

pytestmark = [pytest.mark.boot, pytest.mark.skipif(bool(have_sandbox()), reason=have_sandbox() or "ok")]

IMAGE = "i190982651690986913088"  # the image id of the provider's eflo examples
SPEC = f"""
name: lj-boot
region: cn-wulanchabu
model: {{preset: llama-2-70b, tokens: 20B, weights: "oss://my-models/llama-2-70b/"}}
compute: {{platform: lingjun, image_id: {IMAGE}, nodes: 4}}
checkpoints: {{enabled: false}}
"""
KEY = "LTAI5tFAKEkeyid0001 fake/secret+of-the-ram-user"
TORCHRUN = """#!/bin/bash
# stands in for torchrun: what trainstack-launch hands it
{ echo "ARGS=$*"; env | grep -E '^(OSS_ACCESS_KEY_ID|MASTER_ADDR|NODE_RANK)=' | sort; } > "$STATE/torchrun.log"
"""


@pytest.fixture(scope="module")
def plan_and_user_data(tmp_path_factory: pytest.TempPathFactory):
    spec = tmp_path_factory.mktemp("spec") / "spec.yaml"
    spec.write_text(textwrap.dedent(SPEC))
    plan = api.plan(spec)
    script = api.render_files(plan, str(spec))["node-init.sh"]
    return plan, userdata.wrapped_user_data("lingjun", script)


def make_node(tmp_path: Path, plan_and_user_data, hostname: str = "lj-boot-node-002", key: bool = True) -> Node:
    plan, user_data = plan_and_user_data
    w = plan.weights
    node = Node(tmp_path, user_data, role="none", bucket_host=f"{w.bucket}.{w.endpoint}", node_ip="10.8.0.12",
                hostname=hostname)
    node.put_object(w.bucket, w.prefix + "model.safetensors", b"weights\n")
    node.put_object(w.bucket, w.prefix + "cfg/config.json", b"{}")
    (node.state / "access-key").write_text(KEY)
    node.stub("torchrun", TORCHRUN)
    if key:  # the operator installs the RAM user's AccessKey (docs/bootstrap.md)
        key_id, secret = KEY.split()
        node.disk("/etc/trainstack/oss-credentials").parent.mkdir(parents=True, exist_ok=True)
        node.disk("/etc/trainstack/oss-credentials").write_text(
            f"OSS_ACCESS_KEY_ID={key_id}\nOSS_ACCESS_KEY_SECRET='{secret}'\n")
    return node


WAIT_WEIGHTS = "for i in $(seq 150); do [ -f {dest}/.trainstack-weights-complete ] && break; sleep 0.2; done"


def test_a_lingjun_node_boots_from_the_wrapper_takes_its_rank_from_its_host_name_and_fetches_the_weights(
    tmp_path: Path, plan_and_user_data
) -> None:
    plan, _ = plan_and_user_data
    dest = plan.weights.landing_path
    node = make_node(tmp_path, plan_and_user_data)
    boot = node.boot(WAIT_WEIGHTS.format(dest=dest) + f"\necho WEIGHTS=$(cat {dest}/model.safetensors) "
                     f"CONFIG=$(cat {dest}/cfg/config.json)\ntrainstack-launch train.py --lr 1; echo LAUNCH-RC=$?")
    assert boot.rc == 0, boot.output
    assert node.marker("bootstrap-done") and node.marker("bootstrap-failed") is None
    assert node.disk("/var/lib/trainstack/node-init.sh").exists()  # unpacked by the wrapper
    assert "NODE_RANK=2\n" in node.disk("/etc/trainstack/node.env").read_text()
    assert node.disk("/etc/trainstack/hostfile").read_text() == "".join(
        f"lj-boot-node-{i:03d} slots={plan.compute.gpus_per_node}\n" for i in range(4))
    assert "MASTER_ADDR=${MASTER_ADDR:-lj-boot-node-000}" in node.disk("/etc/trainstack/launch.env").read_text()
    assert "systemctl enable trainstack-boot.service" in node.log("systemctl.log")
    requests = node.log("requests.log")
    assert "mirror GET" not in requests and "security-credentials" not in requests  # no eRDMA, no RAM role
    # the weights, signed with the RAM user's AccessKey and no STS token (the fake refuses anything else)
    assert "403" not in requests and f"oss GET {plan.weights.bucket}/{plan.weights.prefix}model.safetensors 200" in requests
    assert "WEIGHTS=weights CONFIG={}" in boot.output
    # trainstack-launch: the job gets the AccessKey, rank and rendezvous host from the node's files
    assert "LAUNCH-RC=0" in boot.output, boot.output
    launched = node.log("torchrun.log")
    assert "OSS_ACCESS_KEY_ID=LTAI5tFAKEkeyid0001\n" in launched and "MASTER_ADDR=lj-boot-node-000\n" in launched
    assert "--rdzv-endpoint lj-boot-node-000:" in launched and launched.startswith("ARGS=--nnodes ")
    assert "fake/secret" not in node.disk("/var/log/trainstack/init.log").read_text()


def test_a_reboot_without_user_data_gives_a_working_lingjun_node_again(tmp_path: Path, plan_and_user_data) -> None:
    node = make_node(tmp_path, plan_and_user_data)
    assert node.boot().rc == 0
    again = node.boot(user_data=False)
    assert node.marker("bootstrap-done") and node.marker("bootstrap-failed") is None, again.output


def test_a_lingjun_host_name_without_a_rank_is_a_failed_bootstrap_naming_it(tmp_path: Path, plan_and_user_data) -> None:
    node = make_node(tmp_path, plan_and_user_data, hostname="localhost-7")
    boot = node.boot()
    failed = node.marker("bootstrap-failed") or ""
    assert boot.rc == 1 and "step=identity" in failed and "hostname localhost-7 is not lj-boot-node-NNN" in failed
    assert node.marker("bootstrap-done") is None and "bootstrap failed in step identity" in node.log("journal.log")


def test_without_the_access_key_the_weights_fetch_says_what_to_install(tmp_path: Path, plan_and_user_data) -> None:
    node = make_node(tmp_path, plan_and_user_data, key=False)
    boot = node.boot("sleep 2; trainstack-launch train.py; echo LAUNCH-RC=$?",
                     env={"TRAINSTACK_WEIGHTS_RETRY_PAUSE": "0"})
    assert boot.rc == 0 and node.marker("bootstrap-done"), boot.output  # the node is up; the job cannot start
    assert "no /etc/trainstack/oss-credentials: install the AccessKey of the RAM user" in boot.output
    assert "LAUNCH-RC=1" in boot.output and not node.log("torchrun.log")


CKPT_SPEC = f"""
name: lj-jobs
region: cn-wulanchabu
model: {{preset: llama-2-70b, tokens: 20B}}
compute: {{platform: lingjun, image_id: {IMAGE}, nodes: 4}}
"""


def test_a_lingjun_job_copies_its_log_with_the_client_it_carries_signed_with_the_access_key(tmp_path: Path) -> None:
    """`trainstack submit` on Lingjun: the node group's user data has no trainstack-ckpt-sync, so the job script
    carries it and job.sh runs its --put from a private folder, signed with the RAM user's AccessKey (the fake OSS
    refuses anything else); no ossutil is downloaded or run."""
    import json

    from generator.live.jobs import request as rq
    from generator.live.jobs.cluster import cluster_from_plan

    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent(CKPT_SPEC))
    plan = api.plan(spec)
    k = plan.checkpoints
    user_data = userdata.wrapped_user_data("lingjun", api.render_files(plan, str(spec))["node-init.sh"])
    node = Node(tmp_path / "n", user_data, role="none", bucket_host=f"{k.bucket}.{k.internal_endpoint}",
                node_ip="10.8.0.13", hostname="lj-jobs-node-001")
    (node.state / "access-key").write_text(KEY)
    key_id, secret = KEY.split()
    node.disk("/etc/trainstack/oss-credentials").parent.mkdir(parents=True, exist_ok=True)
    node.disk("/etc/trainstack/oss-credentials").write_text(
        f"OSS_ACCESS_KEY_ID={key_id}\nOSS_ACCESS_KEY_SECRET='{secret}'\n")
    node.stub("trainstack-launch-stub", "#!/bin/bash\necho \"step 1 of $*\"\nexit 4\n")
    node.stub("ossutil", "#!/bin/bash\necho OSSUTIL-RAN >> \"$STATE/ossutil.log\"\nexit 1\n")
    cluster = cluster_from_plan(json.loads(plan.to_json()), {"node_ids": [f"e01-lj{i}" for i in range(4)]})
    job = rq.job_script(cluster, cluster.nodes, "lj-jobs-1", ["train.py", "--lr", "1"])
    assert "ossutil" not in job and "TRAINSTACK_JOB_OSS_CLIENT=" in job
    (node.root / "job.sh").write_text(job)
    boot = node.boot("TRAINSTACK_LAUNCH=$(command -v trainstack-launch-stub) bash /var/lib/cloud-sim/job.sh; "
                     "echo JOB-RC=$?; ls /usr/local/bin/trainstack-ckpt-sync 2>&1 | tail -n 1")
    assert "JOB-RC=4" in boot.output, boot.output
    assert "No such file" in boot.output  # the node itself has no client: the job's copy was used
    stored = node.state / "oss" / k.bucket / cluster.log_prefix / "lj-jobs-1"
    assert "step 1 of train.py --lr 1" in (stored / "rank-1.log").read_text()
    status = json.loads((stored / "rank-1.exit.json").read_text())
    assert status["state"] == "finished" and status["exit_code"] == 4 and status["rank"] == "1"
    requests = node.log("requests.log")
    assert "403" not in requests and "security-credentials" not in requests
    assert not (node.state / "ossutil.log").exists()
    assert secret not in boot.output and "fake/secret" not in node.disk("/var/log/trainstack/init.log").read_text()
