"""Every description and name a generated program sends obeys the alphabet and length its resource documents.

The rules below are copied from where each is documented (pulumi_alicloud 4.0.0 docstrings unless said otherwise)
and checked on the resources the real SDK receives under the mock runtime: the committed examples (the PAI-DLC one
included), an Extreme NAS stack and a Lingjun stack. Types and fields whose documentation states no rule (ecs.HpcCluster, eflo.*,
ram.Role role_name) are not listed. The NAS/CPFS description rule is also lint rule TS021 (tests/test_lint.py)
and what the templates' ``desc_nas`` filter (generator/render/describe.py) produces.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from generator import api
from generator.preview.mockrun import Graph, run_program
from generator.render.describe import NAS_DESCRIPTION, desc_nas, nas_description

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.yaml"))
NOT_URL = r"(?!https?://)"


def _rule(pattern: str, lo: int, hi: int) -> tuple[re.Pattern[str], int, int]:
    return re.compile(NOT_URL + pattern, re.DOTALL), lo, hi


ANY = _rule(r".*", 0, 10**6)
LETTER_FIRST = _rule(r"[A-Za-z].*", 0, 10**6)
NAS = (NAS_DESCRIPTION, 2, 128)

# type -> camelCase input -> (pattern, min length, max length). Sources: the docstring of that argument.
RULES: dict[str, dict[str, tuple[re.Pattern[str], int, int]]] = {
    "alicloud:nas/fileSystem:FileSystem": {"description": NAS},
    "alicloud:nas/protocolService:ProtocolService": {"description": NAS},
    "alicloud:nas/protocolMountTarget:ProtocolMountTarget": {"description": NAS},
    # terraform-provider-alicloud website/docs/r/nas_data_flow.html.markdown (the SDK docstring is cut short)
    "alicloud:nas/dataFlow:DataFlow": {"description": NAS},
    # Alibaba's CreateFileset (https://help.aliyun.com/zh/cpfs/api-createfileset) and CreateAccessGroup
    # (https://help.aliyun.com/document_detail/62630.html) references; the SDK docstrings state no rule
    "alicloud:nas/fileset:Fileset": {"description": NAS},
    "alicloud:nas/accessGroup:AccessGroup": {"description": NAS,
                                             "accessGroupName": (re.compile(r"[A-Za-z][A-Za-z0-9_-]*"), 3, 64)},
    "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet": {
        "description": (ANY[0], 2, 256), "deploymentSetName": (re.compile(r"[A-Za-z][A-Za-z0-9:_-]*"), 2, 128)},
    "alicloud:ecs/instance:Instance": {
        "description": (ANY[0], 2, 256), "instanceName": (re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]*"), 2, 128),
        "hostName": (re.compile(r"(?![.-])(?!.*[.-]{2})[A-Za-z0-9.-]*(?<![.-])"), 2, 64)},
    "alicloud:vpc/network:Network": {"description": (ANY[0], 1, 256), "vpcName": (ANY[0], 1, 128)},
    "alicloud:vpc/switch:Switch": {"description": (ANY[0], 1, 256), "vswitchName": (ANY[0], 1, 128)},
    "alicloud:vpc/natGateway:NatGateway": {
        "description": (ANY[0], 2, 256), "natGatewayName": (re.compile(r"(?!-)[A-Za-z0-9._-]*(?<!-)"), 2, 128)},
    "alicloud:ecs/eipAddress:EipAddress": {
        "description": (LETTER_FIRST[0], 2, 256), "addressName": (re.compile(r"[A-Za-z][A-Za-z0-9._-]*"), 1, 128)},
    "alicloud:vpc/snatEntry:SnatEntry": {"snatEntryName": (LETTER_FIRST[0], 2, 128)},
    "alicloud:ecs/securityGroup:SecurityGroup": {
        "description": (ANY[0], 2, 256), "securityGroupName": (re.compile(r"[A-Za-z][A-Za-z0-9:_.-]*"), 2, 128)},
    "alicloud:ecs/securityGroupRule:SecurityGroupRule": {"description": (ANY[0], 1, 512)},
    "alicloud:ram/role:Role": {"description": (ANY[0], 1, 1024)},
    "alicloud:ram/policy:Policy": {"description": (ANY[0], 1, 1024),
                                   "policyName": (re.compile(r"[A-Za-z0-9-]*"), 1, 128)},
    # pai.WorkspaceWorkspace: "3 to 23 characters ... letters, underscores, or numbers ... start with a letter";
    # description "no more than 80 characters"
    "alicloud:pai/workspaceWorkspace:WorkspaceWorkspace": {
        "workspaceName": (re.compile(r"[A-Za-z][A-Za-z0-9_]*"), 3, 23), "description": (ANY[0], 1, 80)},
    # pai.WorkspaceDataset dataset_name: starts with a letter, digit or Chinese character, may hold '_' and '-', 1-127
    "alicloud:pai/workspaceDataset:WorkspaceDataset": {
        "datasetName": (re.compile(r"[A-Za-z0-9\u4e00-\u9fff][A-Za-z0-9\u4e00-\u9fff_-]*"), 1, 127)},
    "alicloud:ram/user:User": {"name": (re.compile(r"(?!-)[A-Za-z0-9._-]*"), 1, 64),
                               "displayName": (re.compile(r"[A-Za-z0-9.-]*(?<!-)"), 1, 128)},
}


def breaches(graph: Graph) -> list[str]:
    out = []
    for r in graph.resources:
        for field, (pattern, lo, hi) in RULES.get(r.type, {}).items():
            value = r.inputs.get(field)
            if not isinstance(value, str):  # not set, or computed at deploy time
                continue
            if not (pattern.fullmatch(value) and lo <= len(value) <= hi):
                out.append(f"{r.type}::{r.name} {field}={value!r}")
    return out


def _run(dest: Path) -> Graph:
    plan = json.loads((dest / "plan.json").read_text())
    return run_program(dest, project=plan["name"], stack=plan["stack"], config={"alicloud:region": plan["region"]})


def _build(tmp_path: Path, body: str) -> Graph:
    tmp_path.mkdir(parents=True, exist_ok=True)
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent(body))
    return _run(api.render_stack(spec, tmp_path / "stack").dest)


@pytest.mark.parametrize("name", EXAMPLES)
def test_no_generated_description_breaks_its_documented_alphabet(name: str) -> None:
    g = _run(ROOT / "stacks" / name)
    assert breaches(g) == []
    kind = json.loads((ROOT / "stacks" / name / "plan.json").read_text())["storage"]["kind"]
    if kind == "cpfs":  # the CPFS examples: every NAS resource has a checked description
        described = [r for r in g.resources if r.type in RULES and r.type.startswith("alicloud:nas/")
                     and "description" in r.inputs]
        assert {r.type.split(":")[-1] for r in described} >= {"FileSystem", "ProtocolService", "ProtocolMountTarget",
                                                             "Fileset", "DataFlow"}


def test_extreme_nas_and_lingjun_stacks_keep_the_alphabets_too(tmp_path: Path) -> None:
    nas = _build(tmp_path / "nas", """
        name: nas-run
        region: cn-wulanchabu
        model: {parameters: 13B, sequence_length: 4096}
        compute: {instance_types: [ecs.ebmgn7ex.32xlarge], nodes: 2}
        network: {vpc_cidr: 172.16.0.0/16}
    """)
    assert breaches(nas) == []
    assert NAS_DESCRIPTION.fullmatch(nas.one("alicloud:nas/accessGroup:AccessGroup").get("description"))
    lingjun = _build(tmp_path / "lj", """
        name: lj-run
        region: cn-wulanchabu
        model: {preset: llama-2-70b, tokens: 20B}
        compute: {platform: lingjun, image_id: i190982651690986913088, nodes: 4}
        network: {vpc_cidr: 10.8.0.0/16}
    """)
    assert breaches(lingjun) == []


def test_a_description_outside_the_alphabet_is_a_breach() -> None:
    from generator.preview.mockrun import Resource

    g = Graph(resources=[Resource("alicloud:nas/protocolMountTarget:ProtocolMountTarget", "export",
                                  {"description": "run export for the cluster VPC"})])
    assert breaches(g) == [("alicloud:nas/protocolMountTarget:ProtocolMountTarget::export "
                           "description='run export for the cluster VPC'")]


@pytest.mark.parametrize("text, expected", [
    ("pretrain-70b shared data", "pretrain-70b_shared_data"),
    ("import oss://corpus-pretrain-2026/tokenized/", "import_oss:corpus-pretrain-2026_tokenized"),
    ("only the cluster VPC", "only_the_cluster_VPC"),
    ("70b dataset", "trainstack_70b_dataset"),  # must start with a letter
    ("x", "trainstack_x"),  # at least 2 characters
    ("a" * 200, "a" * 128),
    ("http://example.com/x", "http:example_com_x"),
    ("数据 集", "trainstack"),  # trainstack writes ASCII only
])
def test_nas_description_maps_text_into_the_alphabet(text: str, expected: str) -> None:
    assert nas_description(text) == expected
    assert desc_nas(text) == json.dumps(expected)  # a Python string literal for the template


@given(st.text(max_size=300))
def test_nas_description_always_fits_and_is_stable(text: str) -> None:
    out = nas_description(text)
    assert NAS_DESCRIPTION.fullmatch(out) and out.isascii()
    assert nas_description(out) == out
