"""The secure-by-default rules a spec can waive: stable id, severity, title and rationale of each.

They are vocabulary of the spec (``waivers[].rule`` names them, and loading checks the names), so they live
here; the checks that find violations live in :mod:`generator.preview.lint`, keyed by the same ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


# The cluster's parts. The same names are the planner's modules (generator/plan/<part>.py), the program
# template's partials (templates/stack/parts/<part>[_ecs|_lingjun].py.j2), the sections of the generated
# __main__.py, and the part each lint rule checks (tests/test_layout.py keeps them in step).
PARTS = (
    "network",
    "identity",
    "checkpoints",
    "storage",
    "compute",
    "lingjun",
    "dlc",
    "spot",
    "cost",
    "outputs",
)

_PART_OF_RULE = {
    "TS001": "network",
    "TS002": "network",
    "TS003": "checkpoints",
    "TS004": "checkpoints",
    "TS005": "checkpoints",
    "TS006": "checkpoints",
    "TS007": "checkpoints",
    "TS020": "checkpoints",
    "TS008": "identity",
    "TS009": "identity",
    "TS010": "compute",
    "TS011": "compute",
    "TS012": "compute",
    "TS013": "compute",
    "TS014": "compute",
    "TS015": "storage",
    "TS016": "storage",
    "TS017": "storage",
    "TS018": "storage",
    "TS019": "storage",
    "TS021": "storage",
}


@dataclass(frozen=True)
class Rule:
    """A policy: its stable id, how bad a violation is, a one-line title, why it exists, and the part it checks."""

    id: str
    severity: Severity
    title: str
    rationale: str
    part: str = ""


def _rule(rule_id: str, severity: Severity, title: str, rationale: str) -> Rule:
    return Rule(rule_id, severity, title, rationale, _PART_OF_RULE[rule_id])


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        _rule(
            "TS001",
            "error",
            "No security group ingress from anywhere (0.0.0.0/0, ::/0) or from a public range wider "
            "than an IPv4 /8 or an IPv6 /32",
            "Training nodes have no business being reachable from the internet: every open port on a GPU node is "
            "an entry point to the data and credentials on it. Nodes talk to each other through the security group "
            "itself; administrators come from named networks, and a range wider than a /8 (IPv4) or a /32 (IPv6) "
            "names no one network: 0.0.0.0/1 is half the internet.",
        ),
        _rule(
            "TS002",
            "warning",
            "SSH ingress only from named administrator networks",
            "SSH from a CIDR is sometimes needed (network.admin_cidrs), so it is a warning, not an error: each "
            "such rule is shown so a reviewer sees who can log in to the cluster.",
        ),
        _rule(
            "TS003",
            "error",
            "OSS bucket has a private ACL",
            "Checkpoints and datasets are the most valuable thing a training run produces. An oss.BucketAcl with "
            "acl=private states the intent explicitly instead of relying on the account default.",
        ),
        _rule(
            "TS004",
            "error",
            "OSS bucket blocks public access",
            "A public access block makes a later public ACL or bucket policy ineffective, so one mistaken change "
            "cannot publish the model weights.",
        ),
        _rule(
            "TS005",
            "error",
            "OSS bucket versioning is Enabled",
            "With versioning a checkpoint overwritten or deleted by a buggy job (or an attacker) can be restored; "
            "trainstack's lifecycle rules expire the old versions so this costs little.",
        ),
        _rule(
            "TS006",
            "error",
            "OSS bucket encrypts objects at rest",
            "Server-side encryption (KMS, AES256 or SM4) is free or cheap and is required by most data-handling "
            "policies for training data and weights.",
        ),
        _rule(
            "TS007",
            "error",
            "OSS bucket survives destroy",
            "A checkpoint bucket must outlive the cluster: protect=True and retain_on_delete=True keep `pulumi "
            "destroy` from deleting it, and force_destroy must not be true (it deletes every object with it).",
        ),
        _rule(
            "TS008",
            "error",
            "RAM policies grant no wildcard action or resource",
            "A node role is reachable by any process on any node through the metadata service. An Allow on '*', on "
            "every action of a service ('ram:*') or every resource of a service ('acs:ram:*:*:*') (or "
            "NotAction/NotResource, or a System *FullAccess/AdministratorAccess policy) turns one compromised "
            "training script into a compromised account.",
        ),
        _rule(
            "TS009",
            "error",
            "RAM policies reach one OSS bucket",
            "The node role needs its checkpoint bucket and nothing else; OSS resources are written as "
            "acs:oss:*:*:<bucket> or acs:oss:*:*:<bucket>/<prefix>, never a wildcard bucket or a second bucket.",
        ),
        _rule(
            "TS010",
            "error",
            "ECS system disks are encrypted",
            "System disks hold the node's SSH host keys, credentials cached by tools and often a copy of the data; "
            "encryption is a creation-time option and cannot be added later.",
        ),
        _rule(
            "TS011",
            "error",
            "ECS data disks are encrypted",
            "Data disks hold dataset shards and local checkpoints; like system disks they can only be encrypted "
            "when created.",
        ),
        _rule(
            "TS012",
            "error",
            "ECS instance metadata requires tokens (IMDSv2 hardened mode)",
            "The metadata service hands out the node role's STS credentials. Hardened mode (http_tokens=required) "
            "defeats the SSRF-style requests that steal them in normal mode.",
        ),
        _rule(
            "TS013",
            "error",
            "Nodes never log in with a password",
            "A password in the program ends up in Pulumi state and can be guessed; a key pair cannot. On ECS, "
            "password, kms_encrypted_password and password_inherit must be unset (key_name is optional: without it nodes "
            "are reached through Cloud Assistant); on Lingjun, "
            "login_password must be unset on eflo Node, NodeGroup (and its nodes) and Cluster node groups, and the "
            "node group names a key_pair_name.",
        ),
        _rule(
            "TS014",
            "error",
            "ECS instances have no public IP",
            "Nodes reach the internet through the NAT gateway (outbound only). A public IP, from "
            "internet_max_bandwidth_out > 0, allocate_public_ip or an EIP bound to the instance, exposes every "
            "port the security group ever opens.",
        ),
        _rule(
            "TS015",
            "error",
            "Shared file systems survive destroy",
            "CPFS and NAS hold the dataset and recent checkpoints; protect=True and retain_on_delete=True keep "
            "`pulumi destroy` or a refactor from deleting them.",
        ),
        _rule(
            "TS016",
            "error",
            "NAS access rules admit only private networks",
            "An access rule is the file system's firewall. Its source must be a private range (10/8, 172.16/12, "
            "192.168/16 or IPv6 fc00::/7), normally the cluster VPC, never 0.0.0.0/0.",
        ),
        _rule(
            "TS017",
            "error",
            "File system exports use a VPC access group that is not open",
            "An export (NAS mount target, CPFS protocol mount target) admits whoever its access group admits. It "
            "must be DEFAULT_VPC_GROUP_NAME or a Vpc access group declared in the same program with private rules, "
            "so the lint can see them; classic-network groups are open to other tenants.",
        ),
        _rule(
            "TS018",
            "error",
            "CPFS filesets are protected from deletion",
            "A fileset holds an imported dataset (often tens of TiB that take hours to re-import); "
            "deletion_protection=True plus protect and retain_on_delete keep it.",
        ),
        _rule(
            "TS019",
            "error",
            "NAS file systems are encrypted at rest",
            "Standard and Extreme NAS support encryption (encrypt_type 1 with a NAS-managed key, or 2 with a KMS "
            "key). CPFS cannot be encrypted (encrypt_type 0 only), so it is exempt.",
        ),
        _rule(
            "TS020",
            "error",
            "What secures a kept OSS bucket is kept with it",
            "A bucket that outlives a destroy must keep its ACL, public access block, versioning and encryption "
            "resources too: without protect=True and retain_on_delete=True a data-keeping destroy deletes them "
            "(DeleteBucketPublicAccessBlock) and leaves the kept bucket open to a later public ACL or policy.",
        ),
        _rule(
            "TS021",
            "error",
            "NAS and CPFS descriptions use the alphabet the API accepts",
            "NAS and CPFS resources (file system, protocol service, export, fileset, data flow, access group) take a "
            "description of 2 to 128 characters that starts with a letter and holds only letters, digits, ':', '_' "
            "and '-' (pulumi_alicloud nas.FileSystem/ProtocolService/ProtocolMountTarget docstrings; NAS API "
            "CreateFileset, CreateAccessGroup, CreateDataFlow). The provider does not check it, so a space or a '/' "
            "fails the create call mid-deploy, after the resources before it exist.",
        ),
    )
}
