#!/bin/bash
# trainstack-weights: the base weights of "finetune-dlc-weights", fetched ONCE into DEST (docs/bootstrap.md).
# Whichever node creates the lock folder DEST.lock (mkdir is atomic on NFS, where flock is not: the shared file
# system is mounted with nolock) downloads into DEST.partial.HOST.PID and renames it to DEST with a completion marker;
# every other node waits for the marker. A lock without a heartbeat for STALE seconds is taken over.
# On PAI-DLC every worker container runs this before the job's command (the job's prelude, `trainstack submit`): the
# shared file system is the workspace dataset DLC mounts, and modelscope is installed apart from the image's packages.
set -euo pipefail
KIND="modelscope"
SOURCE="modelscope://modelscope/Llama-2-7b-ms@master"
MODEL_ID="modelscope/Llama-2-7b-ms"
REVISION="master"
DEST="/mnt/shared/weights/modelscope/Llama-2-7b-ms@master"
MOUNT="/mnt/shared"
DEST="${TRAINSTACK_WEIGHTS_DIR:-${DEST}}"
MOUNT="${TRAINSTACK_WEIGHTS_MOUNT-${MOUNT}}"
TIMEOUT="${TRAINSTACK_WEIGHTS_TIMEOUT:-7200}"
STALE="${TRAINSTACK_WEIGHTS_STALE:-600}"
POLL="${TRAINSTACK_WEIGHTS_POLL:-10}"
PAUSE="${TRAINSTACK_WEIGHTS_RETRY_PAUSE:-10}"
PIPDIR="${TRAINSTACK_WEIGHTS_PIPDIR:-${TMPDIR:-/tmp}/trainstack-modelscope}"
LOCK="${DEST}.lock"
MARK=".trainstack-weights-complete"
log() { echo "trainstack-weights: $(date -u +%H:%M:%S) $*" >&2; }
ready() { [ -f "${DEST}/${MARK}" ]; }
age() { local t; t="$(stat -c %Y "$1" 2>/dev/null)" || return 1; echo $(($(date +%s) - t)); }


download() {
  local dir="$1" i cred
  for i in 1 2 3; do
    if [ "${KIND}" = "modelscope" ]; then
      # into a folder of its own, not the image's site-packages: the job's pinned packages stay as they are, and pip
      # allows --target where the image's Python is externally managed (PEP 668)
      command -v modelscope >/dev/null 2>&1 || { python3 -m pip install -q --target "${PIPDIR}" modelscope \
        && export PYTHONPATH="${PIPDIR}${PYTHONPATH:+:${PYTHONPATH}}" PATH="${PIPDIR}/bin:${PATH}"; } || true
      modelscope download --model "${MODEL_ID}" --revision "${REVISION}" --local_dir "${dir}" && return 0
    else
      cred="$(umask 077; mktemp -d)/credentials.json"
      # each attempt takes fresh credentials (STS tokens expire)
      if (umask 077; oss_credentials "${cred}") && oss_copy "${cred}" "${dir}"; then
        rm -rf "${cred%/*}"; return 0
      fi
      rm -rf "${cred%/*}"
    fi
    log "attempt ${i} to fetch ${SOURCE} failed"; sleep $((i * PAUSE))
  done
  return 1
}

fetch() {
  local tmp
  printf '%s pid %s\n' "$(hostname)" "$$" > "${LOCK}/owner"
  (while sleep 30; do touch "${LOCK}/owner" || exit 0; done) >/dev/null 2>&1 &
  HEARTBEAT=$!
  trap 'kill "${HEARTBEAT}" 2>/dev/null; rm -rf "${LOCK}"' EXIT
  if ready; then log "${DEST} is ready"; return 0; fi  # another node finished between our check and our lock
  tmp="${DEST}.partial.$(hostname).$$"
  rm -rf "${DEST}".partial.* "${DEST}".incomplete.*  # left by a node that died holding the lock
  mkdir -p "${tmp}"
  log "this node fetches ${SOURCE} into ${DEST}"
  if ! download "${tmp}"; then
    rm -rf "${tmp}"; log "could not fetch ${SOURCE}; lock released, the job's next start tries again"; return 1
  fi
  printf 'source=%s\nfetched_by=%s\n' "${SOURCE}" "$(hostname)" > "${tmp}/${MARK}"
  if [ -e "${DEST}" ]; then mv "${DEST}" "${DEST}.incomplete.$$"; fi
  mv "${tmp}" "${DEST}"
  log "${DEST} is ready"
}

if ready; then log "${DEST} is ready"; exit 0; fi
if [ -n "${MOUNT}" ] && ! { mountpoint -q "${MOUNT}" 2>/dev/null || grep -qs " ${MOUNT} " /proc/mounts; }; then
  log "${MOUNT} is not mounted: the job must mount the shared file system dataset there (CreateJob DataSources)"; exit 1
fi
mkdir -p "${DEST%/*}"
start="$(date +%s)"; said=0
until ready; do
  if mkdir "${LOCK}" 2>/dev/null; then fetch; exit $?; fi
  held="$(age "${LOCK}/owner" || age "${LOCK}" || echo 0)"
  if [ "${held}" -gt "${STALE}" ]; then
    log "the lock ${LOCK} has had no heartbeat for ${held}s; taking it over"
    mv "${LOCK}" "${LOCK}.stale.$$" 2>/dev/null && rm -rf "${LOCK}.stale.$$"
    continue
  fi
  waited=$(($(date +%s) - start))
  if [ "${waited}" -ge "${TIMEOUT}" ]; then
    log "gave up after ${waited}s waiting for $(cat "${LOCK}/owner" 2>/dev/null || echo 'another node') to fetch ${SOURCE}"; exit 1
  fi
  if [ "${waited}" -ge "${said}" ]; then  # a line a minute
    log "waiting for $(cat "${LOCK}/owner" 2>/dev/null || echo 'another node') to fetch ${SOURCE} (${waited}s)"; said=$((waited + 60))
  fi
  sleep "${POLL}"
done
log "${DEST} is ready"
