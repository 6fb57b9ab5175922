#!/bin/bash
# trainstack node bootstrap for "pretrain-70b" (cloud-init user data; runs once, as root, at first boot).
# The program fills in __TRAINSTACK_NODE_RANK__, __TRAINSTACK_NODE_NAME__, __TRAINSTACK_NODE_SPOT__ and
# __TRAINSTACK_SHARED_FS_ADDRESS__.
#
# What it does, in order, each step idempotent:
#   1. writes the node identity, /etc/trainstack/hostfile and /etc/trainstack/launch.env
#   2. sets the MTU that NCCL over eRDMA needs (1400)
#   3. installs the eRDMA stack and the NVIDIA driver if the image lacks them
#   4. mounts the shared file system at /mnt/shared
#   5. installs /usr/local/bin/trainstack-launch (torchrun with the cluster's rendezvous)
#   6. on spot nodes, starts the interruption watcher (see "Preemption contract" below)
set -euo pipefail
exec > >(tee -a /var/log/trainstack-init.log) 2>&1
echo "trainstack: bootstrap of rank __TRAINSTACK_NODE_RANK__ starting"

NODE_RANK="__TRAINSTACK_NODE_RANK__"
NODE_NAME="__TRAINSTACK_NODE_NAME__"
SHARED_FS_ADDRESS="__TRAINSTACK_SHARED_FS_ADDRESS__"
RDMA="erdma"
ERI_COUNT="2"
MTU="1400"
SHARED_KIND="cpfs"
SHARED_DIR="/mnt/shared"
SPOT="__TRAINSTACK_NODE_SPOT__"
# Alibaba's eRDMA installer on the VPC-internal mirror (latest listed 1.5.7, 2026-03-31) [DOC-ERDMA-USAGE]
ERDMA_INSTALLER_URL="http://mirrors.cloud.aliyuncs.com/erdma/erdma_installer-1.5.7.tar.gz"

mkdir -p /etc/trainstack /run/trainstack

# 1. identity, hostfile and launch environment ------------------------------------------------------------
cat > /etc/trainstack/hostfile <<'HOSTFILE'
10.20.0.10 slots=8
10.20.0.11 slots=8
10.20.0.12 slots=8
10.20.0.13 slots=8
10.20.0.14 slots=8
10.20.0.15 slots=8
10.20.0.16 slots=8
10.20.0.17 slots=8
10.20.0.18 slots=8
10.20.0.19 slots=8
10.20.0.20 slots=8
10.20.0.21 slots=8
10.20.0.22 slots=8
10.20.0.23 slots=8
10.20.0.24 slots=8
10.20.0.25 slots=8
10.20.0.26 slots=8
10.20.0.27 slots=8
10.20.0.28 slots=8
10.20.0.29 slots=8
10.20.0.30 slots=8
10.20.0.31 slots=8
10.20.0.32 slots=8
10.20.0.33 slots=8
10.20.0.34 slots=8
10.20.0.35 slots=8
10.20.0.36 slots=8
10.20.0.37 slots=8
10.20.0.38 slots=8
10.20.0.39 slots=8
10.20.0.40 slots=8
10.20.0.41 slots=8
10.20.0.42 slots=8
10.20.0.43 slots=8
10.20.0.44 slots=8
10.20.0.45 slots=8
10.20.0.46 slots=8
10.20.0.47 slots=8
10.20.0.48 slots=8
10.20.0.49 slots=8
10.20.0.50 slots=8
10.20.0.51 slots=8
10.20.0.52 slots=8
10.20.0.53 slots=8
10.20.0.54 slots=8
10.20.0.55 slots=8
10.20.0.56 slots=8
10.20.0.57 slots=8
10.20.0.58 slots=8
10.20.0.59 slots=8
10.20.0.60 slots=8
10.20.0.61 slots=8
10.20.0.62 slots=8
10.20.0.63 slots=8
10.20.0.64 slots=8
10.20.0.65 slots=8
10.20.0.66 slots=8
10.20.0.67 slots=8
10.20.0.68 slots=8
10.20.0.69 slots=8
10.20.0.70 slots=8
10.20.0.71 slots=8
10.20.0.72 slots=8
10.20.0.73 slots=8
HOSTFILE
cat > /etc/trainstack/launch.env <<LAUNCHENV
TRAINSTACK_NAME=pretrain-70b
MASTER_ADDR=10.20.0.10
MASTER_PORT=29500
NNODES=64
GPUS_PER_NODE=8
WORLD_SIZE=512
TP_SIZE=8
PP_SIZE=1
DP_SIZE=64
ZERO_STAGE=1
SHARED_DIR=/mnt/shared
CHECKPOINT_URL=oss://pretrain-70b-ckpt-c870c3/checkpoints/
CHECKPOINT_ENDPOINT=oss-cn-wulanchabu-internal.aliyuncs.com
CHECKPOINT_INTERVAL_SECONDS=4380
TRAINSTACK_PREEMPT_FILE=/run/trainstack/preempt
NCCL_SOCKET_IFNAME=eth0
NCCL_IB_HCA=erdma
NCCL_IB_GID_INDEX=1
NCCL_IB_QPS_PER_CONNECTION=8
NCCL_MIN_NCHANNELS=16
NCCL_NET_PLUGIN=none
NODE_RANK=${NODE_RANK}
NODE_NAME=${NODE_NAME}
LAUNCHENV
chmod 0644 /etc/trainstack/hostfile /etc/trainstack/launch.env
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
if [ "${SHARED_KIND}" != "none" ]; then
  mkdir -p "${SHARED_DIR}"
  if [ -z "${SHARED_FS_ADDRESS}" ]; then
    echo "trainstack: no shared file system address yet; set trainstack:sharedFsAddress and run 'trainstack up' again"
  elif ! mountpoint -q "${SHARED_DIR}"; then
    command -v mount.nfs >/dev/null 2>&1 || (dnf install -y nfs-utils || apt-get install -y nfs-common)
    opts="vers=3,nolock,proto=tcp,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport,_netdev"
    if [ "${SHARED_KIND}" = "extreme-nas" ]; then
      src="${SHARED_FS_ADDRESS}:/share"
    else
      src="${SHARED_FS_ADDRESS}:/"
    fi
    grep -q " ${SHARED_DIR} " /etc/fstab || echo "${src} ${SHARED_DIR} nfs ${opts} 0 0" >> /etc/fstab
    mount "${SHARED_DIR}" || echo "trainstack: mounting ${src} failed; see 'journalctl -u remote-fs.target'"
  fi
fi

# 5. launcher -----------------------------------------------------------------------------------------------
cat > /usr/local/bin/trainstack-launch <<'LAUNCH'
#!/bin/bash
# Start one training process group on this node with the cluster's rendezvous:
#   trainstack-launch train.py --your-args
# Writes its PID to /run/trainstack/train.pid so the spot watcher can signal it.
set -euo pipefail
set -a; . /etc/trainstack/launch.env; set +a
echo $$ > /run/trainstack/train.pid
exec torchrun --nnodes "${NNODES}" --nproc-per-node "${GPUS_PER_NODE}" --node-rank "${NODE_RANK}" \
  --master-addr "${MASTER_ADDR}" --master-port "${MASTER_PORT}" "$@"
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
