"""The node counts one (tp, pp) layout can use, and whether its memory fits a node: the usable GPU memory after
the headroom, the host memory CPU offload needs, the counts that split into whole replicas and divide the global
batch.

It exists apart from :mod:`generator.plan.layout` because both the fit search and the account of why nothing fits
(:mod:`generator.plan.unfit`) ask the same questions of a layout, and must get the same answers.
"""

from __future__ import annotations

from generator import sizing
from generator.catalog import InstanceType
from generator.plan.fit import context_degree, replica_gpus
from generator.spec.model import Spec


def usable_bytes(spec: Spec, gpu_bytes: int) -> int:
    """The GPU memory a layout may use: all of it less ``parallelism.memory_headroom`` (5% by default)."""
    return int(gpu_bytes * (1 - spec.parallelism.memory_headroom))


def holds(m: sizing.MemoryBreakdown, t: InstanceType, gpu_bytes: int) -> bool:
    """Whether a layout's memory fits the GPU and, with CPU offload, its offloaded states the node's host memory
    (both shrink as the data-parallel degree grows)."""
    return m.total <= gpu_bytes and (not m.host or sizing.host_fits(m.host, t.gpus, t.memory_gib))


def node_options(
    spec: Spec, t: InstanceType, tp: int, pp: int, max_nodes: int, batch: bool = True
) -> list[int]:
    """The node counts up to ``max_nodes`` (or the spec's fixed count) whose GPUs ``tp`` x ``pp`` splits evenly into
    whole replicas, at the spec's fixed data-parallel degree, and (``batch``) giving a data-parallel degree that
    divides the global batch."""
    p = spec.parallelism
    per = replica_gpus(tp, pp, context_degree(spec))
    if isinstance(spec.compute.nodes, int):  # a fixed count: the range up to max_nodes is not walked
        node_options = [spec.compute.nodes] if (spec.compute.nodes * t.gpus) % per == 0 else []
    else:
        node_options = [n for n in range(1, max_nodes + 1) if (n * t.gpus) % per == 0]
    if isinstance(p.data, int):
        node_options = [n for n in node_options if n * t.gpus == p.data * per]
    if isinstance(p.expert, int) and p.expert > 1:  # the expert-parallel group is carved from the dp ranks
        node_options = [n for n in node_options if (n * t.gpus // per) % p.expert == 0]
    batch_seqs = batch_sequences(spec)
    if batch and batch_seqs is not None:
        node_options = [
            n for n in node_options if batch_seqs % (n * t.gpus // per * spec.model.micro_batch_size) == 0
        ]
    return node_options


def batch_sequences(spec: Spec) -> int | None:
    g = spec.model.global_batch_tokens
    if g is None:
        return None
    return max(1, g // spec.model.sequence_length)
