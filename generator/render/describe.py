"""Resource descriptions in the alphabet Alibaba Cloud accepts for them: the templates' ``desc_nas`` filter.

NAS and CPFS resources take a description of 2 to 128 characters that starts with a letter (or a Chinese
character) and holds only letters, digits, colons, underscores and hyphens: no spaces and no ``/``. Sources:
the pulumi_alicloud 4.0.0 docstrings of ``nas.FileSystem``, ``nas.ProtocolService`` and
``nas.ProtocolMountTarget`` (``description``); terraform-provider-alicloud
``website/docs/r/nas_data_flow.html.markdown`` (``description``); Alibaba's API references for CreateFileset
(https://help.aliyun.com/zh/cpfs/api-createfileset) and CreateAccessGroup
(https://help.aliyun.com/document_detail/62630.html). The provider does not check these descriptions before it
calls the API (the resources declare ``description`` without a ValidateFunc), so a bad one fails mid-deploy.

:func:`nas_description` maps any text into that alphabet; lint rule TS021 (:mod:`generator.preview.lint.storage`)
checks the same :data:`NAS_DESCRIPTION` pattern on the resources a program declares.
"""

from __future__ import annotations

import re
from typing import Any

from generator.render.escape import Escaped, UnsafeValue, py_literal

# Letters include the CJK ideographs the documentation allows; trainstack itself writes ASCII only.
NAS_DESCRIPTION = re.compile(r"[A-Za-z\u4e00-\u9fff][A-Za-z0-9:_\u4e00-\u9fff-]{1,127}")
NAS_DESCRIPTION_RULE = (
    "2 to 128 characters, a letter first, then only letters, digits, ':', '_' and '-' (no spaces, no '/')"
)
NAS_DESCRIPTION_SOURCE = (
    "pulumi_alicloud 4.0.0 nas.FileSystem/ProtocolService/ProtocolMountTarget docstrings; "
    "Alibaba Cloud NAS API CreateFileset, CreateAccessGroup, CreateDataFlow"
)

_OUTSIDE = re.compile(r"[^A-Za-z0-9:_-]+")
_PREFIX = "trainstack_"  # for text that does not start with a letter


def nas_description(text: Any) -> str:
    """``text`` in the NAS description alphabet: every run of other characters becomes one ``_``.

    ``scheme://`` becomes ``scheme:``, so ``import oss://bucket/prefix/`` reads ``import_oss:bucket_prefix``.
    Text that does not start with a letter gets a ``trainstack_`` prefix; the result is cut to 128 characters.
    """
    out = _OUTSIDE.sub("_", str(text).replace("://", ":")).strip("_")
    if len(out) < 2 or not ("A" <= out[0] <= "Z" or "a" <= out[0] <= "z"):
        out = _PREFIX + out
    out = out[:128].rstrip("_")
    if not NAS_DESCRIPTION.fullmatch(
        out
    ):  # cannot happen; refuse rather than write a description the API rejects
        raise UnsafeValue(f"{text!r} could not be made a NAS description ({out!r})")
    return out


def desc_nas(text: Any) -> Escaped:
    """Template filter: a Python string literal holding ``text`` as a valid NAS/CPFS description."""
    return py_literal(nas_description(text))


FILTERS = {"desc_nas": desc_nas}

__all__ = [
    "FILTERS",
    "NAS_DESCRIPTION",
    "NAS_DESCRIPTION_RULE",
    "NAS_DESCRIPTION_SOURCE",
    "desc_nas",
    "nas_description",
]
