"""Lint fixture: a stack a person hand-edited into breaking trainstack's rules (see README.md). Never deployed."""

import pulumi
import pulumi_alicloud as alicloud

vpc = alicloud.vpc.Network("vpc", vpc_name="insecure", cidr_block="10.0.0.0/16")
vswitch = alicloud.vpc.Switch("vswitch", vpc_id=vpc.id, zone_id="cn-hangzhou-k", cidr_block="10.0.0.0/20")
security_group = alicloud.ecs.SecurityGroup("security-group", vpc_id=vpc.id)

# TS001 (error) and TS002 (warning): SSH from anywhere.
alicloud.ecs.SecurityGroupRule(
    "open-ssh",
    security_group_id=security_group.id,
    type="ingress",
    ip_protocol="tcp",
    port_range="22/22",
    cidr_ip="0.0.0.0/0",
    policy="accept",
    nic_type="intranet",
)

# TS004 (waived in plan.json): private, versioned, encrypted and protected, but no public access block.
bucket = alicloud.oss.Bucket(
    "bucket",
    bucket="insecure-fixture-bucket",
    force_destroy=False,
    versioning=alicloud.oss.BucketVersioningArgs(status="Enabled"),
    server_side_encryption_rule=alicloud.oss.BucketServerSideEncryptionRuleArgs(sse_algorithm="KMS"),
    opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True),
)
alicloud.oss.BucketAcl("bucket-acl", bucket=bucket.bucket, acl="private",
                       opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True))

# TS012 and TS013 (errors): metadata in normal mode and a login password.
alicloud.ecs.Instance(
    "node-0",
    instance_type="ecs.gn7e-c16g1.32xlarge",
    image_id="m-fixture",
    vswitch_id=vswitch.id,
    security_groups=[security_group.id],
    key_name="insecure-admin",
    password="Fixture-Password-1",
    internet_max_bandwidth_out=0,
    system_disk_encrypted=True,
    http_tokens="optional",
)
