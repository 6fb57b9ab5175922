"""The runtime reserve: GPU memory a training process uses beyond its tensors. Three terms, each with its source:

* the CUDA context with the cuBLAS/cuDNN workspaces, which PyTorch's caching allocator does not count
  (``torch.cuda.memory_reserved`` excludes it: https://pytorch.org/docs/stable/notes/cuda.html, "Memory
  management"). No vendor publishes its size; 0.5-1 GiB is what ``nvidia-smi`` shows for a bare ``torch.cuda.init()``
  on A100/H100 with CUDA 12 and lazy module loading (trainstack's reading, not a published figure). Assumption:
  0.75 GiB, the middle of that range.
* NCCL's communication buffers: ``NCCL_BUFFSIZE`` bytes (default 4 MiB, the Simple protocol) per channel per peer
  of each communicator (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html, NCCL_BUFFSIZE and
  NCCL_MAX_NCHANNELS). A ring has two peers per channel and the memory is linear in the channels (NCCL's
  maintainer, NVIDIA/nccl issue #986); counted with 16 channels for each communicator the layout opens: data
  parallel, and tensor, pipeline, context and expert parallel when their degree exceeds 1. NCCL's documentation
  gives no default channel count (its topology search picks it at run time, NCCL_MIN_NCHANNELS /
  NCCL_MAX_NCHANNELS bound it, MAXCHANNELS = 64 in NVIDIA/nccl src/include/device.h); 16 is what NCCL's INFO logs
  show where users published them for H800 and H100 nodes (NVIDIA/nccl issues #892 "16 coll channels" and #1453
  "Channel 00/16"); an HGX A100 shows 24 (NVIDIA/nccl-tests issue #100), 64 MiB more per communicator. Read
  2026-12-02.
* caching-allocator fragmentation: blocks held by the allocator but not by a tensor ("reserved" minus
  "allocated"; the PyTorch page above, and ``expandable_segments`` to reduce it). PyTorch publishes no figure
  (its documentation and the PyTorch devlog "When does fragmentation occur in the CUDA caching allocator?",
  2026-06-01, explain when it happens, not how much). The measured figures (searched 2026-12-02) are all for
  allocation patterns that memory-reduction techniques make irregular: GMLake (Guo et al., ASPLOS 2024,
  arXiv:2401.08156, abstract) reports 15% less fragmentation than PyTorch's caching allocator on average, up to
  33% (9.2 GB of memory, up to 25 GB), over eight LLM fine-tuning workloads on A100 80GB with recomputation,
  offloading, ZeRO and LoRA; STAlloc (Huang et al., arXiv:2507.16274 v2, abstract) finds up to 43% wasted with virtual pipeline
  and recomputation; users' RL and QLoRA runs 35-110% of the allocated bytes (nvidia-cosmos/cosmos-rl PR #388,
  meta-pytorch/torchtune issue #1185). None measures a fixed-shape pre-training step with
  ``expandable_segments:True``, which NVIDIA's Megatron Bridge memory-tuning guide recommends first and says
  "most Slurm launch templates already include" (docs.nvidia.com/nemo/megatron-bridge, perf-memory-tuning).
  For that case 5% of the tensors' peak stays an assumption; with the default 5% headroom a layout keeps ~10%
  over its tensors, under GMLake's average for the irregular cases, which docs/sizing.md section 5 says to cover
  with ``expandable_segments`` or a larger ``memory_headroom``. The 5% is charged on the weights, gradients and
  activations, which the allocator frees and hands out again within a step (ZeRO-3/FSDP gathers, ``zero_grad``
  freeing the gradients, every activation), not on the optimizer states: allocated once and never freed, they
  leave no free block to fragment (free memory exists only where a tensor died; the devlog above: live blocks
  "pin the splits in place" of the freed ones). Charging it on them too overlapped with the headroom, which is
  kept for what this reserve does not model (docs/sizing.md section 5, "What fragments", and section 2c).

:func:`runtime_reserve` sums them and says so in the notes; :mod:`generator.sizing.memory` adds it to the total.
"""

from __future__ import annotations

from fractions import Fraction

from generator.sizing.common import GiB, _ceil, _gb

CUDA_CONTEXT_BYTES = 3 * GiB // 4
NCCL_BUFFSIZE = 4 * 2**20
NCCL_CHANNELS = 16
NCCL_RING_PEERS = 2
FRAGMENTATION = Fraction(5, 100)


def communicators(tp: int, pp: int, cp: int, ep: int) -> int:
    """The NCCL communicators a rank of this layout opens: data parallel always (also for dp=1 checks), and one
    for each other parallel dimension of degree > 1."""
    return 1 + sum(1 for d in (tp, pp, cp, ep) if d > 1)


def runtime_reserve(fragmenting: int, *, tp: int, pp: int, cp: int, ep: int, notes: list[str]) -> int:
    """Bytes beyond the tensors' peak: CUDA context, NCCL buffers and allocator fragmentation, charged on
    ``fragmenting``, the tensors the caching allocator frees and hands out again during training (weights,
    gradients, activations; not the optimizer states, allocated once and never freed)."""
    comms = communicators(tp, pp, cp, ep)
    nccl = comms * NCCL_CHANNELS * NCCL_RING_PEERS * NCCL_BUFFSIZE
    frag = _ceil(FRAGMENTATION * fragmenting)
    total = CUDA_CONTEXT_BYTES + nccl + frag
    notes.append(
        f"reserve = CUDA context and workspaces {_gb(CUDA_CONTEXT_BYTES)} (assumption) + NCCL buffers "
        f"{comms} communicator(s) x {NCCL_CHANNELS} channels x {NCCL_RING_PEERS} peers x NCCL_BUFFSIZE 4 MiB "
        f"= {_gb(nccl)} + allocator fragmentation 5% of weights, gradients and activations {_gb(fragmenting)} "
        f"= {_gb(frag)} (assumption; the optimizer states, allocated once, leave none) "
        f"= {_gb(total)} (docs/sizing.md, 'The runtime reserve')"
    )
    return total
