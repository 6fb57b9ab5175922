"""The checkpoints part's rules (TS003 to TS007, TS020): the checkpoint bucket is private, blocks public
access, keeps versions, encrypts at rest and survives a destroy, and so do the resources that secure it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from generator.preview.lint.fact import LintFact, settings
from generator.preview.lint.graph import Index, Resource, check, input_of, not_kept

# Resource type tokens (pulumi_alicloud 4.0.0).
BUCKET = "alicloud:oss/bucket:Bucket"
BUCKET_ACL = "alicloud:oss/bucketAcl:BucketAcl"
BUCKET_PAB = "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock"
ACCOUNT_PAB = "alicloud:oss/accountPublicAccessBlock:AccountPublicAccessBlock"
BUCKET_VERSIONING = "alicloud:oss/bucketVersioning:BucketVersioning"
BUCKET_SSE = "alicloud:oss/bucketServerSideEncryption:BucketServerSideEncryption"
SSE_ALGORITHMS = ("AES256", "KMS", "SM4")


# Separate resources that secure a bucket; a bucket that survives a destroy needs them to survive it too.
BUCKET_SECURING = {
    BUCKET_ACL: "oss.BucketAcl",
    BUCKET_PAB: "oss.BucketPublicAccessBlock",
    BUCKET_VERSIONING: "oss.BucketVersioning",
    BUCKET_SSE: "oss.BucketServerSideEncryption",
}

# -- facts


@dataclass(frozen=True, slots=True)
class AclSetting:
    """One ACL of a bucket: an ``oss.BucketAcl``'s (``resource`` is its name) or the bucket's own (``''``)."""

    resource: str
    acl: str


@dataclass(frozen=True, slots=True)
class BucketNotPrivate(LintFact):
    rule = "TS003"
    summary = "a bucket's ACL (its own, or an oss.BucketAcl's) is not private"
    bucket: str
    public: tuple[AclSetting, ...]  # the ACLs that are not private

    def text(self) -> str:
        where = [
            f"oss.BucketAcl {a.resource} is {a.acl}" if a.resource else f"the bucket's own acl is {a.acl}"
            for a in self.public
        ]
        return f"bucket {self.bucket} is not private: {'; '.join(where)}"


@dataclass(frozen=True, slots=True)
class BucketNoAcl(LintFact):
    rule = "TS003"
    summary = "a bucket has no ACL at all (neither its own nor an oss.BucketAcl)"
    bucket: str

    def text(self) -> str:
        return f"bucket {self.bucket} has no private ACL; declare an oss.BucketAcl with acl='private' for it"


@dataclass(frozen=True, slots=True)
class BucketNotBlocked(LintFact):
    rule = "TS004"
    summary = "no public access block (the bucket's or the account's) blocks public access to a bucket"
    bucket: str

    def text(self) -> str:
        return (
            f"bucket {self.bucket} does not block public access; declare an oss.BucketPublicAccessBlock with "
            "block_public_access=True for it"
        )


@dataclass(frozen=True, slots=True)
class BucketNotVersioned(LintFact):
    rule = "TS005"
    summary = "a bucket's versioning (inline or an oss.BucketVersioning) is not Enabled"
    bucket: str
    statuses: tuple[str, ...]  # the versioning statuses declared (none: versioning unset)

    def text(self) -> str:
        return (
            f"bucket {self.bucket} does not keep versions; set "
            "versioning=BucketVersioningArgs(status='Enabled')"
        )


@dataclass(frozen=True, slots=True)
class BucketNotEncrypted(LintFact):
    rule = "TS006"
    summary = "a bucket names no server-side encryption algorithm (KMS, AES256 or SM4)"
    bucket: str
    algorithms: tuple[str, ...]  # the sse_algorithm values declared (none: encryption unset)

    def text(self) -> str:
        return (
            f"bucket {self.bucket} does not encrypt objects at rest; set server_side_encryption_rule with "
            "sse_algorithm KMS (or AES256)"
        )


@dataclass(frozen=True, slots=True)
class BucketNotKept(LintFact):
    rule = "TS007"
    summary = "a bucket lacks protect or retain_on_delete, or sets force_destroy"
    bucket: str
    missing: tuple[str, ...]  # the resource options it lacks: protect, retain_on_delete
    force_destroy: bool

    def text(self) -> str:
        problems = [f"it lacks {settings(self.missing)}"] if self.missing else []
        if self.force_destroy:
            problems.append("force_destroy=True would delete every object with it")
        return f"bucket {self.bucket} would not survive a destroy: {'; '.join(problems)}"


@dataclass(frozen=True, slots=True)
class SecuringNotKept(LintFact):
    rule = "TS020"
    summary = (
        "a resource securing a kept bucket (ACL, public access block, versioning, encryption) is not kept"
    )
    kind: str  # the securing resource's type, as BUCKET_SECURING names it (oss.BucketAcl, ...)
    name: str  # the securing resource's name
    bucket: str
    missing: tuple[str, ...]  # the resource options it lacks: protect, retain_on_delete

    def text(self) -> str:
        return (
            f"{self.kind} {self.name} of the kept bucket {self.bucket} lacks {settings(self.missing)}: "
            "a destroy that keeps the bucket would delete it"
        )


# -- checks


def _bucket_companions(ix: Index, bucket: Resource, types: str | tuple[str, ...]) -> list[Resource]:
    """Resources configuring ``bucket`` (matched by bucket name, which the mock runtime resolves)."""
    name = input_of(bucket, "bucket")
    types = (types,) if isinstance(types, str) else types
    return [r for r in ix.of(*types) if name is not None and input_of(r, "bucket") == name]


def _name(bucket: Resource) -> str:
    return str(input_of(bucket, "bucket", bucket.name))


def _declared(values: list[object]) -> tuple[str, ...]:
    return tuple(str(v) for v in values if v is not None)


@check("TS003")
def _bucket_acl(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for b in ix.of(BUCKET):
        acls = [AclSetting(a.name, str(input_of(a, "acl"))) for a in _bucket_companions(ix, b, BUCKET_ACL)]
        if input_of(b, "acl") is not None:
            acls.append(AclSetting("", str(input_of(b, "acl"))))
        public = tuple(a for a in acls if a.acl != "private")
        if public:
            yield b, BucketNotPrivate(_name(b), public)
        elif not acls:
            yield b, BucketNoAcl(_name(b))


@check("TS004")
def _bucket_public_access_block(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    account_blocked = any(input_of(a, "blockPublicAccess") is True for a in ix.of(ACCOUNT_PAB))
    for b in ix.of(BUCKET):
        blocks = _bucket_companions(ix, b, BUCKET_PAB)
        if account_blocked or any(input_of(p, "blockPublicAccess") is True for p in blocks):
            continue
        yield b, BucketNotBlocked(_name(b))


@check("TS005")
def _bucket_versioning(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for b in ix.of(BUCKET):
        inline = input_of(b, "versioning", {})
        statuses = [inline.get("status") if isinstance(inline, Mapping) else None]
        statuses += [input_of(v, "status") for v in _bucket_companions(ix, b, BUCKET_VERSIONING)]
        if "Enabled" not in statuses:
            yield b, BucketNotVersioned(_name(b), _declared(statuses))


@check("TS006")
def _bucket_encryption(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for b in ix.of(BUCKET):
        inline = input_of(b, "serverSideEncryptionRule", {})
        algorithms = [inline.get("sseAlgorithm") if isinstance(inline, Mapping) else None]
        algorithms += [input_of(s, "sseAlgorithm") for s in _bucket_companions(ix, b, BUCKET_SSE)]
        if not any(a in SSE_ALGORITHMS for a in algorithms):
            yield b, BucketNotEncrypted(_name(b), _declared(algorithms))


@check("TS007")
def _bucket_kept(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for b in ix.of(BUCKET):
        force_destroy = input_of(b, "forceDestroy") is True
        if not_kept(b) or force_destroy:
            yield b, BucketNotKept(_name(b), not_kept(b), force_destroy)


@check("TS020")
def _bucket_security_kept(ix: Index) -> Iterator[tuple[Resource, LintFact]]:
    for b in ix.of(BUCKET):
        if not (b.protect or b.retain_on_delete):
            continue  # a bucket that does not survive a destroy is TS007's finding
        for r in _bucket_companions(ix, b, tuple(BUCKET_SECURING)):
            if not_kept(r):
                yield r, SecuringNotKept(BUCKET_SECURING[r.type], r.name, _name(b), not_kept(r))
