"""The base-weights source of a spec (``model.weights``): its grammar, its safe alphabet and its parse.

``modelscope://ORG/NAME[@REVISION]`` names a ModelScope model repository (``modelscope download --model ORG/NAME
--revision REVISION``); ``oss://BUCKET/PREFIX/`` names a folder of an OSS bucket. The value reaches a bash script, a
Python program, JSON and Markdown, so on top of escaping every part is held to an alphabet that needs no quoting in
any of them (letters, digits and ``_ . -``; ``/`` between prefix segments). An OSS bucket name must follow OSS's own
rules: 3-63 lowercase letters, digits and '-', starting and ending with a letter or digit (Alibaba Cloud, "Bucket
naming conventions", https://www.alibabacloud.com/help/en/oss/user-guide/bucket-naming-conventions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_WEIGHTS_CHARS = 512
DEFAULT_REVISION = "master"  # ModelScope's default branch (snapshot_download's revision default)
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,126}[A-Za-z0-9_])?"  # an organisation, model name or revision
_BUCKET = r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]"
_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9_.=+-]{0,254}"
# The JSON Schema pattern (editors); the validator below says precisely what is wrong.
WEIGHTS_RE = (
    r"^(modelscope://[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*(@[A-Za-z0-9][A-Za-z0-9_.-]*)?"
    r"|oss://[a-z0-9][a-z0-9-]{1,61}[a-z0-9]/[A-Za-z0-9_][A-Za-z0-9_.=+/-]*)$"
)
SCHEMES = "modelscope://ORG/NAME[@REVISION] or oss://BUCKET/PREFIX/"
EXAMPLES = "e.g. modelscope://Qwen/Qwen2.5-7B-Instruct@master or oss://my-models/llama-2-7b/"


@dataclass(frozen=True)
class WeightsSource:
    """A parsed ``model.weights``: ``kind`` is "modelscope" or "oss"; ``uri`` is the canonical spelling."""

    kind: str
    uri: str
    model_id: str = ""  # ORG/NAME (ModelScope)
    revision: str = ""  # ModelScope branch, tag or commit
    bucket: str = ""  # OSS
    prefix: str = ""  # OSS, ends with '/'


class WeightsError(ValueError):
    """Why a weights source is refused, with a hint; the loader turns it into a located problem."""

    def __init__(self, message: str, hint: str = EXAMPLES) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


def _unsafe(text: str) -> str | None:
    """The first character outside the alphabet every part of a weights source keeps to, shown readably."""
    bad = re.search(r"[^A-Za-z0-9_.=+@/:-]", text)
    if not bad:
        return None
    ch = bad.group()
    return repr(ch) if ch.isprintable() and not ch.isspace() else f"U+{ord(ch):04X}"


def parse(value: str) -> WeightsSource:
    """Parse and check a weights source; raises :class:`WeightsError` saying what to change."""
    shown = f"{value[:80]!r}{'...' if len(value) > 80 else ''}"
    if len(value) > MAX_WEIGHTS_CHARS:
        raise WeightsError(f"the weights source is {len(value):,} characters; at most {MAX_WEIGHTS_CHARS}")
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in ("modelscope", "oss"):
        got = f"the scheme {scheme + '://'!r}" if sep else "no scheme"
        raise WeightsError(
            f"{shown} has {got}; model.weights takes {SCHEMES}",
            "Hugging Face and http(s) sources are not supported: mirror the files to OSS, or use the "
            "model's ModelScope id; " + EXAMPLES,
        )
    bad = _unsafe(rest)
    if bad:
        raise WeightsError(
            f"{shown} contains {bad}; a weights source holds only letters, digits and _ . - "
            "(and @ before a ModelScope revision, / between parts)",
            "the source is written into a shell script and a Python program, so quotes, '$', "
            "backquotes, spaces, ';' and other shell or YAML characters are refused; " + EXAMPLES,
        )
    if scheme == "modelscope":
        return _modelscope(value, rest, shown)
    return _oss(value, rest, shown)


def _modelscope(value: str, rest: str, shown: str) -> WeightsSource:
    repo, at, revision = rest.partition("@")
    parts = repo.split("/")
    if len(parts) < 2 or not parts[1]:
        raise WeightsError(
            f"{shown} names no model: write modelscope://ORG/NAME",
            "e.g. modelscope://Qwen/Qwen2.5-7B-Instruct (the id shown on the model's ModelScope page)",
        )
    if len(parts) > 2:
        raise WeightsError(
            f"{shown} has more than ORG/NAME before the revision",
            "a ModelScope model id is ORG/NAME, e.g. modelscope://Qwen/Qwen2.5-7B-Instruct@master",
        )
    for what, part in (("organisation", parts[0]), ("model name", parts[1])):
        if not re.fullmatch(_PART, part) or ".." in part:
            raise WeightsError(
                f"{shown}: the {what} {part!r} is not a ModelScope name: 1-128 letters, digits, "
                "'_', '.' and '-', starting with a letter or digit, not ending with '.' or '-'"
            )
    if at and (not revision or not re.fullmatch(_PART, revision) or ".." in revision or "@" in revision):
        raise WeightsError(
            f"{shown}: the revision {revision!r} is not a branch, tag or commit name trainstack "
            "accepts: 1-128 letters, digits, '_', '.' and '-', starting with a letter or digit",
            "e.g. @master, @v1.0.0 or a commit id; leave it out for master",
        )
    rev = revision if at else DEFAULT_REVISION
    return WeightsSource("modelscope", f"modelscope://{repo}@{rev}", model_id=repo, revision=rev)


def _oss(value: str, rest: str, shown: str) -> WeightsSource:
    bucket, slash, prefix = rest.partition("/")
    if "@" in rest:
        raise WeightsError(
            f"{shown}: an OSS source takes no '@REVISION'",
            "version the weights in the prefix instead, e.g. oss://my-models/llama-2-7b/v1/",
        )
    if not re.fullmatch(_BUCKET, bucket):
        raise WeightsError(
            f"{shown}: {bucket!r} is not an OSS bucket name: 3-63 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit",
            "OSS's naming rules (https://www.alibabacloud.com/help/en/oss/user-guide/"
            "bucket-naming-conventions); e.g. oss://my-models/llama-2-7b/",
        )
    prefix = prefix.rstrip("/")
    if not slash or not prefix:
        raise WeightsError(
            f"{shown} names a whole bucket; give the folder that holds the weights",
            "the nodes' RAM role may read that folder only; e.g. oss://my-models/llama-2-7b/",
        )
    for seg in prefix.split("/"):
        if not re.fullmatch(_SEGMENT, seg) or seg in (".", ".."):
            raise WeightsError(
                f"{shown}: the folder segment {seg!r} is empty, '.' or '..', or does not start with "
                "a letter, digit or '_'",
                "e.g. oss://my-models/llama-2-7b/",
            )
    if len(prefix) + 1 > 1023:
        raise WeightsError(f"{shown}: the prefix is over 1,023 bytes, the longest OSS object key")
    return WeightsSource("oss", f"oss://{bucket}/{prefix}/", bucket=bucket, prefix=prefix + "/")
