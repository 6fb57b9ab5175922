"""Tests for ``trainstack diff``: graph comparison, impact classes, formats, the replacement data, git sides.

Most tests build resource graphs directly (milliseconds). A few run real specs under the mock runtime
(about a second per side) and one reads a side from a throwaway git repository in tmp_path.
"""

from __future__ import annotations

import ast
import base64
import csv
import importlib
import inspect
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator import api
from generator.cli import main
from generator.preview import diff as d
from generator.preview.diff import notes
from generator.preview.diff import reasons as why
from generator.preview.mockrun import Graph, Resource

# importing pulumi_alicloud modules to read their docstrings warns about the SDK's own deprecated resources
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_alicloud")

ROOT = Path(__file__).resolve().parents[1]
FINETUNE = ROOT / "examples" / "finetune-7b.yaml"
PRETRAIN = ROOT / "examples" / "pretrain-70b.yaml"

INSTANCE = "alicloud:ecs/instance:Instance"
ATTACH = "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"
BUCKET = "alicloud:oss/bucket:Bucket"
FS = "alicloud:nas/fileSystem:FileSystem"
FILESET = "alicloud:nas/fileset:Fileset"
VPC = "alicloud:vpc/network:Network"
SWITCH = "alicloud:vpc/switch:Switch"
SG = "alicloud:ecs/securityGroup:SecurityGroup"


# --------------------------------------------------------------------------------------------- graph builders
def boot_script(nodes: int, rank: int) -> str:
    script = f"#!/bin/bash\nNODE_RANK={rank}\nNNODES={nodes}\nMASTER_ADDR=10.0.0.10\necho booting\n"
    return base64.b64encode(script.encode()).decode()


def node(i: int, nodes: int = 2, **override: Any) -> Resource:
    inputs = {"instanceType": "ecs.gn8is.4xlarge", "availabilityZone": "cn-hangzhou-k",
              "privateIp": f"10.0.0.{10 + i}",
              "vswitchId": "vswitch-compute-id", "securityGroups": ["security-group-id"],
              "userData": boot_script(nodes, i), "tags": {"team": "llm", "trainstack-rank": str(i)}}
    inputs.update(override)
    return Resource(INSTANCE, f"run-node-{i:03d}", inputs)


def attachment(i: int) -> Resource:
    return Resource(ATTACH, f"run-node-{i:03d}-role",
                    {"instanceId": f"run-node-{i:03d}-id", "ramRoleName": "run-node"})


def bucket(days: int = 14, protect: bool = True, **override: Any) -> Resource:
    inputs = {"bucket": "run-ckpt-abc123", "storageClass": "Standard", "redundancyType": "LRS",
              "lifecycleRules": [
                  {"id": "expire-noncurrent-checkpoints", "enabled": True, "prefix": "checkpoints/",
                   "noncurrentVersionExpirations": [{"days": days}]},
                  {"id": "abort-stale-multipart-uploads", "enabled": True, "prefix": "checkpoints/",
                   "abortMultipartUploads": [{"days": 3}]}],
              "versioning": {"status": "Enabled"}}
    inputs.update(override)
    return Resource(BUCKET, "checkpoint-bucket", inputs, protect=protect, retain_on_delete=protect)


def file_system(capacity: int = 12000, storage_type: str = "advance_100") -> Resource:
    return Resource(FS, "shared-fs", {"fileSystemType": "cpfs", "protocolType": "cpfs", "storageType": storage_type,
                                      "capacity": capacity, "zoneId": "cn-hangzhou-k", "vpcId": "vpc-id",
                                      "vswitchId": "vswitch-compute-id"}, protect=True, retain_on_delete=True)


def fileset() -> Resource:
    return Resource(FILESET, "dataset-fileset", {"fileSystemId": "shared-fs-id", "fileSystemPath": "/datasets/"},
                    protect=True, retain_on_delete=True)


def network(cidr: str = "10.0.0.0/16") -> list[Resource]:
    return [Resource(VPC, "vpc", {"cidrBlock": cidr, "vpcName": "run"}),
            Resource(SWITCH, "vswitch-compute", {"cidrBlock": cidr.replace("/16", "/20"), "vpcId": "vpc-id",
                                                 "zoneId": "cn-hangzhou-k"}),
            Resource(SG, "security-group", {"vpcId": "vpc-id", "securityGroupType": "normal"})]


def cluster(nodes: int = 2, *, cidr: str = "10.0.0.0/16", days: int = 14, capacity: int = 12000,
            with_bucket: bool = True, **node_override: Any) -> Graph:
    resources = [*network(cidr), file_system(capacity), fileset()]
    resources += [node(i, nodes, **node_override) for i in range(nodes)] + [attachment(i) for i in range(nodes)]
    if with_bucket:
        resources.append(bucket(days))
    return Graph(resources=resources)


def replace_resource(graph: Graph, new: Resource) -> Graph:
    return Graph(resources=[new if (r.type, r.name) == (new.type, new.name) else r for r in graph.resources])


def only(result: d.DiffResult, name: str) -> d.Change:
    found = [c for c in result.changes if c.name == name]
    assert len(found) == 1, [c.name for c in result.changes]
    return found[0]


# --------------------------------------------------------------------------------------------- classification
def test_identical_graphs_have_no_changes() -> None:
    result = d.diff_graphs(cluster(), cluster())
    assert not result.has_changes
    assert result.worst_impact is None
    assert result.unchanged == len(cluster().resources)
    assert "No changes" in d.format_text(result)
    assert json.loads(d.format_json(result))["summary"]["changed"] is False


def test_more_nodes_are_creates_that_replace_nodes() -> None:
    result = d.diff_graphs(cluster(nodes=2), cluster(nodes=4))
    created = [c for c in result.changes if c.action == "create"]
    assert sorted(c.name for c in created) == ["run-node-002", "run-node-002-role",
                                               "run-node-003", "run-node-003-role"]
    assert {c.impact for c in created if c.type == INSTANCE} == {"replaces-nodes"}
    assert {c.impact for c in created if c.type == ATTACH} == {"safe"}
    # the existing nodes' boot script gains the new world size: they reboot to pick it up
    assert only(result, "run-node-000").impact == "restarts-nodes"
    assert result.worst_impact == "replaces-nodes"
    assert result.counts() == {"create": 4, "update": 2, "replace": 0, "delete": 0}
    text = d.format_text(result)
    assert "2 x ecs:Instance run-node-002..003" in text
    assert "4 to create, 2 to update, 0 to replace, 0 to delete" in text


def test_instance_type_change_reboots_in_place_as_the_provider_does() -> None:
    # the provider stops the instance, modifies its spec and starts it again
    result = d.diff_graphs(cluster(), cluster(instanceType="ecs.gn8is.8xlarge"))
    change = only(result, "run-node-000")
    assert (change.action, change.impact) == ("update", "restarts-nodes")
    (prop,) = change.properties
    assert (prop.name, prop.effect, prop.summary) == ("instanceType", "reboot",
                                                      "ecs.gn8is.4xlarge -> ecs.gn8is.8xlarge")
    assert "alicloud/resource_alicloud_instance.go:" in prop.source and "StopInstance" in prop.source


def test_immutable_property_replaces_the_nodes_and_cascades_to_their_attachments() -> None:
    result = d.diff_graphs(cluster(), cluster(availabilityZone="cn-hangzhou-j"))
    change = only(result, "run-node-001")
    assert (change.action, change.impact) == ("replace", "replaces-nodes")
    assert change.reasons == (why.NodeReplaced(("availabilityZone",)),)
    # the role attachment names the old instance id: replacing the node replaces the attachment too
    attach = only(result, "run-node-001-role")
    assert attach.action == "replace" and attach.impact == "safe"
    assert (attach.properties[0].note, attach.properties[0].replaced) == ("after-replacement", "run-node-001")
    assert attach.reasons == (why.Replaced(delete_first=False),)
    markdown = d.format_markdown(result)
    assert ("**replace** `2 x ecs:Instance run-node-000..001`: "
            "`availabilityZone: cn-hangzhou-k -> cn-hangzhou-j` (replace)") in markdown


def test_new_retention_updates_the_bucket_lifecycle_in_place() -> None:
    result = d.diff_graphs(cluster(days=14), cluster(days=30))
    (change,) = result.changes
    assert (change.action, change.type, change.impact) == ("update", BUCKET, "safe")
    (prop,) = change.properties
    assert prop.effect == "in-place"
    assert d.prop_text(prop) == ("lifecycleRules[id=expire-noncurrent-checkpoints]"
                                 ".noncurrentVersionExpirations[0].days: 14 -> 30")


def test_json_documents_are_compared_by_content() -> None:
    def policy(bucket: str) -> Resource:
        statement = {"Effect": "Allow", "Action": ["oss:GetObject"], "Resource": [f"acs:oss:*:*:{bucket}/ckpt/*"]}
        document = json.dumps({"Version": "1", "Statement": [statement]})
        return Resource("alicloud:ram/policy:Policy", "checkpoint-policy", {"policyDocument": document})

    (change,) = d.diff_graphs(Graph([policy("a-ckpt")]), Graph([policy("b-ckpt")])).changes
    assert d.prop_text(change.properties[0]) == (
        "policyDocument.Statement[0].Resource[0]: acs:oss:*:*:a-ckpt/ckpt/* -> acs:oss:*:*:b-ckpt/ckpt/*")


def test_removed_bucket_is_data_at_risk() -> None:
    result = d.diff_graphs(cluster(), cluster(with_bucket=False))
    (change,) = result.changes
    assert (change.action, change.impact) == ("delete", "data-at-risk")
    assert change.reasons == (why.DataDeleted(why.BUCKET, protected=True),)
    assert result.worst_impact == "data-at-risk"


def test_dropping_protection_from_the_bucket_is_data_at_risk() -> None:
    base = cluster()
    head = replace_resource(base, bucket(protect=False))
    (change,) = d.diff_graphs(base, head).changes
    assert (change.action, change.impact) == ("update", "data-at-risk")
    assert {p.name for p in change.properties} == {"protect", "retainOnDelete"}


def test_renamed_bucket_is_replaced_and_data_at_risk() -> None:
    base = cluster()
    head = replace_resource(base, bucket(bucket="run-ckpt-def456"))
    (change,) = d.diff_graphs(base, head).changes
    assert (change.action, change.impact) == ("replace", "data-at-risk")
    assert change.reasons == (why.DataReplaced(why.BUCKET, ("bucket",), protected=True),)


def test_cpfs_capacity_grows_in_place_but_a_new_storage_type_replaces_it_with_its_fileset() -> None:
    grown = d.diff_graphs(cluster(capacity=12000), cluster(capacity=24000))
    (change,) = grown.changes
    assert (change.action, change.impact, change.properties[0].effect) == ("update", "safe", "in-place")
    assert "UpgradeFileSystem" in change.properties[0].source

    base = cluster()
    head = replace_resource(base, file_system(storage_type="advance_200"))
    result = d.diff_graphs(base, head)
    assert (only(result, "shared-fs").action, only(result, "shared-fs").impact) == ("replace", "data-at-risk")
    fset = only(result, "dataset-fileset")  # its fileSystemId names the old file system
    assert (fset.action, fset.impact) == ("replace", "data-at-risk")


def test_user_data_change_restarts_nodes_and_is_summarized_not_dumped() -> None:
    base = cluster()
    head = replace_resource(base, node(0, 2, userData=boot_script(3, 0)))
    head = replace_resource(head, node(1, 2, userData=boot_script(3, 1)))
    result = d.diff_graphs(base, head)
    assert {c.name for c in result.changes} == {"run-node-000", "run-node-001"}
    assert {c.impact for c in result.changes} == {"restarts-nodes"}
    prop = result.changes[0].properties[0]
    assert prop.summary == "boot script: 1 changed line (NNODES=2 -> NNODES=3)"
    text = d.format_text(result)
    assert "2 x ecs:Instance run-node-000..001" in text  # same summary on both nodes: one line
    assert boot_script(3, 0) not in text
    long_script = base64.b64encode(b"x" * 400).decode()  # real boot scripts are ~10 kB
    payload = json.loads(d.format_json(d.diff_graphs(Graph([node(0, userData=long_script)]), Graph([node(0)]))))
    assert payload["changes"][0]["properties"][0]["old"] == d.digest(long_script)


def test_new_vpc_cidr_updates_the_network_but_replaces_its_vswitch_and_file_system() -> None:
    result = d.diff_graphs(cluster(cidr="10.0.0.0/16"), cluster(cidr="10.30.0.0/16"))
    vpc = only(result, "vpc")  # ModifyVpcAttribute changes a VPC's CIDR in place (provider, since 2021)
    assert (vpc.action, vpc.impact) == ("update", "safe")
    assert only(result, "vswitch-compute").action == "replace"  # a vSwitch's CIDR is ForceNew
    shared = only(result, "shared-fs")  # CPFS sits on the replaced vSwitch: a new, empty file system
    assert (shared.action, shared.impact) == ("replace", "data-at-risk")
    instance = only(result, "run-node-000")  # the new vSwitch id reboots the node onto it
    assert instance.impact == "restarts-nodes"
    assert {p.name: p.effect for p in instance.properties} == {"vswitchId": "reboot"}
    assert result.worst_impact == "data-at-risk"


def test_region_change_replaces_every_resource_and_says_why() -> None:
    result = d.diff_graphs(cluster(), cluster(), base_info=d.SideInfo("a", "run", "dev", "cn-hangzhou"),
                           head_info=d.SideInfo("b", "run", "dev", "cn-beijing"))
    assert {c.action for c in result.changes} == {"replace"}
    assert len(result.changes) == len(cluster().resources)
    assert [n.to_dict()["fields"] for n in result.notes if n.code == notes.RegionChanged.code] == [
        {"base_region": "cn-hangzhou", "head_region": "cn-beijing"}]


def test_renamed_project_is_a_new_stack_not_a_deletion() -> None:
    result = d.diff_graphs(cluster(), cluster(), base_info=d.SideInfo("a", "run", "dev", "cn-hangzhou", 11),
                           head_info=d.SideInfo("b", "run2", "dev", "cn-hangzhou", 11))
    assert {c.action for c in result.changes} == {"create"}  # nothing of the old stack is deleted
    assert not any(c.impact == "data-at-risk" for c in result.changes)
    (note,) = result.notes
    assert (note.code, note.fields()) == (notes.OtherStack.code, {"base_stack": "run/dev", "head_stack": "run2/dev",
                                                                  "resources": 11})


def test_markdown_groups_identical_node_changes_and_folds_the_safe_section() -> None:
    base = Graph(resources=[node(i, 64) for i in range(64)] + [attachment(i) for i in range(64)])
    head = Graph(resources=[node(i, 64, availabilityZone="cn-hangzhou-j") for i in range(64)]
                 + [attachment(i) for i in range(64)])
    markdown = d.format_markdown(d.diff_graphs(base, head))
    assert markdown.startswith(d.MARKDOWN_MARKER)
    assert "### trainstack diff: 🟠 replaces-nodes" in markdown
    assert "`64 x ecs:Instance run-node-000..063`" in markdown
    assert "`64 x ecs:RamRoleAttachment run-node-000..063-role`" in markdown
    assert "| 0 | 0 | 128 | 0 | 0 |" in markdown
    safe = markdown.split("<details><summary>🟢 <b>safe</b> (64): ")[1]  # the safe section is folded
    assert "`64 x ecs:RamRoleAttachment run-node-000..063-role`" in safe.split("</details>")[0]
    assert markdown.count("run-node-0") < 10  # grouped, not listed one by one


def test_json_is_stable_and_versioned() -> None:
    result = d.diff_graphs(cluster(nodes=2), cluster(nodes=3))
    first, second = d.format_json(result), d.format_json(d.diff_graphs(cluster(nodes=2), cluster(nodes=3)))
    assert first == second
    payload = json.loads(first)
    assert payload["schema_version"] == d.SCHEMA_VERSION == 5
    assert set(payload) == {"schema_version", "base", "head", "summary", "notes", "impacts", "cost", "changes",
                            "what_changed"}
    assert payload["cost"] is None  # graphs given directly: no plans to price
    assert payload["summary"]["worst_impact"] == "replaces-nodes"
    assert set(payload["summary"]["by_impact"]) == set(d.IMPACTS)
    assert [i["impact"] for i in payload["impacts"]] == list(d.IMPACTS)  # every class, worst first, titled
    assert all(i["title"] == d.IMPACT_TITLES[i["impact"]] for i in payload["impacts"])
    assert {i["impact"]: i["changes"] for i in payload["impacts"]} == payload["summary"]["by_impact"]
    assert set(payload["changes"][0]) == {"action", "type", "name", "impact", "reason", "reasons", "properties"}
    impacts = [c["impact"] for c in payload["changes"]]
    assert impacts == sorted(impacts, key=d.IMPACTS.index)  # worst first


@pytest.mark.parametrize(("names", "span"), [
    (["a-node-000"], "a-node-000"),
    ([f"a-node-{i:03d}" for i in range(64)], "a-node-000..063"),
    (["a-node-000", "a-node-001", "a-node-005"], "a-node-000..001,005"),
    (["n-3-role", "n-1-role", "n-2-role"], "n-1..3-role"),
    (["vpc", "sg", "bucket", "fs"], "vpc, sg, bucket, … (+1 more)"),
])
def test_name_span(names: list[str], span: str) -> None:
    assert d.name_span(names) == span


# --------------------------------------------------------------------------------------------- replacement data
SDK_TYPES = ("alicloud:ecs/instance:Instance", "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet",
             "alicloud:ecs/hpcCluster:HpcCluster", "alicloud:ecs/securityGroup:SecurityGroup",
             "alicloud:ecs/securityGroupRule:SecurityGroupRule", "alicloud:vpc/network:Network",
             "alicloud:vpc/switch:Switch", "alicloud:vpc/natGateway:NatGateway", "alicloud:vpc/snatEntry:SnatEntry",
             "alicloud:ecs/eipAddress:EipAddress", "alicloud:ecs/eipAssociation:EipAssociation",
             "alicloud:ecs/ramRoleAttachment:RamRoleAttachment", "alicloud:nas/fileSystem:FileSystem",
             "alicloud:nas/protocolService:ProtocolService", "alicloud:nas/protocolMountTarget:ProtocolMountTarget",
             "alicloud:nas/fileset:Fileset", "alicloud:nas/dataFlow:DataFlow",
             "alicloud:nas/accessGroup:AccessGroup", "alicloud:nas/accessRule:AccessRule",
             "alicloud:nas/mountTarget:MountTarget", "alicloud:oss/bucket:Bucket",
             "alicloud:oss/bucketAcl:BucketAcl", "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock",
             "alicloud:oss/bucketObject:BucketObject",  # the cluster facts
             "alicloud:ram/role:Role", "alicloud:ram/policy:Policy",
             "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment",
             # Lingjun (eflo) programs: a RAM user (no instance role) and the eflo resources
             "alicloud:ram/user:User", "alicloud:ram/userPolicyAttachment:UserPolicyAttachment",
             "alicloud:eflo/vpd:Vpd", "alicloud:eflo/subnet:Subnet", "alicloud:eflo/cluster:Cluster",
             "alicloud:eflo/node:Node", "alicloud:eflo/nodeGroup:NodeGroup",
             # PAI-DLC programs: the workspace and its datasets
             "alicloud:pai/workspaceWorkspace:WorkspaceWorkspace", "alicloud:pai/workspaceDataset:WorkspaceDataset")


def _sdk_source(token: str) -> Path:
    """``alicloud:nas/protocolMountTarget:ProtocolMountTarget`` -> pulumi_alicloud/nas/protocol_mount_target.py"""
    module = importlib.import_module("pulumi_alicloud." + token.split(":")[1].split("/")[0])
    snake = re.sub(r"(?<!^)([A-Z])", r"_\1", token.split(":")[2]).lower()
    return Path(module.__file__).parent / f"{snake}.py"


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _args_docstrings(token: str) -> dict[str, str]:
    """{camelCase property: docstring} of the resource's Args class, read from the installed SDK source."""
    tree = ast.parse(_sdk_source(token).read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == token.split(":")[2] + "Args")
    return {_camel(f.name): " ".join((ast.get_docstring(f) or "").split())
            for f in cls.body if isinstance(f, ast.FunctionDef) and f.name != "__init__" and ast.get_docstring(f)}


def test_every_replacement_row_names_a_real_sdk_argument_and_cites_a_source() -> None:
    rules = d.load_rules()
    assert len(rules) > 50
    for (token, prop), rule in rules.items():
        assert token in SDK_TYPES, f"{token} is not a resource type trainstack programs use"
        module = importlib.import_module("pulumi_alicloud." + token.split(":")[1].split("/")[0])
        args = getattr(module, token.split(":")[2] + "Args")
        params = {_camel(p) for p in inspect.signature(args.__init__).parameters}
        assert prop in params, f"{token}: no argument {prop}"
        assert rule.effect in d.EFFECTS
        assert rule.source.startswith(("terraform-provider-alicloud", "UNVERIFIED", "UNCERTAIN"))


def test_every_docstring_that_mentions_reboot_or_immutability_has_a_row() -> None:
    """Catches drift when the SDK is upgraded: a newly documented ForceNew/reboot must be classified."""
    rules = d.load_rules()
    flagged = re.compile(r"immutable after resource creation|will reboot|will be reboot", re.IGNORECASE)
    missing = [(token, prop) for token in SDK_TYPES for prop, doc in _args_docstrings(token).items()
               if flagged.search(doc) and (token, prop) not in rules]
    assert not missing, f"classify these in generator/preview/data/replacement/<family>.csv: {missing}"
    # and the data agrees with the words where they are unambiguous
    for token in SDK_TYPES:
        for prop, doc in _args_docstrings(token).items():
            immutable = "The parameter is immutable after resource creation." in doc
            if immutable and "no effect when modified" not in doc:  # replaced, or never applied: never safe,
                rule = rules[(token, prop)]  # unless the provider's own update code applies it (it outranks
                assert rule.effect in ("replace", "ignored") or "HasChange" in rule.source, (token, prop)  # docs)


def test_a_property_without_a_row_is_unknown_never_in_place() -> None:
    # a type the data covers, and a type it does not
    assert d.rule_for("alicloud:ecs/instance:Instance", "noSuchInput") == d.UNKNOWN_RULE == d.DEFAULT_RULE
    assert d.rule_for("alicloud:foo/bar:Baz", "anything").effect == "unknown"
    assert "unknown" in d.EFFECTS and "unknown" not in d.DATA_EFFECTS  # absence means unknown; no row says it


def test_the_data_is_one_csv_per_provider_family() -> None:
    folder = d.REPLACEMENT_DATA
    assert folder.is_dir() and not (folder.parent / "replacement.csv").exists()
    assert {p.name for p in folder.glob("*.csv")} >= {"ecs.csv", "vpc.csv", "nas.csv", "oss.csv", "ram.csv",
                                                      "eflo.csv"}
    for path in folder.glob("*.csv"):
        family = path.stem
        with open(path, newline="", encoding="utf-8") as fh:
            tokens = {row["type"] for row in csv.DictReader(fh)}
        assert tokens and all(t.split(":")[1].split("/")[0] == family for t in tokens), path.name


def _write(path: Path, *rows: list[str], header: tuple[str, ...] = ("type", "property", "effect", "source")) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([list(header), *rows])
    return path


def test_malformed_replacement_data_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "ecs.csv"
    bad.write_text("type,property,effect,source\nalicloud:ecs/instance:Instance,userData,restart,docstring x\n")
    with pytest.raises(d.DiffError, match=r"ecs.csv:2: effect 'restart' is not one of replace, reboot, in-place, "
                                          r"ignored"):
        d.load_rules(bad)
    _write(bad, ["alicloud:ecs/a:A", "x", "unknown", "s"])  # absence is unknown; an unknown row says why
    with pytest.raises(d.DiffError, match=r"ecs.csv:2: an 'unknown' row says why"):
        d.load_rules(bad)
    _write(bad, ["alicloud:ecs/a:A", "x", "in-place", "the docstring says so"])  # no "safe" without the provider
    with pytest.raises(d.DiffError, match=r"ecs.csv:2: alicloud:ecs/a:A x is 'in-place' without a provider source"):
        d.load_rules(bad)
    _write(bad, ["alicloud:ecs/a:A", "x", "replace", "s"], ["alicloud:ecs/a:A", "x", "reboot", "s"])
    with pytest.raises(d.DiffError, match=r"ecs.csv:3: alicloud:ecs/a:A x is listed twice \(first at ecs.csv:2\)"):
        d.load_rules(bad)
    _write(bad, ["alicloud:ecs/a:A", "x", "replace", " "])
    with pytest.raises(d.DiffError, match=r"ecs.csv:2: every row cites its source"):
        d.load_rules(bad)
    _write(bad, ["alicloud:ecs/a:A", "x", "replace", "s"], header=("type", "property", "effect"))
    with pytest.raises(d.DiffError, match=r"ecs.csv:1: the header must be type,property,effect,source"):
        d.load_rules(bad)


def test_a_data_folder_reads_every_csv_and_refuses_a_row_listed_in_two_files(tmp_path: Path) -> None:
    _write(tmp_path / "ecs.csv", ["alicloud:ecs/a:A", "x", "replace", "s1"])
    _write(tmp_path / "vpc.csv", ["alicloud:vpc/b:B", "y", "ignored", "alicloud/resource_alicloud_b.go:2"])
    (tmp_path / "README.md").write_text("not data")
    rules = d.load_rules(tmp_path)
    assert rules == {("alicloud:ecs/a:A", "x"): d.Rule("replace", "s1"),
                     ("alicloud:vpc/b:B", "y"): d.Rule("ignored", "alicloud/resource_alicloud_b.go:2")}
    twice = tmp_path / "twice"  # (load_rules caches by path)
    twice.mkdir()
    _write(twice / "vpc.csv", ["alicloud:vpc/b:B", "y", "replace", "s2"])
    _write(twice / "zzz.csv", ["alicloud:vpc/b:B", "y", "replace", "s3"])  # read last: names the first file
    with pytest.raises(d.DiffError, match=r"zzz.csv:2: alicloud:vpc/b:B y is listed twice \(first at vpc.csv:2\)"):
        d.load_rules(twice)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(d.DiffError, match="holds no \\*.csv file"):
        d.load_rules(empty)


# --------------------------------------------------------------------------------------------- unknown, never applied
def test_the_class_order_puts_doubt_between_known_losses_and_known_reboots() -> None:
    assert d.IMPACTS == ("data-at-risk", "replaces-nodes", "fails-at-apply", "never-applied", "unknown",
                         "restarts-nodes", "safe")
    assert set(d.IMPACT_TITLES) == set(d.IMPACTS)
    assert "pulumi up --replace URN" in d.IMPACT_TITLES["never-applied"]
    assert "possible replacement" in d.IMPACT_TITLES["unknown"]


def test_a_change_without_data_is_unknown_never_safe() -> None:
    other = "alicloud:foo/bar:Baz"  # a type the data does not cover at all
    base = Graph([node(0), Resource(VPC, "vpc", {"cidrBlock": "10.0.0.0/16", "vpcName": "run"}),
                  Resource(other, "thing", {"size": 1})])
    head = Graph([node(0, futureInput="rank 0"), Resource(VPC, "vpc", {"cidrBlock": "10.0.0.0/16", "vpcName": "run",
                                                                        "futureInput": "x"}),
                  Resource(other, "thing", {"size": 2})])
    result = d.diff_graphs(base, head)
    assert {(c.name, c.action, c.impact) for c in result.changes} == {
        ("run-node-000", "update", "unknown"), ("vpc", "update", "unknown"), ("thing", "update", "unknown")}
    assert result.worst_impact == "unknown"
    node_change = only(result, "run-node-000")
    (prop,) = node_change.properties
    assert (prop.name, prop.effect) == ("futureInput", "unknown") and "no row" in prop.source
    assert node_change.reasons == (why.NoProviderData(("futureInput",), "node"),)
    assert only(result, "vpc").reasons == (why.NoProviderData(("futureInput",)),)
    assert node_change.reason == node_change.reasons[0].text()  # the words are rendered from the fields
    tagged = d.diff_graphs(Graph([bucket()]), Graph([bucket(futureInput={"team": "llm"})]))
    (change,) = tagged.changes  # a bucket input without data: the reason names the data at stake
    assert change.impact == "unknown" and change.reasons == (why.NoProviderData(("futureInput",), "data", why.BUCKET),)
    text = d.format_text(result)
    assert f"unknown (3): {d.IMPACT_TITLES['unknown']}" in text
    assert "futureInput: (unset) -> rank 0 [unknown]" in text and "safe" not in text
    markdown = d.format_markdown(result)
    assert "### trainstack diff: ❔ unknown" in markdown and "#### ❔ unknown (3)" in markdown
    payload = json.loads(d.format_json(result))
    assert payload["summary"]["worst_impact"] == "unknown" and payload["summary"]["by_impact"]["safe"] == 0
    assert {c["impact"] for c in payload["changes"]} == {"unknown"}
    assert {p["effect"] for c in payload["changes"] for p in c["properties"]} == {"unknown"}


def test_unknown_outranks_a_known_reboot_and_says_both() -> None:
    head = Graph([node(0, userData=boot_script(3, 0), futureInput="rank 0")])
    (change,) = d.diff_graphs(Graph([node(0)]), head).changes
    assert (change.action, change.impact) == ("update", "unknown")
    assert change.reasons == (why.NoProviderData(("futureInput",), "node"), why.NodeRebooted(("userData",)))
    assert change.reason == " ".join(r.text() for r in change.reasons)
    # a resource that is replaced anyway gets every new value: the unknown input does not matter
    moved = Graph([node(0, availabilityZone="cn-hangzhou-j", futureInput="rank 0")])
    (change,) = d.diff_graphs(Graph([node(0)]), moved).changes
    assert (change.action, change.impact) == ("replace", "replaces-nodes")


@pytest.mark.parametrize("kind", [INSTANCE, BUCKET, VPC])
def test_no_mix_of_effects_with_an_unknown_input_is_ever_safe(kind: str) -> None:
    """Every pair of effects on a node, a bucket and another resource: an unknown input (no row, or a grow-only
    value that cannot be compared) makes an update at least ``unknown``, with a reason that says so."""
    import itertools

    effects = (*d.DATA_EFFECTS, "unknown")
    for first, second in itertools.product(effects, repeat=2):
        rules = {(kind, "a"): d.Rule(first, "test"), (kind, "b"): d.Rule(second, "test")}
        for b_old, b_new in ((1, 2), (None, 2)):  # (None, 2): a grow-only b cannot be compared
            old = Resource(kind, "x", {"a": 1, **({} if b_old is None else {"b": b_old})})
            (change,) = d.diff_graphs(Graph([old]), Graph([Resource(kind, "x", {"a": 2, "b": b_new})]),
                                      rules=rules).changes
            if change.action != "update" or not any(p.effect == "unknown" for p in change.properties):
                continue
            assert d.IMPACTS.index(change.impact) <= d.IMPACTS.index("unknown"), (first, second, change)
            codes = {r.code for r in change.reasons}
            assert codes & {why.NoProviderData.code, why.GrowUncomparable.code}, (first, second, change)
            assert change.impact != "safe" and all(r.impact != "safe" for r in change.reasons)


def test_options_and_the_provider_region_keep_their_own_handling() -> None:
    vpc = Resource(VPC, "vpc", {"cidrBlock": "10.0.0.0/16"})
    protected = Resource(VPC, "vpc", {"cidrBlock": "10.0.0.0/16"}, protect=True, retain_on_delete=True)
    (change,) = d.diff_graphs(Graph([vpc]), Graph([protected])).changes
    assert change.impact == "safe" and {p.effect for p in change.properties} == {"in-place"}
    moved = d.diff_graphs(Graph([vpc]), Graph([vpc]), base_info=d.SideInfo("a", "run", "dev", "cn-hangzhou"),
                          head_info=d.SideInfo("b", "run", "dev", "cn-beijing"))
    assert [(p.name, p.effect) for c in moved.changes for p in c.properties] == [("region", "replace")]


def _ignoring_description(tmp_path: Path) -> dict[tuple[str, str], d.Rule]:
    """The real data plus an ``ignored`` row read from a CSV, as the regenerated data will have them."""
    folder = tmp_path / "replacement"
    folder.mkdir()
    _write(folder / "ecs.csv", [INSTANCE, "description", "ignored",
                                "test: alicloud/resource_alicloud_instance.go:1 not ForceNew and no update code"])
    return {**d.load_rules(), **d.load_rules(folder)}


def test_an_ignored_property_is_never_applied_in_every_format(tmp_path: Path) -> None:
    rules = _ignoring_description(tmp_path)
    result = d.diff_graphs(Graph([node(0)]), Graph([node(0, description="rank 0")]), rules=rules)
    (change,) = result.changes
    assert (change.action, change.impact) == ("update", "never-applied")
    assert change.properties[0].effect == "ignored"
    assert change.reasons == (why.NeverApplied(("description",)),)
    assert result.worst_impact == "never-applied"

    text = d.format_text(result)
    assert "Worst impact: never-applied" in text
    assert f"never-applied (1): {d.IMPACT_TITLES['never-applied']}" in text
    assert "description: (unset) -> rank 0 [ignored]" in text

    markdown = d.format_markdown(result)
    assert "### trainstack diff: 🟣 never-applied" in markdown
    assert f"| 🟣 never-applied | 1 | {d.IMPACT_TITLES['never-applied']} |" in markdown
    section = markdown.split("#### 🟣 never-applied (1)")[1]
    assert section.lstrip().startswith(f"_{d.IMPACT_TITLES['never-applied']}_")
    assert "<details>" not in section.split("<sub>")[0]  # it stands out: never folded
    assert "(ignored)" in section and change.reason in section

    payload = json.loads(d.format_json(result))
    assert payload["summary"]["worst_impact"] == "never-applied"
    assert payload["summary"]["by_impact"]["never-applied"] == 1
    (row,) = payload["changes"]
    assert row["impact"] == "never-applied" and row["properties"][0]["effect"] == "ignored"
    assert row["reasons"] == [{"code": why.NeverApplied.code, "impact": "never-applied",
                               "fields": {"properties": ["description"]}, "text": change.reason}]
    titles = {i["impact"]: i["title"] for i in payload["impacts"]}
    assert titles["never-applied"] == d.IMPACT_TITLES["never-applied"]


def test_never_applied_outranks_a_reboot_but_not_a_replacement(tmp_path: Path) -> None:
    rules = _ignoring_description(tmp_path)
    rebooted = Graph([node(0, userData=boot_script(3, 0), description="rank 0")])
    (change,) = d.diff_graphs(Graph([node(0)]), rebooted, rules=rules).changes
    assert change.impact == "never-applied"
    assert [r.code for r in change.reasons] == [why.NeverApplied.code, why.NodeRebooted.code]
    replaced = Graph([node(0, availabilityZone="cn-hangzhou-j", description="rank 0")])
    (change,) = d.diff_graphs(Graph([node(0)]), replaced, rules=rules).changes
    assert (change.action, change.impact) == ("replace", "replaces-nodes")


def test_spot_interruption_stop_replaces_the_spot_nodes(tmp_path: Path) -> None:
    """examples/pretrain-70b.yaml with ``spot.interruption: stop``: spotInterruptionBehavior is ForceNew (~2 s)."""
    rule = d.rule_for(INSTANCE, "spotInterruptionBehavior")
    assert rule.effect == "replace" and "alicloud/resource_alicloud_instance.go:" in rule.source
    text = PRETRAIN.read_text()
    assert "  protection_hours: 1\n" in text and "interruption:" not in text.split("spot:")[1]
    head = tmp_path / "pretrain-70b.yaml"
    head.write_text(text.replace("  protection_hours: 1\n", "  protection_hours: 1\n  interruption: stop\n"))
    out = CliRunner().invoke(main, ["diff", str(PRETRAIN), str(head), "--format", "json",
                                    "-o", str(tmp_path / "diff.json")])
    assert out.exit_code == 2, out.output  # changes
    payload = json.loads((tmp_path / "diff.json").read_text())
    nodes = [c for c in payload["changes"] if c["type"] == INSTANCE]
    assert len(nodes) >= 2
    for c in nodes:
        assert (c["action"], c["impact"]) == ("replace", "replaces-nodes"), c["name"]
        assert [(p["name"], p["old"], p["new"], p["effect"]) for p in c["properties"]] == [
            ("spotInterruptionBehavior", "Terminate", "Stop", "replace")]
    assert payload["summary"]["worst_impact"] == "replaces-nodes"
    assert not any(c["impact"] in ("unknown", "never-applied") for c in payload["changes"])


# --------------------------------------------------------------------------------------------- sides and git
def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.com", *args], cwd=repo,
                   check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A throwaway git repository with the fine-tune example committed as specs/run.yaml."""
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "run.yaml").write_text(FINETUNE.read_text())
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "base")
    return tmp_path


def test_git_side_reads_the_committed_spec_relative_to_the_folder_or_the_root(repo: Path) -> None:
    (repo / "specs" / "run.yaml").write_text("name: changed-in-the-working-tree\n")
    side = d.read_side("HEAD:specs/run.yaml", cwd=repo)
    assert (side.label, side.path) == ("HEAD:specs/run.yaml", "specs/run.yaml")
    assert side.text == FINETUNE.read_text()
    assert d.read_side("HEAD:run.yaml", cwd=repo / "specs").label == "HEAD:specs/run.yaml"  # from a subfolder
    assert d.read_side("HEAD:specs/run.yaml", cwd=repo / "specs").text == side.text  # root-relative also works


@pytest.mark.parametrize(("arg", "message"), [
    ("no-such-branch:specs/run.yaml", "git does not know the revision 'no-such-branch'"),
    ("HEAD:specs/other.yaml", "'specs/other.yaml' does not exist in HEAD"),
    ("HEAD:specs", "is a folder in HEAD, not a spec file"),
])
def test_git_side_errors_are_sentences(repo: Path, arg: str, message: str) -> None:
    with pytest.raises(d.DiffError, match=re.escape(message)):
        d.read_side(arg, cwd=repo)


def test_git_side_outside_a_repository(tmp_path: Path) -> None:
    with pytest.raises(d.DiffError, match="is not inside a git repository"):
        d.read_side("HEAD:run.yaml", cwd=tmp_path)


# --------------------------------------------------------------------------------------------- end to end
def test_diff_sides_from_git_ref_to_working_copy_end_to_end(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two real renders under the mock runtime (~2 s): a retention change and a checkpoint interval change (in the
    cluster facts)."""
    spec = repo / "specs" / "run.yaml"
    spec.write_text(FINETUNE.read_text().replace("retention_days: 14", "retention_days: 30")
                    .replace("interval: 30m", "interval: 45m"))
    monkeypatch.chdir(repo)
    result = d.diff_sides("HEAD:specs/run.yaml", "specs/run.yaml")
    assert (result.base.label, result.head.label) == ("HEAD:specs/run.yaml", "specs/run.yaml")
    # the interval lives in the cluster facts object, not in the node's user data: no reboot
    assert {(c.type, c.action, c.impact) for c in result.changes} == {
        (BUCKET, "update", "safe"), ("alicloud:oss/bucketObject:BucketObject", "update", "safe")}
    facts_change = only(result, "cluster-facts")
    assert "content.checkpoint.interval_seconds: 1800 -> 2700" in facts_change.properties[0].summary

    out = CliRunner().invoke(main, ["diff", "HEAD:specs/run.yaml", "specs/run.yaml", "--format", "markdown",
                                    "-o", "diff.md"])
    assert out.exit_code == 2, out.output
    assert "cluster-facts" in (repo / "diff.md").read_text()


def test_cli_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    same = runner.invoke(main, ["diff", str(FINETUNE), str(FINETUNE)])  # identical: one render
    assert same.exit_code == 0, same.output
    assert "No changes" in same.output

    broken = tmp_path / "broken.yaml"
    broken.write_text(FINETUNE.read_text().replace("nodes: 1", "nodes: many"))
    bad = runner.invoke(main, ["diff", str(FINETUNE), str(broken)])
    assert bad.exit_code == 1  # a bad spec is an error (1), never "changes" (2)
    assert re.search(rf"{re.escape(str(broken))}:\d+:\d+: compute.nodes:", bad.output)
    assert "no diff was computed" in bad.output
    assert "Traceback" not in bad.output
    bad_base = runner.invoke(main, ["diff", str(broken), str(FINETUNE)])  # checked before anything runs
    assert bad_base.exit_code == 1 and f"{broken}:" in bad_base.output

    usage = runner.invoke(main, ["diff", str(FINETUNE), str(FINETUNE), "--format", "yaml"])
    assert usage.exit_code == 1
    missing = runner.invoke(main, ["diff", str(tmp_path / "missing.yaml"), str(FINETUNE)])
    assert missing.exit_code == 1 and "no such file" in missing.output


def test_lingjun_node_changes_are_node_impacts() -> None:
    node = Resource("alicloud:eflo/node:Node", "run-node-0", {"machineType": "efg1.nvga8n", "hpnZone": "A1"})
    moved = Resource("alicloud:eflo/node:Node", "run-node-0", {"machineType": "efg1.nvga1n", "hpnZone": "B1"})
    result = d.diff_graphs(Graph(resources=[node]), Graph(resources=[moved]))
    (change,) = result.changes
    assert change.action == "replace" and change.impact == "replaces-nodes"


def test_a_new_spec_diffs_against_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    result = d.diff_sides("/dev/null", "examples/finetune-7b.yaml")
    assert result.changes and {c.action for c in result.changes} == {"create"}
    gone = d.diff_sides("examples/finetune-7b.yaml", "-")  # an empty HEAD: the stack's deletion
    assert {c.action for c in gone.changes} == {"delete"} and gone.what is not None
    assert gone.what.kind == "deleted stack" and gone.what.gates == ("deleted-stack",)
    with pytest.raises(d.DiffError, match="cannot both be empty"):
        d.diff_sides("-", "/dev/null")


def test_a_delete_before_replace_resource_says_it_is_gone_for_a_while() -> None:
    service = "alicloud:nas/protocolService:ProtocolService"
    old = Resource(service, "shared-fs-nfs", {"vswitchId": "vsw-a", "protocolType": "NFS"})
    new = Resource(service, "shared-fs-nfs", {"vswitchId": "vsw-b", "protocolType": "NFS"}, delete_before_replace=True)
    (change,) = d.diff_graphs(Graph([old]), Graph([new])).changes
    assert change.action == "replace" and change.reasons == (why.Replaced(delete_first=True),)
    (default,) = d.diff_graphs(Graph([old]), Graph([Resource(service, "shared-fs-nfs", {"vswitchId": "vsw-b",
                                                                                         "protocolType": "NFS"})])).changes
    assert default.reasons == (why.Replaced(delete_first=False),)


def test_the_examples_record_delete_before_replace_on_the_protocol_service() -> None:
    graph = api.preview(ROOT / "examples" / "pretrain-70b.yaml").graph
    (service,) = [r for r in graph.resources if r.type == "alicloud:nas/protocolService:ProtocolService"]
    assert service.delete_before_replace  # the CPFS docs allow one protocol service per file system
