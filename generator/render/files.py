"""Stage 3, render: a Plan -> the files of a Pulumi stack folder, as text.

Pure and byte-stable: no clock, user name, host or absolute path reaches the output; maps are emitted in
sorted order and every file ends with a newline. Only :mod:`generator.render.stackdir` writes files.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from generator.catalog import runtime as node_runtime
from generator.plan import naming
from generator.plan.model import Plan
from generator.plan.stable_json import dumps
from generator.platforms.base import SLOTS, Capability
from generator.platforms.registry import parts_for, platform_for, template_dirs
from generator.present import diagram
from generator.render import describe, escape, userdata
from generator.render.escape import py_literal
from generator.render.templates import templates_dir
from generator.spec import limits

# A generated stack is a reviewed artifact, so its SDKs are pinned to the versions trainstack itself pins and tests
# with (pyproject.toml; tests/test_node_runtime.py keeps them in step). Without hashes: `pip install --require-hashes`
# needs every transitive dependency hashed, and grpcio, protobuf, pyyaml and debugpy ship one wheel per platform and
# Python version, so the file would carry hundreds of hashes for the operator's machine, which the renderer cannot know.
PULUMI_REQUIREMENT = "pulumi==3.260.0"
ALICLOUD_REQUIREMENT = "pulumi-alicloud==4.0.0"
MARKER = ".trainstack"  # folder inside every generated stack; render refuses to overwrite a folder without it


@functools.lru_cache(maxsize=1)
def _env() -> Any:
    """The templates' environment, which keeps their compiled code between processes (:mod:`generator.render.bytecode`;
    ``TRAINSTACK_TEMPLATE_BYTECODE=off`` compiles them in every process)."""
    import jinja2

    from generator.render import bytecode

    kept = bytecode.Cache(bytecode.folder(templates_dir(), Path(__file__))) if bytecode.enabled() else None
    env = jinja2.Environment(
        # the shared templates, then each platform's own (generator/platforms/<name>/templates/stack/...)
        loader=jinja2.FileSystemLoader([str(templates_dir()), *map(str, template_dirs())]),
        bytecode_cache=kept,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        finalize=escape.finalize,  # every printed string is escaped for its language, or inert, or refused
    )
    env.filters.update(escape.FILTERS)
    env.filters.update(describe.FILTERS)
    return env


def capabilities(plan: Plan) -> dict[str, bool]:
    """The platform's capabilities by name (``caps.NODES`` in a template): what the shared templates branch on."""
    platform = platform_for(plan)
    return {c.name: platform.has(c) for c in Capability}


def template_vars(plan: Plan, spec_path: str) -> dict[str, Any]:
    """Everything the templates need, computed here so templates stay free of logic."""
    c, n, s, k, sp = plan.compute, plan.network, plan.storage, plan.checkpoints, plan.spot
    tags = {"managed-by": "trainstack", "trainstack-project": plan.name, "trainstack-stack": plan.stack}
    tags.update(dict(plan.tags))
    master = c.ranks[0].private_ip if c.ranks else ""
    hostfile = "".join(f"{r.private_ip} slots={c.gpus_per_node}\n" for r in c.ranks)
    nodes = [
        {
            "rank": r.rank,
            "name": r.name,
            "ip": r.private_ip,
            "spot": r.spot,
            "deployment_set": r.deployment_set or "",
        }
        for r in c.ranks
    ]
    platform = platform_for(plan)
    return {
        "plan": plan,
        "program_parts": platform.program_parts,  # the platform's parts of __main__.py, in order (constants)
        # what the shared templates ask of the platform: its capabilities by name, and its part for each slot ("")
        "caps": capabilities(plan),
        "slots": {
            slot: f"stack/slots/{platform.template_parts[slot]}.j2" if slot in platform.template_parts else ""
            for slot in SLOTS
        },
        "spec_path": spec_path,
        "tags": tags,
        "nodes": nodes,
        "hostfile": escape.quoted_heredoc_body(hostfile, "HOSTFILE"),
        "master_addr": master,
        "launch_env": launch_env(plan),
        "node_rank_digits": naming.NODE_RANK_DIGITS,  # the hostfile printf of Lingjun nodes
        "facts": cluster_facts(plan),
        "diagram": escape.markdown_fence_body(diagram.flowchart(plan)),  # labels escaped for Mermaid
        "facts_inline": escape.quoted_heredoc_body(
            json.dumps(cluster_facts(plan), sort_keys=True, indent=1) + "\n", "FACTS"
        ),
        "node_mtu": n.mtu,
        "bucket": k.bucket,
        "dataset_bucket": (s.dataset.source.split("/")[2] if s.dataset else ""),
        "interval_seconds": k.interval_seconds,
        "spot_enabled": sp.enabled,
        "requirements": [escape.Escaped(r) for r in (PULUMI_REQUIREMENT, ALICLOUD_REQUIREMENT)],  # constants
        "weights_script": escape.quoted_heredoc_body(weights_script(plan), "WEIGHTS") if plan.weights else "",
        "user_data_max": userdata.limit(plan),
        "gzip_level": userdata.GZIP_LEVEL,
        "runtime": {key: escape.Escaped(value) for key, value in NODE_RUNTIME.items()},  # constants
        # catalog data (node_wheels.csv: names, versions and sha256 checked by its loader), in a quoted heredoc
        "torch_requirements": escape.quoted_heredoc_body(node_runtime.hashed_requirements(), "REQUIREMENTS"),
        "erdma": node_runtime.downloads()["erdma-installer"],  # its url and sha256 are checked by the loader
        "registry_login": registry_login(plan),
        **parts_for(plan).template_vars(
            plan
        ),  # the platform's own values (its part of the plan, PAI-DLC's datasets)
    }


def registry_login(plan: Plan) -> dict[str, Any]:
    """compute.container_registry_instance: what the node-init.sh login and the node role's pull policy name
    (empty without one): the instance, the VPC registry host, the repository's namespace and name."""
    c = plan.compute
    repo = limits.container_repository(c.container_image) if c.container_registry_instance else None
    if repo is None:
        return {}
    return {
        "instance": c.container_registry_instance,
        "registry": repo[0],
        "namespace": repo[1],
        "repository": repo[2],
    }


def registry_login_script() -> str:
    """``/usr/local/bin/trainstack-registry-login`` (static text; ECS nodes get it in the cluster facts)."""
    return str(_env().get_template("stack/registry_login.py.j2").render())


# What node-init.sh installs when the image has no driver or no PyTorch (docs/bootstrap.md, "The runtime"). The
# driver is NVIDIA's 550.163.01 (R550 production branch, 2025-04-17; NVIDIA's redistrib_550.163.01.json), pinned to
# the exact version, which supports CUDA 12.4 (CUDA 12.4 release notes: minimum driver 550.54); torch 2.6.0's
# default Linux wheel on PyPI is built for CUDA 12.4 (pytorch.org, "Previous PyTorch versions"). Its wheels and
# their sha256 are catalog data (catalog/data/v1/node_wheels.csv, pip --require-hashes). The index is Alibaba's PyPI
# mirror on the VPC-internal mirror host, over HTTPS. ASSUMPTION (search of 2026-12-02): no Alibaba page was found
# that documents https://mirrors.cloud.aliyuncs.com/pypi/simple/ or says that host answers HTTPS. Alibaba's mirror
# help page https://developer.aliyun.com/mirror/pypi documents the public https://mirrors.aliyun.com/pypi/simple/
# (not readable from where this was written); ECS logs in public repositories show the images' pip.conf using
# http://mirrors.cloud.aliyuncs.com/pypi/simple/ with trusted-host. The hashes make the transport irrelevant to
# what is installed; if HTTPS is not served there, the step fails naming the index (docs/bootstrap.md).
NODE_RUNTIME = {
    "driver_branch": "550",
    "driver_version": "550.163.01",
    "cuda": "12.4",
    "torch": "2.6.0",
    "pypi_index": "https://mirrors.cloud.aliyuncs.com/pypi/simple/",
}


WEIGHTS_MIN_WAIT_SECONDS = 2 * 3600
WEIGHTS_ASSUMED_BYTES_PER_SECOND = 100 * 10**6  # ASSUMPTION: one node downloads at 100 MB/s or faster


def weights_timeout(plan: Plan) -> int:
    """How long a node waits for another node to fetch the weights: three times the download at an assumed
    100 MB/s, at least two hours (``TRAINSTACK_WEIGHTS_TIMEOUT`` overrides it on a node)."""
    size = plan.weights.size_bytes if plan.weights else 0
    return max(WEIGHTS_MIN_WAIT_SECONDS, 3 * size // WEIGHTS_ASSUMED_BYTES_PER_SECOND)


def weights_script(plan: Plan) -> str:
    """``/usr/local/bin/trainstack-weights`` (templates/stack/weights.sh.j2); "" without base weights. ECS nodes get
    it from the cluster facts, Lingjun nodes from node-init.sh, PAI-DLC jobs from ``weights.sh`` in the stack folder,
    which the program publishes in the checkpoint bucket (ModelScope weights only: DLC mounts OSS weights)."""
    if plan.weights is None:
        return ""
    node_role = platform_for(plan).has(Capability.NODE_RAM_ROLE)
    modelscope = node_runtime.modelscope_wheels()
    return (
        _env()
        .get_template("stack/weights.sh.j2")
        .render(
            plan=plan,
            weights_timeout=weights_timeout(plan),
            caps=capabilities(plan),
            # catalog data (modelscope_wheels.csv: names, versions and sha256 checked by its loader), in a quoted heredoc
            modelscope_requirements=escape.quoted_heredoc_body(
                node_runtime.modelscope_requirements(), "MODELSCOPE_REQUIREMENTS"
            ),
            modelscope_version=escape.Escaped(
                next(w.version for w in modelscope if w.package == "modelscope")
            ),
            # the ECS node role (identity_ecs.py.j2); Lingjun nodes use the RAM user's key, DLC fetches nothing from OSS
            weights_role=f"{plan.name}-node" if node_role else "",
        )
    )


RDZV_PORT = 29500  # rank 0 hosts torchrun's c10d rendezvous here
MAX_RESTARTS = 100  # torchrun --max-restarts: every reclaim, failure or join counts as one restart


def cluster_facts(plan: Plan) -> dict[str, Any]:
    """What the whole cluster shares, published as one JSON object in the checkpoint bucket
    (``plan.checkpoints.facts_key``) and read by every node at boot and at each launch. The shared file system's
    address is filled in by the program (an output at deploy time). No secrets: the object is private anyway."""
    c, s, k = plan.compute, plan.storage, plan.checkpoints
    return {
        "schema": 1,
        "name": plan.name,
        "nodes": c.nodes,
        "gpus_per_node": c.gpus_per_node,
        "world_size": c.total_gpus,
        "min_nodes": c.min_nodes,
        "max_nodes": c.nodes,
        "max_restarts": MAX_RESTARTS,
        "master_addr": c.ranks[0].private_ip if c.ranks else "127.0.0.1",
        "master_port": RDZV_PORT,
        "members": [{"rank": r.rank, "name": r.name, "ip": r.private_ip} for r in c.ranks],
        "shared_fs": {"kind": s.kind, "address": "", "mount_path": s.mount_path if s.kind != "none" else ""},
        "checkpoint": {
            "url": f"oss://{k.bucket}/{k.prefix}" if k.enabled else "",
            "dir": k.directory,
            "endpoint": k.internal_endpoint if k.enabled else "",
            "interval_seconds": k.interval_seconds,
            # checkpoints.milestones: the window rank 0's trainstack-ckpt-sync tags milestones by
            **({"milestone_seconds": k.milestone_seconds} if k.milestone_seconds else {}),
            # checkpoints.milestones.at_steps: the steps whose checkpoints it tags milestones
            **({"milestone_steps": list(k.milestone_steps)} if k.milestone_steps else {}),
        },
        "parallel": {"tp": c.tp, "pp": c.pp, "dp": c.dp, "zero_stage": c.zero_stage},
        "nccl_env": dict(plan.network.nccl_env),
        # the base weights: where they land and the script that fetches them once (only with model.weights)
        **(
            {
                "weights": {
                    "dir": plan.weights.landing_path,
                    "source": plan.weights.uri,
                    "script": weights_script(plan),
                }
            }
            if plan.weights
            else {}
        ),
        # the hash-pinned requirements of the PyTorch node-init.sh installs when the image has none (catalog
        # node_wheels.csv): here, not in the user data, which has 16 KB (Lingjun nodes, without facts, get them inline)
        **({} if c.container_image else {"torch_requirements": node_runtime.hashed_requirements()}),
        # rank 0's checkpoint copy (templates/stack/ckpt_sync.py.j2), for the same reason
        **({"ckpt_sync": ckpt_sync_script()} if k.enabled and (k.directory or k.tags_milestones) else {}),
        # the private registry's login helper (templates/stack/registry_login.py.j2), likewise
        **({"registry_login": registry_login_script()} if registry_login(plan) else {}),
    }


def ckpt_sync_script() -> str:
    """``/usr/local/bin/trainstack-ckpt-sync`` (static text; ECS nodes get it in the cluster facts)."""
    return str(_env().get_template("stack/ckpt_sync.py.j2").render())


def launch_env(plan: Plan) -> list[tuple[str, str]]:
    """The environment every node's launcher sees (written to /etc/trainstack/launch.env)."""
    c = plan.compute
    env = [
        ("TRAINSTACK_NAME", plan.name),
        ("MASTER_ADDR", c.ranks[0].private_ip if c.ranks else "127.0.0.1"),
        ("MASTER_PORT", str(RDZV_PORT)),
        ("NNODES", str(c.nodes)),
        ("MIN_NODES", str(c.min_nodes)),
        ("MAX_NODES", str(c.nodes)),
        ("MAX_RESTARTS", str(MAX_RESTARTS)),
        ("GPUS_PER_NODE", str(c.gpus_per_node)),
        ("WORLD_SIZE", str(c.total_gpus)),
        ("TP_SIZE", str(c.tp)),
        ("PP_SIZE", str(c.pp)),
        ("DP_SIZE", str(c.dp)),
        ("ZERO_STAGE", str(c.zero_stage)),
        # a MoE model's expert-parallel degree and interleaved stages, only when the plan has them
        *([("EP_SIZE", str(c.ep))] if plan.model.moe is not None else []),
        *([("VPP_SIZE", str(c.vpp))] if c.vpp > 1 else []),
        *([("CP_SIZE", str(c.cp))] if c.cp > 1 else []),
        *([("OFFLOAD", plan.sizing.offload)] if plan.sizing.offload != "none" else []),
        ("SHARED_DIR", plan.storage.mount_path if plan.storage.kind != "none" else "/mnt/local"),
        (
            "CHECKPOINT_URL",
            f"oss://{plan.checkpoints.bucket}/{plan.checkpoints.prefix}" if plan.checkpoints.enabled else "",
        ),
        ("CHECKPOINT_ENDPOINT", plan.checkpoints.internal_endpoint if plan.checkpoints.enabled else ""),
        ("CHECKPOINT_INTERVAL_SECONDS", str(plan.checkpoints.interval_seconds)),
        # where the job writes checkpoints (the shared file system when the plan puts them there, else OSS) and
        # the durable OSS copy (docs/operations.md)
        ("TRAINSTACK_CHECKPOINT_DIR", plan.checkpoints.directory),
        (
            "TRAINSTACK_CHECKPOINT_OSS",
            f"oss://{plan.checkpoints.bucket}/{plan.checkpoints.prefix}" if plan.checkpoints.enabled else "",
        ),
        ("TRAINSTACK_PREEMPT_FILE", "/run/trainstack/preempt"),
    ]
    if plan.weights:
        env.append(("TRAINSTACK_WEIGHTS_DIR", plan.weights.landing_path))
    env.extend(plan.network.nccl_env)
    return env


def render(plan: Plan, spec_path: str = "") -> dict[str, str]:
    """Plan -> {relative path: text}; ``spec_path`` is recorded as given (keep it relative)."""
    spec_path = spec_path.replace(os.sep, "/")
    env = _env()
    ctx = template_vars(plan, spec_path)
    files = {
        "Pulumi.yaml": env.get_template("stack/Pulumi.yaml.j2").render(ctx),
        f"Pulumi.{plan.stack}.yaml": env.get_template("stack/Pulumi.stack.yaml.j2").render(ctx),
        "__main__.py": env.get_template("stack/__main__.py.j2").render(ctx),
        "requirements.txt": env.get_template("stack/requirements.txt.j2").render(ctx),
        "README.md": env.get_template("stack/README.md.j2").render(ctx),
        "plan.json": plan.to_json(),
        f"{MARKER}/DO_NOT_EDIT": env.get_template("stack/DO_NOT_EDIT.j2").render(ctx),
        ".gitignore": "venv/\n__pycache__/\n*.pyc\n.trainstack/state/\n.trainstack/pending/\n.trainstack/quarantine.json\n",
    }
    if platform_for(plan).has(
        Capability.NODE_BOOTSTRAP
    ):  # PAI-DLC boots its own nodes: no cloud-init bootstrap
        files["node-init.sh"] = env.get_template("stack/node-init.sh.j2").render(ctx)
    made_by = {"weights_script": weights_script}
    for name, what in parts_for(plan).stack_files(plan).items():  # the platform's own (PAI-DLC's weights.sh)
        files[name] = made_by[what](plan)
    for name, text in files.items():
        if not text.endswith("\n"):
            files[name] = text + "\n"
    if "node-init.sh" in files:  # a bootstrap over the user-data limit is refused before any write
        userdata.check(plan, files["node-init.sh"])
    return dict(sorted(files.items()))


__all__ = ["MARKER", "cluster_facts", "dumps", "py_literal", "render", "template_vars", "templates_dir"]
