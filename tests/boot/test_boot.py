"""Booted nodes: the generated node-init.sh of examples/pretrain-70b.yaml, run unchanged on simulated fresh ECS
nodes (tests/boot/sandbox.py): the happy path, a reboot without user data, a second run of the user data, a spot
notice reaching real torchrun workers, checkpoints reaching a signature-checking OSS, a missing role, a failed
step, a driver that does not answer and a stalled metadata call. Marker ``boot``; needs root and ``unshare``."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import textwrap
import time
from pathlib import Path

import pytest

from generator import api
from generator.catalog import runtime as node_runtime
from generator.render import files as render_files
from tests.boot.sandbox import Node, facts_for, have_sandbox

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.boot, pytest.mark.skipif(bool(have_sandbox()), reason=have_sandbox() or "ok")]

PLAN = api.plan(ROOT / "examples" / "pretrain-70b.yaml")
SCRIPT = api.render_files(PLAN, "examples/pretrain-70b.yaml")["node-init.sh"]
K = PLAN.checkpoints
BUCKET_HOST = f"{K.bucket}.{K.internal_endpoint}"
INSTALLED = ("trainstack-boot", "trainstack-launch", "trainstack-spot-watcher", "trainstack-facts")


PUBLISHED = f'ERDMA_INSTALLER_SHA256="{node_runtime.downloads()["erdma-installer"].sha256}"'


def user_data(rank: int, erdma_sha256: str | None = None) -> str:
    """What the program gives rank ``rank`` (compute_ecs.py.j2's user_data(), before gzip), with the sha256 of the
    stand-in eRDMA installer in place of the published one (or ``erdma_sha256``)."""
    r = PLAN.compute.ranks[rank]
    sha = erdma_sha256 if erdma_sha256 is not None else hashlib.sha256(erdma_installer()).hexdigest()
    return (
        SCRIPT.replace(PUBLISHED, f'ERDMA_INSTALLER_SHA256="{sha}"')
        .replace("__TRAINSTACK_NODE_RANK__", str(r.rank))
        .replace("__TRAINSTACK_NODE_NAME__", r.name)
        .replace("__TRAINSTACK_NODE_SPOT__", "true" if r.spot else "false")
    )


def erdma_installer() -> bytes:
    """A stand-in for Alibaba's installer, the same bytes on every call (its sha256 goes into the user data)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        body = b'#!/bin/bash\ntouch "$STATE/erdma-installed"\n'
        info = tarfile.TarInfo("erdma_installer-1.5.7/install.sh")
        info.size, info.mode = len(body), 0o755
        tar.addfile(info, io.BytesIO(body))
    return gzip.compress(buf.getvalue(), mtime=0)


def make_node(tmp_path: Path, rank: int, **facts: object) -> Node:
    r = PLAN.compute.ranks[rank]
    node = Node(
        tmp_path / f"node{rank}",
        user_data(rank),
        role=f"{PLAN.name}-node",
        bucket_host=BUCKET_HOST,
        node_ip=r.private_ip,
        extra_ips=(PLAN.compute.ranks[0].private_ip,) if rank else (),
    )
    # the cluster facts as the program publishes them; the shared file system is a local folder here
    plan_facts = render_files.cluster_facts(PLAN)
    plan_facts["shared_fs"] = {"kind": "none", "address": "", "mount_path": "/mnt/shared"}
    node.put_object(K.bucket, K.facts_key, facts_for(plan_facts, **facts))
    (node.state / "mirror" / "erdma").mkdir(parents=True)
    (node.state / "mirror" / "erdma" / "erdma_installer-1.5.7.tar.gz").write_bytes(erdma_installer())
    return node


def spot_rank() -> int:
    return next(r.rank for r in PLAN.compute.ranks if r.spot)


def test_first_boot_ends_ready_with_every_metadata_call_tokened_and_every_oss_call_signed(
    tmp_path: Path,
) -> None:
    node = make_node(tmp_path, spot_rank())
    boot = node.boot("systemctl list-units >/dev/null 2>&1; sleep 1")
    assert boot.rc == 0, boot.output
    assert node.marker("bootstrap-done") and node.marker("bootstrap-failed") is None
    assert node.log("mtu").strip() == str(PLAN.network.mtu)  # ens5: not an eth* name (D8)
    requests = node.log("requests.log")
    assert "401" not in requests and f"oss GET {K.bucket}/{K.facts_key} 200" in requests
    assert (
        node.state / "erdma-installed"
    ).exists() and "mirror GET mirrors.cloud.aliyuncs.com/erdma/" in requests
    assert "systemctl enable trainstack-boot.service" in node.log("systemctl.log")
    assert "systemctl start trainstack-spot-watcher.service" in node.log("systemctl.log")
    assert node.disk("/etc/tmpfiles.d/trainstack.conf").read_text() == "d /run/trainstack 0755 root root -\n"
    launch_env = node.disk("/etc/trainstack/launch.env").read_text()
    assert "TRAINSTACK_CHECKPOINT_DIR=/mnt/shared/checkpoints/" in launch_env
    # trainstack-boot waits for its own tee at exit, so its lines ("node ready") are in init.log before node-init.sh's
    # last one
    init = node.disk("/var/log/trainstack/init.log").read_text().splitlines()
    done = f"trainstack: bootstrap of rank {spot_rank()} done"
    assert init[-1] == done and init.index("trainstack-boot: node ready") < init.index(done)


def test_the_installed_scripts_pass_shellcheck(tmp_path: Path) -> None:
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (.ci/run installs it)")
    node = make_node(tmp_path, 0)
    assert node.boot().rc == 0
    scripts = [node.disk(f"/usr/local/bin/{name}") for name in INSTALLED]
    user = tmp_path / "node-init.sh"
    user.write_text(user_data(0))
    proc = subprocess.run(
        ["shellcheck", "-S", "warning", "-s", "bash", str(user), *map(str, scripts)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout


def test_a_reboot_without_user_data_gives_a_working_node_again(tmp_path: Path) -> None:
    node = make_node(tmp_path, spot_rank())
    assert node.boot().rc == 0
    (node.state / "systemctl.log").unlink()
    boot = node.boot("ls /run/trainstack > $STATE/run-listing", user_data=False)  # systemd, no cloud-init
    assert node.marker("bootstrap-done"), boot.output
    assert node.log("mtu").strip() == str(PLAN.network.mtu)  # set again at this boot (D3)
    assert "systemctl start trainstack-spot-watcher.service" in node.log("systemctl.log")
    assert "bootstrap-done" in node.log("run-listing")


def test_a_second_run_of_the_user_data_changes_nothing_and_ends_ready(tmp_path: Path) -> None:
    node = make_node(tmp_path, 0)
    assert node.boot().rc == 0
    first = {name: node.disk(f"/usr/local/bin/{name}").read_bytes() for name in INSTALLED}
    boot = node.boot()
    assert boot.rc == 0 and node.marker("bootstrap-done"), boot.output
    assert {name: node.disk(f"/usr/local/bin/{name}").read_bytes() for name in INSTALLED} == first
    assert node.log("systemctl.log").count("enable trainstack-boot.service") == 2
    assert not (node.state / "reboot-requested").exists()


def test_a_failed_step_leaves_a_marker_naming_it_and_the_launcher_refuses(tmp_path: Path) -> None:
    node = make_node(tmp_path, 0)
    (node.state / "mirror" / "erdma" / "erdma_installer-1.5.7.tar.gz").unlink()  # the mirror dropped the file
    boot = node.boot("trainstack-launch worker.py; echo LAUNCH-RC=$?")
    assert boot.rc == 1
    failed = node.marker("bootstrap-failed")
    assert failed and "step=erdma" in failed and "erdma_installer-1.5.7.tar.gz" in failed, boot.output
    assert node.marker("bootstrap-done") is None
    assert "bootstrap failed in step erdma" in node.log("journal.log")
    assert "LAUNCH-RC=3" in boot.output and "this node is not ready" in boot.output


def test_the_erdma_installer_is_installed_only_with_the_published_sha256_https_first(tmp_path: Path) -> None:
    # the catalog row carries the sha256 Alibaba's eRDMA page publishes for 1.5.7; the stand-in file here has
    # another, so with the published value the node refuses it and installs nothing
    assert PUBLISHED in SCRIPT and "https://mirrors.cloud.aliyuncs.com/erdma/" in SCRIPT
    good = hashlib.sha256(erdma_installer()).hexdigest()
    node = make_node(tmp_path / "published", 0)
    (node.root / "user-data.sh").write_text(user_data(0, erdma_sha256=PUBLISHED.split('"')[1]))
    boot = node.boot()
    failed = node.marker("bootstrap-failed") or ""
    assert boot.rc == 1 and "step=erdma" in failed and f"has sha256 {good}, not the published" in failed, boot.output
    assert not (node.state / "erdma-installed").exists()
    # the file whose sha256 is the recorded one is installed, over HTTPS, and its sha256 is kept on the node
    node = make_node(tmp_path / "good", 0)
    boot = node.boot()
    assert boot.rc == 0 and "(as published)" in boot.output, boot.output
    assert node.disk("/var/lib/trainstack/erdma-installer.sha256").read_text() == f"{good}  erdma_installer-1.5.7.tar.gz\n"
    assert (node.state / "erdma-installed").exists() and "503 https" not in node.log("requests.log")
    # a mirror without HTTPS: the page's http:// URL, still checked by the sha256
    for sha, ok in ((good, True), ("0" * 64, False)):
        node = make_node(tmp_path / f"http-{sha[:4]}", 0)
        (node.state / "mirror-no-https").touch()
        (node.root / "user-data.sh").write_text(user_data(0, erdma_sha256=sha))
        boot = node.boot()
        requests = node.log("requests.log")
        assert "mirror GET mirrors.cloud.aliyuncs.com/erdma/erdma_installer-1.5.7.tar.gz 503 https" in requests
        assert "mirror GET mirrors.cloud.aliyuncs.com/erdma/erdma_installer-1.5.7.tar.gz 200" in requests, boot.output
        assert (node.state / "erdma-installed").exists() == ok and (boot.rc == 0) == ok, boot.output


def test_a_driver_that_does_not_answer_is_a_failed_bootstrap(tmp_path: Path) -> None:
    node = make_node(tmp_path, 0)
    (node.state / "driver-broken").touch()
    boot = node.boot()
    failed = node.marker("bootstrap-failed") or ""
    assert boot.rc == 1 and "step=driver" in failed and "nvidia-smi does not answer" in failed, boot.output


def test_no_driver_and_no_repository_is_a_failed_bootstrap_not_a_done_one(tmp_path: Path) -> None:
    node = make_node(tmp_path, 0)
    node.stub("nvidia-smi", None)
    boot = node.boot()
    failed = node.marker("bootstrap-failed") or ""
    assert boot.rc == 1 and "step=driver" in failed and node.marker("bootstrap-done") is None, boot.output
    assert "dnf install -y" in boot.output or "no repositories reachable" in boot.output


def test_a_missing_role_is_named_as_such(tmp_path: Path) -> None:
    node = make_node(tmp_path, 0)
    assert node.boot().rc == 0
    (node.root / "shared" / "checkpoints").mkdir()
    (node.state / "no-role").touch()
    boot = node.boot(
        "trainstack-facts fetch 2; echo FETCH-RC=$?; TRAINSTACK_SYNC_SETTLE=0 trainstack-ckpt-sync --once;"
        " echo SYNC-RC=$?",
        user_data=False,
    )
    assert "FETCH-RC=1" in boot.output and "has no RAM role pretrain-70b-node attached" in boot.output
    assert "SYNC-RC=1" in boot.output
    assert "no RAM role pretrain-70b-node attached" in (node.marker("ckpt-sync-failed") or "")
    assert "no RAM role" in node.log("journal.log") or "no RAM role" in boot.output


def test_a_node_without_its_role_fails_at_boot_naming_the_role(tmp_path: Path) -> None:
    node = make_node(tmp_path, 0)
    (node.state / "no-role").touch()
    boot = node.boot()
    failed = node.marker("bootstrap-failed") or ""
    assert boot.rc == 1 and "step=identity" in failed, boot.output
    assert "has no RAM role pretrain-70b-node attached" in failed and "after 3 attempts" in failed


def test_checkpoints_on_the_shared_folder_reach_oss_signed_and_only_once(tmp_path: Path) -> None:
    node = make_node(tmp_path, 0)
    ckpt = node.root / "shared" / "checkpoints" / "step-100"
    ckpt.mkdir(parents=True)
    big = os.urandom(1 << 20) * 65  # 65 MiB: a multipart upload
    (ckpt / "shard-0.distcp").write_bytes(big)
    (ckpt / "meta.json").write_text('{"step": 100}')
    (ckpt / ".metadata").write_bytes(b"dcp")
    when = time.time() - 120
    for name in ("shard-0.distcp", "meta.json", ".metadata"):  # one mtime: the markers still go after the shard
        os.utime(ckpt / name, (when, when))
    boot = node.boot(
        "TRAINSTACK_SYNC_SETTLE=0 trainstack-ckpt-sync --once; echo SYNC1=$?; "
        "TRAINSTACK_SYNC_SETTLE=0 trainstack-ckpt-sync --once; echo SYNC2=$?"
    )
    assert "SYNC1=0" in boot.output and "SYNC2=0" in boot.output, boot.output
    stored = node.state / "oss" / K.bucket / K.prefix / "step-100"
    assert (stored / "meta.json").read_text() == '{"step": 100}'
    assert (stored / "shard-0.distcp").read_bytes() == big
    requests = node.log("requests.log")
    assert "SignatureDoesNotMatch" not in requests and "?uploads" in requests
    assert (
        requests.count(f"oss PUT {K.bucket}/{K.prefix}step-100/meta.json 200") == 1
    )  # the second pass skips it
    done = [line.split()[2].split("?")[0] for line in requests.splitlines() if line.startswith("oss ") and
            (" PUT " in line and "partNumber" not in line or "?uploadId=" in line and " POST " in line)]
    assert done[-3:] == [f"{K.bucket}/{K.prefix}step-100/{n}" for n in ("shard-0.distcp", ".metadata", "meta.json")]
    assert "copied=0" in (node.marker("ckpt-sync-ok") or "")


def test_a_job_log_reaches_oss_through_the_nodes_one_client(tmp_path: Path) -> None:
    """`trainstack submit`'s job script copies its log with trainstack-ckpt-sync --put (the role's STS credentials
    through the hardened metadata service, signed), not with a downloaded ossutil."""
    node = make_node(tmp_path, 0)
    boot = node.boot(
        "echo 'step 1 loss 2.0' > /tmp/rank-0.log; "
        f"trainstack-ckpt-sync --put /tmp/rank-0.log oss://{K.bucket}/{K.prefix}_trainstack/jobs/j1/rank-0.log; "
        "echo PUT=$?; trainstack-ckpt-sync --put /tmp/rank-0.log s3://elsewhere/x; echo BAD=$?"
    )
    assert "PUT=0" in boot.output and "BAD=1" in boot.output, boot.output
    stored = node.state / "oss" / K.bucket / K.prefix / "_trainstack" / "jobs" / "j1" / "rank-0.log"
    assert stored.read_text() == "step 1 loss 2.0\n"
    assert "SignatureDoesNotMatch" not in node.log("requests.log")


def test_a_stalled_metadata_call_does_not_outlive_the_notice(tmp_path: Path) -> None:
    node = make_node(tmp_path, spot_rank())
    assert node.boot().rc == 0
    (node.state / "stall-metadata").touch()
    (node.state / "spot-notice").write_text("2026-12-01T12:05:00Z")
    start = time.monotonic()
    node.boot("TRAINSTACK_SPOT_POLL=1 timeout 20 trainstack-spot-watcher", user_data=False)
    assert node.marker("preempt") == "2026-12-01T12:05:00Z"
    assert "stalled" in node.log("requests.log") and time.monotonic() - start < 60


WORKER = textwrap.dedent("""\
    import os, signal, sys, time
    import torch, torch.distributed as dist
    stop = False
    def on_usr1(*_):
        global stop
        stop = True
    signal.signal(signal.SIGUSR1, on_usr1)
    dist.init_process_group("gloo")
    out = os.environ["OUT"]
    with open(f"{out}/starts-{os.environ['NODE_TAG']}", "a") as f:
        f.write(f"{dist.get_world_size()}\\n")
    step = 0
    while True:
        t = torch.ones(1)
        try:
            dist.all_reduce(t)
        except Exception:
            sys.exit(1)  # a peer left: torchrun restarts the workers on the nodes that remain
        step += 1
        # the signal is the channel under test; the file (written before it) must be there when it arrives
        if stop:
            seen = os.path.exists(os.environ.get("TRAINSTACK_PREEMPT_FILE", "/nonexistent"))
            with open(f"{out}/checkpoint-{os.environ['NODE_TAG']}", "w") as f:
                f.write(f"step={step} signal={stop} file={seen}\\n")
            sys.exit(0)
        if dist.get_world_size() == 1 and step > 20:
            with open(f"{out}/alone", "w") as f:
                f.write(str(step))
            sys.exit(0)
        time.sleep(0.1)
    """)


def test_a_spot_notice_reaches_real_torchrun_workers_and_the_rest_restart(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    rank = spot_rank()
    node = make_node(tmp_path, rank, nodes=2, min_nodes=1, max_nodes=2, gpus_per_node=1, world_size=2)
    out = node.root / "shared" / "out"
    out.mkdir(parents=True)
    (node.root / "shared" / "worker.py").write_text(WORKER)
    master = PLAN.compute.ranks[0].private_ip
    body = f"""
    export OUT=/mnt/shared/out TRAINSTACK_SPOT_POLL=1
    # rank 0's agent (on demand), hosting the rendezvous; this node joins it through trainstack-launch
    NODE_TAG=a TRAINSTACK_PREEMPT_FILE=/nonexistent torchrun --nnodes 1:2 --nproc-per-node 1 --rdzv-backend c10d \
      --rdzv-endpoint {master}:29500 --rdzv-id pretrain-70b --rdzv-conf is_host=true,last_call_timeout=2 \
      --max-restarts 3 /mnt/shared/worker.py > $STATE/agent-a.log 2>&1 &
    a=$!
    NODE_TAG=b trainstack-launch --rdzv-conf is_host=false,last_call_timeout=2 /mnt/shared/worker.py > $STATE/agent-b.log 2>&1 &
    b=$!
    for i in $(seq 120); do [ "$(cat /mnt/shared/out/starts-b 2>/dev/null)" = 2 ] && break; sleep 0.5; done
    sleep 2
    date -u +%Y-%m-%dT%H:%M:%SZ > $STATE/spot-notice   # Alibaba announces the reclaim
    for i in $(seq 60); do [ -e /mnt/shared/out/checkpoint-b ] && break; sleep 0.5; done
    wait $b; echo AGENT-B-RC=$?
    trainstack-launch /mnt/shared/worker.py; echo RELAUNCH-RC=$?
    for i in $(seq 120); do [ -e /mnt/shared/out/alone ] && break; sleep 0.5; done
    wait $a; echo AGENT-A-RC=$?
    """
    boot = node.boot(body, timeout=240)
    assert boot.rc == 0, boot.output
    log = node.log("agent-a.log") + node.log("agent-b.log")
    assert (out / "checkpoint-b").read_text().endswith("signal=True file=True\n"), (
        boot.output + log
    )  # SIGUSR1 reached it
    assert node.marker("preempt")
    # the agent was not killed by SIGUSR1 (rc 138): the watcher stopped it with SIGTERM after its workers saved
    assert "AGENT-B-RC=138" not in boot.output and "got signal: 15" in node.log("agent-b.log"), log
    journal = node.log("journal.log")
    assert "sent SIGUSR1 to the workers of torchrun" in journal and "this node leaves the job" in journal
    assert (
        "RELAUNCH-RC=3" in boot.output and "being reclaimed" in boot.output
    )  # a reclaimed node does not rejoin
    starts = (out / "starts-a").read_text().split()
    assert starts[0] == "2" and starts[-1] == "1", log  # rank 0's workers restarted without it: world size 1
    assert (out / "alone").exists() and "AGENT-A-RC=0" in boot.output, log


DNF_WITH_DRIVER = """#!/bin/bash
echo "dnf $*" >> "$STATE/dnf.log"
if [ "$1 $3" = "install nvidia-driver-550.163.01" ]; then  # the driver answers only once its module is loaded, after a reboot
  printf '#!/bin/bash\\n[ -e /run/nvidia-loaded ] || { echo "NVIDIA-SMI has failed"; exit 9; }\\necho "GPU 0: NVIDIA H20"\\n' \
    > /usr/local/bin/nvidia-smi
  chmod 0755 /usr/local/bin/nvidia-smi
fi
"""


def test_a_driver_install_reboots_once_and_the_next_boot_finishes(tmp_path: Path) -> None:
    node = make_node(tmp_path, 0)
    node.stub("nvidia-smi", None)
    node.stub("dnf", DNF_WITH_DRIVER)
    boot = node.boot()
    assert boot.rc == 0, boot.output
    dnf = node.log("dnf.log")
    assert "module enable -y nvidia-driver:550-dkms" in dnf  # the branch's stream, then the exact version
    assert "install -y nvidia-driver-550.163.01 nvidia-driver-cuda-550.163.01 kmod-nvidia-latest-dkms-550.163.01 " \
           "nvidia-fabric-manager-550.163.01" in dnf and "*" not in dnf
    assert (node.state / "reboot-requested").exists() and node.marker("bootstrap-done") is None
    assert "rebooting" in (node.marker("bootstrap-rebooting") or "")
    node.boot(user_data=False, pre="touch /run/nvidia-loaded")  # the module loads at this boot
    assert node.marker("bootstrap-done") and node.marker("bootstrap-failed") is None, node.log("journal.log")
