"""The stack digest: SHA-256 over a stack folder's deployable files, which every preview prints and ``trainstack up
--expect-digest`` checks (:mod:`generator.live.target`, which adds the folder's own stack and the live errors).

Apart from the live engine, so that an offline ``preview`` (:func:`generator.api.preview`), which prints the digest
of the folder it ran, does not load the engine's package.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from generator.render.files import MARKER
from generator.render.stackdir import load_yaml as _load_yaml

PULUMI_BOOKKEEPING_KEYS = (
    "encryptionsalt",
    "secretsprovider",
    "encryptedkey",
)  # Pulumi writes these, not render


def _digest_files(stack_dir: Path, stack: str) -> list[tuple[str, bytes]]:
    """The files that make up what is deployed: not the venv, caches, Pulumi state or other stacks' configs."""
    out: list[tuple[str, bytes]] = []
    for root, dirs, files in os.walk(stack_dir):
        rel_root = Path(root).relative_to(stack_dir).as_posix()
        rel_root = "" if rel_root == "." else rel_root + "/"
        dirs[:] = [
            d
            for d in dirs
            if not (
                d in ("__pycache__", ".git")
                or (not rel_root and d in ("venv", ".venv"))
                or (rel_root == f"{MARKER}/")
            )
        ]
        for name in files:
            rel = rel_root + name
            if name.endswith(".pyc") or name == ".DS_Store":
                continue
            if rel.startswith(f"{MARKER}/") and rel != f"{MARKER}/DO_NOT_EDIT":
                continue
            if (
                not rel_root
                and name.startswith("Pulumi.")
                and name not in ("Pulumi.yaml", f"Pulumi.{stack}.yaml")
            ):
                continue
            data = (Path(root) / name).read_bytes()
            if rel == f"Pulumi.{stack}.yaml":
                data = _canonical_stack_config(data)
            out.append((rel, data))
    return sorted(out)


def _canonical_stack_config(data: bytes) -> bytes:
    """Stack config by meaning: comments, layout and Pulumi's own keys (the passphrase salt) do not count.

    Pulumi adds ``encryptionsalt`` when the stack is created and may reformat the file; neither changes what
    is deployed, so neither may change the digest a reviewer pinned. Config values (``pulumi config set``) do.
    """
    parsed = _load_yaml(data.decode("utf-8", errors="replace"))
    if not isinstance(parsed, dict):
        return data
    kept = {k: v for k, v in parsed.items() if k not in PULUMI_BOOKKEEPING_KEYS}
    return json.dumps(kept, sort_keys=True, default=str).encode()


def stack_digest(stack_dir: str | Path, stack: str) -> str:
    """SHA-256 over the sorted (path, bytes) of the stack folder's deployable files, with ``stack``'s config.

    It covers the program, its config and plan.json (hence the spec digest), so a deploy pinned with
    ``--expect-digest`` applies byte for byte the folder that was reviewed.
    """
    stack_dir = Path(stack_dir)
    h = hashlib.sha256()
    for rel, data in _digest_files(stack_dir, stack):
        raw = rel.encode()
        h.update(len(raw).to_bytes(8, "big") + raw + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


__all__ = ["PULUMI_BOOKKEEPING_KEYS", "stack_digest"]
