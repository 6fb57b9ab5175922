"""All-reduce bus bandwidth of the GPUs of this torchrun group (trainstack check).

Bus bandwidth as nccl-tests defines it: algbw = bytes / time, busbw = algbw * 2 (n - 1) / n
(https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md). Rank 0 prints ``TRAINSTACK-BUSBW <GB/s>``.
"""

import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
n = dist.get_world_size()
x = torch.ones(256 * 1024 * 1024 // 4, dtype=torch.float32, device="cuda")  # 256 MiB
for _ in range(5):
    dist.all_reduce(x)
torch.cuda.synchronize()
iters = 20
start = time.perf_counter()
for _ in range(iters):
    dist.all_reduce(x)
torch.cuda.synchronize()
elapsed = (time.perf_counter() - start) / iters
busbw = x.numel() * 4 / elapsed * 2 * (n - 1) / n / 1e9
if dist.get_rank() == 0:
    print(f"TRAINSTACK-BUSBW {busbw:.1f}", flush=True)
dist.destroy_process_group()
