"""Reports after a live operation: what a data-keeping destroy kept and why, how to delete retained data by
hand, bucket security left unprotected, and stack outputs with secrets masked."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from generator.live.engine import OutputValue, StateResource

OSS_BUCKET = "alicloud:oss/bucket:Bucket"
# Resources that secure an OSS bucket from outside it; the program keeps them with the bucket (protect and
# retain_on_delete), since deleting one of them would change the kept bucket (DeleteBucketPublicAccessBlock).
BUCKET_SECURING = {
    "alicloud:oss/bucketAcl:BucketAcl": "ACL",
    "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock": "public access block",
    "alicloud:oss/bucketVersioning:BucketVersioning": "versioning",
    "alicloud:oss/bucketServerSideEncryption:BucketServerSideEncryption": "encryption",
}


def _secured_bucket(r: StateResource, by_urn: Mapping[str, StateResource]) -> StateResource | None:
    """The OSS bucket that ``r`` secures (one of its dependencies), if ``r`` is such a resource."""
    if r.type not in BUCKET_SECURING:
        return None
    return next((by_urn[d] for d in r.dependencies if d in by_urn and by_urn[d].type == OSS_BUCKET), None)


def _bucket_label(bucket: StateResource | None) -> str:
    return f" {bucket.id or bucket.name}" if bucket is not None else ""


def kept_report(remaining: Iterable[StateResource]) -> list[str]:
    """Lines naming what a data-keeping destroy left in place, and why each one stayed."""
    remaining = [r for r in remaining if not r.bookkeeping]
    by_urn = {r.urn: r for r in remaining}
    rows: list[tuple[int, str, str, str, str, str]] = []
    for r in remaining:
        if r.type in BUCKET_SECURING:
            rank, why = 1, f"secures the kept bucket{_bucket_label(_secured_bucket(r, by_urn))}"
        elif r.protect:
            rank, why = 0, "protected data"
        else:
            rank, why = 2, "needed by the data"
        rows.append((rank, r.type, r.name, r.short_type, r.id or "-", why))
    rows.sort()
    if not rows:
        return []
    widths = [max(minimum, *(len(str(row[i])) for row in rows)) for i, minimum in ((3, 24), (2, 32), (4, 24))]
    return [
        f"  {t:<{widths[0]}} {name:<{widths[1]}} {rid:<{widths[2]}} ({why})"
        for _, _, name, t, rid, why in rows
    ]


def unkept_bucket_security(state: Iterable[StateResource]) -> list[tuple[StateResource, StateResource]]:
    """(resource, bucket) pairs a data-keeping destroy would delete although they secure a bucket it keeps.

    A stack deployed before the program protected its bucket's ACL and public access block has them unprotected
    in its state; ``trainstack up`` with the current program protects them (no cloud change).
    """
    state = list(state)
    by_urn = {r.urn: r for r in state}
    found = []
    for r in state:
        bucket = _secured_bucket(r, by_urn)
        if bucket is not None and bucket.protect and not r.protect:
            found.append((r, bucket))
    return sorted(found, key=lambda pair: (pair[1].name, pair[0].type, pair[0].name))


def how_to_delete(r: StateResource) -> str:
    """How to delete a retained data resource by hand; trainstack never deletes data itself."""
    if r.type == OSS_BUCKET:
        return (
            f"OSS bucket {r.id}: empty it (every object version; it is versioned) and delete it in the OSS "
            f"console, or `ossutil rm oss://{r.id} -r -f --all-versions` then `ossutil rm oss://{r.id} -b -f`"
        )
    if r.type in BUCKET_SECURING:
        return (
            f"{BUCKET_SECURING[r.type]} of OSS bucket {r.id} ({r.short_type} {r.name}): part of the bucket; it "
            "keeps the bucket secured until you delete the bucket, and goes with it"
        )
    if r.type == "alicloud:nas/fileset:Fileset":
        fs, _, fset = r.id.partition(":")
        return (
            f"CPFS fileset {fset or r.id} of {fs}: turn off its deletion protection and delete it in the NAS "
            f"console, or `aliyun nas DeleteFileset --FileSystemId {fs} --FsetId {fset}`"
        )
    if r.type == "alicloud:nas/fileSystem:FileSystem":
        return (
            f"file system {r.id}: delete it in the File Storage NAS console, or "
            f"`aliyun nas DeleteFileSystem --FileSystemId {r.id}` (delete its filesets first)"
        )
    return f"{r.short_type} {r.name} ({r.id}): delete it in the Alibaba Cloud console"


def format_outputs(outputs: Mapping[str, OutputValue], show_secrets: bool = False) -> dict[str, Any]:
    return {
        k: (v.value if (show_secrets or not v.secret) else "[secret]") for k, v in sorted(outputs.items())
    }
