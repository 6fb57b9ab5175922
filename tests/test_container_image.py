"""compute.container_image (issue #20): an Alibaba Cloud Container Registry image pinned by digest. The spec refuses
anything else naming the field and its line; the plan pulls through the registry's VPC endpoint and refuses a
registry of another region and, on ECS, the default node image (no Docker); PAI-DLC takes it as the job's image;
Lingjun nodes run it like ECS nodes. compute.container_registry_instance (a private Enterprise Edition repository)
gives the node role a policy that can log in and pull that one repository, and is refused without an Enterprise
Edition image or off ECS. The boot path is tests/boot/test_boot_container.py."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from generator import api
from generator.errors import SpecErrors
from generator.render import files as render_files

DIGEST = "a" * 64
IMAGE = f"registry.cn-wulanchabu.aliyuncs.com/ml/pytorch:2.6.0@sha256:{DIGEST}"
EE_IMAGE = f"acme-registry.cn-wulanchabu.cr.aliyuncs.com/ml/pytorch:2.6.0@sha256:{DIGEST}"
INSTANCE = "cri-kmsiwlxxdcvaduwb"
LJ_IMAGE = "i190982651690986913088"


def _spec(tmp_path: Path, compute: str, region: str = "cn-wulanchabu", extra: str = "") -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(f"name: ctr\nregion: {region}\nmodel: {{preset: llama-2-7b, tokens: 2B}}\ncompute:\n"
                    + textwrap.indent(compute, "  ") + "\n" + extra)
    return path


@pytest.mark.parametrize("ref", [
    "docker.io/library/pytorch@sha256:" + DIGEST,                   # not ACR
    "registry.cn-wulanchabu.aliyuncs.com/ml/pytorch:2.6.0",          # a tag moves: no digest
    "registry.cn-wulanchabu.aliyuncs.com/ml/pytorch@sha256:abc",     # not a sha256
    "registry.cn-wulanchabu.aliyuncs.com/pytorch@sha256:" + DIGEST,  # no namespace
    "evil.aliyuncs.com.example.org/ml/x@sha256:" + DIGEST,
    "registry.cn-wulanchabu.aliyuncs.com/ml/x@sha256:" + DIGEST + "\n; rm -rf /",
])
def test_anything_but_an_acr_image_pinned_by_digest_is_refused_naming_the_line(tmp_path: Path, ref: str) -> None:
    spec = _spec(tmp_path, f"image_id: m-x\ncontainer_image: {json.dumps(ref)}")
    out = subprocess.run([sys.executable, "-m", "generator.cli", "validate", str(spec)], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 2 and "compute.container_image" in out.stderr + out.stdout
    assert f"{spec}:6:" in out.stderr + out.stdout  # line 6: compute.container_image


def test_the_nodes_pull_through_the_vpc_endpoint(tmp_path: Path) -> None:
    plan = api.plan(_spec(tmp_path, f"image_id: m-x\ncontainer_image: {IMAGE}"))
    assert plan.compute.container_image == f"registry-vpc.cn-wulanchabu.aliyuncs.com/ml/pytorch:2.6.0@sha256:{DIGEST}"
    assert plan.to_dict()["compute"]["container_image"] == plan.compute.container_image
    ent = api.plan(_spec(tmp_path, "image_id: m-x\ncontainer_image: "
                         f"acme-registry.cn-wulanchabu.cr.aliyuncs.com/ml/t@sha256:{DIGEST}"))
    assert ent.compute.container_image == f"acme-registry-vpc.cn-wulanchabu.cr.aliyuncs.com/ml/t@sha256:{DIGEST}"


def test_a_plan_without_one_keeps_its_plan_json(tmp_path: Path) -> None:
    plan = api.plan(_spec(tmp_path, "image_id: m-x"))
    assert plan.compute.container_image == "" and "container_image" not in plan.to_dict()["compute"]


def test_a_registry_of_another_region_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecErrors) as e:
        api.plan(_spec(tmp_path, f"image_id: m-x\ncontainer_image: {IMAGE}", region="cn-hangzhou"))
    (p,) = [p for p in e.value.problems if p.path == ("compute", "container_image")]
    assert "cn-wulanchabu, not in cn-hangzhou" in p.message


def test_ecs_needs_a_node_image_with_docker(tmp_path: Path) -> None:
    with pytest.raises(SpecErrors) as e:
        api.plan(_spec(tmp_path, f"container_image: {IMAGE}"))
    (p,) = e.value.problems
    assert p.path == ("compute", "container_image") and "Docker" in p.message and "compute.image_id" in p.hint
    out = _validate(_spec(tmp_path, f"container_image: {IMAGE}"))  # refused, not a node that cannot run it
    assert out.returncode == 2 and f"{tmp_path / 'spec.yaml'}:5:" in out.stderr + out.stdout


def test_lingjun_nodes_run_it_too(tmp_path: Path) -> None:
    plan = api.plan(_spec(tmp_path, f"platform: lingjun\nimage_id: {LJ_IMAGE}\nnodes: 2\ncontainer_image: {IMAGE}"))
    script = api.render_files(plan, "spec.yaml")["node-init.sh"]
    assert f'CONTAINER_IMAGE="{plan.compute.container_image}"' in script and "exec docker run" in script


def test_pai_dlc_takes_it_as_the_job_image(tmp_path: Path) -> None:
    plan = api.plan(_spec(tmp_path, f"platform: pai-dlc\ncontainer_image: {IMAGE}"))
    assert plan.dlc is not None and plan.dlc.image == plan.compute.container_image
    assert plan.dlc.image_source.startswith("compute.container_image")


def _validate(spec: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "generator.cli", "validate", str(spec)], capture_output=True,
                          text=True, check=False)


@pytest.mark.parametrize("instance", ["kmsiwlxxdcvaduwb", "cri-", "CRI-ABCDEF", "cri-abc$(id)", "acme"])
def test_a_registry_instance_that_is_no_instance_id_is_refused_naming_the_line(tmp_path: Path, instance: str) -> None:
    spec = _spec(tmp_path, f"image_id: m-x\ncontainer_image: {EE_IMAGE}\n"
                           f"container_registry_instance: {json.dumps(instance)}")
    out = _validate(spec)
    assert out.returncode == 2 and f"{spec}:7:" in out.stderr + out.stdout  # line 7: the instance
    assert "compute.container_registry_instance" in out.stderr + out.stdout


@pytest.mark.parametrize(("compute", "line"), [
    (f"image_id: m-x\ncontainer_registry_instance: {INSTANCE}", 6),                          # nothing to pull
    (f"image_id: m-x\ncontainer_image: {IMAGE}\ncontainer_registry_instance: {INSTANCE}", 7),  # Personal Edition
    ((f"platform: lingjun\nimage_id: {LJ_IMAGE}\nnodes: 2\ncontainer_image: {EE_IMAGE}\n"
      f"container_registry_instance: {INSTANCE}"), 9),                                        # no node role
    (f"platform: pai-dlc\ncontainer_image: {EE_IMAGE}\ncontainer_registry_instance: {INSTANCE}", 7),
])
def test_a_login_that_cannot_happen_is_refused_naming_the_field(tmp_path: Path, compute: str, line: int) -> None:
    spec = _spec(tmp_path, compute)
    with pytest.raises(SpecErrors) as e:
        api.plan(spec)
    assert [p.path for p in e.value.problems] == [("compute", "container_registry_instance")]
    out = _validate(spec)
    assert out.returncode == 2 and f"{spec}:{line}:" in out.stderr + out.stdout


def test_a_private_image_gives_the_node_role_a_login_and_a_pull_of_that_repository_only(tmp_path: Path) -> None:
    plan = api.plan(_spec(tmp_path, f"image_id: m-x\ncontainer_image: {EE_IMAGE}\n"
                                    f"container_registry_instance: {INSTANCE}"))
    assert plan.compute.container_registry_instance == INSTANCE
    assert plan.to_dict()["compute"]["container_registry_instance"] == INSTANCE
    files = api.render_files(plan, "spec.yaml")
    program = files["__main__.py"]
    constants = {name: ast.literal_eval(value) for name, value in
                 (line.split(" = ", 1) for line in program.splitlines() if line.startswith("REGISTRY_"))}
    assert constants == {"REGISTRY_INSTANCE": INSTANCE, "REGISTRY_REPOSITORY": "ml/pytorch"}
    assert '"Action": ["cr:GetAuthorizationToken"], "Resource": ["*"]' in program
    assert ('"Action": ["cr:PullRepository"],\n                "Resource": '
            '[f"acs:cr:{REGION}:*:repository/{REGISTRY_INSTANCE}/{REGISTRY_REPOSITORY}"]') in program
    assert 'policy_name=registry_policy.policy_name' in program
    script = files["node-init.sh"]
    assert "trainstack-registry-login" in script and '"acme-registry-vpc.cn-wulanchabu.cr.aliyuncs.com"' in script
    helper = render_files.cluster_facts(plan)["registry_login"]  # in the cluster facts, not the 16 KB user data
    compile(helper, "trainstack-registry-login", "exec")
    assert helper.startswith("#!/usr/bin/python3\n") and "--password-stdin" in helper


def test_a_public_image_gives_the_role_no_registry_policy(tmp_path: Path) -> None:
    plan = api.plan(_spec(tmp_path, f"image_id: m-x\ncontainer_image: {EE_IMAGE}"))
    files = api.render_files(plan, "spec.yaml")
    assert "container_registry_instance" not in plan.to_dict()["compute"]
    assert "registry_policy" not in files["__main__.py"] and "trainstack-registry-login" not in files["node-init.sh"]
    assert "registry_login" not in render_files.cluster_facts(plan)
