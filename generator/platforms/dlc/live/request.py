"""The PAI-DLC CreateJob request of ``trainstack submit``, built from the plan and the stack outputs (pure).

The request is a map in the API's own shape (PascalCase keys, as CreateJob documents them and as
``alibabacloud_pai_dlc20201203.models.CreateJobRequest.to_map()`` prints them); :mod:`~generator.platforms.dlc.live.client`
turns it into the SDK's model. Nothing here reads a clock, the environment or the network, so the same plan, outputs
and command always give the same request.

What goes where (API version 2020-12-03,
https://www.alibabacloud.com/help/en/pai/developer-reference/api-pai-dlc-2020-12-03-createjob):

* ``JobType`` ``PyTorchJob`` and one ``JobSpecs`` entry of ``Type`` ``Worker``: ``PodCount`` is the plan's worker
  count, ``EcsSpec`` its instance type, ``Image`` its image; DLC makes the first worker the master when no
  ``Master`` spec is given (SDK docstring of ``JobSpec.Type``).
* ``SpotSpec`` on the worker spec when the plan uses spot: ``SpotStrategy`` ``SpotWithPriceLimit``, the only value the
  API reference lists, with ``SpotPriceLimit`` in CNY per minute
  (https://www.alibabacloud.com/help/en/pai/developer-reference/api-pai-dlc-2020-12-03-struct-spotspec, and the SDK
  docstring). ``UseSpotInstance`` is not sent: the SDK marks it deprecated and Alibaba's spot samples on the Create a
  training job page send ``SpotSpec`` alone.
* ``UserVpc``: the stack's VPC, vSwitch and security group, and ``ExtendedCIDRs`` (required with a vSwitch: every
  CIDR block of the VPC, per the SDK docstring of ``CreateJobRequestUserVpc``).
* ``DataSources``: the workspace datasets the stack registered (ids from the outputs) at the plan's mount paths.
* ``Envs``: the plan's launch environment (parallel layout, checkpoint location and interval, data paths, and with
  base weights ``TRAINSTACK_WEIGHTS_DIR`` and ``TRAINSTACK_WEIGHTS_SOURCE``).
* ``UserCommand``: the words after ``--`` (:func:`user_command`), behind the plan's prelude with ModelScope base
  weights (:func:`job_command`).
* ``CredentialConfig``: the stack's RAM role, injected as the job's credentials (struct CredentialConfig,
  https://www.alibabacloud.com/help/en/pai/developer-reference/api-pai-dlc-2020-12-03-credentialconfig). ``RoleType``
  is ``service``: PAI's CredentialConfig reference defines it as the type of entity that assumes the role, ``service``
  (assumed by a service) or ``user`` (assumed by a regular user), with ``service`` as its example
  (https://www.alibabacloud.com/help/en/pai/developer-reference/api-pai-dsw-2022-01-01-struct-credentialconfig), and
  the job role is trusted by, and assumed through, the PAI service. The DLC CredentialRole page lists the field
  without values, so this is read from the DSW definition, not confirmed by a DLC page or a live job.
* ``Settings.Tags``: the stack's project and stack names, by which ``trainstack jobs`` finds the jobs it submitted.

An output the stack has not produced yet (never deployed) becomes a visible placeholder, ``<unresolved:NAME>``, and
is listed in :attr:`JobRequest.unresolved`; ``submit`` refuses to send such a request, ``--dry-run`` prints it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from generator.plan.model import Dlc, Plan

JOB_TYPE = "PyTorchJob"
TAG_PROJECT = "trainstack-project"
TAG_STACK = "trainstack-stack"
PLACEHOLDER = "<unresolved:{}>"
DISPLAY_NAME = re.compile(
    r"[A-Za-z0-9_.\-]{1,256}"
)  # CreateJob DisplayName: digits, letters, _ . - ; 256 at most
ROLE_TYPE = "service"  # the role is assumed by a service (PAI), see the module docstring


@dataclass(frozen=True, slots=True)
class JobRequest:
    """A CreateJob request in the API's shape, and the stack outputs it still lacks (empty when it can be sent)."""

    body: dict[str, Any]
    unresolved: tuple[str, ...]


def user_command(command: Sequence[str]) -> str:
    """The job's ``UserCommand`` from the words after ``--``.

    Several words are an argv: each is quoted for the shell that runs the command, so ``python train.py --note 'a b'``
    reaches the program as those exact arguments. One word is a shell command line, used as written, so
    ``"torchrun train.py && echo done"`` keeps its ``&&``.
    """
    words = list(command)
    if not words or not any(w.strip() for w in words):
        raise ValueError(
            "give the command the job runs after --, e.g. trainstack submit SPEC -- torchrun train.py"
        )
    if len(words) == 1:
        return words[0]
    return shlex.join(words)


def job_command(dlc: Dlc, command: Sequence[str]) -> str:
    """The job's ``UserCommand``: :func:`user_command`, behind the plan's prelude when it has one.

    With ModelScope base weights, ``Dlc.prelude`` runs trainstack-weights in every worker first
    (:mod:`generator.platforms.dlc.weights`): ``PRELUDE && exec bash -c 'COMMAND'``. The user's command line is quoted whole
    (:func:`shlex.quote`), so its own ``;``, ``&&``, ``|`` or ``#`` stay inside it and it runs only once the weights
    are there; ``exec`` leaves it the process the job's shell was. Both inherit the job's environment unchanged,
    including the MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK that DLC injects into every PyTorchJob worker
    (https://www.alibabacloud.com/help/en/pai/user-guide/general-environment-variables).
    """
    line = user_command(command)
    return f"{dlc.prelude} && exec bash -c {shlex.quote(line)}" if dlc.prelude else line


def display_name(plan: Plan, stamp: str) -> str:
    """``<plan name>-<stamp>`` (the stamp is a UTC time such as 20261130-141500, given by the caller)."""
    return f"{plan.name}-{stamp}"


def check_display_name(name: str) -> str:
    if not DISPLAY_NAME.fullmatch(name):
        raise ValueError(
            f"job name {name!r} is not a DLC display name: use at most 256 letters, digits, '_', '.' and '-'"
        )
    return name


def stack_tags(plan: Plan) -> dict[str, str]:
    """The ``Settings.Tags`` that mark a job as trainstack's for this stack (ListJobs filters on them)."""
    return {TAG_PROJECT: plan.name, TAG_STACK: plan.stack}


def require_dlc(plan: Plan) -> Dlc:
    if plan.dlc is None:
        platform = getattr(plan.compute, "platform", "ecs")
        raise ValueError(
            f"{plan.name} plans compute.platform: {platform}; jobs are submitted to PAI-DLC only, so set "
            "compute.platform: pai-dlc"
        )
    return plan.dlc


class _Outputs:
    """Stack outputs by the Dlc's logical names; a missing one becomes a placeholder and is remembered."""

    def __init__(self, dlc: Dlc, values: Mapping[str, Any]):
        self.names = dict(dlc.outputs)
        self.values = values
        self.missing: list[str] = []

    def output(self, output_name: str) -> str:
        value = self.values.get(output_name)
        if value is None or value == "" or value == "[secret]":
            if output_name not in self.missing:
                self.missing.append(output_name)
            return PLACEHOLDER.format(output_name)
        return str(value)

    def get(self, key: str) -> str:
        """The output for a logical key of ``Dlc.outputs`` (``workspace_id``, ``vswitch_id``, ...)."""
        return self.output(self.names.get(key, key))

    def has(self, key: str) -> bool:
        return key in self.names


def _spot_spec(dlc: Dlc) -> dict[str, Any] | None:
    spot = dlc.spot
    if spot is None:
        return None
    spec: dict[str, Any] = {"SpotStrategy": spot.spot_strategy}
    if spot.spot_strategy == "SpotWithPriceLimit" and spot.spot_price_limit is not None:
        # the plan's limit is CNY per worker-hour; SpotSpec.SpotPriceLimit is CNY per minute (SDK docstring)
        spec["SpotPriceLimit"] = round(spot.spot_price_limit / 60.0, 4)
    if spot.spot_discount_limit is not None:
        spec["SpotDiscountLimit"] = spot.spot_discount_limit
    return spec


def _environment(plan: Plan, dlc: Dlc) -> dict[str, str]:
    """The plan's launch environment (layout, checkpoint locations, data paths), in its order, and the stack's name."""
    env = {k: v for k, v in dlc.environment}
    env.setdefault("TRAINSTACK_STACK", plan.stack)
    return env


def create_job_request(
    plan: Plan, outputs: Mapping[str, Any], command: Sequence[str], name: str
) -> JobRequest:
    """The CreateJob request for ``command`` on the plan's DLC workers; ``outputs`` are the stack's output values.

    Raises ValueError for a plan that is not PAI-DLC, an empty command or a bad job name.
    """
    dlc = require_dlc(plan)
    check_display_name(name)
    out = _Outputs(dlc, outputs)
    worker: dict[str, Any] = {
        "Type": "Worker",
        "PodCount": dlc.worker_count,
        "EcsSpec": dlc.worker_instance_type,
        "Image": dlc.image,
    }
    spot = _spot_spec(dlc)
    if spot is not None:
        worker["SpotSpec"] = spot
    body: dict[str, Any] = {
        "DisplayName": name,
        "JobType": dlc.job_type or JOB_TYPE,
        "WorkspaceId": out.get("workspace_id"),
        "JobSpecs": [worker],
        "UserCommand": job_command(dlc, command),
        "UserVpc": {
            "VpcId": out.get("vpc_id"),
            "SwitchId": out.get("vswitch_id"),
            "SecurityGroupId": out.get("security_group_id"),
            "ExtendedCIDRs": [plan.network.vpc_cidr],
        },
        "DataSources": [
            {
                "DataSourceId": out.output(ds.output_key),
                "MountPath": ds.mount_path,
                "MountAccess": "RO" if ds.read_only else "RW",
            }
            for ds in dlc.data_sources
        ],
        "Envs": _environment(plan, dlc),
        "Settings": {"Tags": stack_tags(plan)},
        "Description": f"trainstack {plan.name} (stack {plan.stack}): {dlc.worker_count} x "
        f"{dlc.worker_instance_type}, tp={dlc.tp} pp={dlc.pp} dp={dlc.dp}",
    }
    if out.has("role_arn"):
        body["CredentialConfig"] = {
            "EnableCredentialInject": True,
            "CredentialConfigItems": [
                {"Type": "Role", "Roles": [{"RoleArn": out.get("role_arn"), "RoleType": ROLE_TYPE}]}
            ],
        }
    if dlc.max_running_hours:
        body["JobMaxRunningTimeMinutes"] = dlc.max_running_hours * 60
    return JobRequest(body, tuple(out.missing))


def list_jobs_request(plan: Plan, workspace_id: str, page_size: int = 50) -> dict[str, Any]:
    """ListJobs in the stack's workspace, filtered to the jobs trainstack submitted for this stack (by tag)."""
    return {
        "WorkspaceId": workspace_id,
        "Tags": stack_tags(plan),
        "PageSize": page_size,
        "PageNumber": 1,
        "SortBy": "GmtCreateTime",
        "Order": "desc",
    }


def is_stack_job(plan: Plan, job: Mapping[str, Any], workspace_id: str) -> bool:
    """Whether a job (GetJob / ListJobs item) was submitted by trainstack for this stack: its tags and workspace."""
    tags = (job.get("Settings") or {}).get("Tags") or {}
    if tags:
        return (
            tags.get(TAG_PROJECT) == plan.name
            and tags.get(TAG_STACK) == plan.stack
            and (not job.get("WorkspaceId") or job.get("WorkspaceId") == workspace_id)
        )
    # an answer without Settings (ListJobs may leave it out): the display name and the workspace
    return (
        str(job.get("DisplayName") or "").startswith(f"{plan.name}-")
        and job.get("WorkspaceId") == workspace_id
    )
