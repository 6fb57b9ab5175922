"""Stage 2, plan: a pure function from a Spec and the Catalog to an immutable :class:`~generator.plan.model.Plan`.

No I/O, no clock, no environment: the same spec and catalog always give the same plan. Every decision is
recorded with a reason (``Plan.decisions``) and the instance types that lost are kept with why they lost
(``Plan.candidates``). When nothing fits, :class:`PlanningError` says what would.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
from collections.abc import Iterable
from dataclasses import dataclass

from generator import sizing
from generator.catalog import Catalog, GpuModel, InstanceType, LingjunMachineType, Region
from generator.errors import Problem, SpecErrors
from generator.plan.model import (
    PLAN_SCHEMA_VERSION,
    Candidate,
    Checkpoints,
    Compute,
    Cost,
    Dataset,
    Decision,
    DeploymentSet,
    Lingjun,
    LingjunSubnet,
    ModelSummary,
    Network,
    Node,
    Plan,
    Sizing,
    Spot,
    Storage,
    VSwitch,
    Waived,
)
from generator.spec import limits
from generator.spec.limits import CPFS_MIN_GIB, CPFS_STEP_GIB
from generator.spec.model import ComputeSpec, Spec
from generator.spec.units import human_bytes, human_count, human_seconds

LOW_LATENCY_SET_MAX = 20  # a LowLatency deployment set holds at most 20 instances, all in one zone [DOC-DS]
MULTI_NODE_GPUS = 8  # multi-node training uses 8-GPU nodes so tensor parallelism stays on NVLink
ERDMA_MTU_JUMBO = 8500  # NCCL over eRDMA: MTU 8500 with jumbo frames, 1400 without [DOC-ERDMA-GPU]
ERDMA_MTU_STANDARD = 1400
NODE_MTBF_HOURS = 2000.0  # assumed hardware MTBF of one 8-GPU node; an engineering assumption (docs/sizing.md)
RESTART_HOURS = 0.25  # assumed time to replace a node and reload the last checkpoint
CPFS_MBPS_PER_NODE = 64  # assumed shared-storage rate per node (data loading, staging, restores); docs/sizing.md
HOURS_PER_MONTH = 730
# eflo.Cluster cluster_type; the API's values are AckEdgePro, ExclusiveBareCluster and Lite [SDK-EFLO]
LINGJUN_CLUSTER_TYPE = "Lite"
LINGJUN_USER_DATA_MAX = 16 * 1024  # node group user data: base64 of at most 16 KB [PU-EFLO]
LINGJUN_BONDS_ASSUMED = 8  # addresses per node to reserve in the VPD subnet when the catalog gives no bond count


class PlanningError(SpecErrors):
    """No plan satisfies the spec; each problem says what to change."""


@dataclass(frozen=True, slots=True)
class _Fit:
    itype: InstanceType
    nodes: int
    tp: int
    pp: int
    dp: int
    memory: sizing.MemoryBreakdown


def spec_digest(spec: Spec) -> str:
    """A short content hash of the spec's meaning (not its formatting)."""
    return hashlib.sha256(spec.model_dump_json().encode()).hexdigest()[:16]


def make_plan(spec: Spec, catalog: Catalog) -> Plan:
    decisions: list[Decision] = []
    warnings: list[str] = []
    region = catalog.region(spec.region)
    if region is None:  # validate.check reports this with a hint; keep the planner total anyway
        raise PlanningError([Problem(("region",), f"unknown region '{spec.region}'")])
    lingjun = spec.compute.platform == "lingjun"
    zones = spec.zones or region.zones
    zone = zones[0]
    if not lingjun:  # a Lingjun zone follows from the machine type chosen (its known HPN zones), below
        decisions.append(Decision("zone", zone, (
            "the first zone of your ordered preference; the whole cluster goes in one zone because eRDMA peers, "
            "LowLatency deployment sets and the CPFS mount target are zonal" if spec.zones else
            f"no zones given; {zone} is the first zone of {region.id} in the catalog (stock unverified: check "
            "DescribeAvailableResource before deploying)")))

    arch = _architecture(spec)
    m = spec.model
    lora_rank = m.finetune.lora_rank if m.finetune.method in ("lora", "qlora") else None
    if arch.source.startswith("derived"):
        decisions.append(Decision("architecture", f"{arch.layers} layers, hidden {arch.hidden}, {arch.heads} heads",
                                  f"only a parameter count was given, so trainstack derived a Llama-style shape "
                                  f"({arch.source}); give model.architecture or model.preset for exact memory figures"))

    shape = _shape_problems(spec, arch)
    if shape:
        raise PlanningError(shape)

    fits, rejected = _search(spec, catalog, region, arch, lora_rank)
    if not fits:
        raise PlanningError([_nothing_fits(spec, rejected, arch, catalog)])

    ranked = sorted((_score(spec, catalog, f) for f in fits), key=lambda s: (s.key, s.fit.itype.name))
    within = [s for s in ranked if _within_budget(spec, s)]
    if not within:
        raise PlanningError([_over_budget(spec, ranked)])
    if within[0] is not ranked[0]:
        decisions.append(Decision("budget", f"{within[0].fit.itype.name} instead of {ranked[0].fit.itype.name}",
                                  "the cheaper-overall plan exceeds the budget; this is the best plan within it"))
    ranked = within + [s for s in ranked if s not in within]
    best = ranked[0]
    fit = best.fit

    t = fit.itype
    gpu = catalog.gpu(t.gpu)
    assert gpu is not None
    candidates = [_candidate(s, "chosen" if s is best else _why_lost(s, best)) for s in ranked[:6]]
    candidates += [Candidate(name, 0, 0, 0, 0, 0, 0.0, 0.0, None, None, why) for name, why in sorted(rejected.items())][:12]
    decisions.append(Decision("instance type", t.name, _why_chosen(spec, best, ranked)))
    decisions.append(Decision("nodes", str(fit.nodes), _why_nodes(spec, fit)))
    decisions.append(Decision("parallelism", f"tp={fit.tp} pp={fit.pp} dp={fit.dp} zero={spec.parallelism.zero_stage}",
                              _why_parallel(spec, fit, arch)))

    lj: LingjunMachineType | None = catalog.lingjun_type(t.name) if lingjun else None
    hpn_zone = ""
    if lj is not None:
        zone, hpn_zone, why_zone = _lingjun_zone(spec, lj)
        decisions.insert(0, Decision("zone", zone, why_zone))
        decisions.append(Decision("hpn zone", hpn_zone, f"the HPN zone (Lingjun network cluster) the sources pair with "
                                  f"{lj.name} in {zone} [{lj.source}]; eflo.Cluster and every eflo.Node name it"))

    ratio = t.memory_gib / (t.gpus * t.gpu_memory_gib)
    if t.memory_gib and ratio < 1:
        warnings.append(f"{t.name} has {t.memory_gib:g} GiB host memory for {t.gpus * t.gpu_memory_gib:g} GiB of GPU "
                        f"memory ({ratio:.2f}x); 1-2x is recommended so data loading and checkpoint staging do not stall")

    rdma = "none"
    if lj is not None:
        rdma = "lingjun-hpn"
    elif spec.network.rdma is not False and (fit.nodes > 1 or spec.network.rdma is True):
        rdma = "roce" if t.scc else ("erdma" if t.eri_count > 0 else "none")
    if lj is not None:
        fabric = (f"{lj.rdma_gbps:g} Gbit/s per node per the Lingjun docs [DOC-PAI-LJ]" if lj.rdma_gbps
                  else "bandwidth not stated")
        decisions.append(Decision("rdma", rdma, (
            f"Lingjun machine types sit on the HPN RDMA fabric ({fabric}); there is nothing to enable per node: each "
            f"node's {lj.bonds or 'network'} bond(s) take addresses from the VPD subnet, and NCCL finds the RDMA "
            "devices itself (NCCL tuning variables are left to the Lingjun image; unverified)")))
        if spec.network.rdma is False:
            warnings.append("network.rdma: false has no effect on Lingjun: its nodes are always on the HPN fabric")
    elif spec.network.rdma is False and fit.nodes > 1:
        warnings.append(f"network.rdma is false: {fit.nodes} nodes will exchange gradients over TCP and the GPUs "
                        "will wait on the network for much of each step")
    eri = (2 if t.two_network_cards else 1) if rdma == "erdma" else 0
    if lj is not None:
        pass  # decided above
    elif rdma != "none":
        decisions.append(Decision("rdma", rdma, (
            f"{fit.nodes} nodes exchange gradients every step; over TCP the GPUs would wait on the network. "
            + (f"{t.name} needs two ERIs on distinct network cards for its full {t.erdma_gbps:g} Gbit/s"
               if eri == 2 else f"{t.name} takes its eRDMA interface on the primary ENI")
            if rdma == "erdma" else f"{t.name} is an SCC type with a {t.roce_gbps:g} Gbit/s RoCE fabric; its nodes"
            " must be placed in an HPC cluster")))
    elif fit.nodes > 1:
        decisions.append(Decision("rdma", "off", "the spec turns RDMA off (network.rdma: false); traffic uses TCP"))
    else:
        decisions.append(Decision("rdma", "off", "one node: GPUs talk over NVLink/PCIe inside the node, no RDMA needed"))

    lingjun_plan: Lingjun | None = None
    if lj is not None:
        network, vpd_cidr, subnets = _lingjun_network(spec, zone, fit, lj, decisions)
        ranks, dsets = _lingjun_nodes(spec, zone, fit, decisions), ()
    else:
        network = _network(spec, zone, fit, rdma, eri, decisions)
        ranks, dsets = _nodes(spec, zone, fit, network, decisions)
    storage = _storage(spec, catalog, region, zone, fit, network, decisions, warnings)
    checkpoints = _checkpoints(spec, catalog, region, fit, arch, lora_rank, storage, decisions)
    spot = _spot(spec, fit, ranks, decisions, warnings)
    cost = _cost(spec, catalog, best, storage, checkpoints)
    if lj is not None:
        lingjun_plan = _lingjun(spec, lj, zone, hpn_zone, vpd_cidr, subnets, best, checkpoints, decisions, warnings)
    mem = fit.memory
    gpu_bytes = int(t.gpu_memory_gib * 2**30)
    flops = sizing.training_flops(arch.parameters, m.tokens) if m.tokens else None
    sizing_out = Sizing(
        weights=mem.weights, gradients=mem.gradients, optimizer_states=mem.optimizer_states,
        activations=mem.activations, reserve=mem.reserve, total=mem.total, gpu_memory=gpu_bytes,
        headroom=gpu_bytes - mem.total, notes=tuple(mem.notes), training_flops=flops,
        training_hours=best.run_hours, mfu=gpu.mfu, peak_tflops=gpu.bf16_tflops)
    compute = Compute(
        platform=spec.compute.platform, instance_type=t.name, family=t.family, gpu=t.gpu, gpus_per_node=t.gpus,
        nodes=fit.nodes, total_gpus=fit.nodes * t.gpus, tp=fit.tp, pp=fit.pp, dp=fit.dp,
        zero_stage=spec.parallelism.zero_stage, sequence_parallel=spec.parallelism.sequence_parallel and fit.tp > 1,
        recompute=spec.parallelism.recompute, bare_metal=t.bare_metal, vcpu=t.vcpu, memory_gib=t.memory_gib,
        gpu_memory_gib=t.gpu_memory_gib, rdma=rdma, eri_per_node=eri, scc=t.scc, hpc_cluster=t.scc,
        uefi_required=t.uefi_required, image_id=spec.compute.image_id, system_disk_gib=spec.compute.system_disk_gib,
        data_disk_gib=spec.compute.data_disk_gib, ranks=ranks, deployment_sets=dsets)
    model = ModelSummary(
        parameters=arch.parameters, layers=arch.layers, hidden=arch.hidden, heads=arch.heads, kv_heads=arch.kv_heads,
        vocab=arch.vocab, ffn_hidden=arch.ffn_hidden, architecture_source=arch.source, precision=m.precision,
        optimizer=m.optimizer, sequence_length=m.sequence_length, micro_batch_size=m.micro_batch_size,
        global_batch_tokens=m.global_batch_tokens, tokens=m.tokens, finetune=m.finetune.method, lora_rank=lora_rank)
    if spec.budget.max_days is not None and best.run_hours is not None and best.run_hours > spec.budget.max_days * 24:
        warnings.append(f"the run needs about {best.run_hours / 24:,.0f} days on {fit.nodes} node(s), over "
                        f"budget.max_days ({spec.budget.max_days:g}); set compute.nodes: auto to size for the deadline")
    warnings.extend(_long_run_warnings(spec, best, fit, checkpoints))
    if m.precision == "fp16":
        warnings.append("fp16 mixed precision needs loss scaling; bf16 is the default for LLM training on A100 and newer")
    if m.precision == "fp32":
        warnings.append("fp32 training is about 2x the memory and far slower than bf16 mixed precision")
    if t.availability != "ga" and lj is None:
        warnings.append(f"{t.family} is sold as '{t.availability}' (not generally available): confirm access with "
                        "Alibaba Cloud before deploying")
    return Plan(
        schema_version=PLAN_SCHEMA_VERSION, catalog_version=catalog.version, spec_digest=spec_digest(spec),
        name=spec.name, stack=spec.stack, region=region.id, zones=tuple(zones), tags=tuple(sorted(spec.tags.items())),
        model=model, sizing=sizing_out, compute=compute, network=network, storage=storage, checkpoints=checkpoints,
        spot=spot, cost=cost, decisions=tuple(decisions), candidates=tuple(candidates), warnings=tuple(warnings),
        waivers=tuple(Waived(w.rule, w.reason) for w in spec.waivers), lingjun=lingjun_plan)


def _long_run_warnings(spec: Spec, best: _Scored, fit: _Fit, ckpt: Checkpoints) -> list[str]:
    """A run of over a year, and a fixed checkpoint interval longer than the run or than the time between
    interruptions: legal, but almost always a typo in model.tokens, model.parameters or checkpoints.interval."""
    out = []
    if best.run_hours is not None:
        wall = best.run_hours + (best.rework_hours or 0.0)
        if wall > limits.LONG_RUN_HOURS:
            out.append(f"the run takes about {wall / 24 / 365:,.1f} years ({wall / 24:,.0f} days, rework after "
                       f"interruptions included) on {fit.nodes} node(s): check model.tokens and model.parameters, "
                       "or allow more nodes (compute.max_nodes, budget.max_days)")
    if ckpt.enabled and isinstance(spec.checkpoints.interval, int):
        interval = spec.checkpoints.interval
        if best.run_hours is not None and interval >= best.run_hours * 3600:
            out.append(f"checkpoints.interval ({human_seconds(interval)}) is longer than the whole run "
                       f"({human_seconds(best.run_hours * 3600)}): no checkpoint is written before it ends; "
                       "write interval: auto")
        elif ckpt.cluster_mtbf_hours and interval > ckpt.cluster_mtbf_hours * 3600:
            out.append(f"checkpoints.interval ({human_seconds(interval)}) is longer than the cluster's expected time "
                       f"between interruptions ({ckpt.cluster_mtbf_hours:,.1f} h, an assumption): most interruptions "
                       "would lose more than a checkpoint's worth of work; write interval: auto")
    return out


# --------------------------------------------------------------------------------------------------- sizing


def _architecture(spec: Spec) -> sizing.Architecture:
    m = spec.model
    shape = m.architecture.model_dump() if m.architecture else {}
    try:
        return sizing.architecture_for(m.parameters, m.preset, **shape)
    except sizing.SizingError as e:
        path = ("model", "preset") if m.preset and not shape else ("model",)
        raise PlanningError([Problem(path, str(e))]) from None


def _shape_problems(spec: Spec, arch: sizing.Architecture) -> list[Problem]:
    """A fixed tensor or pipeline degree that cannot split the model, whatever the instance type."""
    p, out = spec.parallelism, []
    if isinstance(p.tensor, int) and (arch.heads % p.tensor or arch.kv_heads % p.tensor):
        ok = [t for t in (1, 2, 4, 8, 16) if arch.heads % t == 0 and arch.kv_heads % t == 0]
        out.append(Problem(("parallelism", "tensor"), f"tensor parallelism {p.tensor} does not divide the model's "
                           f"{arch.heads} attention heads ({arch.kv_heads} KV heads)",
                           f"use tensor: auto, or one of {', '.join(map(str, ok))}"))
    if isinstance(p.pipeline, int) and arch.layers % p.pipeline:
        ok = [d for d in range(1, min(arch.layers, 64) + 1) if arch.layers % d == 0]
        out.append(Problem(("parallelism", "pipeline"), f"pipeline parallelism {p.pipeline} does not divide the "
                           f"model's {arch.layers} layers", f"use pipeline: auto, or one of {', '.join(map(str, ok))}"))
    return out


def _setup(spec: Spec, arch: sizing.Architecture, tp: int, pp: int, dp: int, lora_rank: int | None) -> sizing.TrainingSetup:
    m, p = spec.model, spec.parallelism
    return sizing.TrainingSetup(
        arch=arch, seq_len=m.sequence_length, micro_batch=m.micro_batch_size, precision=m.precision,
        optimizer=m.optimizer, zero_stage=p.zero_stage, tp=tp, pp=pp, dp=dp,
        sequence_parallel=p.sequence_parallel and tp > 1, recompute=p.recompute, lora_rank=lora_rank,
        qlora=m.finetune.method == "qlora")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _eligible(spec: Spec, catalog: Catalog, region: Region) -> tuple[list[InstanceType], dict[str, str]]:
    c = spec.compute
    if c.platform == "lingjun":
        return _eligible_lingjun(spec, catalog, region)
    rejected: dict[str, str] = {}
    wanted_gpu = catalog.gpu(c.gpu) if c.gpu != "auto" else None
    allow = set(c.instance_types)
    offered = {t.name for t in catalog.types_in_region(region.id)}
    out = []
    for t in catalog.instance_types:
        if allow and t.name not in allow:
            continue
        if t.name not in offered:
            if allow:
                rejected[t.name] = f"not offered in {region.id} per the catalog"
            continue
        if not _wanted(c, t, wanted_gpu):
            continue
        if t.availability == "invite" and t.name not in allow:
            rejected[t.name] = "invitation-only preview; list it in compute.instance_types to consider it"
            continue
        if c.bare_metal == "require" and not t.bare_metal:
            continue
        if c.bare_metal == "avoid" and t.bare_metal:
            continue
        if spec.network.rdma is True and not t.rdma:
            rejected[t.name] = "no eRDMA or RoCE, and network.rdma is true"
            continue
        out.append(t)
    return out, rejected


def _wanted(c: ComputeSpec, t: InstanceType | LingjunMachineType, wanted_gpu: GpuModel | None) -> bool:
    """The spec's GPU model and GPUs-per-node filters, shared by ECS and Lingjun types."""
    if wanted_gpu is not None and t.gpu != wanted_gpu.name:
        return False
    return not (isinstance(c.gpus_per_node, int) and t.gpus != c.gpus_per_node)


def _eligible_lingjun(spec: Spec, catalog: Catalog,
                      region: Region) -> tuple[list[InstanceType], dict[str, str]]:
    """Lingjun machine types of the region that pass the spec's filters and have a known HPN zone it allows."""
    c = spec.compute
    rejected: dict[str, str] = {}
    wanted_gpu = catalog.gpu(c.gpu) if c.gpu != "auto" else None
    allow = set(c.instance_types)
    out = []
    for t in catalog.lingjun_types:
        if allow and t.name not in allow:
            continue
        if region.id not in t.regions:
            if allow:
                rejected[t.name] = f"not offered in {region.id} per the catalog"
            continue
        if not _wanted(c, t, wanted_gpu):
            continue
        if c.bare_metal == "avoid":
            rejected[t.name] = "Lingjun nodes are bare metal and compute.bare_metal is avoid"
            continue
        if spec.zones and not any(t.hpn_zone(z) for z in spec.zones):
            known = ", ".join(f"{z} (HPN {h})" for z, h in t.hpn_zones)
            rejected[t.name] = f"no known HPN zone in the zones you listed; the catalog knows it in {known}"
            continue
        out.append(t.as_instance_type())
    return out, rejected


def _rdma_capable(spec: Spec, t: InstanceType) -> bool:
    """eRDMA or RoCE on ECS; every Lingjun machine type is on the HPN RDMA fabric."""
    return t.rdma or spec.compute.platform == "lingjun"


def _search(spec: Spec, catalog: Catalog, region: Region, arch: sizing.Architecture,
            lora_rank: int | None) -> tuple[list[_Fit], dict[str, str]]:
    """For each eligible instance type, the smallest node count (and its parallel layout) that fits in memory."""
    types, rejected = _eligible(spec, catalog, region)
    p, c = spec.parallelism, spec.compute
    fits: list[_Fit] = []
    for t in types:
        gpu = catalog.gpu(t.gpu)
        assert gpu is not None, t.gpu  # the catalog loader rejects dangling GPU references
        gpu_bytes = int(t.gpu_memory_gib * 2**30)
        multi_ok = t.gpus == MULTI_NODE_GPUS and (_rdma_capable(spec, t) or spec.network.rdma is False)
        max_nodes = c.nodes if isinstance(c.nodes, int) else (c.max_nodes if multi_ok else 1)
        if isinstance(c.nodes, int) and c.nodes > 1 and not multi_ok:
            rejected[t.name] = (f"{t.gpus} GPUs per node; multi-node training uses 8-GPU nodes"
                                if t.gpus != MULTI_NODE_GPUS else "no eRDMA or RoCE for multi-node training")
            continue
        tps = [p.tensor] if isinstance(p.tensor, int) else [d for d in _divisors(t.gpus)
                                                              if arch.heads % d == 0 and arch.kv_heads % d == 0]
        pps = [p.pipeline] if isinstance(p.pipeline, int) else [d for d in (1, 2, 4, 8, 16, 32) if arch.layers % d == 0]
        if isinstance(p.tensor, int) and p.tensor > t.gpus:
            rejected[t.name] = f"tensor parallelism {p.tensor} does not fit in a {t.gpus}-GPU node"
            continue
        best: _Fit | None = None
        for tp in tps:
            if t.gpus % tp:
                continue
            for pp in pps:
                fit = _smallest(spec, arch, lora_rank, t, gpu, tp, pp, max_nodes, gpu_bytes)
                if fit and (best is None or (fit.nodes, fit.tp * fit.pp, fit.pp, fit.memory.total) <
                            (best.nodes, best.tp * best.pp, best.pp, best.memory.total)):
                    best = fit
        if best is None:
            rejected[t.name] = _why_not_fit(spec, arch, lora_rank, t, gpu, tps, pps, max_nodes)
            continue
        if best.nodes > 1 and not multi_ok:
            rejected[t.name] = "needs more than one node but has no eRDMA/RoCE or fewer than 8 GPUs"
            continue
        fits.append(best)
    return fits, rejected


def _smallest(spec: Spec, arch: sizing.Architecture, lora_rank: int | None, t: InstanceType, gpu: GpuModel,
              tp: int, pp: int, max_nodes: int, gpu_bytes: int) -> _Fit | None:
    """Smallest node count for this (tp, pp), using that memory never grows with the data-parallel degree."""
    p = spec.parallelism
    per_node_models = t.gpus / (tp * pp)
    node_options = [n for n in range(1, max_nodes + 1) if (n * t.gpus) % (tp * pp) == 0]
    if isinstance(spec.compute.nodes, int):
        node_options = [spec.compute.nodes] if (spec.compute.nodes * t.gpus) % (tp * pp) == 0 else []
    if isinstance(p.data, int):
        node_options = [n for n in node_options if n * t.gpus == p.data * tp * pp]
    deadline = _deadline_nodes(spec, arch, t, gpu)
    node_options = [n for n in node_options if n >= deadline]
    batch_seqs = _batch_sequences(spec)
    if batch_seqs is not None:
        node_options = [n for n in node_options
                        if batch_seqs % (int(n * per_node_models) * spec.model.micro_batch_size) == 0]
    if not node_options:
        return None
    try:
        def mem(n: int) -> sizing.MemoryBreakdown:
            return sizing.per_gpu_memory(_setup(spec, arch, tp, pp, int(n * t.gpus // (tp * pp)), lora_rank))

        last = mem(node_options[-1])
    except sizing.SizingError:
        return None
    if last.total > gpu_bytes:
        return None
    lo, hi = 0, len(node_options) - 1  # binary search: the first node count whose memory fits
    while lo < hi:
        mid = (lo + hi) // 2
        if mem(node_options[mid]).total <= gpu_bytes:
            hi = mid
        else:
            lo = mid + 1
    n = node_options[lo]
    return _Fit(t, n, tp, pp, int(n * t.gpus // (tp * pp)), mem(n))


def _deadline_nodes(spec: Spec, arch: sizing.Architecture, t: InstanceType, gpu: GpuModel) -> int:
    """The fewest nodes that finish ``model.tokens`` within ``budget.max_days`` (1 without a deadline)."""
    if spec.budget.max_days is None or not spec.model.tokens or isinstance(spec.compute.nodes, int):
        return 1
    gpu_hours = sizing.training_hours(arch.parameters, spec.model.tokens, 1, gpu.bf16_tflops, gpu.mfu,
                                      spec.parallelism.recompute)
    return max(1, math.ceil(gpu_hours / (spec.budget.max_days * 24) / t.gpus))


def _batch_sequences(spec: Spec) -> int | None:
    g = spec.model.global_batch_tokens
    if g is None:
        return None
    return max(1, g // spec.model.sequence_length)


def _why_not_fit(spec: Spec, arch: sizing.Architecture, lora_rank: int | None, t: InstanceType, gpu: GpuModel,
                 tps: list[int], pps: list[int], max_nodes: int) -> str:
    if not tps:
        return f"no tensor-parallel degree divides both {arch.heads} heads and {t.gpus} GPUs"
    n = max_nodes
    tp = max(tps)
    pp = max((d for d in pps if tp * d <= n * t.gpus and (n * t.gpus) % (tp * d) == 0), default=1)
    dp = max(1, n * t.gpus // (tp * pp))
    try:
        need = sizing.per_gpu_memory(_setup(spec, arch, tp, pp, dp, lora_rank)).total
    except sizing.SizingError as e:
        return str(e)
    if need > t.gpu_memory_gib * 2**30:
        return (f"needs {human_bytes(need)} per GPU even at {n} node(s) with tp={tp} pp={pp}; "
                f"each {t.gpu} has {t.gpu_memory_gib:g} GiB")
    deadline = _deadline_nodes(spec, arch, t, gpu)
    if deadline > n:
        return (f"fits in memory, but finishing {human_count(spec.model.tokens or 0)} tokens in "
                f"{spec.budget.max_days:g} days needs {deadline} nodes" +
                (f", over compute.max_nodes ({n})" if n > 1 else
                 "; multi-node training uses 8-GPU nodes with RDMA"
                 if t.gpus != MULTI_NODE_GPUS or not _rdma_capable(spec, t) else
                 f", over compute.max_nodes ({n})"))
    batch = _batch_sequences(spec)
    if batch is not None:
        return (f"fits in memory, but no node count up to {n} gives a data-parallel degree that divides the "
                f"global batch of {batch} sequences (x micro-batch {spec.model.micro_batch_size})")
    return f"no layout of tp in {tps} and pp in {pps} fits up to {n} node(s)"


def _nothing_fits(spec: Spec, rejected: dict[str, str], arch: sizing.Architecture,
                  catalog: Catalog | None = None) -> Problem:
    c, p = spec.compute, spec.parallelism
    fixes = []
    if isinstance(c.nodes, int):
        fixes.append("set compute.nodes: auto (or more nodes)")
    elif c.max_nodes < 512:
        fixes.append("raise compute.max_nodes")
    # Only suggest memory savings that can help: with every GPU allowed, ZeRO-3 model states alone
    # (2 + 2 + K bytes per parameter, sharded over all GPUs) must fit the largest GPU in the catalog.
    gpus = (c.nodes if isinstance(c.nodes, int) else c.max_nodes) * MULTI_NODE_GPUS
    biggest = max((g.memory_gib for g in catalog.gpus), default=80.0) * 2**30 if catalog else 80.0 * 2**30
    states = arch.parameters * (4 + sizing.optimizer_bytes_per_param(spec.model.optimizer, spec.model.precision)) / gpus
    if states < biggest:
        if p.zero_stage < 3:
            fixes.append("use parallelism.zero_stage: 3 to shard weights, gradients and optimizer states")
        if p.recompute != "full":
            fixes.append("use parallelism.recompute: full to trade compute for activation memory")
        if spec.model.micro_batch_size > 1:
            fixes.append("lower model.micro_batch_size")
    if c.gpu != "auto":
        fixes.append("set compute.gpu: auto or choose a GPU with more memory")
    if c.instance_types:
        fixes.append("widen compute.instance_types")
    if isinstance(p.tensor, int) or isinstance(p.pipeline, int):
        fixes.append("let parallelism.tensor / pipeline be auto")
    if rejected and all("eRDMA" in why or "RoCE" in why or "RDMA" in why for why in rejected.values()):
        # memory is not the problem: only a fabric (another region or GPU) or TCP helps
        fixes = ["choose a region with 8-GPU eRDMA types (see 'trainstack catalog --regions')",
                 "set network.rdma: false to accept TCP"]
        if c.gpu != "auto":
            fixes.append("set compute.gpu: auto (another GPU may have eRDMA types here)")
    details = "; ".join(f"{k}: {v}" for k, v in sorted(rejected.items())[:2])
    if len(rejected) > 2:
        details += f"; and {len(rejected) - 2} more like these"
    path: tuple[str | int, ...] = ("compute", "nodes") if isinstance(c.nodes, int) else ("compute",)
    what = "Lingjun machine type" if c.platform == "lingjun" else "instance type"
    return Problem(path, f"no {what} in the region can train this {human_count(arch.parameters)}-parameter model"
                   + (f" ({details})" if details else ""), "to fix: " + "; or ".join(fixes))


# --------------------------------------------------------------------------------------------------- cost / choice


@dataclass(frozen=True, slots=True)
class _Scored:
    fit: _Fit
    per_hour: float
    spot_per_hour: float
    run_hours: float | None
    rework_hours: float | None
    run_cost: float | None
    key: tuple[float, ...]


def _score(spec: Spec, catalog: Catalog, fit: _Fit) -> _Scored:
    t = fit.itype
    gpu = catalog.gpu(t.gpu)
    assert gpu is not None
    on_demand_nodes, spot_nodes = _spot_split(spec, fit.nodes)
    spot_price = t.price.cny_per_hour * spec.spot.price_ratio
    per_hour = on_demand_nodes * t.price.cny_per_hour + spot_nodes * spot_price
    run_hours = rework = run_cost = None
    if spec.model.tokens:
        arch = _architecture(spec)
        run_hours = sizing.training_hours(arch.parameters, spec.model.tokens, fit.nodes * t.gpus, gpu.bf16_tflops,
                                          gpu.mfu, spec.parallelism.recompute)
        interrupts = 0.0
        if spot_nodes:
            interrupts = spec.spot.interruptions_per_node_day * spot_nodes * run_hours / 24
        failures = fit.nodes * run_hours / NODE_MTBF_HOURS
        # each interruption loses on average half a checkpoint interval plus the restart (the whole cluster waits)
        interval_h = _auto_interval_hours(spec, catalog, fit, arch)
        rework = (interrupts + failures) * (interval_h / 2 + RESTART_HOURS)
        run_cost = per_hour * (run_hours + rework)
        # equal cost (within 0.5%) -> the faster run wins
        key = (round(math.log(run_cost) / math.log(1.005)), round(run_hours + rework, 1), *_tie(spec, t))
    else:
        key = (round(per_hour, 2), float(fit.nodes), *_tie(spec, t))
    # Lingjun: a type also sold pay-as-you-go beats a subscription-only one (Subscription nodes are prepaid and
    # cannot be destroyed by Pulumi); always 0 on ECS
    lj = catalog.lingjun_type(t.name) if spec.compute.platform == "lingjun" else None
    key = (*key, 0.0 if lj is None or "PayAsYouGo" in lj.payment_types else 1.0)
    return _Scored(fit, per_hour, spot_price, run_hours, rework, run_cost, key)


def _tie(spec: Spec, t: InstanceType) -> tuple[float, float]:
    """Tie-breaks between equally cheap and fast types: a list price beats an estimate; then the spec's
    bare-metal preference (ECS when it has none); the name decides last, for a stable plan."""
    want_metal = spec.compute.bare_metal in ("prefer", "require")
    return (1.0 if t.price.estimated else 0.0, 0.0 if t.bare_metal == want_metal else 1.0)


def _auto_interval_hours(spec: Spec, catalog: Catalog, fit: _Fit, arch: sizing.Architecture) -> float:
    region = catalog.region(spec.region)
    assert region is not None
    _, spot_nodes = _spot_split(spec, fit.nodes)
    node_gbps = fit.nodes * fit.itype.network_gbps
    write_gbps = min(region.oss_upload_gbps, node_gbps) if node_gbps > 0 else region.oss_upload_gbps
    cm = sizing.checkpoint_plan(arch.parameters, spec.model.optimizer, spec.model.precision, write_gbps, fit.nodes,
                                NODE_MTBF_HOURS, spot_nodes > 0,
                                spec.spot.interruptions_per_node_day * (spot_nodes / fit.nodes))
    if isinstance(spec.checkpoints.interval, int):
        return spec.checkpoints.interval / 3600
    return cm.interval_seconds / 3600


def _spot_split(spec: Spec, nodes: int) -> tuple[int, int]:
    if not spec.spot.enabled:
        return nodes, 0
    base = min(spec.spot.on_demand_base, nodes)
    return base, nodes - base


def _candidate(s: _Scored, verdict: str) -> Candidate:
    f = s.fit
    return Candidate(f.itype.name, f.nodes, f.nodes * f.itype.gpus, f.tp, f.pp, f.dp,
                     round(f.memory.total / 2**30, 2), round(s.per_hour, 2),
                     None if s.run_cost is None else round(s.run_cost, 2),
                     None if s.run_hours is None else round(s.run_hours, 2), verdict)


def _why_lost(s: _Scored, best: _Scored) -> str:
    if s.key[:2] == best.key[:2]:
        why = []
        if s.key[2] != best.key[2]:
            why.append("its price is an estimate, the chosen one's a list price")
        elif s.key[3] != best.key[3]:
            why.append("the spec's bare-metal preference" if best.fit.itype.bare_metal else
                       "ECS preferred when the spec states no bare-metal preference")
        elif s.key[4:] != best.key[4:]:
            why.append("payment: it is sold by subscription only, the chosen type also pay-as-you-go")
        return "ties on cost and time; lost on " + (why[0] if why else "name order (a stable tie-break)")
    if s.run_cost is not None and best.run_cost is not None and s.key[0] == best.key[0]:
        return f"same run cost within 0.5% but slower: {s.run_hours:,.0f} h vs {best.run_hours:,.0f} h"
    if s.run_cost is not None and best.run_cost is not None:
        return (f"whole run costs {s.run_cost - best.run_cost:,.0f} CNY more "
                f"({s.run_cost:,.0f} vs {best.run_cost:,.0f})")
    return f"costs {s.per_hour - best.per_hour:,.2f} CNY/h more ({s.per_hour:,.2f} vs {best.per_hour:,.2f})"


def _why_chosen(spec: Spec, best: _Scored, ranked: list[_Scored]) -> str:
    t = best.fit.itype
    basis = ("the lowest expected cost for the whole run (training FLOPs 6*N*tokens at the GPU's assumed MFU, plus "
             "expected rework after interruptions)" if best.run_cost is not None else
             "the lowest cost per hour for the GPUs needed (give model.tokens to rank by whole-run cost)")
    price = (f"{t.price.cny_per_hour:,.2f} CNY/h per node, "
             + ("an ESTIMATE" if t.price.estimated else f"list price {t.price.region} {t.price.date}")
             + f" [{t.price.source}]")
    return f"{len(ranked)} instance type(s) fit; {t.name} ({t.gpus}x {t.gpu}) has {basis}; {price}"


def _why_nodes(spec: Spec, fit: _Fit) -> str:
    t = fit.itype
    need = human_bytes(fit.memory.total)
    if isinstance(spec.compute.nodes, int):
        return f"as the spec asks; each GPU then needs {need} of its {t.gpu_memory_gib:g} GiB"
    return (f"the fewest nodes whose GPUs hold the training state: {need} per GPU of {t.gpu_memory_gib:g} GiB "
            f"with tp={fit.tp} pp={fit.pp} dp={fit.dp}")


def _why_parallel(spec: Spec, fit: _Fit, arch: sizing.Architecture) -> str:
    parts = [f"tensor parallel {fit.tp} stays inside one {fit.itype.gpus}-GPU node (NVLink) and divides "
             f"{arch.heads} heads", f"pipeline {fit.pp} divides {arch.layers} layers",
             f"data parallel {fit.dp} = {fit.nodes * fit.itype.gpus} GPUs / (tp*pp)"]
    if spec.parallelism.zero_stage:
        parts.append(f"ZeRO stage {spec.parallelism.zero_stage} shards state over the {fit.dp} data-parallel ranks")
    return "; ".join(parts)


def _within_budget(spec: Spec, s: _Scored) -> bool:
    b = spec.budget
    if b.per_hour is not None and s.per_hour > b.per_hour:
        return False
    if b.total is not None and (s.run_cost is None or s.run_cost > b.total):
        return False
    return True


def _over_budget(spec: Spec, ranked: list[_Scored]) -> Problem:
    """No plan fits the budget: say by how much the cheapest misses it and what would help."""
    b = spec.budget
    if b.total is not None and ranked[0].run_cost is None:
        return Problem(("budget", "total"), "a total budget needs model.tokens to estimate the run's length",
                       "add model.tokens (e.g. 300B)")
    if b.per_hour is not None and all(s.per_hour > b.per_hour for s in ranked):
        cheapest = min(ranked, key=lambda s: s.per_hour)
        return Problem(("budget", "per_hour"), f"the cheapest plan costs {cheapest.per_hour:,.2f} CNY/h "
                       f"({cheapest.fit.nodes}x {cheapest.fit.itype.name}), over the budget of {b.per_hour:,.2f} CNY/h",
                       "raise budget.per_hour, enable spot, relax budget.max_days, or shrink the model or sequence length")
    assert b.total is not None
    costed = [s for s in ranked if s.run_cost is not None and (b.per_hour is None or s.per_hour <= b.per_hour)]
    cheapest = min(costed or ranked, key=lambda s: s.run_cost or 0.0)
    return Problem(("budget", "total"), f"the cheapest plan is expected to cost {cheapest.run_cost or 0:,.0f} CNY "
                   f"({cheapest.fit.nodes}x {cheapest.fit.itype.name}), over the budget of {b.total:,.0f} CNY",
                   "raise budget.total, train on fewer tokens, or enable spot")


# --------------------------------------------------------------------------------------------------- network & nodes


def _network(spec: Spec, zone: str, fit: _Fit, rdma: str, eri: int, decisions: list[Decision]) -> Network:
    vpc = ipaddress.ip_network(spec.network.vpc_cidr)
    prefix = max(vpc.prefixlen, min(24, vpc.prefixlen + 4))
    need = fit.nodes + 48  # the CPFS protocol service takes up to 32 addresses of the vSwitch
    while prefix > vpc.prefixlen and (2 ** (32 - prefix) - 8) < need:
        prefix -= 1
    if (2 ** (32 - prefix) - 8) < need:
        raise PlanningError([Problem(("network", "vpc_cidr"), f"{vpc} is too small for {fit.nodes} nodes",
                                     "use a larger range such as 10.0.0.0/16")])
    subnet = next(vpc.subnets(new_prefix=prefix))
    vswitches = (VSwitch("compute", f"{spec.name}-{zone}", zone, str(subnet)),)
    jumbo = spec.network.jumbo_frames and rdma == "erdma"
    mtu = ERDMA_MTU_JUMBO if jumbo else ERDMA_MTU_STANDARD
    env: list[tuple[str, str]] = []
    if rdma == "erdma":
        # PAI's preset variables for eRDMA training (NCCL >= 2.19) [DOC-PAI-ERDMA]
        env = [("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IB_HCA", "erdma"), ("NCCL_IB_GID_INDEX", "1"),
               ("NCCL_IB_QPS_PER_CONNECTION", "8"), ("NCCL_MIN_NCHANNELS", "16"), ("NCCL_NET_PLUGIN", "none")]
        decisions.append(Decision("mtu", str(mtu), "NCCL over eRDMA needs MTU 8500 with jumbo frames on (1400 with them "
                                  "off); a wrong MTU corrupts data with the LL128 protocol [DOC-ERDMA-GPU]"))
    elif rdma == "roce":
        env = [("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IB_GID_INDEX", "3")]
    elif fit.nodes > 1:
        env = [("NCCL_SOCKET_IFNAME", "eth0")]
    egress = spec.network.egress
    decisions.append(Decision("egress", egress, (
        "outbound-only internet through an enhanced NAT gateway and one EIP (no public IP on any node, nothing "
        "inbound), so nodes can fetch drivers, packages and code" if egress == "nat" else
        "no internet: nodes reach only VPC-internal endpoints (mirrors.cloud.aliyuncs.com, OSS internal); use an "
        "image that already has the GPU driver")))
    return Network(str(vpc), vswitches, tuple(spec.network.admin_cidrs), jumbo, mtu if rdma == "erdma" else 1500,
                   tuple(env), egress)


def _nodes(spec: Spec, zone: str, fit: _Fit, network: Network,
           decisions: list[Decision]) -> tuple[tuple[Node, ...], tuple[DeploymentSet, ...]]:
    t = fit.itype
    subnet = ipaddress.ip_network(network.vswitches[0].cidr)
    first = int(subnet.network_address) + 10  # leave the low addresses for the gateway and services
    use_sets = t.low_latency_set and fit.nodes > 1 and not t.scc
    dsets: list[DeploymentSet] = []
    if use_sets:
        # Fixed blocks of 20 ranks (not balanced sets): growing or shrinking the cluster then never moves an
        # existing node to another set.
        count = math.ceil(fit.nodes / LOW_LATENCY_SET_MAX)
        size = LOW_LATENCY_SET_MAX
        for i in range(count):
            ranks = tuple(range(i * size, min(fit.nodes, (i + 1) * size)))
            dsets.append(DeploymentSet(f"ll{i}", f"{spec.name}-ll{i}", zone, "LowLatency", ranks))
        decisions.append(Decision("placement", f"{count} LowLatency deployment set(s)",
                                  f"{t.family} supports LowLatency sets, which hold at most {LOW_LATENCY_SET_MAX} "
                                  f"instances in one zone [DOC-DS]; ranks go into sets in blocks of {size}, so "
                                  "resizing the cluster never moves a node between sets"))
    elif t.scc:
        decisions.append(Decision("placement", "HPC cluster", "SCC instances must be created in an HPC cluster "
                                  "(HpcClusterId is required) [DOC-RUNINST]"))
    elif fit.nodes > 1:
        decisions.append(Decision("placement", "no deployment set", f"{t.family} is not on the LowLatency list "
                                  "[DOC-DS]; nodes share one zone and vSwitch"))
    by_rank = {r: d.key for d in dsets for r in d.ranks}
    spot_on = set(_spot_ranks(spec, fit.nodes))
    ranks = tuple(Node(rank=i, name=f"{spec.name}-node-{i:03d}" if fit.nodes < 1000 else f"{spec.name}-node-{i:04d}",
                       zone=zone, vswitch="compute", private_ip=str(ipaddress.ip_address(first + i)),
                       spot=i in spot_on, deployment_set=by_rank.get(i)) for i in range(fit.nodes))
    return ranks, tuple(dsets)


def _spot_ranks(spec: Spec, nodes: int) -> list[int]:
    on_demand, spot = _spot_split(spec, nodes)
    return list(range(on_demand, on_demand + spot))


# --------------------------------------------------------------------------------------------------- lingjun


def _lingjun_zone(spec: Spec, lj: LingjunMachineType) -> tuple[str, str, str]:
    """The zone and HPN zone for a Lingjun machine type: the first zone of the spec's preference where the catalog
    knows an HPN zone for the type, else the type's first known pair."""
    for z in spec.zones:
        hpn = lj.hpn_zone(z)
        if hpn:
            why = ("the first zone of your ordered preference where the catalog knows an HPN zone for "
                   f"{lj.name}; the whole cluster goes in one zone and one HPN zone")
            return z, hpn, why
    z, hpn = lj.hpn_zones[0]  # _eligible_lingjun keeps only types with a pair in the spec's zones (or any pair)
    return z, hpn, (f"no zones given; {z} is where the sources show {lj.name} (HPN zone {hpn}) [{lj.source}]. "
                    "Catalog belief, not stock: Lingjun capacity is confirmed by Alibaba Cloud when ordered")


def _carve(space: ipaddress.IPv4Network, need: int) -> ipaddress.IPv4Network | None:
    """The first subnet of ``space`` holding ``need`` addresses (8 reserved), sized as the ECS vSwitch is."""
    prefix = max(space.prefixlen, min(24, space.prefixlen + 4))
    while prefix > space.prefixlen and (2 ** (32 - prefix) - 8) < need:
        prefix -= 1
    if (2 ** (32 - prefix) - 8) < need:
        return None
    return next(space.subnets(new_prefix=prefix))


def _lingjun_network(spec: Spec, zone: str, fit: _Fit, lj: LingjunMachineType,
                     decisions: list[Decision]) -> tuple[Network, str, tuple[LingjunSubnet, ...]]:
    """network.vpc_cidr split in two: the lower half is the VPD (HPN addresses), the upper half the VPC."""
    space = ipaddress.ip_network(spec.network.vpc_cidr)
    vpd, vpc = space.subnets(prefixlen_diff=1)
    bonds = lj.bonds or LINGJUN_BONDS_ASSUMED
    subnet = _carve(vpd, fit.nodes * bonds + 16)
    vswitch = _carve(vpc, fit.nodes + 48)
    if subnet is None or vswitch is None:
        raise PlanningError([Problem(("network", "vpc_cidr"), f"{space} is too small for {fit.nodes} Lingjun "
                                     f"nodes: half of it is the VPD, which needs {bonds} address(es) per node, and "
                                     "half the VPC", "use a larger range such as 10.0.0.0/16")])
    subnets = (LingjunSubnet("hpn", f"{spec.name}-{zone}", zone, str(subnet)),)
    decisions.append(Decision("network", f"VPD {vpd} (subnet {subnet} in {zone}), VPC {vpc} (vSwitch {vswitch})", (
        f"network.vpc_cidr is split in two so the ranges cannot overlap on a node: the lower half is the Lingjun "
        f"network segment (eflo.Vpd), whose subnet gives each node's {bonds} bond(s) their HPN addresses"
        + ("" if lj.bonds else f" ({LINGJUN_BONDS_ASSUMED} reserved per node: the catalog gives no bond count)")
        + "; the upper half is a VPC whose vSwitch gives each node a VPC interface, the path to the OSS internal "
        "endpoint, the NAT gateway and SSH from admin_cidrs. Addresses are assigned at deploy time")))
    egress = spec.network.egress
    decisions.append(Decision("egress", egress, (
        "outbound-only internet through an enhanced NAT gateway and one EIP on the nodes' VPC interfaces (no public "
        "IP on any node, nothing inbound); that Lingjun nodes route the internet through their VPC interface is "
        "unverified" if egress == "nat" else
        "no internet: nodes reach only VPC-internal endpoints (OSS internal); use an image that already has the "
        "GPU driver")))
    network = Network(str(vpc), (VSwitch("compute", f"{spec.name}-{zone}", zone, str(vswitch)),),
                      tuple(spec.network.admin_cidrs), False, 1500, (), egress)
    return network, str(vpd), subnets


def _lingjun_nodes(spec: Spec, zone: str, fit: _Fit, decisions: list[Decision]) -> tuple[Node, ...]:
    decisions.append(Decision("node identity", "rank from hostname", (
        "Lingjun assigns each node's addresses from the subnets at deploy time, so no hostfile can be written in "
        "advance; the node group names node i '<name>-node-<i>' and node-init.sh reads the rank from the hostname. "
        "trainstack-launch uses rank 0's hostname as MASTER_ADDR unless MASTER_ADDR is set (that the hostnames "
        "resolve between nodes is unverified; otherwise export MASTER_ADDR=<rank 0's address>)")))
    return tuple(Node(rank=i, name=f"{spec.name}-node-{i:03d}" if fit.nodes < 1000 else f"{spec.name}-node-{i:04d}",
                      zone=zone, vswitch="compute", private_ip="", spot=False, deployment_set=None)
                 for i in range(fit.nodes))


def _lingjun(spec: Spec, lj: LingjunMachineType, zone: str, hpn_zone: str, vpd_cidr: str,
             subnets: tuple[LingjunSubnet, ...], best: _Scored, ckpt: Checkpoints, decisions: list[Decision],
             warnings: list[str]) -> Lingjun:
    """Billing, cluster type, credentials and the limits of Lingjun, as decisions and warnings."""
    nodes = best.fit.nodes
    decisions.append(Decision("lingjun cluster", f"eflo.Cluster type {LINGJUN_CLUSTER_TYPE}, one node group", (
        f"cluster_type {LINGJUN_CLUSTER_TYPE} (the basic Lingjun cluster) is the type the provider's acceptance test "
        "and docs create with a VPD subnet, a VPC vSwitch and a security group [TF-eflo-cluster, PU-EFLO]; "
        "AckEdgePro would add a managed ACK Edge control plane and ExclusiveBareCluster has no example in the "
        "provider. Nodes join through one eflo.NodeGroup, which sets the image, the SSH key pair and the bootstrap "
        "script (eflo.Node itself takes no key pair)")))
    if "PayAsYouGo" in lj.payment_types:
        payment, period = "PayAsYouGo", None
        decisions.append(Decision("billing", "PayAsYouGo", (
            f"Lingjun is sold subscription first, but the sources show {lj.name} pay-as-you-go too [{lj.source}]; "
            "a training run is finite and Pulumi can release PayAsYouGo nodes on destroy, whereas Subscription "
            "nodes are only removed from the Pulumi state, never destroyed")))
    else:
        payment = "Subscription"
        hours = (best.run_hours or 0.0) + (best.rework_hours or 0.0)
        period = max(1, math.ceil(hours / HOURS_PER_MONTH)) if best.run_hours is not None else 1
        prepaid = nodes * lj.price.cny_per_hour * period * HOURS_PER_MONTH
        decisions.append(Decision("billing", f"Subscription, {period} month(s)", (
            f"the sources show {lj.name} by subscription only [{lj.source}]; the period covers "
            + (f"the expected {hours:,.0f} h of training" if best.run_hours is not None else
               "one month (give model.tokens to size it to the run)")
            + ", renewal is manual")))
        warnings.append(f"Subscription nodes are prepaid: {nodes} x {lj.name} for {period} month(s) is about "
                        f"{prepaid:,.0f} CNY at the estimated rate, whatever the run's length")
        warnings.append("Subscription nodes are never destroyed by Pulumi: `pulumi destroy` or removing a node only "
                        "drops it from the state; release or refund it in the Lingjun console")
    warnings.append(f"Lingjun capacity is ordered, not on demand: confirm stock of {nodes} x {lj.name} in {zone} "
                    f"(HPN zone {hpn_zone}) with Alibaba Cloud before deploying; otherwise the order fails with "
                    "'Failure to check order before create instance'")
    if not lj.gpu_verified:
        warnings.append(f"the GPUs of {lj.name} are not documented: the plan assumes {lj.gpus} x {lj.gpu} "
                        "(see the catalog notes); confirm the configuration with Alibaba Cloud")
    decisions.append(Decision("image", str(spec.compute.image_id), (
        "a Lingjun image id from the spec (Lingjun node groups boot Lingjun images, not ECS images, and the provider "
        "has no data source to look one up); trainstack:imageId overrides it at deploy time")))
    if ckpt.enabled:
        decisions.append(Decision("node credentials", f"RAM user {spec.name}-checkpoints, no AccessKey", (
            "eflo.Node and eflo.NodeGroup take no RAM role in pulumi-alicloud 4.0.0, so the ECS way (a role through "
            "the metadata service) is not available; the same one-bucket policy is attached to a RAM user instead. "
            "trainstack creates no AccessKey for it, because a key created by Pulumi would be stored in its state: "
            "create one (console or `aliyun ram CreateAccessKey`) and install it on the nodes, or give them "
            "credentials through PAI")))
        warnings.append(f"Lingjun nodes get no OSS credentials from trainstack: create an AccessKey for the RAM user "
                        f"{spec.name}-checkpoints and install it on every node before training writes checkpoints")
    if "system_disk_gib" in spec.compute.model_fields_set:
        warnings.append("compute.system_disk_gib is ignored on Lingjun: eflo node groups take no system disk size in "
                        "pulumi-alicloud 4.0.0 (the image decides)")
    return Lingjun(vpd_cidr=vpd_cidr, subnets=subnets, hpn_zone=hpn_zone, cluster_type=LINGJUN_CLUSTER_TYPE,
                   machine_type=lj.name, payment_type=payment, period_months=period, bonds=lj.bonds,
                   node_group=f"{spec.name}-nodes", user_data_max_bytes=LINGJUN_USER_DATA_MAX)


# --------------------------------------------------------------------------------------------------- storage


def _storage(spec: Spec, catalog: Catalog, region: Region, zone: str, fit: _Fit, network: Network,
             decisions: list[Decision], warnings: list[str]) -> Storage:
    s = spec.storage
    ds = s.dataset
    kind = s.shared
    if spec.compute.platform == "lingjun":
        if kind not in ("auto", "none") or ds is not None:  # validate.check refuses these with hints
            raise PlanningError([Problem(("storage", "shared"), "Lingjun plans have no shared file system",
                                         "set storage.shared: none and remove storage.dataset")])
        why = ("Lingjun nodes cannot mount CPFS general-purpose file systems, pulumi-alicloud cannot create CPFS for "
               "Lingjun (bmcpfs: nas.FileSystem has no such type) and trainstack does not mount NAS on Lingjun; "
               "checkpoints still go to OSS. Attach CPFS for Lingjun through PAI if you need a shared file system "
               "[DOC-BMCPFS]" if kind == "auto" else "as the spec asks")
        _check_resolved_storage(spec, "none")
        decisions.append(Decision("shared storage", "none", why))
        return Storage("none", 0, "", 0, s.mount_path, zone, "compute", None)
    if kind == "auto":
        if ds is not None and ds.size >= 2**40:
            kind, why = "cpfs", f"the {human_bytes(ds.size)} dataset is TB-scale: CPFS serves it to all nodes in parallel"
        elif ds is not None:
            kind, why = "cpfs", "importing a dataset from OSS needs CPFS filesets and data flows"
        elif fit.nodes > 1:
            kind, why = "extreme-nas", "several nodes share code, logs and small data; no dataset to stream, so the " \
                                       "cheaper Extreme NAS serves"
        else:
            kind, why = "none", "one node and no dataset: the node's own disks suffice"
        if kind == "cpfs" and not region.cpfs:
            kind, why = "extreme-nas", f"CPFS is not offered in {region.id}; Extreme NAS instead (slower)"
            warnings.append(f"CPFS is not offered in {region.id}; large datasets will read slowly from Extreme NAS")
    else:
        why = "as the spec asks"
    _check_resolved_storage(spec, kind)
    if kind == "none":
        decisions.append(Decision("shared storage", "none", why))
        return Storage("none", 0, "", 0, s.mount_path, zone, "compute", None)
    need_mbps = CPFS_MBPS_PER_NODE * fit.nodes
    dataset = None
    if kind == "cpfs":
        if isinstance(s.capacity, int):
            cap = int(s.capacity / 2**30)
            how = "as the spec asks"
        else:
            cap = limits.cpfs_capacity_for_dataset(ds.size if ds else None)  # within the maximum: checked above
            how = f"dataset x1.3 for checkpoints staging and growth, at least {CPFS_MIN_GIB} GiB, in {CPFS_STEP_GIB} GiB steps"
        # The storage class is immutable and CPFS cannot shrink, so neither may depend on the node count beyond
        # "one node or several": changing `nodes` in a spec must never replace the file system with the dataset.
        storage_type = s.storage_class if s.storage_class != "auto" else (
            "advance_200" if fit.nodes > 1 else "advance_100")
        per_gib = 0.2 if storage_type == "advance_200" else 0.1
        ceiling = 45_000 if storage_type == "advance_200" else 30_000
        throughput = int(min(per_gib * cap, ceiling))
        if throughput < need_mbps:
            enough = min(limits.CPFS_LARGEST_GIB, math.ceil(need_mbps / per_gib / CPFS_STEP_GIB) * CPFS_STEP_GIB)
            warnings.append(f"CPFS gives {throughput:,} MB/s; {fit.nodes} nodes may want {need_mbps:,} MB/s "
                            f"(assumed {CPFS_MBPS_PER_NODE} MB/s per node): set storage.capacity: {enough}GiB "
                            "if data loading stalls (capacity can grow later, never shrink)")
        decisions.append(Decision("shared storage", f"CPFS {storage_type}, {cap} GiB, {throughput:,} MB/s",
                                  f"{why}; capacity: {how}; throughput {int(per_gib * 1000)} MB/s per TiB "
                                  f"[DOC-CPFS-SPEC]; mounted over NFS through a protocol service"))
        if ds is not None:
            flow = max((x for x in (600, 1200, 1500) if x < throughput), default=600)
            dataset = Dataset(ds.source, ds.size, ds.path, flow)
            decisions.append(Decision("dataset import", f"{ds.source} -> {ds.path}",
                                      f"a CPFS fileset plus an OSS data flow at {flow} MB/s (below the file system's "
                                      f"{throughput:,} MB/s) [TF-nas-df]"))
            warnings.append(f"before `trainstack up`, tag the dataset bucket {ds.source.split('/')[2]} with "
                            "cpfs-dataflow=true: a CPFS data flow cannot read a bucket without that tag (Alibaba "
                            "Cloud, 'Manage dataflows', 2025-11); trainstack does not own that bucket")
        return Storage("cpfs", cap, storage_type, throughput, s.mount_path, zone, "compute", dataset)
    # Extreme NAS
    cap = int(s.capacity / 2**30) if isinstance(s.capacity, int) else max(100, 1024)
    storage_type = s.storage_class if s.storage_class in ("standard", "advance") else "standard"
    throughput = _extreme_throughput(cap)
    decisions.append(Decision("shared storage", f"Extreme NAS {storage_type}, {cap} GiB", f"{why} [DOC-NAS-EXT]"))
    return Storage("extreme-nas", cap, storage_type, throughput, s.mount_path, zone, "compute", None)


def _check_resolved_storage(spec: Spec, kind: str) -> None:
    """The capacity and class rules of the file system actually chosen (``shared: auto`` resolves here).

    A capacity the plan derives (``capacity: auto``) obeys the same rule as one the spec gives; when it breaks it,
    the problem is the field it was derived from, ``storage.dataset.size``."""
    s = spec.storage
    problems = []
    if isinstance(s.capacity, int):
        gib = s.capacity / 2**30
        if kind == "none":
            problems.append(Problem(("storage", "capacity"), "a capacity is set but the plan needs no shared file "
                                    "system", "remove capacity, or set storage.shared: cpfs or extreme-nas"))
        elif kind in ("cpfs", "extreme-nas"):
            wrong = limits.capacity_problem(kind, gib)
            if wrong:
                what = "CPFS" if kind == "cpfs" else "Extreme NAS"
                problems.append(Problem(("storage", "capacity"), f"storage.shared: auto chose {what}; {wrong[0]}",
                                        wrong[1]))
            elif kind == "cpfs" and s.dataset is not None and s.dataset.size > s.capacity:
                fix = limits.accepted_capacity("cpfs", s.dataset.size / 2**30)
                problems.append(Problem(("storage", "capacity"), f"the {human_bytes(s.dataset.size)} dataset does not "
                                        f"fit in a CPFS capacity of {gib:.10g} GiB",
                                        f"use {fix}GiB" if fix * 2**30 >= s.dataset.size else
                                        f"import at most {limits.largest_cpfs_dataset_tib()}TiB"))
    elif kind == "cpfs" and s.dataset is not None:
        wrong = limits.dataset_capacity_problem(s.dataset.size)
        if wrong:
            problems.append(Problem(("storage", "dataset", "size"), *wrong))
    if kind == "cpfs" and s.storage_class in ("standard", "advance"):
        problems.append(Problem(("storage", "storage_class"), f"the plan uses CPFS, which takes advance_100 or "
                                f"advance_200, not {s.storage_class}"))
    if kind == "extreme-nas" and s.storage_class in ("advance_100", "advance_200"):
        problems.append(Problem(("storage", "storage_class"), f"the plan uses Extreme NAS, which takes standard or "
                                f"advance, not {s.storage_class}"))
    if problems:
        raise PlanningError(problems)


def _extreme_throughput(cap_gib: int) -> int:
    # bandwidth steps of Extreme NAS by capacity [DOC-NAS-EXT] (which edition the table describes is unverified)
    for limit, mbps in ((500, 150), (2048, 300), (8192, 600)):
        if cap_gib < limit:
            return mbps
    return 1200


# --------------------------------------------------------------------------------------------------- checkpoints & spot


def bucket_name(spec: Spec) -> str:
    """A deterministic, globally-unlikely-to-collide bucket name: ``<name>-ckpt-<6 hex of name+region+stack>``."""
    if spec.checkpoints.bucket:
        return spec.checkpoints.bucket
    suffix = hashlib.sha256(f"{spec.name}/{spec.region}/{spec.stack}".encode()).hexdigest()[:6]
    return f"{spec.name[:45]}-ckpt-{suffix}"


def _checkpoints(spec: Spec, catalog: Catalog, region: Region, fit: _Fit, arch: sizing.Architecture,
                 lora_rank: int | None, storage: Storage, decisions: list[Decision]) -> Checkpoints:
    k = spec.checkpoints
    endpoint = f"oss-{region.id}-internal.aliyuncs.com"
    if not k.enabled:
        decisions.append(Decision("checkpoints", "off", "the spec disables checkpoints"))
        return Checkpoints(False, "", k.prefix, 0, k.retention_days, k.transition_ia_days, k.abort_multipart_days,
                           endpoint, 0, 0.0, 0.0)
    node_gbps = fit.nodes * fit.itype.network_gbps
    # a node bandwidth of 0 means "not stated" (Lingjun types): the region's OSS limit is the only bound known
    write_gbps = min(region.oss_upload_gbps, node_gbps) if node_gbps > 0 else region.oss_upload_gbps
    lora_trainable = None
    if lora_rank is not None:
        lora_trainable = sizing.lora_trainable_parameters(arch, lora_rank) if hasattr(sizing, "lora_trainable_parameters") \
            else None
    _, spot_nodes = _spot_split(spec, fit.nodes)
    cm = sizing.checkpoint_plan(arch.parameters, spec.model.optimizer, spec.model.precision, write_gbps, fit.nodes,
                                NODE_MTBF_HOURS, spot_nodes > 0,
                                spec.spot.interruptions_per_node_day * (spot_nodes / fit.nodes if fit.nodes else 0),
                                lora_trainable)
    if isinstance(k.interval, int):
        interval = k.interval
        why = (f"as the spec asks (the Young/Daly optimum would be {human_seconds(cm.interval_seconds)}: write "
               f"{human_seconds(cm.write_seconds)}, cluster MTBF {cm.mtbf_hours:.1f} h)")
    else:
        interval = max(300, int(round(cm.interval_seconds / 60.0)) * 60)
        why = (f"Young/Daly sqrt(2 x write time x MTBF): a {human_bytes(cm.size_bytes)} checkpoint written at "
               f"{write_gbps:g} Gbit/s (OSS upload limit of {region.id} per account [DOC-OSS-LIM]) takes "
               f"{human_seconds(cm.write_seconds)}; the cluster's expected time between interruptions is "
               f"{cm.mtbf_hours:.1f} h (node MTBF {NODE_MTBF_HOURS:g} h assumed"
               + (f", {spec.spot.interruptions_per_node_day:g} spot reclaims per node-day assumed" if spot_nodes else "")
               + ")")
    decisions.append(Decision("checkpoint interval", human_seconds(interval), why))
    decisions.append(Decision("checkpoint bucket", bucket_name(spec),
                              f"private OSS bucket in {region.id}, versioned and encrypted; noncurrent versions expire "
                              f"after {k.retention_days} days; reached over the internal endpoint {endpoint}"))
    return Checkpoints(True, bucket_name(spec), k.prefix, interval, k.retention_days, k.transition_ia_days,
                       k.abort_multipart_days, endpoint, cm.size_bytes, round(cm.write_seconds, 3),
                       round(cm.mtbf_hours, 3))


def _spot(spec: Spec, fit: _Fit, ranks: Iterable[Node], decisions: list[Decision], warnings: list[str]) -> Spot:
    s = spec.spot
    ranks = tuple(ranks)
    on_demand = tuple(n.rank for n in ranks if not n.spot)
    spot = tuple(n.rank for n in ranks if n.spot)
    limit = None
    if s.enabled and s.strategy == "SpotWithPriceLimit":
        limit = round(fit.itype.price.cny_per_hour * s.max_price_ratio, 3)
    if s.enabled:
        decisions.append(Decision("spot", f"{len(spot)} spot, {len(on_demand)} on-demand",
                                  f"{s.strategy}" + (f" with a limit of {limit:g} CNY/h (price x {s.max_price_ratio:g}"
                                                     f"{', an estimated price' if fit.itype.price.estimated else ''})"
                                                     if limit else "") +
                                  f"; ranks {', '.join(map(str, on_demand)) or 'none'} stay on demand so the job's "
                                  f"rendezvous (rank 0) survives reclaims; a watcher on each spot node polls the "
                                  f"metadata service and asks training to checkpoint on the 5-minute notice"
                                  f" [DOC-SPOT-HANDLE]"))
        warnings.append(f"the spot price ({s.price_ratio:.0%} of list) and reclaim rate "
                        f"({s.interruptions_per_node_day:g}/node-day) are assumptions, not quotes: GPU spot prices "
                        "vary by zone and hour (unverified)")
        if not spot:
            warnings.append("spot is enabled but every node is in the on-demand base")
    return Spot(s.enabled, s.strategy if s.enabled else "NoSpot", limit, s.protection_hours, s.interruption,
                on_demand, spot, s.price_ratio, s.interruptions_per_node_day)


def _cost(spec: Spec, catalog: Catalog, best: _Scored, storage: Storage, ckpt: Checkpoints) -> Cost:
    t = best.fit.itype
    on_demand_nodes, spot_nodes = _spot_split(spec, best.fit.nodes)
    notes = [f"{t.name}: {t.price.cny_per_hour:,.2f} CNY/h "
             + ("ESTIMATE" if t.price.estimated else "list price")
             + f" ({t.price.region}, {t.price.date}) [{t.price.source}]"]
    shared = 0.0
    if storage.kind != "none":
        item = {"cpfs": f"cpfs-{storage.storage_type}", "extreme-nas": f"nas-extreme-{storage.storage_type}"}[storage.kind]
        sp = catalog.storage_price(item)
        if sp is not None:
            shared = sp.price_cny * storage.capacity_gib / HOURS_PER_MONTH
            notes.append(f"{item}: {sp.price_cny:g} {sp.unit} " + ("ESTIMATE" if sp.estimated else "list price")
                         + f" ({sp.region}, {sp.date}) [{sp.source}]")
        else:
            notes.append(f"{item}: no price in the catalog; not counted")
    obj = 0.0
    if ckpt.enabled:
        sp = catalog.storage_price("oss-standard")
        if sp is not None:
            # a few checkpoints kept: the current one plus noncurrent versions within retention (assume 3)
            per_unit = 10**9 if "/GB" in sp.unit else 2**30  # OSS is billed per GB (10^9 bytes)
            obj = sp.price_cny * ckpt.size_bytes * 3 / per_unit / HOURS_PER_MONTH
            notes.append(f"oss-standard: {sp.price_cny:g} {sp.unit} for ~3 checkpoints "
                         + ("ESTIMATE" if sp.estimated else "list price") + f" [{sp.source}]")
    if spot_nodes:
        notes.append(f"spot at {spec.spot.price_ratio:.0%} of list is an assumption (GPU spot prices unverified)")
    od = on_demand_nodes * t.price.cny_per_hour
    sp_h = spot_nodes * best.spot_per_hour
    total = od + sp_h + shared + obj
    run_total = None
    if best.run_hours is not None:
        run_total = total * (best.run_hours + (best.rework_hours or 0.0))
    return Cost("CNY", round(od, 2), round(sp_h, 2), round(shared, 2), round(obj, 2), round(total, 2),
                round(total * 24, 2), None if best.run_hours is None else round(best.run_hours, 2),
                None if best.rework_hours is None else round(best.rework_hours, 2),
                None if run_total is None else round(run_total, 2), tuple(notes))
