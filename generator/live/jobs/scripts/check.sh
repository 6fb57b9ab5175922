# The body of `trainstack check` on one node, sent through Cloud Assistant (RunCommand) under the TRAINSTACK_CHECK_*
# assignments above. Each check prints one line `TRAINSTACK-CHECK {"check": NAME, "ok": true|false|null, ...}`
# (null: the check could not run here, e.g. a tool is not installed); trainstack reads the lines from the
# invocation's output and decides (generator/live/jobs/health.py). Nothing on the node is changed.
set -uo pipefail
RUN_DIR="${TRAINSTACK_RUN_DIR:-/run/trainstack}"
STATE_DIR="${TRAINSTACK_STATE_DIR:-/var/lib/trainstack}"
emit() {  # emit NAME OK DETAIL [VALUE]
  local detail="${3//\\/\\\\}"
  detail="${detail//\"/\\\"}"
  detail="$(printf '%s' "${detail}" | tr '\n\t' '  ' | cut -c1-400)"
  printf 'TRAINSTACK-CHECK {"check": "%s", "ok": %s, "detail": "%s", "value": %s}\n' "$1" "$2" "${detail}" "${4:-null}"
}

# TRAINSTACK_CHECK_ONLY=nccl-inter: only the cross-node all-reduce, on a subset of the nodes (the bisection of a
# cross-node failure, generator/live/jobs/bisect.py); every other check is skipped
if [ "${TRAINSTACK_CHECK_ONLY:-}" != nccl-inter ]; then
# bootstrap markers (node-init.sh: /run/trainstack, or /var/lib/trainstack where the launcher keeps them)
if [ -e "${RUN_DIR}/bootstrap-failed" ] || [ -e "${STATE_DIR}/bootstrap-failed" ]; then
  emit bootstrap false "bootstrap-failed is set: see /var/log/cloud-init-output.log"
elif [ -e "${RUN_DIR}/bootstrap-done" ] || [ -e "${STATE_DIR}/bootstrap-done" ]; then
  emit bootstrap true "bootstrap-done"
else
  emit bootstrap false "no bootstrap-done marker yet (still booting, or the bootstrap stopped)"
fi

# GPUs present and the driver answering
if ! command -v nvidia-smi > /dev/null; then
  emit gpus false "nvidia-smi is not installed: no GPU driver" 0
else
  out="$(timeout 60 nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader 2>&1)"
  rc=$?
  n="$(printf '%s\n' "${out}" | grep -c '^[0-9]')"
  if [ "${rc}" -ne 0 ]; then
    emit gpus false "nvidia-smi failed (exit ${rc}): ${out}" "${n}"
  elif [ "${n}" -ne "${TRAINSTACK_CHECK_GPUS}" ]; then
    emit gpus false "${n} of ${TRAINSTACK_CHECK_GPUS} GPUs visible" "${n}"
  else
    emit gpus true "${n} GPUs, driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)" "${n}"
  fi
fi

# XID errors in the kernel log since boot
xids="$( (journalctl -k -b --no-pager 2> /dev/null || dmesg 2> /dev/null) | grep -o 'NVRM: Xid ([^)]*): [0-9]*' |
  sed 's/.*: //' | sort -n | uniq | tr '\n' ',' | sed 's/,$//')"
if [ -n "${xids}" ]; then emit xid false "XID ${xids} in the kernel log since boot" "[${xids}]"
else emit xid true "no XID in the kernel log since boot" "[]"; fi

# DCGM diagnostics (-r 1 quick, -r 3 full)
if command -v dcgmi > /dev/null; then
  lvl=1; [ "${TRAINSTACK_CHECK_LEVEL}" = full ] && lvl=3
  out="$(timeout 1500 dcgmi diag -r "${lvl}" 2>&1)"
  rc=$?
  if [ "${rc}" -eq 0 ] && ! printf '%s' "${out}" | grep -q -i 'fail'; then emit dcgm true "dcgmi diag -r ${lvl} passed"
  else emit dcgm false "dcgmi diag -r ${lvl}: $(printf '%s' "${out}" | grep -i 'fail' | head -n 5)"; fi
else
  emit dcgm null "DCGM is not installed (dcgmi): diagnostics not run"
fi

# fabric manager on NVSwitch types
if [ "${TRAINSTACK_CHECK_NVSWITCH}" = true ]; then
  if systemctl is-active --quiet nvidia-fabricmanager; then emit fabricmanager true "nvidia-fabricmanager active"
  else emit fabricmanager false "nvidia-fabricmanager is not active (NVSwitch GPUs cannot talk over NVLink)"; fi
fi

# eRDMA devices up
if [ "${TRAINSTACK_CHECK_RDMA}" = erdma ]; then
  up="$(rdma link show 2> /dev/null | grep -c 'state ACTIVE')"
  if [ "${up}" -ge "${TRAINSTACK_CHECK_ERI}" ]; then emit erdma true "${up} RDMA link(s) ACTIVE" "${up}"
  else emit erdma false "${up} of ${TRAINSTACK_CHECK_ERI} eRDMA link(s) ACTIVE: $(rdma link show 2>&1 | head -n 4)" "${up}"; fi
fi

fi

# NCCL all-reduce: inside the node always at level full; across the nodes when TRAINSTACK_CHECK_NNODES > 1
nccl() {  # nccl NAME NNODES
  if ! python3 -c 'import torch.distributed' 2> /dev/null || ! command -v torchrun > /dev/null; then
    emit "$1" null "PyTorch (torchrun) is not installed on the node: NCCL all-reduce not run"; return
  fi
  py="$(mktemp --suffix .py)"
  printf '%s' "${TRAINSTACK_CHECK_NCCL_PY}" | base64 -d > "${py}"
  log="$(mktemp)"
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout 900 torchrun --nnodes "$2" --nproc-per-node "${TRAINSTACK_CHECK_GPUS}" \
    --rdzv-backend c10d --rdzv-endpoint "${TRAINSTACK_CHECK_MASTER_ADDR}:29411" --rdzv-id "${TRAINSTACK_CHECK_ID}-$1" \
    "${py}" > "${log}" 2>&1
  rc=$?
  busbw="$(sed -n 's/^TRAINSTACK-BUSBW //p' "${log}" | tail -n 1)"
  net="none"
  grep -q 'NET/IB' "${log}" && net="ib"
  grep -q 'NET/Socket' "${log}" && net="socket"
  if [ "${rc}" -ne 0 ] || [ -z "${busbw}" ]; then
    emit "$1" false "all-reduce failed (exit ${rc}): $(grep -i -m 3 'error' "${log}")"
  else
    printf 'TRAINSTACK-CHECK {"check": "%s", "ok": true, "detail": "bus bandwidth %s GB/s", "value": %s, "net": "%s"}\n' \
      "$1" "${busbw}" "${busbw}" "${net}"
  fi
  rm -f "${py}" "${log}"
}
if [ "${TRAINSTACK_CHECK_ONLY:-}" = nccl-inter ]; then
  nccl nccl-inter "${TRAINSTACK_CHECK_NNODES}"
elif [ "${TRAINSTACK_CHECK_LEVEL}" = full ]; then
  if [ "${TRAINSTACK_CHECK_NNODES}" -gt 1 ]; then
    TRAINSTACK_CHECK_MASTER_ADDR_SAVED="${TRAINSTACK_CHECK_MASTER_ADDR}"
    TRAINSTACK_CHECK_MASTER_ADDR=127.0.0.1 nccl nccl-intra 1
    TRAINSTACK_CHECK_MASTER_ADDR="${TRAINSTACK_CHECK_MASTER_ADDR_SAVED}" nccl nccl-inter "${TRAINSTACK_CHECK_NNODES}"
  else
    TRAINSTACK_CHECK_MASTER_ADDR=127.0.0.1 nccl nccl-intra 1
  fi
fi
exit 0
