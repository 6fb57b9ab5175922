"""``trainstack check``: the health gate run through Cloud Assistant on every node before a job.

The node side is ``scripts/check.sh`` (sent as command content, with ``scripts/nccl_allreduce.py`` base64 inside it):
bootstrap markers, GPUs and driver (``nvidia-smi``), XID errors in the kernel log, DCGM diagnostics (``dcgmi diag
-r 1`` quick, ``-r 3`` full), the fabric manager on NVSwitch types, eRDMA links ACTIVE, and at level ``full`` an NCCL
all-reduce inside each node and across all of them. Each check prints a JSON line; this module turns the lines of
every node into verdicts:

* an XID is classified by NVIDIA's XID catalog (https://docs.nvidia.com/deploy/xid-errors/index.html): hardware
  XIDs (48 double-bit ECC, 63/64 row remapping, 74 NVLink, 79 fallen off the bus, 92/94/95 ECC, 119/120 GSP) ask
  for a redeploy, application XIDs (13, 31, 43, 45: a program's fault) do not fail the node, any other XID fails it
  as a software fault (a reboot first);
* the bus bandwidth inside a node must reach its floor from ``busbw.csv`` beside this module (each row with its
  source; ``floor_kind`` says what the floor rests on): ``floor_factor`` x the published nccl-tests all_reduce
  figure for a ``measured`` row (A100: 80% of the 230 GB/s published for 8xA100 SXM4), ``floor_factor`` x the
  link's one-way bandwidth for a ``threshold`` row (the other families: no published figure was found, searched
  2026-12-02); across nodes, half the eRDMA line rate of the catalog (``erdma_gbps``); NCCL on plain sockets (``NET/Socket``) where the plan has RDMA fails the node;
* a check that could not run (``ok: null``: DCGM or PyTorch not installed) is reported, never counted as passed.
"""

from __future__ import annotations

import base64
import csv
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from generator.live.jobs.cluster import Cluster, Node
from generator.live.jobs.request import ApiRequest, _assign, run_command_requests, script

LEVELS = ("quick", "full")
HARDWARE_XIDS = frozenset({48, 63, 64, 74, 79, 92, 94, 95, 119, 120})
APPLICATION_XIDS = frozenset({13, 31, 43, 45})
NVSWITCH_GPUS = ("A100", "H20", "H100", "H800", "B")  # 8-GPU SXM boards of these have NVSwitch
INTER_FLOOR = 0.5
PREFIX = "TRAINSTACK-CHECK "
_ENV_KEY = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")


@dataclass(frozen=True, slots=True)
class Expectation:
    gpus: int
    nvswitch: bool
    rdma: str
    eri: int
    intra_floor_gbs: float | None
    inter_floor_gbs: float | None
    intra_source: str = ""
    inter_source: str = ""
    # "measured" (a published nccl-tests figure, cited in busbw.csv) or "threshold" (a fraction of the link)
    intra_kind: str = "threshold"
    inter_kind: str = "threshold"


def _busbw_rows() -> dict[str, dict[str, str]]:
    text = resources.files("generator.live.jobs").joinpath("busbw.csv").read_text(encoding="utf-8")
    return {r["gpu"]: r for r in csv.DictReader(text.splitlines())}


def expectation(cluster: Cluster, catalog: Any = None) -> Expectation:
    """What a healthy node of the cluster's instance type shows, from the catalog and ``busbw.csv``."""
    if catalog is None:
        from generator.catalog.load import load_catalog

        catalog = load_catalog()
    t = next((i for i in catalog.instance_types if i.name == cluster.instance_type), None)
    gpu = t.gpu if t is not None else ""
    gpus = cluster.gpus_per_node or (t.gpus if t is not None else 0)
    row = _busbw_rows().get(gpu)
    intra = None
    if (
        row and gpus > 1
    ):  # a measured row's floor is a fraction of the published figure, a threshold's of the link
        base = row["measured_busbw_gbs"] if row.get("floor_kind") == "measured" else row["link_gbs"]
        intra = float(base) * float(row["floor_factor"])
    inter = None
    if t is not None and cluster.rdma == "erdma" and t.erdma_gbps:
        inter = t.erdma_gbps / 8.0 * INTER_FLOOR
    nvswitch = gpus == 8 and row is not None and row["link"] == "nvlink" and gpu.startswith(NVSWITCH_GPUS)
    return Expectation(
        gpus=gpus,
        nvswitch=nvswitch,
        rdma=cluster.rdma,
        eri=max(1, t.eri_count if t else 1),
        intra_floor_gbs=intra,
        inter_floor_gbs=inter,
        intra_source=(row["measured_source"] if row.get("floor_kind") == "measured" else row["source"])
        if row
        else "",
        intra_kind=(row.get("floor_kind") or "threshold") if row else "threshold",
        inter_source=f"catalog instance_types.csv erdma_gbps ({t.source})" if inter and t else "",
    )


def check_script(
    cluster: Cluster, nodes: Sequence[Node], level: str, check_id: str, exp: Expectation, only: str = ""
) -> str:
    """The check script; ``only="nccl-inter"`` runs the cross-node all-reduce alone (on ``nodes``, a subset)."""
    if level not in LEVELS:
        raise ValueError(f"--level {level}: give quick or full")
    nccl = base64.b64encode(script("nccl_allreduce.py").encode()).decode("ascii")
    head = [
        "#!/bin/bash",
        f"# trainstack check {check_id} ({level}) of stack {cluster.stack} ({cluster.name})",
        _assign("TRAINSTACK_CHECK_ID", check_id),
        _assign("TRAINSTACK_CHECK_LEVEL", level),
        _assign("TRAINSTACK_CHECK_GPUS", str(exp.gpus)),
        _assign("TRAINSTACK_CHECK_NVSWITCH", "true" if exp.nvswitch else "false"),
        _assign("TRAINSTACK_CHECK_RDMA", exp.rdma),
        _assign("TRAINSTACK_CHECK_ERI", str(exp.eri)),
        _assign("TRAINSTACK_CHECK_NNODES", str(len(nodes))),
        _assign("TRAINSTACK_CHECK_MASTER_ADDR", nodes[0].private_ip),
        _assign("TRAINSTACK_CHECK_NCCL_PY", nccl),
    ]
    if only:
        head.append(_assign("TRAINSTACK_CHECK_ONLY", only))
    for key, value in cluster.nccl_env:  # the NCCL settings the plan gives training (network.nccl_env)
        if not _ENV_KEY.fullmatch(key):
            raise ValueError(f"NCCL setting {key!r} is not an environment variable name")
        head.append("export " + _assign(key, value))
    return "\n".join(head) + "\n" + script("check.sh")


def check_requests(
    cluster: Cluster, nodes: Sequence[Node], level: str, check_id: str, exp: Expectation
) -> list[ApiRequest]:
    return run_command_requests(
        cluster,
        nodes,
        check_id,
        check_script(cluster, nodes, level, check_id, exp),
        kind="check",
        timeout_seconds=600 if level == "quick" else 3600,
        description=f"trainstack check --level {level}",
    )


def inter_requests(
    cluster: Cluster, groups: Sequence[Sequence[Node]], check_id: str, exp: Expectation
) -> list[list[ApiRequest]]:
    """One round of the bisection: per group, the RunCommand(s) of the cross-node all-reduce alone, with the group's
    first node as its rendezvous and its own check id (so its rendezvous id is its own)."""
    out = []
    for i, group in enumerate(groups):
        sub_id = f"{check_id[:54].rstrip('-')}-g{i}"
        out.append(
            run_command_requests(
                cluster,
                group,
                sub_id,
                check_script(cluster, group, "full", sub_id, exp, only="nccl-inter"),
                kind="check",
                timeout_seconds=1200,
                description=f"trainstack check: cross-node all-reduce on {len(group)} node(s) (bisection)",
            )
        )
    return out


def inter_passed(records: Iterable[Mapping[str, Any] | None], exp: Expectation) -> bool:
    """Whether every node of a group reports a cross-node all-reduce that passes (bandwidth floor, no socket
    fallback where RDMA was planned)."""
    for record in records:
        items = [
            i for i in parse_lines(str((record or {}).get("Output") or "")) if i["check"] == "nccl-inter"
        ]
        if not items or _judge(items[-1], exp)[0].ok is not True:
            return False
    return True


def apply_bisection(node_reports: Sequence[NodeReport], found: Any) -> None:
    """Rewrite each node's ``nccl-inter`` finding by what the bisection (:class:`~generator.live.jobs.bisect.
    Bisection`) showed: a bad node keeps it failed and names its healthy partner, a healthy one passes."""
    unresolved = {r: g for g in found.unresolved for r in g}
    for rep in node_reports:
        for i, f in enumerate(rep.findings):
            if f.check != "nccl-inter" or f.ok is not False:
                continue
            if rep.rank in found.bad:
                partner = found.partner.get(rep.rank)
                rep.findings[i] = Finding(
                    f.check,
                    False,
                    f"the cross-node all-reduce fails with this node (bisection: also with healthy rank {partner}); "
                    f"first run: {f.detail}",
                )
            elif rep.rank in found.good:
                rep.findings[i] = Finding(
                    f.check, True, "passed once the bad node(s) were left out (bisection)"
                )
            elif rep.rank in unresolved:
                ranks = ", ".join(map(str, unresolved[rep.rank]))
                rep.findings[i] = Finding(
                    f.check,
                    False,
                    f"{f.detail}; the bisection could not narrow it below ranks {ranks} (fails only together: "
                    "a switch, the fabric or the NCCL settings)",
                )


@dataclass(frozen=True, slots=True)
class Finding:
    check: str
    ok: bool | None
    detail: str


@dataclass
class NodeReport:
    rank: int
    instance_id: str
    findings: list[Finding] = field(default_factory=list)
    hardware_xids: tuple[int, ...] = ()

    @property
    def failed(self) -> list[Finding]:
        return [f for f in self.findings if f.ok is False]

    @property
    def healthy(self) -> bool:
        return not self.failed

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "instance_id": self.instance_id,
            "healthy": self.healthy,
            "failed": [f.check for f in self.failed],
            "hardware_xids": list(self.hardware_xids),
            "checks": [{"check": f.check, "ok": f.ok, "detail": f.detail} for f in self.findings],
        }


def parse_lines(output: str) -> list[dict[str, Any]]:
    out = []
    for line in output.splitlines():
        if line.startswith(PREFIX):
            try:
                item = json.loads(line[len(PREFIX) :])
            except ValueError:
                continue
            if isinstance(item, dict) and item.get("check"):
                out.append(item)
    return out


def classify_xids(xids: Iterable[int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(hardware, application, other) XIDs."""
    xs = sorted(set(xids))
    return (
        tuple(x for x in xs if x in HARDWARE_XIDS),
        tuple(x for x in xs if x in APPLICATION_XIDS),
        tuple(x for x in xs if x not in HARDWARE_XIDS and x not in APPLICATION_XIDS),
    )


def _judge(item: Mapping[str, Any], exp: Expectation) -> tuple[Finding, tuple[int, ...]]:
    name = str(item["check"])
    ok = item.get("ok")
    detail = str(item.get("detail") or "")
    if name == "xid":
        values = item.get("value") or []
        hw, app, other = classify_xids(int(v) for v in values if isinstance(v, int))
        if not values:
            return Finding(name, True, detail), ()
        parts = []
        if hw:
            parts.append(f"hardware XID {', '.join(map(str, hw))} (redeploy)")
        if other:
            parts.append(f"XID {', '.join(map(str, other))} (software or driver: reboot)")
        if app:
            parts.append(f"application XID {', '.join(map(str, app))} (the program's fault, not the node's)")
        return Finding(name, not (hw or other), "; ".join(parts)), hw
    if name in ("nccl-intra", "nccl-inter") and ok is True:
        value = float(item.get("value") or 0.0)
        floor = exp.intra_floor_gbs if name == "nccl-intra" else exp.inter_floor_gbs
        if name == "nccl-inter" and exp.rdma and item.get("net") == "socket":
            return Finding(
                name,
                False,
                f"NCCL fell back to plain TCP sockets (NET/Socket) where the plan has "
                f"{exp.rdma}: {value:.1f} GB/s",
            ), ()
        if floor is not None and value < floor:
            return Finding(
                name, False, f"bus bandwidth {value:.1f} GB/s, below the expected {floor:.1f} GB/s"
            ), ()
        expected = (
            f", expected at least {floor:.1f} GB/s"
            if floor is not None
            else ", no expectation in the catalog"
        )
        return Finding(name, True, f"bus bandwidth {value:.1f} GB/s{expected}"), ()
    return Finding(name, ok if isinstance(ok, bool) else None, detail), ()


def node_report(node: Node, record: Mapping[str, Any] | None, exp: Expectation) -> NodeReport:
    """The verdicts of one node from its DescribeInvocationResults record (None: Cloud Assistant has none)."""
    report = NodeReport(node.rank, node.instance_id)
    if record is None:
        report.findings.append(Finding("cloud-assistant", False, "no result: the node did not run the check"))
        return report
    status = str(record.get("InvokeRecordStatus") or "")
    items = parse_lines(str(record.get("Output") or ""))
    if status not in ("Finished", "Success") and not items:
        why = record.get("ErrorInfo") or record.get("ErrorCode") or status or "unknown"
        report.findings.append(Finding("cloud-assistant", False, f"the check did not run: {why}"))
        return report
    hw: tuple[int, ...] = ()
    for item in items:
        finding, xids = _judge(item, exp)
        report.findings.append(finding)
        hw = hw or xids
    report.hardware_xids = hw
    wanted = {"bootstrap", "gpus", "xid", "dcgm"}
    missing = wanted - {f.check for f in report.findings}
    for name in sorted(missing):
        report.findings.append(Finding(name, False, f"no answer (the check stopped early, status {status})"))
    return report


def reports(
    nodes: Sequence[Node], records: Mapping[str, Mapping[str, Any]], exp: Expectation
) -> list[NodeReport]:
    return [node_report(n, records.get(n.instance_id), exp) for n in nodes]


def summary_json(
    cluster: Cluster, level: str, check_id: str, node_reports: Sequence[NodeReport], exp: Expectation
) -> dict[str, Any]:
    return {
        "check": check_id,
        "level": level,
        "stack": cluster.stack,
        "project": cluster.name,
        "instance_type": cluster.instance_type,
        "healthy": all(r.healthy for r in node_reports),
        "failed_ranks": [r.rank for r in node_reports if not r.healthy],
        "expected": {
            "gpus": exp.gpus,
            "nvswitch": exp.nvswitch,
            "rdma": exp.rdma,
            "nccl_intra_min_gbs": exp.intra_floor_gbs,
            "nccl_inter_min_gbs": exp.inter_floor_gbs,
            "nccl_intra_source": exp.intra_source,
            "nccl_inter_source": exp.inter_source,
            "nccl_intra_floor_kind": exp.intra_kind,
            "nccl_inter_floor_kind": exp.inter_kind,
        },
        "nodes": [r.to_json() for r in node_reports],
    }


def update_quarantine(
    data: dict[str, Any], node_reports: Sequence[NodeReport], check_id: str
) -> dict[str, Any]:
    """A failed node enters the quarantine (with its failed checks); a node that passed leaves it."""
    nodes = dict(data.get("nodes") or {})
    for r in node_reports:
        if r.healthy:
            nodes.pop(str(r.rank), None)
        else:
            nodes[str(r.rank)] = {
                "instance_id": r.instance_id,
                "check": check_id,
                "failed": [f.check for f in r.failed],
                "details": [f"{f.check}: {f.detail}" for f in r.failed],
                "hardware_xids": list(r.hardware_xids),
            }
    return {**data, "nodes": nodes}
