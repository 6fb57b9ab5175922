"""Checkpoints: a restartable checkpoint's size and write time, the cluster MTBF, the Young/Daly interval.

[Young], [Daly] and [Llama3] are listed in :mod:`generator.sizing`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from generator.sizing.common import SizingError, _gb, _positive_int, _positive_number
from generator.sizing.precision import PRECISION_BYTES, optimizer_bytes_per_param

# Llama 3 saw 419 unexpected interruptions in 54 days on 16,384 H100s = 2,048 8-GPU nodes
# ([Llama3] Sec. 3.3.4): 2048*54*24/419 ~= 6,300 node-hours between job interruptions, the largest published
# run with a failure count (BLOOM, 48 nodes: "one to two GPU failures a week", ~5,000 node-hours, BigScience
# 2022 arXiv:2211.05100 Sec. 3.5.4). The default follows Llama 3; trainstack used 2,000 h before (issue 24:
# ~3x the rate large runs report). Set your own from your fleet's history when you have one.
DEFAULT_NODE_MTBF_HOURS = 6300.0


@dataclass(frozen=True, slots=True)
class CheckpointModel:
    size_bytes: int
    write_seconds: float
    mtbf_hours: float
    interval_seconds: float
    notes: tuple[str, ...]


def checkpoint_size_bytes(
    parameters: int, optimizer: str, precision: str = "bf16", lora_trainable: int | None = None
) -> int:
    """Bytes of a full restartable checkpoint.

    Mixed precision: 16-bit weights + K (fp32 master + moments) = (2 + K) bytes/param,
    14 for AdamW.  fp32: 4 + moments (12 for AdamW).  With LoRA only the adapters (and their
    optimizer state) are saved: lora_trainable * (2 + K); the frozen base is re-read from the
    base model.
    """
    _positive_int("parameters", parameters)
    k = optimizer_bytes_per_param(optimizer, precision)
    per_param = PRECISION_BYTES[precision] + k
    if lora_trainable is not None:
        _positive_int("lora_trainable", lora_trainable)
        return lora_trainable * per_param
    return parameters * per_param


def young_daly_interval(write_seconds: float, mtbf_seconds: float) -> float:
    """Optimal compute time between checkpoints, tau = sqrt(2*C*M) ([Young]; first-order term
    of [Daly] eq. 20), clamped to >= C (checkpointing more often than it takes to write is
    meaningless; Daly's higher-order form returns M once C >= 2M)."""
    _positive_number("write_seconds", write_seconds)
    _positive_number("mtbf_seconds", mtbf_seconds)
    return max(math.sqrt(2.0 * write_seconds * mtbf_seconds), float(write_seconds))


def _check_rates(
    write_gbps: float, nodes: int, node_mtbf_hours: float, spot_interruptions_per_node_day: float
) -> None:
    """The bandwidth, node count and failure rates :func:`checkpoint_plan` divides by: positive (spot: >= 0)."""
    _positive_number("write_gbps", write_gbps)
    _positive_int("nodes", nodes)
    _positive_number("node_mtbf_hours", node_mtbf_hours)
    if (
        isinstance(spot_interruptions_per_node_day, bool)
        or not isinstance(spot_interruptions_per_node_day, (int, float))
        or spot_interruptions_per_node_day < 0
    ):
        raise SizingError(
            f"spot_interruptions_per_node_day must be a number >= 0, got {spot_interruptions_per_node_day!r}."
        )


def _size_note(size: int, per_param: int, count: int, lora: bool, precision: str, optimizer: str) -> str:
    """How the checkpoint's size is counted: bytes per parameter (weights + optimizer K) x the saved parameters."""
    return (
        f"checkpoint = {per_param} B/param x {count:,} "
        f"{'LoRA adapter params' if lora else 'params'} = {_gb(size)} "
        f"({PRECISION_BYTES[precision]}-byte weights + {optimizer} K="
        f"{optimizer_bytes_per_param(optimizer, precision)})"
    )


def checkpoint_plan(
    parameters: int,
    optimizer: str,
    precision: str,
    write_gbps: float,
    nodes: int,
    node_mtbf_hours: float,
    spot: bool,
    spot_interruptions_per_node_day: float,
    lora_trainable: int | None = None,
) -> CheckpointModel:
    """Checkpoint size, write time, cluster MTBF and Young/Daly interval.

    * ``write_gbps``: aggregate write bandwidth of the whole job to checkpoint storage, in Gbit/s;
      write time C = size / (write_gbps * 1e9 / 8).
    * cluster failure rate (per hour) = nodes / node_mtbf_hours
      + (nodes * spot_interruptions_per_node_day / 24 if spot); MTBF M = 1 / rate.
      Failures are assumed independent and exponential (any one stops the synchronous job).
    """
    size = checkpoint_size_bytes(parameters, optimizer, precision, lora_trainable)
    _check_rates(write_gbps, nodes, node_mtbf_hours, spot_interruptions_per_node_day)
    write_seconds = size / (write_gbps * 1e9 / 8)
    hardware_rate = nodes / node_mtbf_hours
    spot_rate = nodes * spot_interruptions_per_node_day / 24.0 if spot else 0.0
    mtbf_hours = 1.0 / (hardware_rate + spot_rate)
    interval = young_daly_interval(write_seconds, mtbf_hours * 3600.0)
    per_param = size // (lora_trainable if lora_trainable is not None else parameters)
    overhead = write_seconds / interval + interval / (2 * mtbf_hours * 3600.0)
    notes = (
        _size_note(size, per_param, lora_trainable or parameters, bool(lora_trainable), precision, optimizer),
        f"write time C = {_gb(size)} / ({write_gbps:g} Gbit/s / 8) = {write_seconds:,.1f} s",
        f"failure rate = {nodes}/{node_mtbf_hours:g} h"
        + (f" + {nodes}*{spot_interruptions_per_node_day:g}/24 h (spot)" if spot else "")
        + f" = {hardware_rate + spot_rate:.4g}/h -> cluster MTBF M = {mtbf_hours:,.2f} h",
        (
            f"interval = max(sqrt(2*C*M), C) = sqrt(2*{write_seconds:,.1f}*{mtbf_hours * 3600:,.0f}) = "
            f"{interval:,.0f} s ({interval / 60:.1f} min)   [Young 1974; Daly 2006 first order]"
        ),
        f"expected overhead ~= C/tau + tau/(2M) = {overhead:.1%} of wall-clock (excludes restart time)",
    )
    return CheckpointModel(
        size_bytes=size,
        write_seconds=write_seconds,
        mtbf_hours=mtbf_hours,
        interval_seconds=interval,
        notes=notes,
    )
