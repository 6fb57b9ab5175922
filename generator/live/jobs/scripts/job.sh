# The body of a trainstack job on one node, sent by `trainstack submit` through Cloud Assistant (RunCommand) under
# the TRAINSTACK_JOB_* assignments above. It starts `trainstack-launch COMMAND...` (torchrun with the cluster's
# rendezvous), keeps its output in /var/log/trainstack/jobs/JOB/rank-N.log and copies that log and the exit status
# (rank-N.exit.json) to the checkpoint bucket every 30 s and at the end, so `trainstack logs` reads them after the
# nodes are gone. The command's words arrive base64-encoded and NUL-separated: they are decoded into an array and
# passed as "${argv[@]}", never through a shell's parser.
set -uo pipefail
umask 022
RUN_DIR="${TRAINSTACK_RUN_DIR:-/run/trainstack}"
LOG_ROOT="${TRAINSTACK_LOG_ROOT:-/var/log/trainstack/jobs}"
LAUNCH="${TRAINSTACK_LAUNCH:-/usr/local/bin/trainstack-launch}"
export TRAINSTACK_JOB TRAINSTACK_JOB_NNODES TRAINSTACK_JOB_MASTER_ADDR
mapfile -d '' -t argv < <(printf '%s' "${TRAINSTACK_JOB_ARGV}" | base64 -d)
if [ "${#argv[@]}" -eq 0 ]; then echo "trainstack: job ${TRAINSTACK_JOB} has no command" >&2; exit 2; fi

META="http://100.100.100.200/latest"
token="$(curl -fsS -m 5 -X PUT "${META}/api/token" -H 'X-aliyun-ecs-metadata-token-ttl-seconds: 300' || true)"
meta() { curl -fsS -m 5 -H "X-aliyun-ecs-metadata-token: ${token}" "${META}/meta-data/$1" || true; }
iid="$(meta instance-id)"
rank=""
IFS=, read -ra pairs <<< "${TRAINSTACK_JOB_RANKS}"
for p in "${pairs[@]}"; do [ "${p%%:*}" = "${iid}" ] && rank="${p#*:}"; done
[ -n "${rank}" ] || rank="$(sed -n 's/^NODE_RANK=//p' /etc/trainstack/launch.env 2>/dev/null | head -n 1 | tr -cd 0-9)"
rank="${rank:-x}"
dir="${LOG_ROOT}/${TRAINSTACK_JOB}"
mkdir -p "${dir}"
log="${dir}/rank-${rank}.log"
status="${dir}/rank-${rank}.exit.json"

# Every node copies with the node's one OSS client, trainstack-ckpt-sync --put (Python's standard library, signed
# requests to the bucket's internal endpoint; templates/stack/ckpt_sync.py.j2, docs/bootstrap.md), nothing downloaded.
# ECS nodes have it from their cluster facts and sign with the RAM role's STS credentials (the metadata service in
# hardened mode). A Lingjun node group's user data has no room for it: the job carries it (TRAINSTACK_JOB_OSS_CLIENT,
# gzip and base64), unpacked here into a private folder; with no RAM role it signs with the RAM user's AccessKey that
# the operator installs in /etc/trainstack/oss-credentials, read by the client itself, never on a command line.
SYNC="${TRAINSTACK_CKPT_SYNC:-/usr/local/bin/trainstack-ckpt-sync}"
if [ ! -x "${SYNC}" ] && [ -n "${TRAINSTACK_JOB_OSS_CLIENT:-}" ]; then
  client_dir="$(umask 077; mktemp -d)" &&
    printf '%s' "${TRAINSTACK_JOB_OSS_CLIENT}" | base64 -d | gunzip > "${client_dir}/trainstack-ckpt-sync" &&
    chmod 0700 "${client_dir}/trainstack-ckpt-sync" && SYNC="${client_dir}/trainstack-ckpt-sync"
fi
upload() {
  [ -n "${TRAINSTACK_JOB_LOG_URL}" ] && [ -e "$1" ] || return 0
  [ -x "${SYNC}" ] || { echo "trainstack: no ${SYNC} on this node: $1 stays on the node" >&2; return 0; }
  "${SYNC}" --put "$1" "${TRAINSTACK_JOB_LOG_URL}/$(basename "$1")" > /dev/null 2>&1 ||
    echo "trainstack: copying $1 to OSS failed" >&2
  return 0
}
state() {  # state NAME [EXIT_CODE]
  printf '{"job": "%s", "rank": "%s", "instance_id": "%s", "state": "%s", "exit_code": %s, "time": "%s"}\n' \
    "${TRAINSTACK_JOB}" "${rank}" "${iid}" "$1" "${2:-null}" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "${status}"
  upload "${status}"
}
finish() {
  rc="$1"
  [ -n "${copier:-}" ] && kill "${copier}" 2> /dev/null
  upload "${log}"
  state finished "${rc}"
  [ -n "${client_dir:-}" ] && rm -f "${client_dir}/trainstack-ckpt-sync" && rmdir "${client_dir}"
  exit "${rc}"
}
trap 'finish 143' TERM
trap 'finish 130' INT

STATE_DIR="${TRAINSTACK_STATE_DIR:-/var/lib/trainstack}"  # markers kept there survive a reboot
# `trainstack heal` starts a running job on a node it just re-created: wait (at most TRAINSTACK_JOB_BOOT_WAIT s)
# for that node's bootstrap to end, since Cloud Assistant runs commands before cloud-init has finished.
waited=0
while [ "${waited}" -lt "${TRAINSTACK_JOB_BOOT_WAIT:-0}" ] && [ ! -e "${RUN_DIR}/bootstrap-done" ] &&
  [ ! -e "${RUN_DIR}/bootstrap-failed" ]; do
  sleep 5; waited=$((waited + 5))
done
if [ -e "${RUN_DIR}/bootstrap-failed" ] || [ -e "${STATE_DIR}/bootstrap-failed" ] ||
  { [ ! -e "${RUN_DIR}/bootstrap-done" ] && [ ! -e "${STATE_DIR}/bootstrap-done" ]; }; then
  echo "trainstack: the node's bootstrap has not finished (no ${RUN_DIR}/bootstrap-done); see /var/log/cloud-init-output.log" | tee -a "${log}" >&2
  finish 3
fi
# The job's world size and rendezvous host: trainstack-launch caps its `--nnodes MIN:MAX` at TRAINSTACK_JOB_NNODES
# and takes TRAINSTACK_JOB_MASTER_ADDR as the rendezvous host (node-init.sh.j2), so a job that leaves quarantined
# nodes out still forms; the user's words pass to torchrun as they are.
state running
( while sleep 30; do upload "${log}"; done ) &
copier=$!
echo "trainstack: job ${TRAINSTACK_JOB} rank ${rank} on ${iid}: trainstack-launch with ${#argv[@]} argument(s), ${TRAINSTACK_JOB_NNODES} node(s), rendezvous ${TRAINSTACK_JOB_MASTER_ADDR}" | tee -a "${log}"
"${LAUNCH}" "${argv[@]}" 2>&1 | tee -a "${log}"
finish "${PIPESTATUS[0]}"
