"""Preflight checks: the ``pulumi`` CLI, Alibaba Cloud credentials and the secrets passphrase, each failing fast
with one sentence that says the fix.

They turn the usual first-run failures into a distinct exit code before anything slow starts.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from generator.live.engine import Target
from generator.live.errors import CredentialsMissing, PassphraseMissing, PulumiMissing
from generator.render.stackdir import load_yaml as _load_yaml

INSTALL_PULUMI = "install the Pulumi CLI: curl -fsSL https://get.pulumi.com | sh, or see https://www.pulumi.com/docs/install/"


# The pulumi CLI versions trainstack drives: 3.150.0 (the first with every flag it passes, such as
# `destroy --exclude-protected`) up to, not including, 4.0.0 (the Automation API refuses another major version).
# tests/live runs the CLI of the same version as the pulumi SDK that pyproject.toml pins.
MIN_PULUMI = (3, 150, 0)
TESTED_PULUMI = "3.260.0"
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.+-]*)?")


def pulumi_version_problem(printed: str) -> str | None:
    """What is wrong with the version ``pulumi version`` printed, in one sentence with the fix, or None."""
    text = printed.strip()
    match = _VERSION.fullmatch(text)
    shown = text.splitlines()[0][:60] if text else "nothing"
    want = f"{'.'.join(map(str, MIN_PULUMI))} or newer, below 4.0.0 (tested with {TESTED_PULUMI})"
    if match is None:
        return (
            f"`pulumi version` printed {shown!r}, which is not a version: the pulumi on PATH is not a working "
            f"Pulumi CLI; trainstack needs {want}: {INSTALL_PULUMI}"
        )
    version = tuple(int(g) for g in match.groups())
    if version < MIN_PULUMI:
        return (
            f"the pulumi CLI is {text}, older than trainstack needs ({want}): upgrade it "
            f"(pulumi self-update, or {INSTALL_PULUMI})"
        )
    if version[0] > MIN_PULUMI[0]:
        return (
            f"the pulumi CLI is {text}, a newer major version than trainstack's pulumi SDK drives ({want}): "
            f"install a 3.x CLI, e.g. curl -fsSL https://get.pulumi.com | sh -s -- --version {TESTED_PULUMI}"
        )
    return None


@functools.lru_cache(maxsize=8)
def _checked_version(path: str) -> str:
    try:
        out = subprocess.run(
            [path, "version"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "PULUMI_SKIP_UPDATE_CHECK": "true"},
        )
    except OSError as e:
        raise PulumiMissing(
            f"the pulumi CLI at {path} could not be started ({e.strerror}): {INSTALL_PULUMI}"
        ) from None
    except subprocess.TimeoutExpired:
        raise PulumiMissing(f"`{path} version` did not answer within 120 s: {INSTALL_PULUMI}") from None
    if out.returncode != 0:
        raise PulumiMissing(f"`{path} version` failed with exit code {out.returncode}: {INSTALL_PULUMI}")
    problem = pulumi_version_problem(out.stdout)
    if problem:
        raise PulumiMissing(problem)
    return out.stdout.strip()


def require_pulumi_version() -> str:
    """The version of the ``pulumi`` CLI on PATH, or :class:`PulumiMissing` saying why it cannot be used."""
    return _checked_version(require_pulumi_cli())


def require_pulumi_cli() -> str:
    """The path of the ``pulumi`` CLI the Automation API will run, or :class:`PulumiMissing`."""
    path = shutil.which("pulumi")
    if not path:
        raise PulumiMissing(f"the pulumi CLI is not on PATH: {INSTALL_PULUMI}")
    return path


def _credentials_file(env: Mapping[str, str]) -> Path:
    named = env.get("ALIBABA_CLOUD_CREDENTIALS_FILE") or env.get("ALICLOUD_SHARED_CREDENTIALS_FILE")
    return Path(named).expanduser() if named else Path.home() / ".aliyun" / "config.json"


def _config_keys(config_file: Path) -> set[str]:
    data = _load_yaml(config_file.read_text(encoding="utf-8")) if config_file.is_file() else None
    config = data.get("config") if isinstance(data, dict) else None
    return set(config) if isinstance(config, dict) else set()


def credential_source(env: Mapping[str, str], config_file: Path | None = None) -> str | None:
    """Where the alicloud provider will find credentials (a description, never a value), or None.

    Deliberately generous: it accepts every source the provider documents (an AccessKey pair in either naming,
    STS tokens, a CLI profile file, an ECS RAM role, OIDC, a credentials URI, or ``alicloud:*`` stack config),
    because blocking a working setup is worse than letting the provider report a wrong key.
    """
    key_id = env.get("ALIBABA_CLOUD_ACCESS_KEY_ID") or env.get("ALICLOUD_ACCESS_KEY")
    secret = env.get("ALIBABA_CLOUD_ACCESS_KEY_SECRET") or env.get("ALICLOUD_SECRET_KEY")
    if key_id and secret:
        return "AccessKey from the environment"
    if env.get("ALIBABA_CLOUD_ECS_METADATA") or env.get("ALICLOUD_ECS_ROLE_NAME"):
        return "ECS instance RAM role"
    if env.get("ALIBABA_CLOUD_ROLE_ARN") and env.get("ALIBABA_CLOUD_OIDC_TOKEN_FILE"):
        return "OIDC role"
    if env.get("ALIBABA_CLOUD_CREDENTIALS_URI"):
        return "credentials URI"
    profile = env.get("ALIBABA_CLOUD_PROFILE") or env.get("ALICLOUD_PROFILE")
    profiles = _credentials_file(env)
    if profiles.is_file():
        return f"profile {profile!r} from {profiles}" if profile else f"the current profile in {profiles}"
    if config_file is not None:
        keys = _config_keys(config_file)
        if {"alicloud:accessKey", "alicloud:secretKey"} <= keys or keys & {
            "alicloud:profile",
            "alicloud:assumeRole",
            "alicloud:ecsRoleName",
        }:
            return f"alicloud:* settings in {config_file.name}"
    return None


def require_credentials(env: Mapping[str, str], config_file: Path | None = None) -> str:
    source = credential_source(env, config_file)
    if source is None:
        raise CredentialsMissing(
            "no Alibaba Cloud credentials found: set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET, "
            "or create a profile with `aliyun configure` (~/.aliyun/config.json) and set ALIBABA_CLOUD_PROFILE."
        )
    return source


def require_passphrase(env: Mapping[str, str], secrets_provider: str) -> None:
    """The passphrase provider encrypts the stack's secrets with a key derived from a passphrase the user keeps."""
    if secrets_provider != "passphrase":
        return
    file_ = env.get("PULUMI_CONFIG_PASSPHRASE_FILE")
    if file_ and not Path(file_).expanduser().is_file():
        raise PassphraseMissing(
            f"PULUMI_CONFIG_PASSPHRASE_FILE names {file_}, which does not exist: point it at the "
            "file holding the stack's passphrase."
        )
    if "PULUMI_CONFIG_PASSPHRASE" not in env and not file_:
        raise PassphraseMissing(
            "the stack's secrets are encrypted with a passphrase and none is set: export PULUMI_CONFIG_PASSPHRASE "
            "(or PULUMI_CONFIG_PASSPHRASE_FILE) and keep it safe, it is needed for every later run."
        )


def preflight(target: Target, *, credentials: bool = True, env: Mapping[str, str] | None = None) -> None:
    """Fail fast, one sentence each, on what would otherwise fail minutes into a run."""
    env = os.environ if env is None else env
    require_pulumi_cli()
    if credentials:
        require_credentials(env, target.config_file)
    require_passphrase(env, target.secrets_provider)
