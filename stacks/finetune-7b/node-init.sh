#!/bin/bash
# trainstack node bootstrap for "finetune-7b" (cloud-init user data; runs once, as root, at first boot).
# The program fills in only what never changes for a node: __TRAINSTACK_NODE_RANK__, __TRAINSTACK_NODE_NAME__ and
# __TRAINSTACK_NODE_SPOT__. What the whole cluster shares (members, node count, rendezvous, shared file system,
# checkpoints) is one JSON object, the cluster facts, that the program publishes
# in the checkpoint bucket and /usr/local/bin/trainstack-facts reads at boot and at every trainstack-launch, so
# resizing the cluster changes no node's user data.
#
# What it does, in order, each step idempotent:
#   1. writes the node identity, reads the cluster facts and writes /etc/trainstack/hostfile and launch.env
#   2. sets the MTU that NCCL over eRDMA needs (1500)
#   3. installs the eRDMA stack and the NVIDIA driver if the image lacks them
#   4. mounts the shared file system at /mnt/shared
#   5. installs /usr/local/bin/trainstack-launch (torchrun with the cluster's rendezvous)
#   6. on spot nodes, starts the interruption watcher (see "Preemption contract" below)
set -euo pipefail
exec > >(tee -a /var/log/trainstack-init.log) 2>&1
echo "trainstack: bootstrap of rank __TRAINSTACK_NODE_RANK__ starting"

NODE_RANK="__TRAINSTACK_NODE_RANK__"
NODE_NAME="__TRAINSTACK_NODE_NAME__"
SPOT="__TRAINSTACK_NODE_SPOT__"
RDMA="none"
ERI_COUNT="0"
# Where the cluster facts live: the checkpoint bucket, a key only readable by the node role, the internal endpoint.
FACTS_BUCKET="finetune-7b-ckpt-c76dc2"
FACTS_KEY="trainstack/cluster.json"
FACTS_ENDPOINT="oss-cn-hangzhou-internal.aliyuncs.com"
FACTS_ROLE="finetune-7b-node"
MTU="1500"
# Alibaba's eRDMA installer on the VPC-internal mirror (latest listed 1.5.7, 2026-03-31) [DOC-ERDMA-USAGE]
ERDMA_INSTALLER_URL="http://mirrors.cloud.aliyuncs.com/erdma/erdma_installer-1.5.7.tar.gz"

mkdir -p /etc/trainstack /run/trainstack

# 1. identity, hostfile and launch environment ------------------------------------------------------------
{
  printf 'NODE_RANK=%q\nNODE_NAME=%q\nSPOT=%q\n' "${NODE_RANK}" "${NODE_NAME}" "${SPOT}"
  printf 'FACTS_BUCKET=%q\nFACTS_KEY=%q\nFACTS_ENDPOINT=%q\nFACTS_ROLE=%q\n' \
    "${FACTS_BUCKET}" "${FACTS_KEY}" "${FACTS_ENDPOINT}" "${FACTS_ROLE}"
} > /etc/trainstack/node.env
chmod 0644 /etc/trainstack/node.env
# The cluster facts tool, used here at boot and by trainstack-launch at every start.
cat > /usr/local/bin/trainstack-facts <<'FACTS_TOOL'
#!/bin/bash
# trainstack-facts: the cluster facts, one JSON object the Pulumi program publishes on every `up`.
#   trainstack-facts fetch [ATTEMPTS]  download it to /etc/trainstack/cluster.json (an OSS GET signed with the
#                                      node's RAM role), retrying until this node is among its members
#   trainstack-facts apply [FILE]      write /etc/trainstack/hostfile and /etc/trainstack/launch.env from it
#   trainstack-facts mount             mount the shared file system it names
# Needs only bash, curl, openssl, coreutils and python3 (its json module; torchrun needs python3 anyway).
set -euo pipefail
ETC="${TRAINSTACK_ETC:-/etc/trainstack}"
METADATA="${TRAINSTACK_METADATA:-http://100.100.100.200/latest}"
. "${ETC}/node.env"

# Exit 0 if FILE is cluster facts that list this node (a node created by a resize may boot before `up` has
# published the facts that include it).
facts_ok() {
  python3 - "$1" "${NODE_NAME}" <<'PY'
import json, sys
try:
    facts = json.load(open(sys.argv[1]))
    ok = facts.get("schema") == 1 and any(m.get("name") == sys.argv[2] for m in facts["members"])
except (OSError, ValueError, KeyError, TypeError, AttributeError):
    ok = False
sys.exit(0 if ok else 1)
PY
}

# One signed GET (OSS signature V1 in the Authorization header, with the STS token of the role as
# x-oss-security-token): https://www.alibabacloud.com/help/en/oss/developer-reference/include-signatures-in-the-authorization-header
# The role's credentials come from the metadata service in hardened mode (a token first, then
# meta-data/ram/security-credentials/ROLE). Any process on the node can read them there, so passing the secret
# to openssl on its command line exposes nothing new.
fetch_once() {
  local token creds id secret sts date signature tmp code
  token="$(curl -fsS --max-time 5 -X PUT "${METADATA}/api/token" -H 'X-aliyun-ecs-metadata-token-ttl-seconds: 300')" || return 1
  creds="$(curl -fsS --max-time 5 -H "X-aliyun-ecs-metadata-token: ${token}" \
    "${METADATA}/meta-data/ram/security-credentials/${FACTS_ROLE}")" || return 1
  id="$(printf '%s' "${creds}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["AccessKeyId"])')" || return 1
  secret="$(printf '%s' "${creds}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["AccessKeySecret"])')" || return 1
  sts="$(printf '%s' "${creds}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["SecurityToken"])')" || return 1
  date="$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S GMT')"
  signature="$(printf 'GET\n\n\n%s\nx-oss-security-token:%s\n/%s/%s' "${date}" "${sts}" "${FACTS_BUCKET}" "${FACTS_KEY}" \
    | openssl dgst -sha1 -hmac "${secret}" -binary | base64 | tr -d '\n')"
  tmp="$(mktemp "${ETC}/.cluster.json.XXXXXX")"
  code="$(curl -sS --max-time 30 -o "${tmp}" -w '%{http_code}' -H "Date: ${date}" -H "x-oss-security-token: ${sts}" \
    -H "Authorization: OSS ${id}:${signature}" "https://${FACTS_BUCKET}.${FACTS_ENDPOINT}/${FACTS_KEY}")" || code="000"
  if [ "${code}" != "200" ] || ! facts_ok "${tmp}"; then
    echo "trainstack-facts: oss://${FACTS_BUCKET}/${FACTS_KEY}: HTTP ${code}$([ "${code}" = 200 ] && echo ', without this node')" >&2
    rm -f "${tmp}"
    return 1
  fi
  chmod 0644 "${tmp}"
  mv -f "${tmp}" "${ETC}/cluster.json"
}

fetch() {
  local attempts="${1:-40}" i delay
  if [ -z "${FACTS_BUCKET}" ]; then  # no bucket: the facts came with the user data
    facts_ok "${ETC}/cluster.json"
    return
  fi
  for ((i = 1; i <= attempts; i++)); do
    fetch_once && return 0
    delay=$((i < 5 ? 2 ** i : 30))
    [ "${i}" -lt "${attempts}" ] && sleep "${delay}"
  done
  echo "trainstack-facts: no cluster facts listing ${NODE_NAME} after ${attempts} attempts" >&2
  return 1
}

# Write the hostfile and launch.env from the facts (each through a temporary file and a rename). Every value is
# quoted for the shell that sources launch.env.
apply() {
  python3 - "${1:-${ETC}/cluster.json}" "${ETC}" "${NODE_RANK}" "${NODE_NAME}" <<'PY'
import json, os, re, shlex, sys
path, etc, rank, name = sys.argv[1:5]
facts = json.load(open(path))
members = sorted(facts["members"], key=lambda m: int(m["rank"]))
gpus = int(facts["gpus_per_node"])
shared, ckpt, par = facts["shared_fs"], facts["checkpoint"], facts["parallel"]
env = [
    ("TRAINSTACK_NAME", facts["name"]),
    ("MASTER_ADDR", facts["master_addr"]), ("MASTER_PORT", int(facts["master_port"])),
    ("NNODES", int(facts["nodes"])), ("MIN_NODES", int(facts["min_nodes"])), ("MAX_NODES", int(facts["max_nodes"])),
    ("MAX_RESTARTS", int(facts["max_restarts"])), ("GPUS_PER_NODE", gpus), ("WORLD_SIZE", int(facts["world_size"])),
    ("TP_SIZE", int(par["tp"])), ("PP_SIZE", int(par["pp"])), ("DP_SIZE", int(par["dp"])),
    ("ZERO_STAGE", int(par["zero_stage"])),
    ("SHARED_KIND", shared["kind"]), ("SHARED_FS_ADDRESS", shared["address"]),
    ("SHARED_DIR", shared["mount_path"] or "/mnt/local"),
    ("CHECKPOINT_URL", ckpt["url"]), ("CHECKPOINT_ENDPOINT", ckpt["endpoint"]),
    ("CHECKPOINT_INTERVAL_SECONDS", int(ckpt["interval_seconds"])),
    ("TRAINSTACK_CHECKPOINT_DIR", ckpt.get("dir", "")), ("TRAINSTACK_CHECKPOINT_OSS", ckpt["url"]),
    ("TRAINSTACK_PREEMPT_FILE", "/run/trainstack/preempt"),
    ("TRAINSTACK_WEIGHTS_DIR", facts["weights"]["dir"]),
    *sorted(facts.get("nccl_env", {}).items()),
    ("NODE_RANK", int(rank)), ("NODE_NAME", name),
]
lines = []
for key, value in env:
    if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", key):
        sys.exit(f"trainstack-facts: {key!r} is not a variable name")
    lines.append(f"{key}={shlex.quote(str(value))}\n")
def write(name, text):
    tmp = os.path.join(etc, f".{name}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, os.path.join(etc, name))
write("hostfile", "".join(f"{m['ip']} slots={gpus}\n" for m in members))
write("launch.env", "".join(lines))
PY
}

# Mount the shared file system the facts name, once (Extreme NAS at /share, the CPFS NFS export at /).
mount_shared() {
  local SHARED_KIND SHARED_DIR SHARED_FS_ADDRESS opts src
  eval "$(grep -E '^SHARED_(KIND|DIR|FS_ADDRESS)=' "${ETC}/launch.env")"
  [ "${SHARED_KIND}" = "none" ] && return 0
  mkdir -p "${SHARED_DIR}"
  mountpoint -q "${SHARED_DIR}" && return 0
  if [ -z "${SHARED_FS_ADDRESS}" ]; then
    echo "trainstack-facts: the cluster facts have no shared file system address yet (trainstack up sets it)" >&2
    return 1
  fi
  command -v mount.nfs >/dev/null 2>&1 || dnf install -y nfs-utils || apt-get install -y nfs-common
  opts="vers=3,nolock,proto=tcp,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport,_netdev"
  if [ "${SHARED_KIND}" = "extreme-nas" ]; then src="${SHARED_FS_ADDRESS}:/share"; else src="${SHARED_FS_ADDRESS}:/"; fi
  grep -q " ${SHARED_DIR} " /etc/fstab || echo "${src} ${SHARED_DIR} nfs ${opts} 0 0" >> /etc/fstab
  mount "${SHARED_DIR}" || { echo "trainstack-facts: mounting ${src} failed; see 'journalctl -u remote-fs.target'" >&2; return 1; }
}

# sync: checkpoint dir -> OSS every 5 min (ossutil, RAM role)
sync_ckpt() {
  eval "$(grep -E '^(TRAINSTACK_CHECKPOINT_(DIR|OSS)|CHECKPOINT_ENDPOINT)=' "${ETC}/launch.env")"
  command -v ossutil >/dev/null || curl -fsS https://gosspublic.alicdn.com/ossutil/install.sh | bash
  while sleep 300; do ossutil sync "${TRAINSTACK_CHECKPOINT_DIR}" "${TRAINSTACK_CHECKPOINT_OSS}" -f \
    -e "${CHECKPOINT_ENDPOINT}" --mode EcsRamRole --ecs-role-name "${FACTS_ROLE}" || :; done
}

case "${1:-}" in
  fetch) fetch "${2:-40}" ;;
  apply) apply "${2:-}" ;;
  mount) mount_shared ;;
  sync) sync_ckpt ;;
  *) echo "usage: trainstack-facts fetch [ATTEMPTS] | apply [FILE] | mount | sync" >&2; exit 2 ;;
esac
FACTS_TOOL
chmod 0755 /usr/local/bin/trainstack-facts
/usr/local/bin/trainstack-facts fetch 40 || { touch /run/trainstack/bootstrap-failed; exit 1; }
/usr/local/bin/trainstack-facts apply
set -a; . /etc/trainstack/launch.env; set +a
hostnamectl set-hostname "${NODE_NAME}" || true

# 2. MTU --------------------------------------------------------------------------------------------------
if [ "${RDMA}" = "erdma" ]; then
  for path in /sys/class/net/eth[0-9]*; do
    nic="${path##*/}"
    ip link set dev "${nic}" mtu "${MTU}" || echo "trainstack: could not set MTU ${MTU} on ${nic}"
  done
fi

# 3. eRDMA stack and GPU driver -----------------------------------------------------------------------------
erdma_devices() { local n=0 d; for d in /sys/class/infiniband/erdma*; do [ -e "${d}" ] && n=$((n + 1)); done; echo "${n}"; }
if [ "${RDMA}" = "erdma" ] && [ "$(erdma_devices)" -eq 0 ]; then
  echo "trainstack: installing the eRDMA stack"
  tmp="$(mktemp -d)"
  curl -fsSL --retry 5 "${ERDMA_INSTALLER_URL}" -o "${tmp}/erdma.tar.gz"
  tar -xzf "${tmp}/erdma.tar.gz" -C "${tmp}"
  (cd "${tmp}"/erdma_installer* && ./install.sh --batch)
  modprobe erdma || true
fi
if [ "${RDMA}" = "erdma" ] && [ "$(erdma_devices)" -lt "${ERI_COUNT}" ]; then
  echo "trainstack: expected ${ERI_COUNT} eRDMA device(s), found $(erdma_devices); NCCL will run below full bandwidth"
fi
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "trainstack: no NVIDIA driver in the image; installing it from NVIDIA's CUDA repository"
  . /etc/os-release
  case "${ID}" in
    alinux|rhel|centos|rocky|almalinux)
      dnf install -y "kernel-devel-$(uname -r)" "kernel-headers-$(uname -r)" dkms || true
      dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/rhel8/x86_64/cuda-rhel8.repo
      dnf module install -y nvidia-driver:latest-dkms
      dnf install -y nvidia-fabric-manager || true ;;
    ubuntu)
      apt-get update
      apt-get install -y "linux-headers-$(uname -r)" ubuntu-drivers-common
      ubuntu-drivers install --gpgpu
      apt-get install -y "nvidia-fabricmanager-$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | cut -d. -f1)" || true ;;
    *) echo "trainstack: cannot install a driver on ${ID}; use an image with the NVIDIA driver (trainstack:imageId)";
       touch /run/trainstack/bootstrap-failed ;;
  esac
  systemctl enable --now nvidia-fabricmanager 2>/dev/null || true
fi

# 4. shared file system -------------------------------------------------------------------------------------
/usr/local/bin/trainstack-facts mount || echo "trainstack: the shared file system is not mounted yet; trainstack-launch tries again"
# base weights: one node fetches them, the others wait (trainstack-weights; docs/bootstrap.md)
python3 -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))["weights"]["script"])' \
  /etc/trainstack/cluster.json > /usr/local/bin/trainstack-weights
chmod 0755 /usr/local/bin/trainstack-weights
nohup /usr/local/bin/trainstack-weights >> /var/log/trainstack-weights.log 2>&1 &

# 5. launcher -----------------------------------------------------------------------------------------------
cat > /usr/local/bin/trainstack-launch <<'LAUNCH'
#!/bin/bash
# Start one training process group on this node with the cluster's rendezvous:
#   trainstack-launch train.py --your-args
# Writes its PID to /run/trainstack/train.pid so the spot watcher can signal it.
# Elastic: torchrun's c10d rendezvous on rank 0 admits MIN_NODES to MAX_NODES nodes; after a reclaim, a failure or
# a resize it restarts the workers on the nodes that are there (at most MAX_RESTARTS times), and the training
# script resumes from the newest checkpoint with the new world size (docs/bootstrap.md).
set -euo pipefail
# Read the cluster facts again: a resized cluster is picked up here, with no reboot.
/usr/local/bin/trainstack-facts fetch 3 || echo "trainstack: using the cluster facts of the last fetch"
/usr/local/bin/trainstack-facts apply
/usr/local/bin/trainstack-facts mount || echo "trainstack: the shared file system is not mounted"
set -a; . /etc/trainstack/launch.env; set +a
[ "${NODE_RANK}${TRAINSTACK_CHECKPOINT_DIR:+x}" = 0x ] &&
  (flock -n 9 && exec setsid trainstack-facts sync) 9>/run/trainstack/sync &>>/var/log/trainstack-sync.log &
/usr/local/bin/trainstack-weights  # returns once the base weights are in TRAINSTACK_WEIGHTS_DIR
echo $$ > /run/trainstack/train.pid
exec torchrun --nnodes "${MIN_NODES}:${MAX_NODES}" --nproc-per-node "${GPUS_PER_NODE}" \
  --rdzv-backend c10d --rdzv-endpoint "${MASTER_ADDR}:${MASTER_PORT}" --rdzv-id "${TRAINSTACK_NAME}" \
  --max-restarts "${MAX_RESTARTS}" "$@"
LAUNCH
chmod 0755 /usr/local/bin/trainstack-launch

# 6. Preemption contract (spot nodes) ----------------------------------------------------------------------
# Alibaba Cloud announces a spot reclaim five minutes ahead at meta-data/instance/spot/termination-time.
# When it appears, the watcher
#   - writes the reclaim time (UTC, ISO 8601) to /run/trainstack/preempt   (TRAINSTACK_PREEMPT_FILE), and
#   - sends SIGUSR1 to the PID in /run/trainstack/train.pid (torchrun forwards it to the workers).
# The training loop should poll the file or handle SIGUSR1 by saving a checkpoint to CHECKPOINT_URL and exiting.
if [ "${SPOT}" = "true" ]; then
  cat > /usr/local/bin/trainstack-spot-watcher <<'WATCHER'
#!/bin/bash
set -uo pipefail
METADATA="http://100.100.100.200/latest"
while true; do
  token="$(curl -fsS -X PUT "${METADATA}/api/token" -H 'X-aliyun-ecs-metadata-token-ttl-seconds: 300' || true)"
  code="$(curl -s -o /tmp/trainstack-termination -w '%{http_code}' -H "X-aliyun-ecs-metadata-token: ${token}" \
    "${METADATA}/meta-data/instance/spot/termination-time" || true)"
  if [ "${code}" = "200" ]; then
    when="$(cat /tmp/trainstack-termination)"
    echo "${when}" > /run/trainstack/preempt
    logger -t trainstack "spot reclaim announced for ${when}; asking training to checkpoint"
    if [ -s /run/trainstack/train.pid ]; then
      kill -USR1 "$(cat /run/trainstack/train.pid)" 2>/dev/null || true
    fi
    exit 0
  fi
  sleep 5
done
WATCHER
  chmod 0755 /usr/local/bin/trainstack-spot-watcher
  cat > /etc/systemd/system/trainstack-spot-watcher.service <<'UNIT'
[Unit]
Description=trainstack: watch for spot reclaim notices and ask training to checkpoint
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=/usr/local/bin/trainstack-spot-watcher
Restart=on-failure

[Install]
WantedBy=multi-user.target
UNIT
  systemctl daemon-reload
  systemctl enable --now trainstack-spot-watcher.service
fi

touch /run/trainstack/bootstrap-done
echo "trainstack: bootstrap of rank ${NODE_RANK} done"
