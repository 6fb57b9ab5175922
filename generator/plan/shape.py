"""The model's shape: the architecture a spec resolves to, and the fixed tensor, pipeline, expert, context and
offload settings that cannot split it whatever the instance type. The degrees ``auto`` tries live here too, since
the same lists say which fixed degrees would split the model.

It exists apart from :mod:`generator.plan.layout` because these checks run once per spec, before any instance type
is searched, and their problems are the spec's, not a type's.
"""

from __future__ import annotations

from generator import sizing
from generator.errors import Problem
from generator.plan import shape_refusals as r
from generator.plan.fit import PlanningError
from generator.plan.refusal import Refusal
from generator.spec.conflicts import training_conflicts
from generator.spec.model import Spec

# Pipeline degrees ``pipeline: auto`` tries: every degree up to 8, then the ones practitioners run (BLOOM pp=12,
# Megatron-LM's 175B/530B/1T runs pp=8..64, Llama 3 405B pp=16). Those that divide the layers come first; a degree
# that does not gets uneven stages (the largest holds ceil(L/pp) layers, see sizing.stage_layers) and is tried only
# when no even split fits.
AUTO_PIPELINE = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 48, 64)

# ``parallelism.context: auto`` considers context parallelism only for sequences at least this long, and only when
# no layout without it fits (docs/sizing.md, "Context parallelism"): Megatron-Core recommends it for long context,
# and at 32K tokens a 70B layer's activations alone reach ~10 GB per GPU at tp=8.
LONG_CONTEXT = 32768
AUTO_CONTEXT = (2, 4, 8, 16, 32)


def architecture(spec: Spec) -> sizing.Architecture:
    m = spec.model
    shape = m.architecture.model_dump() if m.architecture else {}
    try:
        moe = sizing.MoE(**m.moe.model_dump()) if m.moe is not None else None
        return sizing.architecture_for(m.parameters, m.preset, moe, **shape)
    except sizing.SizingError as e:
        path = (
            ("model", "moe")
            if m.moe is not None
            else ("model", "preset")
            if m.preset and not shape
            else ("model",)
        )
        raise PlanningError([r.ShapeUnresolved(path, str(e)).problem()]) from None


def shape_problems(spec: Spec, arch: sizing.Architecture) -> list[Problem]:
    """A fixed tensor or pipeline degree that cannot split the model, whatever the instance type."""
    found = _tensor_expert_offload(spec, arch) + _context(spec) + _pipeline(spec, arch)
    m = spec.model
    # the planner is total without validate.check: a precision the optimizer cannot keep is refused here too, before
    # every candidate's memory raises on it
    p = spec.parallelism
    conflicts = training_conflicts(
        m.finetune.method,
        m.precision,
        m.optimizer,
        m.finetune.paged_optimizer,
        p.framework,
        p.zero_stage,
        p.offload,
    )
    return [x.problem() for x in found] + [c.problem() for c in conflicts]


def _tensor_expert_offload(spec: Spec, arch: sizing.Architecture) -> list[Refusal]:
    p, out = spec.parallelism, list[Refusal]()
    if isinstance(p.tensor, int) and not sizing.tp_splits_heads(arch, p.tensor):
        ok = tuple(t for t in (1, 2, 4, 8, 16) if sizing.tp_splits_heads(arch, t))
        out.append(r.TensorSplitsNoHeads(p.tensor, arch.heads, arch.kv_heads, ok))
    if isinstance(p.expert, int) and p.expert > 1 and arch.moe is None:
        out.append(r.ExpertWithoutMoe(p.expert))
    elif isinstance(p.expert, int) and p.expert > 1 and arch.moe is not None and arch.moe.experts % p.expert:
        out.append(r.ExpertNotDividing(p.expert, arch.moe.experts))
    if p.offload != "none":
        try:
            sizing.check_offload(
                p.offload,
                sizing.resolve_framework(p.framework, p.zero_stage),
                p.zero_stage,
                spec.model.finetune.method in ("lora", "qlora"),
                arch.moe is not None,
            )
        except sizing.SizingError as e:
            out.append(r.OffloadRefused(p.offload, str(e)))
    return out


def _context(spec: Spec) -> list[Refusal]:
    p, out = spec.parallelism, list[Refusal]()
    c, s = p.context, spec.model.sequence_length
    if isinstance(c, int) and c > 1 and s % (2 * c):
        out.append(r.ContextChunks(c, s, tuple(d for d in (1, *AUTO_CONTEXT) if s % (2 * d) == 0)))
    if isinstance(c, int) and c > 1 and spec.model.finetune.method in ("lora", "qlora"):
        out.append(r.ContextForAdapters(c))
    return out


def _pipeline(spec: Spec, arch: sizing.Architecture) -> list[Refusal]:
    p, out = spec.parallelism, list[Refusal]()
    v = p.virtual_stages
    if v > 1 and isinstance(p.pipeline, int) and (p.pipeline == 1 or arch.layers % (p.pipeline * v)):
        ok = tuple(d for d in AUTO_PIPELINE if d > 1 and arch.layers % (d * v) == 0)
        out.append(r.VirtualStagesUneven(v, p.pipeline, arch.layers, ok))
    if isinstance(p.pipeline, int) and p.pipeline > arch.layers:
        out.append(r.PipelineOverLayers(p.pipeline, arch.layers))
    elif isinstance(p.pipeline, int) and not sizing.pipeline_splits(arch.layers, p.pipeline):
        m = sizing.stage_layers(arch.layers, p.pipeline)
        ok = tuple(d for d in AUTO_PIPELINE if d > 1 and sizing.pipeline_splits(arch.layers, d))
        out.append(r.PipelineUneven(p.pipeline, arch.layers, m, ok))
    return out
