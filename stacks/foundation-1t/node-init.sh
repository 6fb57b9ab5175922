#!/bin/bash
# trainstack node bootstrap for "foundation-1t" (cloud-init user data; runs once, as root, at first boot).
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
10.64.0.10 slots=8
10.64.0.11 slots=8
10.64.0.12 slots=8
10.64.0.13 slots=8
10.64.0.14 slots=8
10.64.0.15 slots=8
10.64.0.16 slots=8
10.64.0.17 slots=8
10.64.0.18 slots=8
10.64.0.19 slots=8
10.64.0.20 slots=8
10.64.0.21 slots=8
10.64.0.22 slots=8
10.64.0.23 slots=8
10.64.0.24 slots=8
10.64.0.25 slots=8
10.64.0.26 slots=8
10.64.0.27 slots=8
10.64.0.28 slots=8
10.64.0.29 slots=8
10.64.0.30 slots=8
10.64.0.31 slots=8
10.64.0.32 slots=8
10.64.0.33 slots=8
10.64.0.34 slots=8
10.64.0.35 slots=8
10.64.0.36 slots=8
10.64.0.37 slots=8
10.64.0.38 slots=8
10.64.0.39 slots=8
10.64.0.40 slots=8
10.64.0.41 slots=8
10.64.0.42 slots=8
10.64.0.43 slots=8
10.64.0.44 slots=8
10.64.0.45 slots=8
10.64.0.46 slots=8
10.64.0.47 slots=8
10.64.0.48 slots=8
10.64.0.49 slots=8
10.64.0.50 slots=8
10.64.0.51 slots=8
10.64.0.52 slots=8
10.64.0.53 slots=8
10.64.0.54 slots=8
10.64.0.55 slots=8
10.64.0.56 slots=8
10.64.0.57 slots=8
10.64.0.58 slots=8
10.64.0.59 slots=8
10.64.0.60 slots=8
10.64.0.61 slots=8
10.64.0.62 slots=8
10.64.0.63 slots=8
10.64.0.64 slots=8
10.64.0.65 slots=8
10.64.0.66 slots=8
10.64.0.67 slots=8
10.64.0.68 slots=8
10.64.0.69 slots=8
10.64.0.70 slots=8
10.64.0.71 slots=8
10.64.0.72 slots=8
10.64.0.73 slots=8
10.64.0.74 slots=8
10.64.0.75 slots=8
10.64.0.76 slots=8
10.64.0.77 slots=8
10.64.0.78 slots=8
10.64.0.79 slots=8
10.64.0.80 slots=8
10.64.0.81 slots=8
10.64.0.82 slots=8
10.64.0.83 slots=8
10.64.0.84 slots=8
10.64.0.85 slots=8
10.64.0.86 slots=8
10.64.0.87 slots=8
10.64.0.88 slots=8
10.64.0.89 slots=8
10.64.0.90 slots=8
10.64.0.91 slots=8
10.64.0.92 slots=8
10.64.0.93 slots=8
10.64.0.94 slots=8
10.64.0.95 slots=8
10.64.0.96 slots=8
10.64.0.97 slots=8
10.64.0.98 slots=8
10.64.0.99 slots=8
10.64.0.100 slots=8
10.64.0.101 slots=8
10.64.0.102 slots=8
10.64.0.103 slots=8
10.64.0.104 slots=8
10.64.0.105 slots=8
10.64.0.106 slots=8
10.64.0.107 slots=8
10.64.0.108 slots=8
10.64.0.109 slots=8
10.64.0.110 slots=8
10.64.0.111 slots=8
10.64.0.112 slots=8
10.64.0.113 slots=8
10.64.0.114 slots=8
10.64.0.115 slots=8
10.64.0.116 slots=8
10.64.0.117 slots=8
10.64.0.118 slots=8
10.64.0.119 slots=8
10.64.0.120 slots=8
10.64.0.121 slots=8
10.64.0.122 slots=8
10.64.0.123 slots=8
10.64.0.124 slots=8
10.64.0.125 slots=8
10.64.0.126 slots=8
10.64.0.127 slots=8
10.64.0.128 slots=8
10.64.0.129 slots=8
10.64.0.130 slots=8
10.64.0.131 slots=8
10.64.0.132 slots=8
10.64.0.133 slots=8
10.64.0.134 slots=8
10.64.0.135 slots=8
10.64.0.136 slots=8
10.64.0.137 slots=8
10.64.0.138 slots=8
10.64.0.139 slots=8
10.64.0.140 slots=8
10.64.0.141 slots=8
10.64.0.142 slots=8
10.64.0.143 slots=8
10.64.0.144 slots=8
10.64.0.145 slots=8
10.64.0.146 slots=8
10.64.0.147 slots=8
10.64.0.148 slots=8
10.64.0.149 slots=8
10.64.0.150 slots=8
10.64.0.151 slots=8
10.64.0.152 slots=8
10.64.0.153 slots=8
10.64.0.154 slots=8
10.64.0.155 slots=8
10.64.0.156 slots=8
10.64.0.157 slots=8
10.64.0.158 slots=8
10.64.0.159 slots=8
10.64.0.160 slots=8
10.64.0.161 slots=8
10.64.0.162 slots=8
10.64.0.163 slots=8
10.64.0.164 slots=8
10.64.0.165 slots=8
10.64.0.166 slots=8
10.64.0.167 slots=8
10.64.0.168 slots=8
10.64.0.169 slots=8
10.64.0.170 slots=8
10.64.0.171 slots=8
10.64.0.172 slots=8
10.64.0.173 slots=8
10.64.0.174 slots=8
10.64.0.175 slots=8
10.64.0.176 slots=8
10.64.0.177 slots=8
10.64.0.178 slots=8
10.64.0.179 slots=8
10.64.0.180 slots=8
10.64.0.181 slots=8
10.64.0.182 slots=8
10.64.0.183 slots=8
10.64.0.184 slots=8
10.64.0.185 slots=8
10.64.0.186 slots=8
10.64.0.187 slots=8
10.64.0.188 slots=8
10.64.0.189 slots=8
10.64.0.190 slots=8
10.64.0.191 slots=8
10.64.0.192 slots=8
10.64.0.193 slots=8
10.64.0.194 slots=8
10.64.0.195 slots=8
10.64.0.196 slots=8
10.64.0.197 slots=8
10.64.0.198 slots=8
10.64.0.199 slots=8
10.64.0.200 slots=8
10.64.0.201 slots=8
10.64.0.202 slots=8
10.64.0.203 slots=8
10.64.0.204 slots=8
10.64.0.205 slots=8
10.64.0.206 slots=8
10.64.0.207 slots=8
10.64.0.208 slots=8
10.64.0.209 slots=8
10.64.0.210 slots=8
10.64.0.211 slots=8
10.64.0.212 slots=8
10.64.0.213 slots=8
10.64.0.214 slots=8
10.64.0.215 slots=8
10.64.0.216 slots=8
10.64.0.217 slots=8
10.64.0.218 slots=8
10.64.0.219 slots=8
10.64.0.220 slots=8
10.64.0.221 slots=8
10.64.0.222 slots=8
10.64.0.223 slots=8
10.64.0.224 slots=8
10.64.0.225 slots=8
10.64.0.226 slots=8
10.64.0.227 slots=8
10.64.0.228 slots=8
10.64.0.229 slots=8
10.64.0.230 slots=8
10.64.0.231 slots=8
10.64.0.232 slots=8
10.64.0.233 slots=8
10.64.0.234 slots=8
10.64.0.235 slots=8
10.64.0.236 slots=8
10.64.0.237 slots=8
10.64.0.238 slots=8
10.64.0.239 slots=8
10.64.0.240 slots=8
10.64.0.241 slots=8
10.64.0.242 slots=8
10.64.0.243 slots=8
10.64.0.244 slots=8
10.64.0.245 slots=8
10.64.0.246 slots=8
10.64.0.247 slots=8
10.64.0.248 slots=8
10.64.0.249 slots=8
10.64.0.250 slots=8
10.64.0.251 slots=8
10.64.0.252 slots=8
10.64.0.253 slots=8
10.64.0.254 slots=8
10.64.0.255 slots=8
10.64.1.0 slots=8
10.64.1.1 slots=8
10.64.1.2 slots=8
10.64.1.3 slots=8
10.64.1.4 slots=8
10.64.1.5 slots=8
10.64.1.6 slots=8
10.64.1.7 slots=8
10.64.1.8 slots=8
10.64.1.9 slots=8
HOSTFILE
cat > /etc/trainstack/launch.env <<LAUNCHENV
TRAINSTACK_NAME=foundation-1t
MASTER_ADDR=10.64.0.10
MASTER_PORT=29500
NNODES=256
GPUS_PER_NODE=8
WORLD_SIZE=2048
TP_SIZE=8
PP_SIZE=16
DP_SIZE=16
ZERO_STAGE=1
SHARED_DIR=/mnt/shared
CHECKPOINT_URL=oss://foundation-1t-ckpt-7674ec/checkpoints/
CHECKPOINT_ENDPOINT=oss-cn-wulanchabu-internal.aliyuncs.com
CHECKPOINT_INTERVAL_SECONDS=25200
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
