"""Base weights on PAI-DLC (``model.weights`` with ``compute.platform: pai-dlc``): how the job's containers get them,
since DLC runs no node bootstrap (no node-init, no trainstack-launch).

* ``oss://BUCKET/PREFIX/``: nothing is copied. The folder is registered as a read-only OSS workspace dataset
  (``pai.WorkspaceDataset``) that DLC mounts in every worker at :data:`WEIGHTS_MOUNT`. As for the training data, the
  job's RAM role gets no grant for it: DLC mounts datasets with PAI's service role (docs/platforms.md, "Who reads the
  mounted OSS datasets").
* ``modelscope://ORG/NAME@REVISION``: the weights land once on the shared file system dataset. The fetch logic
  (``trainstack-weights``, ``templates/stack/weights.sh.j2`` rendered for DLC) rides with the job: the stack writes it
  beside the program (``weights.sh``) and publishes it as one private object of the checkpoint bucket,
  :func:`script_key`, outside the checkpoint prefix; a read-only OSS dataset mounts that folder at
  :data:`TOOLS_MOUNT`, and the job's command starts with :data:`PRELUDE`, which runs it before the user's command.
  Every worker runs it; the one that takes the ``mkdir`` lock on the shared file system downloads, the others wait.

DLC injects MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK into every PyTorchJob worker (Alibaba Cloud, "General
environment variables", https://www.alibabacloud.com/help/en/pai/user-guide/general-environment-variables); the
prelude is a child process of the job's shell, so it neither needs nor changes them.
"""

from __future__ import annotations

from generator.plan.model import DlcDataSource, Weights

WEIGHTS_MOUNT = "/mnt/weights"  # where DLC mounts the OSS weights folder (read-only) in every worker
TOOLS_MOUNT = "/mnt/trainstack"  # where DLC mounts the folder holding trainstack-weights (read-only)
TOOLS_DIRS = (
    "trainstack/",
    "trainstack-tools/",
)  # the script's folder in the checkpoint bucket: the first apart
SCRIPT_NAME = "weights.sh"  # the script's name in that folder and in the stack folder
WEIGHTS_OUTPUT = "dataset_weights_id"
TOOLS_OUTPUT = "dataset_tools_id"


def tools_dir(checkpoint_prefix: str) -> str:
    """The folder of the checkpoint bucket that holds trainstack's tools: one the checkpoint prefix neither covers
    nor lies under, so the job (which may write under the prefix) can only read the script, and the tools mount
    shows no checkpoint."""
    return next(
        d for d in TOOLS_DIRS if not d.startswith(checkpoint_prefix) and not checkpoint_prefix.startswith(d)
    )


def script_key(checkpoint_prefix: str) -> str:
    """The object key of trainstack-weights in the checkpoint bucket."""
    return tools_dir(checkpoint_prefix) + SCRIPT_NAME


# The shell command a DLC job runs before the user's command: short, fixed, no value from the spec in it. `bash FILE`
# needs no execute bit, which an OSS mount may not show.
PRELUDE = f"bash {TOOLS_MOUNT}/{SCRIPT_NAME}"


def data_source(name: str, weights: Weights, bucket: str, checkpoint_prefix: str) -> DlcDataSource:
    """The read-only OSS dataset the weights need on DLC: the weights folder itself (OSS), or the tools folder of the
    checkpoint bucket ``bucket`` that holds the fetch script (ModelScope)."""
    if weights.source_kind == "oss":
        return DlcDataSource(
            f"{name}-weights",
            "oss",
            WEIGHTS_MOUNT,
            WEIGHTS_OUTPUT,
            f"oss://{weights.bucket}/{weights.prefix}",
            read_only=True,
        )
    return DlcDataSource(
        f"{name}-tools",
        "oss",
        TOOLS_MOUNT,
        TOOLS_OUTPUT,
        f"oss://{bucket}/{tools_dir(checkpoint_prefix)}",
        read_only=True,
    )


def environment(weights: Weights) -> list[tuple[str, str]]:
    """TRAINSTACK_WEIGHTS_DIR (where the job reads the weights) and TRAINSTACK_WEIGHTS_SOURCE (the canonical source:
    the ModelScope id and revision, or the OSS folder)."""
    return [("TRAINSTACK_WEIGHTS_DIR", weights.landing_path), ("TRAINSTACK_WEIGHTS_SOURCE", weights.uri)]
