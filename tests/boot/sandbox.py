"""A simulated fresh ECS node for tests/boot: the generated node-init.sh runs unchanged, as root, in private
network, mount, UTS and PID namespaces (``unshare``), never touching the host.

The node's disk is four overlays (/etc, /usr/local, /var, /opt) whose upper folders live in the test's tmp folder
and survive a "reboot" (a new namespace); /run and /sys are fresh at every boot. The network namespace has only
loopback (carrying 100.100.100.200 and the node's private IP) and one NIC, ``ens5`` (a veth, MTU 1500 at each
boot). tests/boot/fakes.py plays the metadata service, OSS and the internal mirror inside it. What has no
counterpart here is a stub on PATH: nvidia-smi (8 GPUs, or none), systemctl (enable makes the wants link, start
runs ExecStart in the background, reboot is recorded), logger (the journal: STATE/journal.log), hostnamectl,
modprobe, dnf and apt-get (no package repositories: they fail).

A boot is either the user data (``node-init.sh`` with the node's fields filled in, as the program does) or what
systemd does on a later boot: ``systemd-tmpfiles --create`` on /etc/tmpfiles.d/trainstack.conf, then the ExecStart
of every unit enabled in multi-user.target.wants.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
OVERLAYS = ("etc", "usr/local", "var", "opt")

STUBS = {
    "nvidia-smi": """#!/bin/bash
if [ -e "$STATE/driver-broken" ]; then echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."; exit 9; fi
for i in 0 1 2 3 4 5 6 7; do echo "GPU $i: NVIDIA H20 (UUID: GPU-0000000$i)"; done
""",
    "systemctl": """#!/bin/bash
echo "systemctl $*" >> "$STATE/systemctl.log"
case "$1" in
  daemon-reload) ;;
  enable) for u in "${@:2}"; do
      [ "$u" = --now ] && continue
      [ -f "/etc/systemd/system/$u" ] || { echo "Unit $u not found." >&2; exit 1; }
      mkdir -p /etc/systemd/system/multi-user.target.wants
      ln -sf "../$u" "/etc/systemd/system/multi-user.target.wants/$u"
    done ;;
  start) [ -f "/etc/systemd/system/$2" ] || exit 5
    cmd="$(sed -n 's/^ExecStart=//p' "/etc/systemd/system/$2")"
    setsid $cmd >> "$STATE/$2.log" 2>&1 < /dev/null &
    echo $! > "$STATE/$2.pid" ;;
  is-active) exit 3 ;;
  reboot) touch "$STATE/reboot-requested" ;;
  *) exit 1 ;;
esac
""",
    "logger": """#!/bin/bash
echo "$*" >> "$STATE/journal.log"
""",
    "hostnamectl": '#!/bin/bash\necho "$*" >> "$STATE/hostnamectl.log"\n',
    "modprobe": "#!/bin/bash\nexit 0\n",
    "dnf": '#!/bin/bash\necho "dnf: no repositories reachable ($*)" >&2; exit 1\n',
    "apt-get": '#!/bin/bash\necho "apt-get: no repositories reachable ($*)" >&2; exit 100\n',
}

ALINUX_OS_RELEASE = (
    'NAME="Alibaba Cloud Linux"\nVERSION="3 (OpenAnolis Edition)"\nID="alinux"\nVERSION_ID="3"\n'
)


@dataclass
class Boot:
    rc: int
    output: str


class Node:
    """One simulated node: its disk (overlay uppers), its cloud (STATE) and the user data it was given."""

    def __init__(
        self,
        root: Path,
        user_data: str,
        *,
        role: str,
        bucket_host: str,
        node_ip: str,
        extra_ips: tuple[str, ...] = (),
        hostname: str = "sandbox-node",
        api_hosts: tuple[str, ...] = (),
    ) -> None:
        self.hostname = hostname  # what the image sets (a Lingjun node group sets NAME-node-NNN)
        self.api_hosts = api_hosts  # more hosts of the fakes on 127.0.0.1:443 (the Container Registry API)
        self.root, self.role, self.bucket_host, self.node_ip, self.extra_ips = (
            root,
            role,
            bucket_host,
            node_ip,
            extra_ips,
        )
        self.state = root / "state"
        self.stubs = root / "stubs"
        for d in (self.state / "oss", self.state / "mirror", self.stubs, root / "shared"):
            d.mkdir(parents=True, exist_ok=True)
        for name in OVERLAYS:
            for sub in ("upper", "work"):
                (root / "disk" / name.replace("/", "-") / sub).mkdir(parents=True, exist_ok=True)
        (root / "user-data.sh").write_text(user_data)
        for name, text in STUBS.items():
            self.stub(name, text)
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                f"/CN={bucket_host}",
                "-addext",
                f"subjectAltName=DNS:{bucket_host},DNS:mirrors.cloud.aliyuncs.com"
                + "".join(f",DNS:{h}" for h in api_hosts),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-keyout",
                str(self.state / "tls.key"),
                "-out",
                str(self.state / "tls.crt"),
            ],
            check=True,
            capture_output=True,
        )

    def stub(self, name: str, text: str | None) -> None:
        path = self.stubs / name
        if text is None:
            path.unlink(missing_ok=True)
            return
        path.write_text(text)
        path.chmod(0o755)

    def put_object(self, bucket: str, key: str, data: bytes) -> None:
        path = self.state / "oss" / bucket / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def disk(self, path: str) -> Path:
        """A file as the node's disk has it after the boots so far (the overlay's upper folder)."""
        for name in OVERLAYS:
            if path.startswith(f"/{name}/"):
                return self.root / "disk" / name.replace("/", "-") / "upper" / path[len(name) + 2 :]
        raise ValueError(path)

    def log(self, name: str) -> str:
        path = self.state / name
        return path.read_text() if path.exists() else ""

    def boot(
        self,
        body: str = "",
        *,
        user_data: bool = True,
        timeout: float = 180,
        env: dict | None = None,
        pre: str = "",
    ) -> Boot:
        """One boot: ``pre`` (bash: what happens early in a boot), the user data (or, ``user_data=False``, the
        enabled units), then ``body`` (bash, in the node). /run of this boot is copied to STATE/run afterwards."""
        mounts = "\n".join(
            f"mount -t overlay overlay -o lowerdir=/{n},upperdir={self.root}/disk/{n.replace('/', '-')}/upper,"
            f"workdir={self.root}/disk/{n.replace('/', '-')}/work /{n}"
            for n in OVERLAYS
        )
        ips = "\n".join(f"ip addr add {ip}/32 dev lo" for ip in (self.node_ip, *self.extra_ips))
        api_hosts = "".join(f" {h}" for h in self.api_hosts)
        environment = {
            "STATE": str(self.state),
            "TRAINSTACK_FACTS_ATTEMPTS": "3",
            "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
            "CURL_CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt",
            **(env or {}),
        }
        exports = "\n".join(f"export {k}={_q(v)}" for k, v in environment.items())
        start = (
            "bash /var/lib/cloud-sim/user-data.sh"
            if user_data
            else textwrap.dedent("""\
            systemd-tmpfiles --create /etc/tmpfiles.d/trainstack.conf
            for unit in /etc/systemd/system/multi-user.target.wants/*.service; do
              [ -e "${unit}" ] || continue
              $(sed -n 's/^ExecStart=//p' "${unit}")
            done""")
        )
        script = textwrap.dedent(f"""\
            set -e
            mount --make-rprivate /
            mount -t sysfs sysfs /sys
            mount -t tmpfs tmpfs /run
            {mounts}
            mount -t tmpfs tmpfs /mnt
            mkdir -p /mnt/shared /var/lib/cloud-sim
            mount --bind {self.root} /var/lib/cloud-sim
            mount --bind {self.root}/shared /mnt/shared
            ip link set lo up
            ip addr add 100.100.100.200/32 dev lo
            {ips}
            ip link add ens5 type veth peer name veth-peer
            ip link set ens5 up
            printf '%s' {_q(ALINUX_OS_RELEASE)} > /etc/os-release
            hostname {self.hostname}
            printf '127.0.0.1 localhost\\n{self.node_ip} {self.hostname}\\n127.0.0.1 {self.bucket_host} mirrors.cloud.aliyuncs.com{api_hosts}\\n' > /etc/hosts
            cp {self.state}/tls.crt /etc/ssl/certs/ca-certificates.crt
            rm -f {self.state}/fakes-ready
            {_q(sys.executable)} {HERE / "fakes.py"} {self.state} {self.role} >> {self.state}/fakes.log 2>&1 &
            for i in $(seq 100); do [ -e {self.state}/fakes-ready ] && break; sleep 0.1; done
            {exports}
            export PATH={self.stubs}:{Path(sys.executable).parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
            set +e
            {pre}
            {start}
            echo "BOOT-RC=$?"
            {textwrap.indent(textwrap.dedent(body), "            ").strip()}
            rm -rf {self.state}/run && cp -a /run/trainstack {self.state}/run 2>/dev/null
            cat /sys/class/net/ens5/mtu > {self.state}/mtu
            exit 0
            """)
        (self.root / "inner.sh").write_text(script)
        proc = subprocess.run(  # noqa: PLW1510 - the exit code is read from the output
            [
                "unshare",
                "--net",
                "--mount",
                "--pid",
                "--uts",
                "--fork",
                "--mount-proc",
                "bash",
                str(self.root / "inner.sh"),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        out = proc.stdout + proc.stderr
        rc = int(out.split("BOOT-RC=")[1].split()[0]) if "BOOT-RC=" in out else -1
        return Boot(rc, out)

    def marker(self, name: str) -> str | None:
        path = self.state / "run" / name
        return path.read_text() if path.exists() else None


def _q(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def facts_for(plan_facts: dict, **changes: object) -> bytes:
    facts = json.loads(json.dumps(plan_facts))
    for key, value in changes.items():
        facts[key] = value
    return json.dumps(facts).encode()


def have_sandbox() -> str:
    """Why the boot tests cannot run here ("" when they can)."""
    if os.geteuid() != 0:
        return "needs root (unshare of network and mount namespaces)"
    for tool in ("unshare", "ip", "openssl", "curl", "systemd-tmpfiles", "pkill", "flock"):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    # the fake OSS checks signatures with oss2 and the nodes run torchrun: the `boot` extra, which .ci/run installs
    # (on CI a missing one fails the tests instead: the import errors say which)
    missing = [m for m in ("oss2", "torch") if importlib.util.find_spec(m) is None]
    if missing and os.environ.get("CI") != "true":
        return f"needs {' and '.join(missing)} (pip install '.[boot]')"
    probe = subprocess.run(
        ["unshare", "--net", "--mount", "--pid", "--fork", "true"], capture_output=True, check=False
    )
    return "" if probe.returncode == 0 else "unshare is not permitted here"
