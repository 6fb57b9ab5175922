"""The checkpoints part's rules (TS003 to TS007, TS020): the checkpoint bucket is private, blocks public access,
keeps versions, encrypts at rest and survives a destroy, and so do the resources that secure it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from generator.preview.lint.graph import Index, Resource, check, input_of, not_kept

# Resource type tokens (pulumi_alicloud 4.0.0).
BUCKET = "alicloud:oss/bucket:Bucket"
BUCKET_ACL = "alicloud:oss/bucketAcl:BucketAcl"
BUCKET_PAB = "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock"
ACCOUNT_PAB = "alicloud:oss/accountPublicAccessBlock:AccountPublicAccessBlock"
BUCKET_VERSIONING = "alicloud:oss/bucketVersioning:BucketVersioning"
BUCKET_SSE = "alicloud:oss/bucketServerSideEncryption:BucketServerSideEncryption"
SSE_ALGORITHMS = ("AES256", "KMS", "SM4")


def _bucket_companions(ix: Index, bucket: Resource, types: str | tuple[str, ...]) -> list[Resource]:
    """Resources configuring ``bucket`` (matched by bucket name, which the mock runtime resolves)."""
    name = input_of(bucket, "bucket")
    types = (types,) if isinstance(types, str) else types
    return [r for r in ix.of(*types) if name is not None and input_of(r, "bucket") == name]


@check("TS003")
def _bucket_acl(ix: Index) -> Iterator[tuple[Resource, str]]:
    for b in ix.of(BUCKET):
        acls = [
            (f"oss.BucketAcl {a.name}", input_of(a, "acl")) for a in _bucket_companions(ix, b, BUCKET_ACL)
        ]
        if input_of(b, "acl") is not None:
            acls.append(("the bucket's own acl", input_of(b, "acl")))
        public = [f"{where} is {acl}" for where, acl in acls if acl != "private"]
        if public:
            yield b, f"bucket {input_of(b, 'bucket', b.name)!s} is not private: {'; '.join(public)}"
        elif not acls:
            yield (
                b,
                (
                    f"bucket {input_of(b, 'bucket', b.name)!s} has no private ACL; declare an oss.BucketAcl "
                    "with acl='private' for it"
                ),
            )


@check("TS004")
def _bucket_public_access_block(ix: Index) -> Iterator[tuple[Resource, str]]:
    account_blocked = any(input_of(a, "blockPublicAccess") is True for a in ix.of(ACCOUNT_PAB))
    for b in ix.of(BUCKET):
        blocks = _bucket_companions(ix, b, BUCKET_PAB)
        if account_blocked or any(input_of(p, "blockPublicAccess") is True for p in blocks):
            continue
        yield (
            b,
            (
                f"bucket {input_of(b, 'bucket', b.name)!s} does not block public access; declare an "
                "oss.BucketPublicAccessBlock with block_public_access=True for it"
            ),
        )


@check("TS005")
def _bucket_versioning(ix: Index) -> Iterator[tuple[Resource, str]]:
    for b in ix.of(BUCKET):
        inline = input_of(b, "versioning", {})
        statuses = [inline.get("status") if isinstance(inline, Mapping) else None]
        statuses += [input_of(v, "status") for v in _bucket_companions(ix, b, BUCKET_VERSIONING)]
        if "Enabled" not in statuses:
            yield (
                b,
                (
                    f"bucket {input_of(b, 'bucket', b.name)!s} does not keep versions; set "
                    "versioning=BucketVersioningArgs(status='Enabled')"
                ),
            )


@check("TS006")
def _bucket_encryption(ix: Index) -> Iterator[tuple[Resource, str]]:
    for b in ix.of(BUCKET):
        inline = input_of(b, "serverSideEncryptionRule", {})
        algorithms = [inline.get("sseAlgorithm") if isinstance(inline, Mapping) else None]
        algorithms += [input_of(s, "sseAlgorithm") for s in _bucket_companions(ix, b, BUCKET_SSE)]
        if not any(a in SSE_ALGORITHMS for a in algorithms):
            yield (
                b,
                (
                    f"bucket {input_of(b, 'bucket', b.name)!s} does not encrypt objects at rest; set "
                    "server_side_encryption_rule with sse_algorithm KMS (or AES256)"
                ),
            )


@check("TS007")
def _bucket_kept(ix: Index) -> Iterator[tuple[Resource, str]]:
    for b in ix.of(BUCKET):
        problems = [f"it lacks {' and '.join(not_kept(b))}"] if not_kept(b) else []
        if input_of(b, "forceDestroy") is True:
            problems.append("force_destroy=True would delete every object with it")
        if problems:
            yield (
                b,
                f"bucket {input_of(b, 'bucket', b.name)!s} would not survive a destroy: {'; '.join(problems)}",
            )


# Separate resources that secure a bucket; a bucket that survives a destroy needs them to survive it too.
BUCKET_SECURING = {
    BUCKET_ACL: "oss.BucketAcl",
    BUCKET_PAB: "oss.BucketPublicAccessBlock",
    BUCKET_VERSIONING: "oss.BucketVersioning",
    BUCKET_SSE: "oss.BucketServerSideEncryption",
}


@check("TS020")
def _bucket_security_kept(ix: Index) -> Iterator[tuple[Resource, str]]:
    for b in ix.of(BUCKET):
        if not (b.protect or b.retain_on_delete):
            continue  # a bucket that does not survive a destroy is TS007's finding
        for r in _bucket_companions(ix, b, tuple(BUCKET_SECURING)):
            if not_kept(r):
                yield (
                    r,
                    (
                        f"{BUCKET_SECURING[r.type]} {r.name} of the kept bucket {input_of(b, 'bucket', b.name)!s} "
                        f"lacks {' and '.join(not_kept(r))}: a destroy that keeps the bucket would delete it"
                    ),
                )
