"""The runtime reserve: GPU memory a training process uses beyond its tensors. Three terms, each with its source:

* the CUDA context with the cuBLAS/cuDNN workspaces, which PyTorch's caching allocator does not count
  (``torch.cuda.memory_reserved`` excludes it: https://pytorch.org/docs/stable/notes/cuda.html, "Memory
  management"). No vendor publishes its size; 0.5-1 GiB is what ``nvidia-smi`` shows for a bare ``torch.cuda.init()``
  on A100/H100 with CUDA 12 and lazy module loading (trainstack's reading, not a published figure). Assumption:
  0.75 GiB, the middle of that range.
* NCCL's communication buffers: ``NCCL_BUFFSIZE`` bytes (default 4 MiB, the Simple protocol) per channel per peer
  of each communicator (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html, NCCL_BUFFSIZE and
  NCCL_MAX_NCHANNELS). A ring has two peers per channel; counted with 16 channels for each communicator the
  layout opens: data parallel, and tensor, pipeline, context and expert parallel when their degree exceeds 1. The
  16 is an assumption: NCCL's documentation gives no default channel count (its topology search picks it at run
  time, NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS bound it), and the source caps it at MAXCHANNELS = 64
  (NVIDIA/nccl src/include/device.h); searched 2026-12-02, no published per-platform figure found.
* caching-allocator fragmentation: blocks held by the allocator but not by a tensor ("reserved" minus
  "allocated"; the PyTorch page above, and ``expandable_segments`` to reduce it). PyTorch publishes no figure
  (its documentation and the PyTorch devlog "When does fragmentation occur in the CUDA caching allocator?",
  2026-06-01, explain when it happens, not how much; searched 2026-12-02): 5% of the tensors' peak, an
  assumption, the share trainstack used before for the whole reserve.

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


def runtime_reserve(tensors: int, *, tp: int, pp: int, cp: int, ep: int, notes: list[str]) -> int:
    """Bytes beyond the tensors' peak ``tensors``: CUDA context, NCCL buffers and allocator fragmentation."""
    comms = communicators(tp, pp, cp, ep)
    nccl = comms * NCCL_CHANNELS * NCCL_RING_PEERS * NCCL_BUFFSIZE
    frag = _ceil(FRAGMENTATION * tensors)
    total = CUDA_CONTEXT_BYTES + nccl + frag
    notes.append(
        f"reserve = CUDA context and workspaces {_gb(CUDA_CONTEXT_BYTES)} (assumption) + NCCL buffers "
        f"{comms} communicator(s) x {NCCL_CHANNELS} channels x {NCCL_RING_PEERS} peers x NCCL_BUFFSIZE 4 MiB "
        f"= {_gb(nccl)} + allocator fragmentation 5% of {_gb(tensors)} = {_gb(frag)} (assumption) "
        f"= {_gb(total)} (docs/sizing.md, 'The runtime reserve')"
    )
    return total
