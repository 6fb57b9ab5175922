"""Context parallelism's traffic: the key/value exchange of ring attention, as a share of compute time.

Megatron-Core's context parallelism splits each sequence over cp ranks; attention needs every earlier key and
value, so each rank passes its K and V chunk around the cp ring in the forward pass, and in the backward pass the
K and V again with their gradients (Megatron-Core user guide, "context_parallel" package: "CP ... all-gather KV in
forward and reduce-scatter dKV in backward", implemented as ring P2P overlapped with attention;
https://docs.nvidia.com/megatron-core/developer-guide/latest/api-guide/context_parallel.html). The MLP and
projections need no exchange: their tokens stay on their rank.
"""

from __future__ import annotations

from generator.sizing.architecture import Architecture
from generator.sizing.schedule import flops_per_token

# forward: K and V once around the ring; backward: K and V again plus dK and dV: 3 passes of 2 tensors
KV_PASSES = 3


def kv_bytes_per_token(arch: Architecture, cp: int, precision_bytes: int = 2) -> int:
    """Bytes one token's K and V move over a training step under context parallelism: each of the L layers sends
    its 2·g·d values to the cp - 1 other ranks, KV_PASSES times (0 without context parallelism)."""
    if cp <= 1:
        return 0
    return KV_PASSES * 2 * arch.kv_heads * arch.d_head * precision_bytes * (cp - 1) * arch.layers


def context_ratio(
    arch: Architecture,
    seq_len: int,
    cp: int,
    tp: int,
    gpus_per_node: int,
    nodes: int,
    nic_gbps: float,
    peak_tflops: float,
    mfu: float,
) -> float:
    """The KV exchange's network time over compute time, 0 when cp x tp stays inside one node (NVLink, overlapped
    with attention). Across nodes a share 1 - gpus_per_node/(cp x tp) of the ring's hops leaves the node, through
    the cluster's NICs (nodes x ``nic_gbps``), counted as not overlapped (an upper bound: Megatron-Core overlaps
    each hop with one chunk's attention, which hides it when attention is long enough)."""
    if cp <= 1 or cp * tp <= gpus_per_node or nic_gbps <= 0:
        return 0.0
    remote = 1.0 - gpus_per_node / (cp * tp)
    comm = kv_bytes_per_token(arch, cp) * remote / (nodes * nic_gbps * 1e9 / 8)
    compute = flops_per_token(arch, seq_len).total / (nodes * gpus_per_node * peak_tflops * 1e12 * mfu)
    return comm / compute
