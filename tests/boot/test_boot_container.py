"""Booted ECS nodes with ``compute.container_image``: examples/pretrain-70b.yaml with a node image (compute.image_id)
and an ACR image pinned by digest, its node-init.sh run unchanged on a simulated fresh node (tests/boot/sandbox.py).
Docker cannot run inside the sandbox (no daemon, no registry, no GPUs), so ``docker`` is a fake on PATH that keeps
what it pulled and, for ``docker run``, records the options and runs the container's command on the node itself,
which is what --network host --pid host and the bind mounts at the same paths amount to; ``nvidia-container-cli``
is a stub too. ``torchrun`` is a stub that records what it was started with and its PID. A private Enterprise
Edition image (compute.container_registry_instance) is pulled only after a ``docker login`` to its registry with
the password that the fake Container Registry API (tests/boot/fakes.py, which checks the request's signature with
Alibaba's SDK) issued, given on standard input. Marker ``boot``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from generator import api
from generator.render import files as render_files
from tests.boot.sandbox import Node, facts_for, have_sandbox

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.boot, pytest.mark.skipif(bool(have_sandbox()), reason=have_sandbox() or "ok")]

DIGEST = "3f9b1c2d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff0"
IMAGE = f"registry.cn-wulanchabu.aliyuncs.com/ml-team/pytorch:2.6.0-cu124@sha256:{DIGEST}"
PULLED = f"registry-vpc.cn-wulanchabu.aliyuncs.com/ml-team/pytorch:2.6.0-cu124@sha256:{DIGEST}"
INSTANCE = "cri-kmsiwlxxdcvaduwb"
PRIVATE = f"acme-registry.cn-wulanchabu.cr.aliyuncs.com/ml-team/pytorch:2.6.0-cu124@sha256:{DIGEST}"
PRIVATE_REGISTRY = "acme-registry-vpc.cn-wulanchabu.cr.aliyuncs.com"

DOCKER = r"""#!/bin/bash
# fake docker: pull keeps the reference, image inspect finds it, run records its options and runs the command here
echo "docker $*" >> "$STATE/docker.log"
case "$1" in
  login) [ "$2 $4" = "--username --password-stdin" ] && [ $# = 5 ] || { echo "fake docker: login $2 $4?" >&2; exit 2; }
         [ "$3 $(cat)" = "$(cat "$STATE/acr-issued" 2>/dev/null)" ] || { echo "unauthorized: authentication required" >&2; exit 1; }
         echo "$5" >> "$STATE/logged-in" ;;
  logout) grep -vxF "$2" "$STATE/logged-in" > "$STATE/logged-in.new"; mv "$STATE/logged-in.new" "$STATE/logged-in" ;;
  pull) [ -e "$STATE/registry-down" ] && { echo "Error response from daemon: no route" >&2; exit 1; }
        case "$2" in *.cr.aliyuncs.com/*) grep -qxF "${2%%/*}" "$STATE/logged-in" 2>/dev/null ||
          { echo "Error response from daemon: pull access denied for ${2%%@*}" >&2; exit 1; } ;; esac
        echo "$2" >> "$STATE/pulled" ;;
  image) [ "$2" = inspect ] && grep -qxF "$3" "$STATE/pulled" 2>/dev/null ;;
  run) shift
    while [ $# -gt 0 ]; do
      case "$1" in
        --rm) shift ;;
        --name|--gpus|--network|--pid|--ipc|--ulimit|-v|-e|--device|--cap-add) echo "$1 $2" >> "$STATE/docker-run.log"; shift 2 ;;
        -w) echo "-w $2" >> "$STATE/docker-run.log"; cd "$2" || exit 125; shift 2 ;;
        -*) echo "fake docker: unknown option $1" >&2; exit 125 ;;
        *) break ;;
      esac
    done
    grep -qxF "$1" "$STATE/pulled" || { echo "Unable to find image '$1' locally" >&2; exit 125; }
    echo "image $1" >> "$STATE/docker-run.log"; shift
    exec "$@" ;;
  *) exit 1 ;;
esac
"""
TORCHRUN = """#!/bin/bash
{ echo "ARGS=$*"; echo "PID=$$"; echo "TRAIN_PID=$(cat /run/trainstack/train.pid)"; } > "$STATE/torchrun.log"
"""


@pytest.fixture(scope="module")
def plan_and_script(tmp_path_factory: pytest.TempPathFactory):
    spec = tmp_path_factory.mktemp("spec") / "pretrain-70b.yaml"
    text = (ROOT / "examples" / "pretrain-70b.yaml").read_text()
    spec.write_text(text.replace("compute:\n", f"compute:\n  image_id: m-gpu-docker-image\n  container_image: {IMAGE}\n", 1))
    plan = api.plan(spec)
    return plan, api.render_files(plan, str(spec))["node-init.sh"]


@pytest.fixture(scope="module")
def private_plan_and_script(tmp_path_factory: pytest.TempPathFactory):
    spec = tmp_path_factory.mktemp("spec") / "pretrain-70b.yaml"
    text = (ROOT / "examples" / "pretrain-70b.yaml").read_text()
    spec.write_text(text.replace("compute:\n", f"compute:\n  image_id: m-gpu-docker-image\n  container_image: "
                                 f"{PRIVATE}\n  container_registry_instance: {INSTANCE}\n", 1))
    plan = api.plan(spec)
    return plan, api.render_files(plan, str(spec))["node-init.sh"]


def make_node(tmp_path: Path, plan_and_script, toolkit: bool = True) -> Node:
    plan, script = plan_and_script
    r = plan.compute.ranks[0]
    k = plan.checkpoints
    user_data = (script.replace("__TRAINSTACK_NODE_RANK__", "0").replace("__TRAINSTACK_NODE_NAME__", r.name)
                 .replace("__TRAINSTACK_NODE_SPOT__", "false"))
    from tests.boot.test_boot import PUBLISHED, erdma_installer

    # the stand-in eRDMA installer's sha256 in place of the published one (tests/boot/test_boot.py)
    user_data = user_data.replace(PUBLISHED, f'ERDMA_INSTALLER_SHA256="{hashlib.sha256(erdma_installer()).hexdigest()}"')
    node = Node(tmp_path, user_data, role=f"{plan.name}-node", bucket_host=f"{k.bucket}.{k.internal_endpoint}",
                node_ip=r.private_ip, api_hosts=(f"cr-vpc.{plan.region}.aliyuncs.com",))
    (node.state / "acr-instance").write_text(INSTANCE)
    facts = render_files.cluster_facts(plan)
    facts["shared_fs"] = {"kind": "none", "address": "", "mount_path": "/mnt/shared"}
    node.put_object(k.bucket, k.facts_key, facts_for(facts))
    (node.state / "mirror" / "erdma").mkdir(parents=True)
    (node.state / "mirror" / "erdma" / "erdma_installer-1.5.7.tar.gz").write_bytes(erdma_installer())
    node.stub("docker", DOCKER)
    node.stub("torchrun", TORCHRUN)
    if toolkit:
        node.stub("nvidia-container-cli", "#!/bin/bash\nexit 0\n")
    return node


def test_the_plan_pulls_through_the_vpc_endpoint_and_installs_no_pytorch(plan_and_script) -> None:
    plan, script = plan_and_script
    assert plan.compute.container_image == PULLED
    assert any(d.topic == "container image" for d in plan.decisions)
    assert f'CONTAINER_IMAGE="{PULLED}"' in script


def test_a_container_node_pulls_the_image_and_launches_torchrun_in_it(tmp_path: Path, plan_and_script) -> None:
    plan, _ = plan_and_script
    node = make_node(tmp_path, plan_and_script)
    boot = node.boot("mkdir -p /mnt/shared/code && cd /mnt/shared/code && trainstack-launch train.py --lr 3e-4; "
                     "echo LAUNCH-RC=$?")
    assert boot.rc == 0 and node.marker("bootstrap-done"), boot.output
    assert f"docker pull {PULLED}" in node.log("docker.log")
    assert "torch-requirements.txt" not in boot.output and not node.disk("/opt/trainstack").exists()  # no pip PyTorch
    assert "LAUNCH-RC=0" in boot.output, boot.output
    run = node.log("docker-run.log").splitlines()
    for option in ("--gpus all", "--network host", "--pid host", "--ipc host", "-v /run/trainstack:/run/trainstack",
                   "-v /etc/trainstack:/etc/trainstack:ro", "-v /mnt/shared:/mnt/shared", "-w /mnt/shared/code",
                   "-e MASTER_ADDR", "-e TRAINSTACK_CHECKPOINT_DIR", f"image {PULLED}"):
        assert option in run, (option, run)
    launched = node.log("torchrun.log")
    assert launched.startswith(f"ARGS=--nnodes {plan.compute.min_nodes}:{plan.compute.nodes} ") and \
        "--rdzv-backend c10d" in launched and launched.split("\n")[0].endswith("train.py --lr 3e-4")
    pid = launched.split("PID=", 1)[1].split()[0]
    assert f"TRAIN_PID={pid}\n" in launched  # the agent's (host) PID: the spot watcher signals its workers


def test_without_the_nvidia_container_toolkit_the_bootstrap_fails_naming_it(tmp_path: Path, plan_and_script) -> None:
    node = make_node(tmp_path, plan_and_script, toolkit=False)
    boot = node.boot()
    failed = node.marker("bootstrap-failed") or ""
    assert boot.rc == 1 and "step=runtime" in failed and "NVIDIA Container Toolkit" in failed, boot.output


def test_a_boot_without_the_image_fails_naming_it(tmp_path: Path, plan_and_script) -> None:
    node = make_node(tmp_path, plan_and_script)
    assert node.boot().rc == 0
    (node.state / "pulled").unlink()  # the image was removed from the node
    node.boot(user_data=False)
    failed = node.marker("bootstrap-failed") or ""
    assert "step=runtime" in failed and f"the container image {PULLED} is not on this node" in failed


def test_a_private_image_is_pulled_after_a_login_with_the_roles_temporary_password(
    tmp_path: Path, private_plan_and_script
) -> None:
    node = make_node(tmp_path, private_plan_and_script)
    boot = node.boot()
    assert boot.rc == 0 and node.marker("bootstrap-done"), boot.output
    assert f"acr GetAuthorizationToken {INSTANCE} 200 success" in node.log("requests.log")  # signature checked
    docker = node.log("docker.log").splitlines()
    pulled = f"{PRIVATE_REGISTRY}/ml-team/pytorch:2.6.0-cu124@sha256:{DIGEST}"
    assert docker[:3] == [f"docker login --username temp_user_cr --password-stdin {PRIVATE_REGISTRY}",
                          f"docker pull {pulled}", f"docker logout {PRIVATE_REGISTRY}"], docker
    assert node.log("logged-in").strip() == ""  # logged out once pulled: no password left in docker's config
    password = node.log("acr-issued").split()[1]
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "acr-issued" and
              password.encode() in p.read_bytes()]
    assert password not in boot.output and not leaked, leaked  # not in a log, a command line or a file of the node


def test_a_role_without_registry_access_fails_the_bootstrap_naming_the_api_error(
    tmp_path: Path, private_plan_and_script
) -> None:
    node = make_node(tmp_path, private_plan_and_script)
    (node.state / "acr-denied").touch()
    node.stub("sleep", "#!/bin/bash\nexit 0\n")  # the pull's three attempts wait 30 s and 60 s between them
    boot = node.boot()
    failed = node.marker("bootstrap-failed") or ""
    assert boot.rc == 1 and "step=runtime" in failed and "GetAuthorizationToken" in failed, boot.output
    assert "HTTP 403 NoPrivilege" in failed and not node.log("pulled")
    assert node.log("requests.log").count(f"acr GetAuthorizationToken {INSTANCE} 403") == 3
