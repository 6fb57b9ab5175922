#!/bin/bash
# trainstack node bootstrap for "pretrain-70b" (cloud-init user data; runs as root at first boot).
# The program fills in only what never changes for a node: __TRAINSTACK_NODE_RANK__, __TRAINSTACK_NODE_NAME__ and
# __TRAINSTACK_NODE_SPOT__. What the whole cluster shares (members, node count, rendezvous, shared file system,
# checkpoints) is one JSON object, the cluster facts, that the program publishes
# in the checkpoint bucket and /usr/local/bin/trainstack-facts reads at boot and at every trainstack-launch, so
# resizing the cluster changes no node's user data.
#
# What it does, in order, each step idempotent (docs/bootstrap.md; a second run ends in the same node):
#   1. writes the node identity, reads the cluster facts and writes /etc/trainstack/hostfile and launch.env
#   2. installs trainstack-boot (+ its unit, run at every boot), tmpfiles.d, trainstack-launch and the spot watcher
#   3. installs once what the image lacks: the eRDMA stack, the NVIDIA driver (one reboot if needed), PyTorch
#   4. runs trainstack-boot: MTU, shared mount, driver and torchrun checks, watcher; /run/trainstack/bootstrap-done
# Any failure: /run/trainstack/bootstrap-failed (step=, reason=), a journal line, /var/log/trainstack/init.log.
set -Eeuo pipefail
umask 022
mkdir -p /etc/trainstack /etc/tmpfiles.d /etc/systemd/system /var/lib/trainstack /var/log/trainstack /run/trainstack
exec > >(tee -a /var/log/trainstack/init.log) 2>&1
# Every failure leaves /run/trainstack/bootstrap-failed (the step and the cause) and a journal line (docs/bootstrap.md).
STEP="identity"
fail() {
  echo "trainstack: bootstrap failed in step ${STEP}: $*"
  printf 'step=%s\nreason=%s\n' "${STEP}" "$*" > /run/trainstack/bootstrap-failed
  rm -f /run/trainstack/bootstrap-done
  logger -t trainstack -p user.err "bootstrap failed in step ${STEP}: $*" 2>/dev/null || true
  exit 1
}
trap 'fail "command exited with $? at line ${LINENO}"' ERR
rm -f /run/trainstack/bootstrap-done /run/trainstack/bootstrap-failed
echo "trainstack: bootstrap of rank __TRAINSTACK_NODE_RANK__ starting"

NODE_RANK="__TRAINSTACK_NODE_RANK__"
NODE_NAME="__TRAINSTACK_NODE_NAME__"
SPOT="__TRAINSTACK_NODE_SPOT__"
# Where the cluster facts live: the checkpoint bucket, a key only readable by the node role, the internal endpoint.
FACTS_BUCKET="pretrain-70b-ckpt-c870c3"
FACTS_KEY="trainstack/cluster.json"
FACTS_ENDPOINT="oss-cn-wulanchabu-internal.aliyuncs.com"
FACTS_ROLE="pretrain-70b-node"
RDMA="erdma"
ERI_COUNT="2"
# Alibaba's eRDMA installer 1.5.7 on the VPC-internal mirror (catalog node_downloads.csv), installed only if its
# sha256 is "cb44f4c4aaaabfbd81224c85a9e7889732bda26cc832ff70ecc0559bcc14165c", the one Alibaba's eRDMA page publishes (docs/bootstrap.md)
ERDMA_INSTALLER_URL="https://mirrors.cloud.aliyuncs.com/erdma/erdma_installer-1.5.7.tar.gz"
ERDMA_INSTALLER_SHA256="cb44f4c4aaaabfbd81224c85a9e7889732bda26cc832ff70ecc0559bcc14165c"
# The runtime when the image has none (docs/bootstrap.md, "The runtime"): NVIDIA's driver 550.163.01 (exact version),
# PyTorch 2.6.0 (CUDA 12.4 wheels) from Alibaba's VPC-internal PyPI mirror over HTTPS, in /opt/trainstack/venv,
# every wheel checked against its sha256 on PyPI (pip --require-hashes; /etc/trainstack/torch-requirements.txt, from the cluster facts).
# compute.container_image (docs/bootstrap.md, "Container image"): trainstack-launch runs torchrun in it; "" for none
CONTAINER_IMAGE=""
DRIVER_BRANCH="550"
DRIVER_VERSION="550.163.01"
TORCH_SPEC="torch==2.6.0"
PYPI_INDEX="https://mirrors.cloud.aliyuncs.com/pypi/simple/"

# 1. identity, hostfile and launch environment ------------------------------------------------------------
{
  printf 'NODE_RANK=%q\nNODE_NAME=%q\nSPOT=%q\nCONTAINER_IMAGE=%q\n' "${NODE_RANK}" "${NODE_NAME}" "${SPOT}" "${CONTAINER_IMAGE}"
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
LAST_ERROR=""
fetch_once() {
  local token creds id secret sts date signature tmp code rc
  token="$(curl -fsS --connect-timeout 2 --max-time 5 -X PUT "${METADATA}/api/token" \
    -H 'X-aliyun-ecs-metadata-token-ttl-seconds: 300')" || { LAST_ERROR="no metadata token from ${METADATA}"; return 1; }
  rc="$(mktemp)"
  code="$(curl -sS --connect-timeout 2 --max-time 5 -o "${rc}" -w '%{http_code}' -H "X-aliyun-ecs-metadata-token: ${token}" \
    "${METADATA}/meta-data/ram/security-credentials/${FACTS_ROLE}")" || code="000"
  creds="$(cat "${rc}")"; rm -f "${rc}"
  if [ "${code}" = 404 ]; then
    LAST_ERROR="this instance has no RAM role ${FACTS_ROLE} attached (metadata: HTTP 404); 'trainstack up' attaches it"; return 1
  elif [ "${code}" != 200 ]; then
    LAST_ERROR="the metadata service gave HTTP ${code} for the credentials of role ${FACTS_ROLE}"; return 1
  fi
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
    LAST_ERROR="oss://${FACTS_BUCKET}/${FACTS_KEY}: HTTP ${code}$([ "${code}" = 200 ] && echo ', without this node')"
    echo "trainstack-facts: ${LAST_ERROR}" >&2
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
    echo "trainstack-facts: attempt ${i}/${attempts}: ${LAST_ERROR}" >&2
    delay=$((i < 5 ? 2 ** i : 30))
    [ "${i}" -lt "${attempts}" ] && sleep "${delay}"
  done
  echo "trainstack-facts: no cluster facts listing ${NODE_NAME} after ${attempts} attempts; last error: ${LAST_ERROR}" >&2
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

case "${1:-}" in
  fetch) fetch "${2:-40}" ;;
  apply) apply "${2:-}" ;;
  mount) mount_shared ;;
  *) echo "usage: trainstack-facts fetch [ATTEMPTS] | apply [FILE] | mount" >&2; exit 2 ;;
esac
FACTS_TOOL
chmod 0755 /usr/local/bin/trainstack-facts
# its attempts go to /var/log/trainstack/facts.log; the last line names the cause
/usr/local/bin/trainstack-facts fetch "${TRAINSTACK_FACTS_ATTEMPTS:-40}" 2>> /var/log/trainstack/facts.log ||
  fail "$(tail -n 1 /var/log/trainstack/facts.log)"
/usr/local/bin/trainstack-facts apply
hostnamectl set-hostname "${NODE_NAME}" || echo "trainstack: could not set the host name ${NODE_NAME}"

# 2. what every boot needs: /run/trainstack, the MTU, the shared mount, the driver check, the watcher ----------
STEP="install-tools"
cat > /etc/tmpfiles.d/trainstack.conf <<'TMPFILES'
d /run/trainstack 0755 root root -
TMPFILES
cat > /usr/local/bin/trainstack-boot <<'BOOT'
#!/bin/bash
# trainstack-boot: run by node-init.sh at first boot and by trainstack-boot.service at every boot after it.
# Ends in /run/trainstack/bootstrap-done, or /run/trainstack/bootstrap-failed naming the step and the cause.
set -Eeuo pipefail
mkdir -p /run/trainstack /var/log/trainstack
exec > >(tee -a /var/log/trainstack/boot.log) 2>&1
# The tee is a process substitution, which bash does not wait for: at exit, close our end and wait for it, so every
# line has reached boot.log (and node-init.sh's log, at first boot) before the caller reads on.
TEE_PID=$!
trap 'exec >&- 2>&-; wait "${TEE_PID}" 2>/dev/null || true' EXIT
STEP="boot"
fail() {
  echo "trainstack-boot: failed in step ${STEP}: $*"
  printf 'step=%s\nreason=%s\n' "${STEP}" "$*" > /run/trainstack/bootstrap-failed
  rm -f /run/trainstack/bootstrap-done
  logger -t trainstack -p user.err "boot failed in step ${STEP}: $*" 2>/dev/null || true
  exit 1
}
trap 'fail "command exited with $? at line ${LINENO}"' ERR
rm -f /run/trainstack/bootstrap-done /run/trainstack/bootstrap-failed
. /etc/trainstack/node.env
[ -f /var/lib/trainstack/installed ] || fail "node-init.sh has not finished installing this node (see /var/log/trainstack/init.log)"
STEP="mtu"
# Every NIC but loopback and virtual ones (containers, bridges), whatever the image names them.
for path in /sys/class/net/*; do
  nic="${path##*/}"
  case "${nic}" in lo|docker*|veth*|br-*|virbr*|cni*|flannel*|cali*|tun*|tap*) continue ;; esac
  [ "$(cat "${path}/mtu")" = "1400" ] && continue
  ip link set dev "${nic}" mtu 1400 || fail "could not set MTU 1400 on ${nic}"
  echo "trainstack-boot: MTU 1400 on ${nic}"
done
STEP="mount"
/usr/local/bin/trainstack-facts mount || echo "trainstack-boot: the shared file system is not mounted yet; trainstack-launch tries again"
STEP="driver"
if ! out="$(timeout 60 nvidia-smi -L 2>&1)"; then
  fail "nvidia-smi does not answer, no working NVIDIA driver: ${out:-nvidia-smi not found}"
fi
echo "trainstack-boot: $(printf '%s\n' "${out}" | grep -c '^GPU') GPU(s) answer"
if [ -e /usr/bin/nv-fabricmanager ] && ! systemctl is-active --quiet nvidia-fabricmanager; then
  systemctl start nvidia-fabricmanager || echo "trainstack-boot: nvidia-fabricmanager did not start (needed only with NVSwitch)"
fi
STEP="runtime"
if [ -n "${CONTAINER_IMAGE:-}" ]; then
  timeout 60 docker image inspect "${CONTAINER_IMAGE}" >/dev/null 2>&1 || fail "the container image ${CONTAINER_IMAGE} is not on this node (or Docker does not answer)"
else
  PATH="/opt/trainstack/venv/bin:${PATH}" command -v torchrun >/dev/null || fail "no torchrun: neither the image nor /opt/trainstack/venv has PyTorch"
fi
if [ "${SPOT}" = "true" ]; then
  STEP="spot-watcher"
  systemctl start trainstack-spot-watcher.service || fail "could not start trainstack-spot-watcher.service"
fi
date -u +%Y-%m-%dT%H:%M:%SZ > /run/trainstack/bootstrap-done
echo "trainstack-boot: node ready"
BOOT
cat > /etc/systemd/system/trainstack-boot.service <<'UNIT'
[Unit]
Description=trainstack: per-boot node setup (MTU, shared mount, driver check, spot watcher)
After=network-online.target systemd-tmpfiles-setup.service
Wants=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/bin/trainstack-boot

[Install]
WantedBy=multi-user.target
UNIT

# the launcher (its interface: docs/bootstrap.md, "trainstack-launch")
cat > /usr/local/bin/trainstack-launch <<'LAUNCH'
#!/bin/bash
# trainstack-launch [TORCHRUN-OPTIONS] SCRIPT [ARGS...]: one torchrun agent on this node with the cluster's
# rendezvous (everything after the launcher's name goes to torchrun after its rendezvous flags).
# Elastic: torchrun's c10d rendezvous on rank 0 admits MIN_NODES to MAX_NODES nodes; after a reclaim, a failure or
# a resize it restarts the workers on the nodes that are there (at most MAX_RESTARTS times).
# Exit 3: the node's bootstrap failed or has not finished (/run/trainstack/bootstrap-*), so it stays out of the job.
set -euo pipefail
mkdir -p /run/trainstack
if [ -f /run/trainstack/bootstrap-failed ] || [ ! -f /run/trainstack/bootstrap-done ]; then
  echo "trainstack-launch: this node is not ready: $(tr '\n' ' ' < /run/trainstack/bootstrap-failed 2>/dev/null || echo 'bootstrap not done')" >&2
  exit 3
fi
SHARED_MOUNT="/mnt/shared"
if [ -f /run/trainstack/preempt ]; then
  echo "trainstack-launch: this node is being reclaimed at $(cat /run/trainstack/preempt); not joining" >&2
  exit 3
fi
# Read the cluster facts again: a resized cluster is picked up here, with no reboot.
/usr/local/bin/trainstack-facts fetch 3 || echo "trainstack-launch: using the cluster facts of the last fetch" >&2
/usr/local/bin/trainstack-facts apply
/usr/local/bin/trainstack-facts mount || echo "trainstack-launch: the shared file system is not mounted" >&2
# shellcheck source=/dev/null  # a file of the node, written at boot
set -a; . /etc/trainstack/launch.env; set +a
if [ "${NODE_RANK}" = 0 ] && [ -n "${TRAINSTACK_CHECKPOINT_DIR}" ] && [ -n "${TRAINSTACK_CHECKPOINT_OSS}" ]; then
  (flock -n 9 || exit 0; exec setsid /usr/local/bin/trainstack-ckpt-sync >>/var/log/trainstack/ckpt-sync.log 2>&1) \
    9>/run/trainstack/ckpt-sync.lock &
fi
# A job of `trainstack submit` that leaves quarantined nodes out: its node count and rendezvous host (docs/jobs.md)
if [ -n "${TRAINSTACK_JOB_NNODES:-}" ]; then
  [ "${MIN_NODES}" -gt "${TRAINSTACK_JOB_NNODES}" ] && MIN_NODES="${TRAINSTACK_JOB_NNODES}"
  [ "${MAX_NODES}" -gt "${TRAINSTACK_JOB_NNODES}" ] && MAX_NODES="${TRAINSTACK_JOB_NNODES}"
fi
MASTER_ADDR="${TRAINSTACK_JOB_MASTER_ADDR:-${MASTER_ADDR}}"
TORCHRUN=(--nnodes "${MIN_NODES}:${MAX_NODES}" --nproc-per-node "${GPUS_PER_NODE}" \
  --rdzv-backend c10d --rdzv-endpoint "${MASTER_ADDR}:${MASTER_PORT}" --rdzv-id "${TRAINSTACK_NAME}" \
  --max-restarts "${MAX_RESTARTS}" "$@")
# shellcheck source=/dev/null  # a file of the node, written at boot (CONTAINER_IMAGE)
if [ -r /etc/trainstack/node.env ]; then . /etc/trainstack/node.env; fi
if [ -n "${CONTAINER_IMAGE:-}" ]; then
  # torchrun in compute.container_image (docs/bootstrap.md, "Container image"): every GPU, the host's network (the
  # rendezvous and NCCL see the node's NICs) and PID namespace (train.pid is the agent's host PID, so the spot
  # watcher reaches its workers), the shared file system, the weights and checkpoint folders, /run/trainstack (the
  # preemption file), /etc/trainstack (read-only) and this folder as the working folder; launch.env's variables
  run=(--rm --name "trainstack-${TRAINSTACK_NAME}-${NODE_RANK}" --gpus all --network host --pid host --ipc host
       --ulimit memlock=-1 -v /run/trainstack:/run/trainstack -v /etc/trainstack:/etc/trainstack:ro -v "${PWD}:${PWD}" -w "${PWD}")
  for dir in "${SHARED_MOUNT}" "${TRAINSTACK_CHECKPOINT_DIR:-}" "${TRAINSTACK_WEIGHTS_DIR:-}"; do
    if [ -n "${dir}" ] && [ -d "${dir}" ]; then run+=(-v "${dir}:${dir}"); fi
  done
  if [ -d /dev/infiniband ]; then run+=(--device /dev/infiniband --cap-add IPC_LOCK); fi  # eRDMA / RDMA verbs
  while IFS='=' read -r key _; do run+=(-e "${key}"); done < <(grep -E '^[A-Za-z_][A-Za-z0-9_]*=' /etc/trainstack/launch.env)
  for key in MASTER_ADDR OSS_ACCESS_KEY_ID OSS_ACCESS_KEY_SECRET TRAINSTACK_JOB_NNODES TRAINSTACK_JOB_MASTER_ADDR; do
    if [ -n "${!key:-}" ]; then run+=(-e "${key}"); fi
  done
  # shellcheck disable=SC2016  # $$ and $@ belong to the container's shell
  exec docker run "${run[@]}" "${CONTAINER_IMAGE}" \
    sh -c 'echo $$ > /run/trainstack/train.pid && exec torchrun "$@"' trainstack-launch "${TORCHRUN[@]}"
fi
export PATH="/opt/trainstack/venv/bin:${PATH}"
echo $$ > /run/trainstack/train.pid
exec torchrun "${TORCHRUN[@]}"
LAUNCH
# rank 0's checkpoint copy to OSS (docs/bootstrap.md), from the cluster facts ("" without a checkpoint folder)
python3 -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1])).get("ckpt_sync", ""))' \
  /etc/trainstack/cluster.json > /usr/local/bin/trainstack-ckpt-sync

# Preemption contract (spot nodes; docs/bootstrap.md). Alibaba Cloud announces a spot reclaim five minutes ahead at
# meta-data/instance/spot/termination-time. The watcher writes the time (UTC, ISO 8601) to /run/trainstack/preempt
# (TRAINSTACK_PREEMPT_FILE) and sends SIGUSR1 to the worker processes: the children of the torchrun agent whose
# PID is in /run/trainstack/train.pid (not the agent: torchrun does not handle SIGUSR1). When they have exited (at
# most 240 s) it stops the agent with SIGTERM, which torchrun handles, so the node leaves the rendezvous.
cat > /usr/local/bin/trainstack-spot-watcher <<'WATCHER'
#!/bin/bash
set -uo pipefail
METADATA="${TRAINSTACK_METADATA:-http://100.100.100.200/latest}"
POLL="${TRAINSTACK_SPOT_POLL:-5}"
mkdir -p /run/trainstack
note() { echo "trainstack-spot-watcher: $*"; logger -t trainstack "$*" 2>/dev/null || true; }
while true; do
  token="$(curl -fsS --connect-timeout 1 --max-time 3 -X PUT "${METADATA}/api/token" \
    -H 'X-aliyun-ecs-metadata-token-ttl-seconds: 300')" || { note "no metadata token; trying again"; sleep "${POLL}"; continue; }
  code="$(curl -s --connect-timeout 1 --max-time 3 -o /run/trainstack/.termination -w '%{http_code}' \
    -H "X-aliyun-ecs-metadata-token: ${token}" "${METADATA}/meta-data/instance/spot/termination-time")"
  if [ "${code}" = "200" ]; then
    mv -f /run/trainstack/.termination /run/trainstack/preempt
    note "spot reclaim announced for $(cat /run/trainstack/preempt); asking training to checkpoint"
    agent="$(cat /run/trainstack/train.pid 2>/dev/null)"
    workers="$(pgrep -P "${agent:-0}" | tr '\n' ' ')"
    # shellcheck disable=SC2086  # one PID a word
    if [ -n "${agent}" ] && [ -n "${workers}" ] && kill -USR1 ${workers}; then
      note "sent SIGUSR1 to the workers of torchrun ${agent}"
      # Once THESE workers have saved and exited (at most GRACE s; an exited one that the agent has not reaped yet
      # counts as exited), stop the agent at once: a peer's membership change makes torchrun start a new round of
      # workers, and the agent must leave before it joins one (new workers would hold the watcher for GRACE s).
      running() { local st; st="$(ps -o stat= -p "$1" 2>/dev/null)" && [ -n "${st}" ] && [ "${st#Z}" = "${st}" ]; }
      for ((i = 0; i < ${TRAINSTACK_PREEMPT_GRACE:-240} * 5; i++)); do
        left=0; for w in ${workers}; do if running "${w}"; then left=1; fi; done
        [ "${left}" = 0 ] && break; sleep 0.2
      done
      kill -TERM "${agent}" 2>/dev/null && note "stopped torchrun ${agent} (SIGTERM): this node leaves the job"
    else
      note "no training running: nothing to signal"
    fi
    exit 0
  fi
  sleep "${POLL}"
done
WATCHER
cat > /etc/systemd/system/trainstack-spot-watcher.service <<'UNIT'
[Unit]
Description=trainstack: watch for spot reclaim notices and ask training to checkpoint
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=/usr/local/bin/trainstack-spot-watcher
Restart=on-failure
RestartSec=5
UNIT
chmod 0755 /usr/local/bin/trainstack-boot /usr/local/bin/trainstack-launch /usr/local/bin/trainstack-spot-watcher /usr/local/bin/trainstack-ckpt-sync

# 3. install once: eRDMA stack, NVIDIA driver, PyTorch -------------------------------------------------------
STEP="erdma"
erdma_devices() { local n=0 d; for d in /sys/class/infiniband/erdma*; do [ -e "${d}" ] && n=$((n + 1)); done; echo "${n}"; }
if [ "${RDMA}" = "erdma" ] && [ "$(erdma_devices)" -eq 0 ]; then
  echo "trainstack: installing the eRDMA stack from ${ERDMA_INSTALLER_URL}"
  tmp="$(mktemp -d)"
  # HTTPS first; the http:// URL Alibaba's page gives only when HTTPS fails and a sha256 is recorded to check it
  curl -fsSL --proto =https --retry 5 --retry-delay 10 --connect-timeout 10 "${ERDMA_INSTALLER_URL}" -o "${tmp}/erdma.tar.gz" \
    || { [ -n "${ERDMA_INSTALLER_SHA256}" ] && echo "trainstack: HTTPS failed; trying http:// (checked by sha256)" && curl -fsSL \
    --proto =http --retry 5 --retry-delay 10 --connect-timeout 10 "http://${ERDMA_INSTALLER_URL#https://}" -o "${tmp}/erdma.tar.gz"; } \
    || fail "could not download ${ERDMA_INSTALLER_URL} (5 retries, 10 s apart)"
  got="$(sha256sum "${tmp}/erdma.tar.gz" | cut -d' ' -f1)"
  if [ -n "${ERDMA_INSTALLER_SHA256}" ] && [ "${got}" != "${ERDMA_INSTALLER_SHA256}" ]; then
    fail "${ERDMA_INSTALLER_URL} has sha256 ${got}, not the published ${ERDMA_INSTALLER_SHA256}; not installing it"
  fi
  echo "trainstack: ${ERDMA_INSTALLER_URL} sha256 ${got}${ERDMA_INSTALLER_SHA256:+ (as published)}"
  echo "${got}  ${ERDMA_INSTALLER_URL##*/}" > /var/lib/trainstack/erdma-installer.sha256
  tar -xzf "${tmp}/erdma.tar.gz" -C "${tmp}"
  (cd "${tmp}"/erdma_installer* && ./install.sh --batch) || fail "the eRDMA installer failed"
  modprobe erdma || echo "trainstack: modprobe erdma failed; it loads at the next boot"
fi
if [ "${RDMA}" = "erdma" ] && [ "$(erdma_devices)" -lt "${ERI_COUNT}" ]; then
  echo "trainstack: expected ${ERI_COUNT} eRDMA device(s), found $(erdma_devices); NCCL will run below full bandwidth"
fi
STEP="driver"
reboot_needed=""
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "trainstack: no NVIDIA driver in the image; installing ${DRIVER_VERSION} from NVIDIA's repository (GPG-checked)"
  # shellcheck source=/dev/null  # a file of the node, written at boot
  . /etc/os-release
  case "${ID}" in
    alinux|rhel|centos|rocky|almalinux)
      dnf install -y "kernel-devel-$(uname -r)" "kernel-headers-$(uname -r)" dkms
      dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/rhel8/x86_64/cuda-rhel8.repo
      # the branch's module stream, then the exact version of each package in it (NAME-VERSION)
      dnf module enable -y "nvidia-driver:${DRIVER_BRANCH}-dkms"
      dnf install -y "nvidia-driver-${DRIVER_VERSION}" "nvidia-driver-cuda-${DRIVER_VERSION}" \
        "kmod-nvidia-latest-dkms-${DRIVER_VERSION}" "nvidia-fabric-manager-${DRIVER_VERSION}" ;;
    ubuntu)
      apt-get update
      # NAME=VERSION with apt's version glob: Ubuntu's package revision (-0ubuntu...) differs by release
      apt-get install -y "linux-headers-$(uname -r)" "nvidia-driver-${DRIVER_BRANCH}-server=${DRIVER_VERSION}-*" \
        "nvidia-fabricmanager-${DRIVER_BRANCH}=${DRIVER_VERSION}-*" ;;
    *) fail "cannot install a driver on ${ID}: use an image with the NVIDIA driver (compute.image_id)" ;;
  esac
  systemctl enable nvidia-fabricmanager || echo "trainstack: nvidia-fabricmanager not enabled (needed only with NVSwitch)"
  timeout 60 nvidia-smi -L >/dev/null 2>&1 || reboot_needed="the new driver answers only after a reboot"
fi
STEP="runtime"
if [ -n "${CONTAINER_IMAGE}" ]; then
  # the job's PyTorch is in the container image: pull it (by digest, so Docker checks every layer) through the
  # registry's VPC endpoint; Docker and the NVIDIA Container Toolkit come with the node image (compute.image_id)
  command -v docker >/dev/null 2>&1 || fail "compute.container_image needs Docker on the node image: no docker command"
  command -v nvidia-container-cli >/dev/null 2>&1 || fail "compute.container_image needs the NVIDIA Container Toolkit on the node image: no nvidia-container-cli"
  systemctl start docker.service 2>/dev/null || echo "trainstack: could not start docker.service; trying docker anyway"
  for i in 1 2 3; do
    docker pull "${CONTAINER_IMAGE}" && break
    [ "${i}" = 3 ] && fail "could not pull ${CONTAINER_IMAGE} (3 attempts; the repository must allow pulls from the VPC without a login)"
    echo "trainstack: docker pull attempt ${i} failed; again in $((i * 30)) s"; sleep $((i * 30))
  done
elif ! PATH="/opt/trainstack/venv/bin:${PATH}" command -v torchrun >/dev/null 2>&1; then
  echo "trainstack: no PyTorch in the image; installing ${TORCH_SPEC} into /opt/trainstack/venv from ${PYPI_INDEX}"
  # shellcheck source=/dev/null  # a file of the node, written at boot
  . /etc/os-release
  case "${ID}" in
    alinux|rhel|centos|rocky|almalinux) py=python3.11; command -v "${py}" >/dev/null || dnf install -y python3.11 ;;
    *) py=python3; "${py}" -m venv --help >/dev/null 2>&1 || { apt-get update && apt-get install -y python3-venv; } ;;
  esac
  "${py}" -m venv /opt/trainstack/venv
  # torch and every wheel it needs, each pinned to a version and its sha256 on PyPI (catalog node_wheels.csv):
  # pip refuses a wheel with another hash, and a dependency that is not in the file
  python3 -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))["torch_requirements"])' \
    /etc/trainstack/cluster.json > /etc/trainstack/torch-requirements.txt  # from the cluster facts
  # HTTPS first; if the mirror does not answer it, its http:// index, where the sha256s still decide every wheel
  host="${PYPI_INDEX#https://}"; host="${host%%/*}"
  for i in 1 2 3; do
    /opt/trainstack/venv/bin/pip install --no-cache-dir --index-url "${PYPI_INDEX}" --require-hashes \
      --only-binary=:all: -r /etc/trainstack/torch-requirements.txt && break
    /opt/trainstack/venv/bin/pip install --no-cache-dir --index-url "http://${PYPI_INDEX#https://}" --trusted-host \
      "${host}" --require-hashes --only-binary=:all: -r /etc/trainstack/torch-requirements.txt && break
    [ "${i}" = 3 ] && fail "could not install ${TORCH_SPEC} from ${PYPI_INDEX} or its http:// index (3 attempts)"
    echo "trainstack: pip attempt ${i} failed; again in $((i * 30)) s"; sleep $((i * 30))
  done
fi
date -u +%Y-%m-%dT%H:%M:%SZ > /var/lib/trainstack/installed

# 4. this boot ------------------------------------------------------------------------------------------------
STEP="boot"
systemctl daemon-reload || echo "trainstack: systemctl daemon-reload failed"
systemctl enable trainstack-boot.service || fail "could not enable trainstack-boot.service"
if [ -n "${reboot_needed}" ]; then
  echo "trainstack: rebooting once: ${reboot_needed}; trainstack-boot.service finishes the bootstrap"
  printf 'step=driver\nreason=%s\n' "rebooting: ${reboot_needed}" > /run/trainstack/bootstrap-rebooting
  systemctl reboot
  exit 0
fi
trap - ERR
/usr/local/bin/trainstack-boot || { echo "trainstack: bootstrap of rank ${NODE_RANK} failed: $(tr '\n' ' ' < /run/trainstack/bootstrap-failed)"; exit 1; }
echo "trainstack: bootstrap of rank ${NODE_RANK} done"
