#!/bin/bash
# trainstack-weights: the base weights of "finetune-dlc-weights", fetched ONCE into DEST (docs/bootstrap.md).
# Whichever node creates the lock folder DEST.lock (mkdir is atomic on NFS, where flock is not: the shared file
# system is mounted with nolock) downloads into DEST.partial.HOST.PID and renames it to DEST with a completion marker;
# every other node waits for the marker. A lock without a heartbeat for STALE seconds is taken over.
# On PAI-DLC every worker container runs this before the job's command (the job's prelude, `trainstack submit`): the
# shared file system is the workspace dataset DLC mounts, and modelscope is installed apart from the image's packages.
# ModelScope's CLI, when the image has none: modelscope 1.37.1 and every package it needs, each pinned to a version
# and its sha256 on PyPI (catalog modelscope_wheels.csv; pip --require-hashes refuses a wheel with another hash and
# a package that is not listed), pure-Python wheels for any Python 3.9 or later, installed into PIPDIR only.
set -euo pipefail
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


# modelscope_cli: MODELSCOPE is the image's modelscope, else the pinned one in PIPDIR (installed once per PIPDIR)
modelscope_cli() {
  local py req
  if command -v modelscope >/dev/null 2>&1; then MODELSCOPE=modelscope; return 0; fi
  for py in /opt/trainstack/venv/bin/python3 python3 python3.13 python3.12 python3.11 python3.10 python3.9 ""; do
    [ -n "${py}" ] && command -v "${py}" >/dev/null 2>&1 && "${py}" -c 'import sys; sys.exit(sys.version_info < (3, 9))' && break
  done
  [ -n "${py}" ] || { log "ModelScope's CLI needs Python 3.9 or later, and this node has none"; return 1; }
  mkdir -p "${PIPDIR}" && req="$(mktemp)" || return 1
  cat > "${req}" <<'MODELSCOPE_REQUIREMENTS'
modelscope==1.37.1 --hash=sha256:7f7af2dd37339188cbd3c18a858b1297b8a75222b9a0fbf176c7df8189cac39a
requests==2.32.5 --hash=sha256:2462f94637a34fd532264295e186976db0f5d453d1cdd31473c85a6a161affb6
charset-normalizer==3.5.3 --hash=sha256:96e268b0cbda016ac519513294fcd17032264085b600abaac58b93049477e132
idna==3.20 --hash=sha256:ab7ae7122974553370f0bdb919e1a960b2cd1bc1ef0276416d896db81c14582c
urllib3==2.6.3 --hash=sha256:bf272323e553dfb2e87d9bfd225ca7b0f467b919d7bbd355436d3fd37cb0acd4
certifi==2026.10.19.post1 --hash=sha256:1324c476b4811eff41a8bc2122cd0bbd4d9c7234c725446d99ab1612b3a7fdd2
tqdm==4.70.1 --hash=sha256:c293e525e6fef9c20e8728fd4612df02a0aa31bb5fe91ecd93e123b1b7bffa73
filelock==3.19.1 --hash=sha256:d38e30481def20772f5baf097c122c3babc4fcdb7e14e57049eb9d88c6dc017d
packaging==26.3 --hash=sha256:d7193f7c8e4e93f444fde0262bf90af30e16fa0ad0ad44cb553c87339b23cd1c
setuptools==82.0.1 --hash=sha256:a59e362652f08dcd477c78bb6e7bd9d80a7995bc73ce773050228a348ce2e5bb
MODELSCOPE_REQUIREMENTS
  if ! cmp -s "${req}" "${PIPDIR}/.trainstack-requirements.txt"; then
    log "installing modelscope 1.37.1 (hash-pinned) into ${PIPDIR} with ${py}"
    "${py}" -m pip install -q --disable-pip-version-check --require-hashes --only-binary=:all: --upgrade \
      --target "${PIPDIR}" -r "${req}" || { rm -f "${req}"; log "pip could not install modelscope"; return 1; }
    mv "${req}" "${PIPDIR}/.trainstack-requirements.txt"
  fi
  rm -f "${req}"
  MODELSCOPE="${PIPDIR}/bin/modelscope"
  export PYTHONPATH="${PIPDIR}${PYTHONPATH:+:${PYTHONPATH}}"
}

download() {
  local dir="$1" i
  for i in 1 2 3; do
    if modelscope_cli && "${MODELSCOPE}" download --model "${MODEL_ID}" --revision "${REVISION}" --local_dir "${dir}"; then
      return 0
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
