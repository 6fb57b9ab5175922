"""The fake cloud's machines, for tests/e2e: every ECS instance in the fake provider's state file is a running
simulated node, and Cloud Assistant commands of the fake OpenAPI run inside it.

:class:`FakeCloud` watches the state file of tests/live/fake_alicloud.py (a thread, every 0.3 s) and makes the
machines match it: an ``alicloud:ecs/instance:Instance`` that appears boots a node, one that goes (``destroy``, a
replace, :func:`fake_alicloud.lose` as a spot reclaim) stops it; an ``alicloud:oss/bucketObject:BucketObject``
(the cluster facts) becomes an object in the fake OSS. It is opt-in: only a test that makes a FakeCloud (the e2e
fixture) and hands it to the fake OpenAPI (``FakeOpenApi.machines``) gets booted nodes; tests/live's other tests
see the JSON file alone, as before.

A node is tests/boot's sandbox (tests/boot/sandbox.py) kept running: private network, mount, UTS and PID
namespaces (``unshare``), its disk four overlays of the host's /etc, /usr/local, /var and /opt, with

* ``ens5``, a veth on one bridge shared by all nodes (the bridge lives in a network namespace of its own, held by
  one ``sleep`` process, so nothing is added to the host's network and killing that process removes it all), with
  the private IP the program gave the instance and the host names of all nodes in /etc/hosts;
* its own tests/boot/fakes.py: the metadata service in hardened mode answering with this instance's id, the
  region, the STS credentials of the RAM role attached to it (a RamRoleAttachment in the state; none before) and, after :meth:`FakeCloud.spot_notice`, the spot termination time; OSS
  (signature-checked) over one folder shared by all nodes, holding what the program wrote to the bucket;
* the shared file system: ``mount`` of the NFS line trainstack-facts puts in /etc/fstab is a bind mount of one
  host folder shared by all nodes (the stub ``mount`` on PATH; every other mount is the real one);
* the user data exactly as the provider received it (base64 of gzip, as compute_ecs.py.j2 packs it), unpacked and
  run as cloud-init runs it, its output in ``STATE/cloud-init-output.log``; a small init (PID 1 of the node) reaps
  orphans and keeps the node up until it is stopped.

Stopping a node kills its PID 1: the kernel ends every process of the node and its network namespace with ens5.
:meth:`FakeCloud.close` stops all nodes and the bridge; :func:`leftovers` lists what would be left behind.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import gzip
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "boot"))
from sandbox import ALINUX_OS_RELEASE, OVERLAYS, STUBS, _q

INSTANCE = "alicloud:ecs/instance:Instance"
OBJECT = "alicloud:oss/bucketObject:BucketObject"
ATTACHMENT = "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"
FAKES = REPO / "tests" / "boot" / "fakes.py"
# torchrun of the test's Python (its own bin folder, or the one a shared environment has it in)
def _torch_bin() -> Path:
    spec = importlib.util.find_spec("torch")
    places = [Path(sys.executable).parent]
    if spec and spec.origin:
        places.append(Path(spec.origin).parents[4] / "bin")  # ENV/lib/pythonX.Y/site-packages/torch/__init__.py
    found = shutil.which("torchrun", path=os.pathsep.join(map(str, places)))
    return Path(found).parent if found else places[0]


TORCH_BIN = _torch_bin()
TAG = "trainstack-e2e"  # in the command line of every process the cloud starts (see leftovers())

NODE_STUBS = {
    **STUBS,
    # the instance type's 8 GPUs as nvidia-smi lists them; the workers run on the CPU (gloo)
    "nvidia-smi": """#!/bin/bash
case "$*" in
  *driver_version*) echo "550.127.08" ;;
  *--query-gpu*) for i in 0 1 2 3 4 5 6 7; do echo "$i, 00000000:0$i:00.0"; done ;;
  *) for i in 0 1 2 3 4 5 6 7; do echo "GPU $i: NVIDIA A100-SXM4-80GB (UUID: GPU-0000000$i)"; done ;;
esac
""",
    # tests/boot's systemctl, with the NVSwitch fabric manager the 8-GPU type runs (the GPUs are stubs too)
    "systemctl": STUBS["systemctl"].replace(
        "#!/bin/bash\n", '#!/bin/bash\n[ "$*" = "is-active --quiet nvidia-fabricmanager" ] && exit 0\n', 1
    ),
    # the NFS mount of /etc/fstab is a bind mount of the shared folder; any other mount is the real one
    "mount": """#!/bin/bash
if [ "$#" = 1 ] && awk -v d="$1" '$2 == d && $3 == "nfs" {f=1} END {exit !f}' /etc/fstab 2>/dev/null; then
  echo "mount $* (nfs: the shared folder)" >> "$STATE/mounts.log"
  exec /usr/bin/mount --bind /var/lib/cloud-fs "$1"
fi
exec /usr/bin/mount "$@"
""",
    "mount.nfs": "#!/bin/bash\nexit 0\n",
}

INIT = (
    "import os, time\n"
    "while True:\n"
    "    try:\n"
    "        os.wait()\n"
    "    except ChildProcessError:\n"
    "        time.sleep(0.5)\n"
)


@dataclass
class Machine:
    """One running node: the instance it is, its folder and its processes."""

    instance_id: str
    name: str
    ip: str
    root: Path
    proc: subprocess.Popen
    init_pid: int = 0
    commands: list[subprocess.Popen] = field(default_factory=list)

    @property
    def state(self) -> Path:
        return self.root / "state"

    def log(self, name: str) -> str:
        path = self.state / name
        return path.read_text(errors="replace") if path.exists() else ""

    def disk(self, path: str) -> Path:
        for name in OVERLAYS:
            if path.startswith(f"/{name}/"):
                return self.root / "disk" / name.replace("/", "-") / "upper" / path[len(name) + 2 :]
        raise ValueError(path)

    def booted(self) -> bool:
        return (self.state / "boot-rc").exists()


class FakeCloud:
    def __init__(self, root: Path, cloud_file: Path, *, region: str, hosts: dict[str, str]) -> None:
        self.root, self.cloud_file, self.region, self.hosts = root, cloud_file, region, hosts
        self.oss = root / "oss"
        self.shared = root / "shared-fs"
        for d in (self.oss, self.shared, root / "nodes"):
            d.mkdir(parents=True, exist_ok=True)
        self.machines: dict[str, Machine] = {}
        self.stopped: list[Machine] = []
        self.errors: list[str] = []
        self._lock = threading.RLock()
        self._done = threading.Event()
        self.cert = root / "tls"
        self.net = subprocess.Popen(
            ["unshare", "--net", "bash", "-c", f"exec -a {TAG}-net sleep infinity"],
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - one prctl(2) before exec
        )
        _wait(lambda: _netns(self.net.pid) != _netns(os.getpid()), "the bridge's network namespace")
        self._in_net("ip", "link", "add", "br0", "type", "bridge")
        self._in_net("ip", "link", "set", "br0", "up")
        self.thread = threading.Thread(target=self._watch, daemon=True)

    # ------------------------------------------------------------------------------------------ lifecycle
    def start(self, bucket_host: str) -> FakeCloud:
        self.bucket_host = bucket_host
        self.cert.mkdir(exist_ok=True)
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
             f"/CN={bucket_host}", "-addext", f"subjectAltName=DNS:{bucket_host}", "-addext",
             "basicConstraints=critical,CA:TRUE", "-keyout", str(self.cert / "tls.key"), "-out",
             str(self.cert / "tls.crt")],
            check=True, capture_output=True,
        )  # fmt: skip
        self.thread.start()
        return self

    def close(self) -> None:
        self._done.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)
        with self._lock:
            for iid in list(self.machines):
                self._stop(iid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.net.pid, signal.SIGKILL)
        self.net.wait(timeout=10)

    def _watch(self) -> None:
        while not self._done.is_set():
            try:
                self.reconcile()
            except Exception as e:  # noqa: BLE001 - kept for the test to show; the loop goes on
                self.errors.append(repr(e))
            self._done.wait(0.3)

    def reconcile(self) -> None:
        """Make the machines and the bucket match the fake provider's state file."""
        try:
            resources = list(json.loads(self.cloud_file.read_text()).get("resources", {}).values())
        except (OSError, ValueError):
            return  # not written yet (or being replaced: os.replace makes that rare)
        instances = {r["id"]: r for r in resources if r["type"] == INSTANCE}
        with self._lock:
            for iid in [i for i in self.machines if i not in instances]:
                self._stop(iid)
            for iid, res in instances.items():
                if iid not in self.machines and res["outputs"].get("status", "Running") == "Running":
                    self._boot(res)
        attached = {
            r["inputs"].get("instanceId"): r["inputs"].get("ramRoleName", "")
            for r in resources
            if r["type"] == ATTACHMENT
        }
        with self._lock:
            for iid, machine in self.machines.items():  # the metadata service answers for the attached role only
                role = machine.state / "role"
                if attached.get(iid) and not role.exists():
                    role.write_text(attached[iid])
                elif not attached.get(iid) and role.exists():
                    role.unlink()
        for res in resources:
            if res["type"] == OBJECT and isinstance(res["inputs"].get("content"), str):
                path = self.oss / res["inputs"]["bucket"] / res["inputs"]["key"]
                data = res["inputs"]["content"].encode()
                if not path.exists() or path.read_bytes() != data:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data)

    def _instance_ids(self) -> set[str]:
        try:
            resources = json.loads(self.cloud_file.read_text()).get("resources", {}).values()
        except (OSError, ValueError):
            return set()
        return {r["id"] for r in resources if r["type"] == INSTANCE}

    def _in_net(self, *argv: str) -> None:
        subprocess.run(["nsenter", "-t", str(self.net.pid), "-n", *argv], check=True, capture_output=True)

    # ------------------------------------------------------------------------------------------ one node
    def _boot(self, res: dict[str, Any]) -> None:
        iid, inputs = res["id"], res["inputs"]
        name = inputs.get("hostName") or inputs.get("instanceName") or iid
        ip = inputs["privateIp"]
        root = self.root / "nodes" / iid
        state = root / "state"
        stubs = root / "stubs"
        for d in (state / "oss-parts", stubs, root / "cmd"):
            d.mkdir(parents=True, exist_ok=True)
        for n in OVERLAYS:
            for sub in ("upper", "work"):
                (root / "disk" / n.replace("/", "-") / sub).mkdir(parents=True, exist_ok=True)
        (state / "oss").symlink_to(self.oss, target_is_directory=True)
        (state / "instance-id").write_text(iid)
        (state / "region-id").write_text(self.region)
        for f in ("tls.crt", "tls.key"):
            (state / f).write_bytes((self.cert / f).read_bytes())
        # the user data as the provider received it: base64 of a gzip stream; cloud-init unpacks it
        (root / "user-data").write_bytes(gzip.decompress(base64.b64decode(inputs["userData"])))
        for stub, text in NODE_STUBS.items():
            (stubs / stub).write_text(text)
            (stubs / stub).chmod(0o755)
        env = {
            "STATE": str(state),
            "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
            "CURL_CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt",
            "PATH": f"{stubs}:{Path(sys.executable).parent}:{TORCH_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root",
            "LANG": "C.UTF-8",
            "TRAINSTACK_SPOT_POLL": "1",
            "TRAINSTACK_SYNC_PERIOD": "2",
            "TRAINSTACK_SYNC_SETTLE": "1",
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
        }
        (root / "env").write_text("".join(f"export {k}={_q(v)}\n" for k, v in env.items()))
        mounts = "\n".join(
            f"mount -t overlay overlay -o lowerdir=/{n},upperdir={root}/disk/{n.replace('/', '-')}/upper,"
            f"workdir={root}/disk/{n.replace('/', '-')}/work /{n}"
            for n in OVERLAYS
        )
        hosts = "".join(f"{h_ip} {h}\n" for h, h_ip in sorted(self.hosts.items()))
        script = f"""\
set -e
mount --make-rprivate /
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /run
{mounts}
mount -t tmpfs tmpfs /mnt
mkdir -p /var/lib/cloud-sim /var/lib/cloud-fs /root
mount --bind {root} /var/lib/cloud-sim
mount --bind {self.shared} /var/lib/cloud-fs
ip link set lo up
ip addr add 100.100.100.200/32 dev lo
for i in $(seq 200); do ip link show ens5 >/dev/null 2>&1 && break; sleep 0.05; done
ip addr add {ip}/16 dev ens5
ip link set ens5 up
printf '%s' {_q(ALINUX_OS_RELEASE)} > /etc/os-release
hostname {_q(name)}
printf '127.0.0.1 localhost\\n%s127.0.0.1 {self.bucket_host} mirrors.cloud.aliyuncs.com\\n' {_q(hosts)} > /etc/hosts
cp {state}/tls.crt /etc/ssl/certs/ca-certificates.crt
{_q(sys.executable)} {FAKES} {state} '' >> {state}/fakes.log 2>&1 &
for i in $(seq 100); do [ -e {state}/fakes-ready ] && break; sleep 0.1; done
. {root}/env
set +e
( bash /var/lib/cloud-sim/user-data > {state}/cloud-init-output.log 2>&1; echo $? > {state}/boot-rc ) &
exec -a {TAG}-init {_q(sys.executable)} -c {_q(INIT)}
"""
        (root / "node.sh").write_text(script)
        with open(state / "node.log", "ab") as log:
            proc = subprocess.Popen(
                ["unshare", "--net", "--mount", "--pid", "--uts", "--fork", "--kill-child", "--mount-proc",
                 "bash", str(root / "node.sh"), TAG],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - one prctl(2) before exec
            )  # fmt: skip
        machine = Machine(iid, name, ip, root, proc)
        self.machines[iid] = machine
        _wait(lambda: _netns(proc.pid) != _netns(os.getpid()), f"the network namespace of {name}")
        veth = "ve" + iid[-10:]
        self._in_net("ip", "link", "add", veth, "type", "veth", "peer", "name", "ens5", "netns", str(proc.pid))
        self._in_net("ip", "link", "set", veth, "master", "br0", "up")
        _wait(lambda: bool(_children(proc.pid)), f"PID 1 of {name}")
        machine.init_pid = _children(proc.pid)[0]

    def _stop(self, iid: str) -> None:
        machine = self.machines.pop(iid)
        if machine.init_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(machine.init_pid, signal.SIGKILL)  # the kernel ends every process of the node
        with contextlib.suppress(ProcessLookupError):
            os.killpg(machine.proc.pid, signal.SIGKILL)
        machine.proc.wait(timeout=30)
        for cmd in machine.commands:
            with contextlib.suppress(subprocess.TimeoutExpired):
                cmd.wait(timeout=30)
        self.stopped.append(machine)

    # ------------------------------------------------------------------------------------------ for tests
    def by_name(self, name: str) -> Machine:
        with self._lock:
            found = [m for m in self.machines.values() if m.name == name]
        if not found:
            raise KeyError(f"no running node {name}")
        return found[0]

    def wait_booted(self, names: list[str], timeout: float = 240) -> dict[str, Machine]:
        def ready() -> bool:
            try:
                return all(self.by_name(n).booted() for n in names)
            except KeyError:
                return False

        _wait(ready, f"the boot of {names}", timeout)
        return {n: self.by_name(n) for n in names}

    def spot_notice(self, name: str, when: str) -> None:
        """The metadata service of node ``name`` announces its reclaim at ``when`` (Alibaba: 5 minutes ahead)."""
        (self.by_name(name).state / "spot-notice").write_text(when)

    def run(self, instance_id: str, script: str, tag: str) -> subprocess.Popen:
        """A Cloud Assistant command on the node: ``bash`` of the script, as root, in all its namespaces, in a
        session of its own (a stop ends its process tree); output (stdout and stderr) in the returned process's
        ``output_path``."""
        # an instance just created may be a moment away from its node (the watcher polls the state file)
        _wait(lambda: instance_id in self.machines or instance_id not in self._instance_ids(), "the node", 30)
        with self._lock:
            machine = self.machines.get(instance_id)
            if machine is None or not machine.init_pid:
                raise KeyError(instance_id)
            path = machine.root / "cmd" / f"{tag}.sh"
            path.write_text(script)
            out = machine.root / "cmd" / f"{tag}.out"
            with open(out, "wb") as log:
                proc = subprocess.Popen(
                    ["nsenter", "-t", str(machine.init_pid), "-n", "-m", "-p", "-u", "--", "bash", "-c",
                     f". /var/lib/cloud-sim/env; cd /root; exec bash /var/lib/cloud-sim/cmd/{tag}.sh", TAG],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                )  # fmt: skip
            proc.output_path = out  # type: ignore[attr-defined]
            machine.commands.append(proc)
            return proc


def leftovers() -> list[str]:
    """Processes of a fake cloud still running (by the tag in their command line) and its network namespaces."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if TAG in text and str(os.getpid()) != cmdline.parent.name:
            found.append(f"{cmdline.parent.name}: {text.strip()}")
    return found


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the thread that started it ends (a crashed test leaves no node:
    ``unshare --kill-child`` passes it on to the node's PID 1, whose end ends the node)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _netns(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return ""


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _wait(cond: Any, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise TimeoutError(f"fake cloud: no {what} within {timeout} s")
