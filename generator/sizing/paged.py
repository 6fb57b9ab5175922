"""A paged optimizer in full training (``paged_optimizer`` without LoRA): bitsandbytes' paged optimizers
(``PagedAdamW``, ``PagedAdamW32bit``, ``PagedAdamW8bit``, ``PagedLion``; ``optim="paged_adamw_32bit"`` in Hugging
Face's Trainer) keep their state tensors in CUDA unified (managed) memory, which the driver pages out to the host
under memory pressure and back in when the optimizer step touches it.

As bitsandbytes runs it (bitsandbytes/optim/optimizer.py ``Optimizer8bit.get_state_buffer``: ``F.get_paged`` for a
paged optimizer's state tensor of 1e5 elements or more, a plain ``torch.zeros_like`` otherwise): the moments are the
paged state; the fp32 master weights are not the optimizer's state but its parameters (under FSDP the sharded fp32
flat parameter, under DeepSpeed ZeRO the fp32 partition it hands to the client optimizer) and stay resident. The
flat parameters and partitions are far above 1e5 elements, so all of the moments are counted as paged (the few
small tensors of ``use_orig_params`` norms stay resident and are not counted apart).

So the fit needs the resident total within the GPU's usable memory; the paged bytes must fit the node's host memory
like CPU offload's states (:func:`generator.sizing.offload.host_fits`). Their time: if they fit the GPU's free memory
beside the resident total they are never evicted and cost nothing; otherwise every optimizer step reads and writes
all of them, so they cross PCIe twice (:func:`paged_pcie_bytes`, timed like offload's traffic by
:func:`generator.sizing.offload.pcie_seconds`: an upper bound, the driver migrates pages on demand and may keep some).

Frameworks: Hugging Face Trainer/Accelerate with FSDP steps the bitsandbytes optimizer directly; DeepSpeed ZeRO wraps
it as a client optimizer (its ``_do_optimizer_sanity_check`` in deepspeed/runtime/engine.py asks for
``"zero_allow_untested_optimizer": true``) and steps it on its fp32 partitions. Megatron-LM builds its own optimizer
(Apex/Transformer Engine FusedAdam inside its distributed optimizer) and takes no bitsandbytes optimizer, and CPU
offload already steps the optimizer on the CPU: both are refused (docs/sizing.md, 'Paged optimizer in full
training').
"""

from __future__ import annotations

from fractions import Fraction

from generator.sizing.common import SizingError, _ceil, _gb
from generator.sizing.precision import PURE_16BIT_OPTIMIZERS, optimizer_bytes_per_param
from generator.spec.conflicts import paged_conflicts

_MASTER_BYTES = 4  # the fp32 master copy in K under mixed precision: the optimizer's parameter, not its state


def check_paged(framework: str, zero_stage: int, offload: str, lora: bool) -> None:
    """Raise SizingError when a paged optimizer cannot run that way (``framework`` resolved): the rule and its message
    are :func:`generator.spec.conflicts.paged_conflicts`', which the spec check and the estimate report with a code
    before sizing is reached; this guards callers of the sizing API."""
    found = paged_conflicts("lora" if lora else "full", True, framework, zero_stage, offload)
    if found:
        raise SizingError(f"{found[0].message}; {found[0].spec_hint}.")


def moment_bytes(optimizer: str, precision: str) -> int:
    """Bytes per parameter of the optimizer's state tensors (its moments): K less the fp32 master copy under mixed
    precision (fp32 training and pure-16-bit optimizers have none)."""
    k = optimizer_bytes_per_param(optimizer, precision)
    master = 0 if precision == "fp32" or optimizer in PURE_16BIT_OPTIMIZERS else _MASTER_BYTES
    return k - master


def paged_moments(optimizer_states: int, optimizer: str, precision: str, notes: list[str]) -> int:
    """The paged part of ``optimizer_states`` (bytes per GPU, K x Psi/d as the framework shards it): its moments."""
    k = optimizer_bytes_per_param(optimizer, precision)
    moments = moment_bytes(optimizer, precision)
    paged = _ceil(Fraction(optimizer_states * moments, k))
    notes.append(
        f"paged optimizer (bitsandbytes, full training): the moments ({moments} of K={k} bytes/param) = "
        f"{_gb(paged)} in CUDA managed memory the driver pages to the host, not resident; the fp32 master "
        f"weights ({_gb(optimizer_states - paged)}) stay on the GPU (bitsandbytes/optim/optimizer.py "
        "get_state_buffer) [docs/sizing.md, 'Paged optimizer in full training']"
    )
    return paged


def paged_pcie_bytes(resident: int, paged: int, usable: int) -> int:
    """Bytes per optimizer step the paged moments move over PCIe: none if they fit beside the ``resident`` total in
    the ``usable`` memory (never evicted), else all of them read in and written back (2 x paged)."""
    return 0 if resident + paged <= usable else 2 * paged
