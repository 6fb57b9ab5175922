"""The live engine: preview, deploy, refresh, read and destroy a rendered stack folder in Alibaba Cloud.

Everything that touches the cloud goes through the :class:`Engine` port. :class:`PulumiEngine` implements it with
the Pulumi Automation API (which drives the ``pulumi`` CLI on PATH); :class:`FakeEngine` implements it in memory so
the commands, their checks and their messages are tested without a CLI, credentials or a network.

What this module adds around the engine, and why:

* **Preflight checks** (:func:`preflight`) turn the usual first-run failures (no ``pulumi`` CLI, no Alibaba Cloud
  credentials, no secrets passphrase) into one sentence with the fix and a distinct exit code, before anything
  slow starts. A locked stack and any other engine failure get their own codes too (table below, docs/live.md).
* **Freshness and pinning.** ``up`` deploys a stack folder only if it still is what its spec renders
  (:func:`stale_files`), and ``--expect-digest`` pins a deploy to the exact folder a reviewer saw
  (:func:`stack_digest`, printed by every preview and up).
* **State location.** By default the Pulumi state lives next to the program, in ``<stack>/.trainstack/state``
  (a ``file://`` backend the stack's .gitignore already excludes); ``--backend`` or ``TRAINSTACK_BACKEND`` moves it.
* **No secret ever printed.** Every line shown to the user passes through :func:`redact`, which masks the values
  of the credential and passphrase variables in the environment.

The library never imports click; ``generator/cli/live.py`` is the command-line shell over it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from generator.errors import EXIT_USAGE, TrainstackError
from generator.plan import pipeline
from generator.render import files as stack_files
from generator.render import stackdir
from generator.render.files import MARKER
from generator.render.stackdir import config_compatible as _config_compatible
from generator.render.stackdir import load_yaml as _load_yaml
from generator.render.stackdir import merge_stack_config as _merge_stack_config

# --------------------------------------------------------------------------------------------- exit codes
# Distinct codes so pipelines can tell "fix your setup" from "the cloud said no" (documented in docs/live.md).
EXIT_NO_PULUMI = 20  # the pulumi CLI is missing or too old
EXIT_NO_CREDENTIALS = 21  # no Alibaba Cloud credentials in the environment or a profile
EXIT_NO_PASSPHRASE = 22  # the passphrase secrets provider has no passphrase
EXIT_LOCKED = 23  # another update holds the stack's lock
EXIT_STALE = 24  # the stack folder is not what its spec renders
EXIT_DIGEST = 25  # the stack folder is not the one --expect-digest names
EXIT_ENGINE = 26  # the engine ran and failed (cloud API error, program error, ...)
EXIT_DECLINED = 27  # the user (or a missing --yes / --confirm-name) did not confirm; nothing changed
EXIT_NOT_DEPLOYED = 28  # the stack has no state in the backend yet
EXIT_INTERRUPTED = 130  # Ctrl-C during an engine run (the shell's convention for SIGINT)

INSTALL_PULUMI = "install the Pulumi CLI: curl -fsSL https://get.pulumi.com | sh, or see https://www.pulumi.com/docs/install/"
STATE_DIR = f"{MARKER}/state"  # relative to the stack folder; ignored by render and by the stack's .gitignore
DEFAULT_SECRETS_PROVIDER = "passphrase"
PULUMI_BOOKKEEPING_KEYS = ("encryptionsalt", "secretsprovider", "encryptedkey")  # Pulumi writes these, not render

# Values that must never reach the terminal, even inside an engine error message.
SECRET_ENV_VARS = (
    "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN",
    "ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALICLOUD_SECURITY_TOKEN",
    "PULUMI_CONFIG_PASSPHRASE", "PULUMI_ACCESS_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)




class LiveError(TrainstackError):
    """An engine operation failed; the message says what happened and what to do."""

    exit_code = EXIT_ENGINE

    def __init__(self, message: str):
        super().__init__(redact(message))


class PulumiMissing(LiveError):
    exit_code = EXIT_NO_PULUMI


class CredentialsMissing(LiveError):
    exit_code = EXIT_NO_CREDENTIALS


class PassphraseMissing(LiveError):
    exit_code = EXIT_NO_PASSPHRASE


class StackLocked(LiveError):
    exit_code = EXIT_LOCKED


class StaleStack(LiveError):
    exit_code = EXIT_STALE


class DigestMismatch(LiveError):
    exit_code = EXIT_DIGEST


class EngineFailed(LiveError):
    exit_code = EXIT_ENGINE


class Declined(LiveError):
    exit_code = EXIT_DECLINED


class StackNotDeployed(LiveError):
    exit_code = EXIT_NOT_DEPLOYED


class Interrupted(LiveError):
    """Ctrl-C while the engine ran: unlike a render, cloud work may be half done, and the user must know it."""

    exit_code = EXIT_INTERRUPTED


class BadTarget(LiveError):
    """The command line names something that is neither a spec nor a stack folder, or a backend Pulumi lacks."""

    exit_code = EXIT_USAGE


# --------------------------------------------------------------------------------------------- data
# Ops that change something; "same", "read" and the halves of a replacement are not listed to the user.
CHANGE_OPS = ("create", "update", "replace", "delete", "import", "discard")
_SYMBOL = {"create": "+", "update": "~", "replace": "+-", "delete": "-", "import": "=", "discard": "<"}
_WORDS = {"create": "to create", "update": "to update", "replace": "to replace", "delete": "to delete",
          "import": "to import", "discard": "to forget"}
_VERBS = {"create": "creating", "update": "updating", "replace": "replacing", "delete": "deleting",
          "import": "importing", "discard": "forgetting", "refresh": "refreshing"}


def short_type(token: str) -> str:
    """``alicloud:ecs/instance:Instance`` -> ``ecs:Instance``; what a person scanning a progress log needs."""
    parts = token.split(":")
    if len(parts) != 3:
        return token
    package, module, name = parts
    if package == "pulumi" and module == "providers":
        return f"provider:{name}"
    module = module.split("/")[0]
    return f"{package}:{name}" if module in ("index", "") else f"{module}:{name}"


def urn_name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1] if "::" in urn else urn


@dataclass(frozen=True, slots=True)
class Step:
    """One resource operation the engine plans or performs."""

    op: str  # create, update, replace, delete, same, refresh, ... (Pulumi's OpType values)
    type: str  # full type token, e.g. alicloud:ecs/instance:Instance
    name: str
    urn: str = ""

    @property
    def short_type(self) -> str:
        return short_type(self.type)


@dataclass(frozen=True, slots=True)
class Event:
    """What an engine reports while it runs, independent of Pulumi's event classes."""

    kind: str  # "start", "done", "failed", "diagnostic" or "info"
    step: Step | None = None
    severity: str = ""  # diagnostics: "error" or "warning"
    message: str = ""


OnEvent = Callable[[Event], None]


def _ignore(_: Event) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ChangeSummary:
    """Counts per operation (as the engine reports them) and the changing steps, for review and progress."""

    counts: tuple[tuple[str, int], ...] = ()
    steps: tuple[Step, ...] = ()

    @classmethod
    def of(cls, counts: Mapping[str, int] | None, steps: Iterable[Step] = ()) -> ChangeSummary:
        steps = tuple(steps)
        if counts is None:  # derive counts from the steps when the engine gave none
            tally: dict[str, int] = {}
            for s in steps:
                tally[s.op] = tally.get(s.op, 0) + 1
            counts = tally
        clean = tuple(sorted((str(getattr(k, "value", k)), int(v)) for k, v in counts.items() if v))
        return cls(clean, steps)

    def count(self, op: str) -> int:
        return dict(self.counts).get(op, 0)

    @property
    def changes(self) -> tuple[Step, ...]:
        """The steps that change something, deletions and replacements first (they deserve the reader's eye)."""
        order = {"delete": 0, "replace": 1, "update": 2, "discard": 3, "import": 4, "create": 5}
        picked = [s for s in self.steps if s.op in CHANGE_OPS]
        return tuple(sorted(picked, key=lambda s: (order.get(s.op, 9), s.short_type, s.name)))

    @property
    def change_count(self) -> int:
        return sum(self.count(op) for op in CHANGE_OPS) or len(self.changes)

    @property
    def has_changes(self) -> bool:
        return self.change_count > 0

    def totals(self) -> str:
        parts = [f"{_SYMBOL[op]} {self.count(op)} {_WORDS[op]}" for op in CHANGE_OPS if self.count(op)]
        unchanged = self.count("same")
        if unchanged:
            parts.append(f"{unchanged} unchanged")
        return ", ".join(parts) if parts else "no changes"

    def text(self) -> str:
        lines = [f"  {_SYMBOL[s.op]:<2} {s.short_type:<28} {s.name}" for s in self.changes]
        lines.append(f"Resources: {self.totals()}")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class OutputValue:
    value: Any
    secret: bool = False


@dataclass(frozen=True, slots=True)
class UpResult:
    summary: ChangeSummary
    outputs: dict[str, OutputValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StateResource:
    """One resource in the stack's state, with what protection and deletion need to know."""

    urn: str
    type: str
    id: str = ""
    protect: bool = False
    retain_on_delete: bool = False
    dependencies: tuple[str, ...] = ()
    parent: str = ""

    @property
    def name(self) -> str:
        return urn_name(self.urn)

    @property
    def short_type(self) -> str:
        return short_type(self.type)

    @property
    def bookkeeping(self) -> bool:
        """The stack itself and provider instances: Pulumi's, not cloud resources a user pays for."""
        return self.type == "pulumi:pulumi:Stack" or self.type.startswith("pulumi:providers:")


@dataclass(frozen=True, slots=True)
class Target:
    """Everything an engine needs to find a stack: its program folder, names, state backend and secrets."""

    stack_dir: Path
    project: str  # Pulumi project name = the spec's name
    stack: str  # Pulumi stack name
    backend: str  # Pulumi backend URL
    secrets_provider: str = DEFAULT_SECRETS_PROVIDER
    spec_digest: str = ""

    @property
    def config_file(self) -> Path:
        return self.stack_dir / f"Pulumi.{self.stack}.yaml"


# --------------------------------------------------------------------------------------------- the port
class Engine(Protocol):
    """What trainstack asks of a deployment engine. Every method may raise a :class:`LiveError`."""

    def preview(self, target: Target, on_event: OnEvent) -> ChangeSummary:
        """What ``up`` would change, without changing anything."""

    def up(self, target: Target, on_event: OnEvent) -> UpResult:
        """Create or update the cloud resources to match the program."""

    def destroy(self, target: Target, on_event: OnEvent, *, exclude_protected: bool,
                preview_only: bool = False) -> ChangeSummary:
        """Delete the stack's resources; with ``exclude_protected`` keep protected ones and what they need."""

    def refresh(self, target: Target, on_event: OnEvent, *, preview_only: bool = False) -> ChangeSummary:
        """Read the cloud's actual state into the stack's state."""

    def outputs(self, target: Target) -> dict[str, OutputValue]:
        """The stack's outputs from its last update."""

    def resources(self, target: Target) -> list[StateResource]:
        """The resources recorded in the stack's state."""

    def unprotect_all(self, target: Target) -> None:
        """Clear the ``protect`` flag on every resource in the state (the cloud is not touched)."""


# --------------------------------------------------------------------------------------------- redaction
def _secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    env = os.environ if env is None else env
    values = {env.get(k, "") for k in SECRET_ENV_VARS}
    passphrase_file = env.get("PULUMI_CONFIG_PASSPHRASE_FILE", "")
    if passphrase_file:
        with contextlib.suppress(OSError):
            values.add(Path(passphrase_file).read_text(encoding="utf-8").strip())
    # short values would mask ordinary words; real keys and passphrases worth hiding are longer
    return sorted((v for v in values if len(v) >= 6), key=len, reverse=True)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """``text`` with every credential or passphrase value from the environment replaced by ``[redacted]``."""
    for value in _secret_values(env):
        text = text.replace(value, "[redacted]")
    return text


def display_backend(url: str) -> str:
    """A backend URL safe to print: no password in the authority, no query (SAS tokens, keys) after ``?``."""
    url = re.sub(r"^([a-z0-9+.-]+://)[^/@]*@", r"\1***@", url, flags=re.I)
    return url.split("?", 1)[0] + ("?..." if "?" in url else "")


# --------------------------------------------------------------------------------------------- preflight
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
        if {"alicloud:accessKey", "alicloud:secretKey"} <= keys or keys & {"alicloud:profile", "alicloud:assumeRole",
                                                                           "alicloud:ecsRoleName"}:
            return f"alicloud:* settings in {config_file.name}"
    return None


def require_credentials(env: Mapping[str, str], config_file: Path | None = None) -> str:
    source = credential_source(env, config_file)
    if source is None:
        raise CredentialsMissing(
            "no Alibaba Cloud credentials found: set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET, "
            "or create a profile with `aliyun configure` (~/.aliyun/config.json) and set ALIBABA_CLOUD_PROFILE.")
    return source


def require_passphrase(env: Mapping[str, str], secrets_provider: str) -> None:
    """The passphrase provider encrypts the stack's secrets with a key derived from a passphrase the user keeps."""
    if secrets_provider != "passphrase":
        return
    file_ = env.get("PULUMI_CONFIG_PASSPHRASE_FILE")
    if file_ and not Path(file_).expanduser().is_file():
        raise PassphraseMissing(f"PULUMI_CONFIG_PASSPHRASE_FILE names {file_}, which does not exist: point it at the "
                                "file holding the stack's passphrase.")
    if "PULUMI_CONFIG_PASSPHRASE" not in env and not file_:
        raise PassphraseMissing(
            "the stack's secrets are encrypted with a passphrase and none is set: export PULUMI_CONFIG_PASSPHRASE "
            "(or PULUMI_CONFIG_PASSPHRASE_FILE) and keep it safe, it is needed for every later run.")


def preflight(target: Target, *, credentials: bool = True, env: Mapping[str, str] | None = None) -> None:
    """Fail fast, one sentence each, on what would otherwise fail minutes into a run."""
    env = os.environ if env is None else env
    require_pulumi_cli()
    if credentials:
        require_credentials(env, target.config_file)
    require_passphrase(env, target.secrets_provider)


# --------------------------------------------------------------------------------------------- stack folders
def _read_plan_json(stack_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((stack_dir / "plan.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BadTarget(f"{stack_dir} has no readable plan.json: is it a stack folder rendered by trainstack?"
                        ) from None
    if not isinstance(data, dict) or not data.get("name") or not data.get("stack"):
        raise BadTarget(f"{stack_dir}/plan.json does not name a project and a stack; re-render the folder.")
    return data


def default_backend(stack_dir: Path) -> str:
    """``file://`` state inside the stack folder: zero setup, and it travels with the folder it describes."""
    return "file://" + (stack_dir.resolve() / STATE_DIR).as_posix()


def check_backend(url: str) -> str:
    if url.startswith("oss://"):
        raise BadTarget("Pulumi has no oss:// backend; OSS speaks S3, so use "
                        "s3://BUCKET?endpoint=oss-REGION.aliyuncs.com&region=REGION with AWS_ACCESS_KEY_ID and "
                        "AWS_SECRET_ACCESS_KEY set to an Alibaba Cloud AccessKey (see docs/live.md).")
    if "://" not in url:
        raise BadTarget(f"backend {url!r} is not a URL: use file:///path, s3://bucket?..., https://api.pulumi.com, ...")
    return url


def target_for(stack_dir: str | Path, backend: str | None = None, env: Mapping[str, str] | None = None) -> Target:
    """The engine target for a rendered stack folder (names from plan.json; backend from flag, env or default)."""
    env = os.environ if env is None else env
    stack_dir = Path(stack_dir)
    stackdir.settle(stack_dir)
    if not stackdir.is_stack_dir(stack_dir):
        raise BadTarget(f"{stack_dir} is not a stack folder rendered by trainstack (no __main__.py and {MARKER}/).")
    data = _read_plan_json(stack_dir)
    url = check_backend(backend or env.get("TRAINSTACK_BACKEND") or default_backend(stack_dir))
    return Target(stack_dir=stack_dir, project=str(data["name"]), stack=str(data["stack"]), backend=url,
                  secrets_provider=env.get("TRAINSTACK_SECRETS_PROVIDER") or DEFAULT_SECRETS_PROVIDER,
                  spec_digest=str(data.get("spec_digest", "")))


def _digest_files(stack_dir: Path, stack: str) -> list[tuple[str, bytes]]:
    """The files that make up what is deployed: not the venv, caches, Pulumi state or other stacks' configs."""
    out: list[tuple[str, bytes]] = []
    for root, dirs, files in os.walk(stack_dir):
        rel_root = Path(root).relative_to(stack_dir).as_posix()
        rel_root = "" if rel_root == "." else rel_root + "/"
        dirs[:] = [d for d in dirs if not (
            d in ("__pycache__", ".git") or (not rel_root and d in ("venv", ".venv"))
            or (rel_root == f"{MARKER}/"))]
        for name in files:
            rel = rel_root + name
            if name.endswith(".pyc") or name == ".DS_Store":
                continue
            if rel.startswith(f"{MARKER}/") and rel != f"{MARKER}/DO_NOT_EDIT":
                continue
            if not rel_root and name.startswith("Pulumi.") and name not in ("Pulumi.yaml", f"Pulumi.{stack}.yaml"):
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


def stack_digest(stack_dir: str | Path, stack: str | None = None) -> str:
    """SHA-256 over the sorted (path, bytes) of the stack folder's deployable files.

    It covers the program, its config and plan.json (hence the spec digest), so a deploy pinned with
    ``--expect-digest`` applies byte for byte the folder that was reviewed.
    """
    stack_dir = Path(stack_dir)
    stack = stack or str(_read_plan_json(stack_dir)["stack"])
    h = hashlib.sha256()
    for rel, data in _digest_files(stack_dir, stack):
        raw = rel.encode()
        h.update(len(raw).to_bytes(8, "big") + raw + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def recorded_spec(stack_dir: Path) -> str:
    """The spec path the folder was rendered from, as recorded in .trainstack/DO_NOT_EDIT ("" when unknown)."""
    try:
        lines = (stack_dir / MARKER / "DO_NOT_EDIT").read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    for line in lines:
        if line.startswith("spec: "):  # a JSON string, so any file name reads back exactly
            try:
                value = json.loads(line[len("spec: "):])
            except ValueError:
                return ""
            return value if isinstance(value, str) else ""
    m = re.search(r"generated by trainstack from (.+)\.\s*$", lines[0]) if lines else None  # trainstack 0.1
    return m.group(1) if m and m.group(1) != "a spec" else ""


def find_spec(stack_dir: Path, recorded: str) -> Path | None:
    """The spec file behind a folder: the path is relative to the repository that holds both (or the folder's)."""
    found = next((c for c in stackdir.spec_candidates(stack_dir, recorded) if c.is_file()), None)
    return stackdir.shown(found) if found is not None else None


def stale_files(files: Mapping[str, str], dest: Path, stack: str) -> list[str]:
    """Files that differ between a render (in memory) and the folder, ignoring what Pulumi and users add."""
    config_name = f"Pulumi.{stack}.yaml"
    out = []
    for change in stackdir.compare(files, dest):
        if not change.changed:
            continue
        if change.path == config_name and change.action == "update" and _config_compatible(
                files[config_name], (dest / config_name).read_text(encoding="utf-8")):
            continue
        out.append(change.path)
    return out


@dataclass(frozen=True, slots=True)
class Freshness:
    spec: Path | None  # the spec found for the folder, if any
    stale: tuple[str, ...] = ()
    note: str = ""  # why freshness could not be checked, for the user


def check_fresh(stack_dir: Path) -> Freshness:
    """Re-render the folder's spec in memory and compare; the spec path is taken from the folder itself."""
    recorded = recorded_spec(stack_dir)
    spec = find_spec(stack_dir, recorded)
    if spec is None:
        why = f"its spec {recorded} was not found" if recorded else "it does not record its spec"
        return Freshness(None, (), f"not checked against a spec ({why}); deploying the folder as rendered")
    the_plan = pipeline.plan_file(spec)
    files = stack_files.render(the_plan, stackdir.spec_record(spec))
    return Freshness(spec, tuple(stale_files(files, stack_dir, the_plan.stack)))


@dataclass(frozen=True, slots=True)
class Prepared:
    """A stack folder ready to deploy: its target, digest, and what was done or noticed on the way."""

    target: Target
    digest: str
    rendered: tuple[stackdir.FileChange, ...] = ()
    notes: tuple[str, ...] = ()


def _is_spec(arg: Path) -> bool:
    return arg.is_file()


def locate(arg: str | Path, backend: str | None = None, env: Mapping[str, str] | None = None) -> Target:
    """The target for a SPEC or STACK_DIR argument, without writing anything (a spec maps to its stacks/<name>)."""
    p = Path(arg)
    if p.is_dir():
        return target_for(p, backend, env)
    if not _is_spec(p):
        raise BadTarget(f"{arg}: no such spec file or stack folder")
    the_plan = pipeline.plan_file(p)
    dest = stackdir.default_stack_dir(p, the_plan.name)
    if not stackdir.is_stack_dir(dest):
        raise BadTarget(f"{arg} has no stack folder at {dest}: run `trainstack up {arg}` (or render it) first.")
    return target_for(dest, backend, env)


def planned_target(arg: str | Path, backend: str | None = None, env: Mapping[str, str] | None = None) -> Target:
    """Like :func:`locate`, but for a spec whose folder may not exist yet (names come from the plan)."""
    env = os.environ if env is None else env
    p = Path(arg)
    if p.is_dir() or not _is_spec(p):
        return locate(p, backend, env)
    the_plan = pipeline.plan_file(p)
    dest = stackdir.default_stack_dir(p, the_plan.name)
    url = check_backend(backend or env.get("TRAINSTACK_BACKEND") or default_backend(dest))
    return Target(stack_dir=dest, project=the_plan.name, stack=the_plan.stack, backend=url,
                  secrets_provider=env.get("TRAINSTACK_SECRETS_PROVIDER") or DEFAULT_SECRETS_PROVIDER,
                  spec_digest=the_plan.spec_digest)


def has_state(stack_dir: Path, project: str, stack: str) -> bool:
    """True when the folder's default file:// backend holds a Pulumi stack for ``project``/``stack``."""
    stacks = Path(stack_dir) / STATE_DIR / ".pulumi" / "stacks"
    return any((stacks / project / f"{stack}.json{ext}").is_file() for ext in ("", ".gz")) or \
        any((stacks / f"{stack}.json{ext}").is_file() for ext in ("", ".gz"))  # legacy non-project layout


def other_state_folders(dest: Path, spec: Path, project: str, stack: str) -> list[Path]:
    """Stack folders elsewhere that already hold this stack's file:// state (e.g. rendered from a subfolder by
    trainstack 0.1, which put ``stacks/`` under the working folder)."""
    here = Path(os.path.abspath(dest))
    places: list[Path] = []
    for base in (Path.cwd(), Path(os.path.abspath(spec)).parent):
        for folder in (base, *base.parents):
            places.append(folder / stackdir.STACKS_DIR / project)
    found = []
    for place in dict.fromkeys(places):
        if place != here and place.is_dir() and has_state(place, project, stack):
            found.append(place)
    return found


def render_for_up(spec: Path) -> tuple[Path, tuple[stackdir.FileChange, ...]]:
    """Render a spec into its stack folder like ``trainstack render``, keeping Pulumi's and the user's settings."""
    the_plan = pipeline.plan_file(spec)
    files = dict(stack_files.render(the_plan, stackdir.spec_record(spec)))
    dest = stackdir.default_stack_dir(spec, the_plan.name)
    if stackdir.is_stack_dir(dest) and not stale_files(files, dest, the_plan.stack):
        return dest, ()  # already what the spec renders; leave Pulumi's additions untouched
    try:
        changes = stackdir.write(files, dest, stack=the_plan.stack)
    except stackdir.ConfigNotCarried as e:
        raise StaleStack(f"{e}; or re-render with `trainstack render` and set them again.") from None
    return dest, tuple(c for c in changes if c.changed)


def prepare_up(arg: str | Path, backend: str | None = None, env: Mapping[str, str] | None = None) -> Prepared:
    """Render (for a spec) or check freshness (for a folder), then compute the digest of what will be deployed."""
    env = os.environ if env is None else env
    p = Path(arg)
    notes: list[str] = []
    rendered: tuple[stackdir.FileChange, ...] = ()
    if p.is_dir():
        target = target_for(p, backend, env)
        fresh = check_fresh(p)
        if fresh.stale:
            spec = str(fresh.spec) if fresh.spec else "its spec"
            raise StaleStack(f"{p} is stale against {spec} ({', '.join(fresh.stale)} differ): run "
                             f"`trainstack render {spec}` and review the change, or deploy the spec with "
                             f"`trainstack up {spec}`.")
        if fresh.note:
            notes.append(fresh.note)
    elif _is_spec(p):
        planned = planned_target(p, backend, env)
        if not (backend or env.get("TRAINSTACK_BACKEND")) and not has_state(planned.stack_dir, planned.project,
                                                                             planned.stack):
            others = other_state_folders(planned.stack_dir, p, planned.project, planned.stack)
            if others:
                raise BadTarget(f"{others[0]} already holds the Pulumi state of {planned.project} (stack "
                                f"{planned.stack}), but {arg} renders to {planned.stack_dir}: deploying would start "
                                f"a second, empty state and a second cluster. Move {others[0]} to "
                                f"{planned.stack_dir} (or deploy the folder: `trainstack up {others[0]}`).")
        dest, rendered = render_for_up(p)
        target = target_for(dest, backend, env)
    else:
        raise BadTarget(f"{arg}: no such spec file or stack folder")
    return Prepared(target, stack_digest(target.stack_dir, target.stack), rendered, tuple(notes))


def check_digest(prepared: Prepared, expected: str | None) -> None:
    """Refuse to deploy anything but the folder a reviewer pinned with ``--expect-digest``."""
    if not expected:
        return
    want = expected.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", want):
        if prepared.target.spec_digest and want == prepared.target.spec_digest:
            raise DigestMismatch("--expect-digest takes the 64-hex stack digest printed by `trainstack preview` "
                                 "or `trainstack up`, not the spec digest.")
        raise DigestMismatch(f"--expect-digest {expected!r} is not a 64-character hex stack digest.")
    if want != prepared.digest:
        raise DigestMismatch(f"{prepared.target.stack_dir} has stack digest {prepared.digest}, not the reviewed "
                             f"{want}: the folder changed since it was reviewed; preview it again and re-approve.")


# --------------------------------------------------------------------------------------------- progress
class ProgressPrinter:
    """Turns engine events into one line per resource step, e.g.
    ``creating ecs:Instance pretrain-70b-node-003 ... done (12/151)``; diagnostics go to stderr.

    ``emit(line, is_error)`` does the printing, so the library stays free of click and tests can collect lines.
    """

    def __init__(self, emit: Callable[[str, bool], None], total: int | None = None):
        self._emit = emit
        self.total = total
        self.done = 0
        self.failed = 0
        self._lock = threading.Lock()

    def _say(self, line: str, err: bool = False) -> None:
        self._emit(redact(line), err)

    def __call__(self, event: Event) -> None:
        with self._lock:
            s = event.step
            if event.kind == "info":
                self._say(event.message)
            elif event.kind == "diagnostic":
                where = f"{s.short_type} {s.name}: " if s else ""
                self._say(f"{event.severity}: {where}{event.message.strip()}", True)
            elif s is not None and s.op in _VERBS:
                head = f"{_VERBS[s.op]} {s.short_type} {s.name} ..."
                if event.kind == "start":
                    self._say(head)
                elif event.kind in ("done", "failed"):
                    self.done += 1
                    self.failed += event.kind == "failed"
                    of = f"/{max(self.total, self.done)}" if self.total else ""
                    word = "done" if event.kind == "done" else "failed"
                    self._say(f"{head} {word} ({self.done}{of})", event.kind == "failed")


def collect_lines() -> tuple[list[tuple[str, bool]], Callable[[str, bool], None]]:
    """A list and an ``emit`` that appends ``(line, is_error)`` to it: a ProgressPrinter sink for tests."""
    lines: list[tuple[str, bool]] = []
    return lines, lambda line, err: lines.append((line, err))


# --------------------------------------------------------------------------------------------- reports
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
    rows = []
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
    widths = [max(minimum, *(len(row[i]) for row in rows)) for i, minimum in ((3, 24), (2, 32), (4, 24))]
    return [f"  {t:<{widths[0]}} {name:<{widths[1]}} {rid:<{widths[2]}} ({why})"
            for _, _, name, t, rid, why in rows]


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
        return (f"OSS bucket {r.id}: empty it (every object version; it is versioned) and delete it in the OSS "
                f"console, or `ossutil rm oss://{r.id} -r -f --all-versions` then `ossutil rm oss://{r.id} -b -f`")
    if r.type in BUCKET_SECURING:
        return (f"{BUCKET_SECURING[r.type]} of OSS bucket {r.id} ({r.short_type} {r.name}): part of the bucket; it "
                "keeps the bucket secured until you delete the bucket, and goes with it")
    if r.type == "alicloud:nas/fileset:Fileset":
        fs, _, fset = r.id.partition(":")
        return (f"CPFS fileset {fset or r.id} of {fs}: turn off its deletion protection and delete it in the NAS "
                f"console, or `aliyun nas DeleteFileset --FileSystemId {fs} --FsetId {fset}`")
    if r.type == "alicloud:nas/fileSystem:FileSystem":
        return (f"file system {r.id}: delete it in the File Storage NAS console, or "
                f"`aliyun nas DeleteFileSystem --FileSystemId {r.id}` (delete its filesets first)")
    return f"{r.short_type} {r.name} ({r.id}): delete it in the Alibaba Cloud console"


def format_outputs(outputs: Mapping[str, OutputValue], show_secrets: bool = False) -> dict[str, Any]:
    return {k: (v.value if (show_secrets or not v.secret) else "[secret]") for k, v in sorted(outputs.items())}


# --------------------------------------------------------------------------------------------- live preview
def live_preview(target: str | Path, backend: str | None = None, engine: Engine | None = None,
                 env: Mapping[str, str] | None = None) -> str:
    """Preview SPEC or STACK_DIR against the real stack state; the text ``trainstack preview --live`` prints.

    A folder is previewed as it is. A spec is previewed as it renders now: from its stack folder when that is
    fresh, otherwise from a temporary render that uses the folder's state backend (and venv, if any), so the
    preview diffs against what is really deployed without touching the folder.
    """
    engine = engine or PulumiEngine()
    env = os.environ if env is None else env
    p = Path(target)
    notes: list[str] = []
    if p.is_dir():
        t = target_for(p, backend, env)
        preflight(t, env=env)
        fresh = check_fresh(p)
        if fresh.stale:
            notes.append(f"warning: the folder is stale against its spec ({', '.join(fresh.stale)} differ); "
                         "`trainstack up` will refuse it until it is re-rendered")
        return _preview_text(engine, t, notes)
    t = planned_target(p, backend, env)
    preflight(t, env=env)
    the_plan = pipeline.plan_file(p)
    files = dict(stack_files.render(the_plan, stackdir.spec_record(p)))
    if stackdir.is_stack_dir(t.stack_dir) and not stale_files(files, t.stack_dir, t.stack):
        return _preview_text(engine, target_for(t.stack_dir, backend, env), notes)
    config_name = f"Pulumi.{t.stack}.yaml"
    if (t.stack_dir / config_name).is_file():
        merged = _merge_stack_config(files[config_name], (t.stack_dir / config_name).read_text(encoding="utf-8"))
        files[config_name] = merged or files[config_name]
    deployed_here = stackdir.is_stack_dir(t.stack_dir)
    notes.append(f"previewing {p} as it renders now ({t.stack_dir} is {'stale' if deployed_here else 'missing'}; "
                 f"`trainstack up {p}` re-renders it)")
    with tempfile.TemporaryDirectory(prefix="trainstack-live-") as tmp:
        work = Path(tmp) / t.stack_dir.name
        stackdir.write(files, work, durable=False)
        venv = t.stack_dir / "venv"
        if venv.is_dir():
            (work / "venv").symlink_to(venv.resolve(), target_is_directory=True)
        if not deployed_here and not (backend or env.get("TRAINSTACK_BACKEND")):
            t = replace(t, backend=default_backend(work))  # nothing deployed from a folder that does not exist
        return _preview_text(engine, replace(t, stack_dir=work), notes, folder=t.stack_dir)


def _preview_text(engine: Engine, t: Target, notes: list[str], folder: Path | None = None) -> str:
    """The preview report; ``folder`` is the stack folder to name when ``t`` is a temporary render of it."""
    digest = stack_digest(t.stack_dir, t.stack)
    said: list[str] = []  # warnings the engine reported, in the progress printer's format
    printer = ProgressPrinter(lambda line, err: said.append(line))
    summary = engine.preview(t, lambda ev: printer(ev) if ev.kind == "diagnostic" else None)
    lines = [f"Live preview of {t.project} (stack {t.stack}), state in {display_backend(t.backend)}", *notes,
             *said, summary.text().rstrip("\n"),
             f"stack digest: {digest}",
             f"spec digest:  {t.spec_digest}",
             f"to deploy exactly this: trainstack up {folder or t.stack_dir} --expect-digest {digest}"]
    return redact("\n".join(lines) + "\n")


# --------------------------------------------------------------------------------------------- Pulumi engine
def engine_env(target: Target) -> dict[str, str]:
    """Environment for every pulumi CLI run: the chosen backend and no surprises.

    ``PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER`` lets Pulumi recover the secrets settings (the passphrase salt)
    from the state if a re-render ever drops them from Pulumi.<stack>.yaml.
    """
    return {"PULUMI_BACKEND_URL": target.backend, "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER": "true"}


def _last_lines(text: str, n: int = 6) -> str:
    noise = ("warning: A new version of Pulumi", "You are currently using version", "To upgrade",
             "Resources:", "Duration:", "View Live:", "    ")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith(noise)]
    return " | ".join(lines[-n:])


def engine_error(e: BaseException, target: Target) -> LiveError:
    """Translate an Automation API exception into a trainstack error with one actionable sentence."""
    from pulumi.automation import errors as auto_errors

    if isinstance(e, auto_errors.ConcurrentUpdateError):
        return StackLocked(f"stack {target.stack} of {target.project} is locked by another update: wait for it to "
                           f"finish, or if none is running (a crashed run), run `pulumi cancel --stack {target.stack}` "
                           f"in {target.stack_dir} with PULUMI_BACKEND_URL={display_backend(target.backend)}.")
    if isinstance(e, auto_errors.StackNotFoundError):
        return StackNotDeployed(f"stack {target.stack} of {target.project} has no state in "
                                f"{display_backend(target.backend)}: deploy it first with `trainstack up`, or pass "
                                "the --backend it was deployed with.")
    if isinstance(e, auto_errors.InvalidVersionError):
        return PulumiMissing(f"the pulumi CLI is too old for the Automation API ({e}): {INSTALL_PULUMI}")
    if isinstance(e, FileNotFoundError) or (isinstance(e, subprocess.CalledProcessError) and "version" in e.cmd):
        return PulumiMissing(f"the pulumi CLI could not be started (`pulumi version` failed): {INSTALL_PULUMI}")
    if isinstance(e, auto_errors.CommandError):
        # CommandError carries only str(CommandResult): "\n code: N\n stdout: ...\n stderr: ..."
        text = str(e.args[0]) if e.args else ""
        cut = text.rfind("\n stderr: ")
        stdout, stderr = (text[:cut], text[cut + len("\n stderr: "):]) if cut >= 0 else (text, "")
        # the cause is usually in the stdout "Diagnostics:" block, stderr adds the verdict ("update failed")
        lines = [ln for ln in stdout.splitlines() if "error:" in ln] + stderr.splitlines()
        detail = _last_lines("\n".join(dict.fromkeys(ln.strip() for ln in lines)))
        return EngineFailed(f"the Pulumi engine failed for {target.project}/{target.stack}: {detail or 'no detail'}"
                            " (rerun with --debug for the whole log)")
    return EngineFailed(f"the Pulumi engine failed for {target.project}/{target.stack}: {type(e).__name__}: {e}")


class _Collector:
    """Translates Pulumi engine events into :class:`Event` and remembers the steps for the change summary."""

    HIDDEN_OPS = ("create-replacement", "delete-replaced", "read-replacement", "discard-replaced",
                  "remove-pending-replace", "import-replacement")

    def __init__(self, on_event: OnEvent):
        self.on_event = on_event
        self.steps: dict[str, Step] = {}
        self.counts: Mapping[Any, int] | None = None  # from the run's own summary event, when it sends one

    @staticmethod
    def _visible(meta: Any) -> bool:
        return meta.type != "pulumi:pulumi:Stack" and not (
            meta.type.startswith("pulumi:providers:") and urn_name(meta.urn).startswith("default"))

    def _step(self, meta: Any) -> Step:
        op = getattr(meta.op, "value", str(meta.op))
        return Step(op=op, type=meta.type, name=urn_name(meta.urn), urn=meta.urn)

    def __call__(self, ev: Any) -> None:
        try:
            self._handle(ev)
        except Exception:  # noqa: BLE001 a display problem must never abort a deployment
            pass

    def _handle(self, ev: Any) -> None:
        summary = getattr(ev, "summary_event", None)
        if summary is not None:
            self.counts = summary.resource_changes
            return
        for attr, kind in (("resource_pre_event", "start"), ("res_outputs_event", "done"),
                           ("res_op_failed_event", "failed")):
            wrapped = getattr(ev, attr, None)
            if wrapped is None:
                continue
            meta = wrapped.metadata
            if not self._visible(meta):
                return
            step = self._step(meta)
            if step.op in self.HIDDEN_OPS:
                return
            if kind == "start":
                self.steps.setdefault(step.urn + "|" + step.op, step)
            self.on_event(Event(kind, step))
            return
        d = getattr(ev, "diagnostic_event", None)
        if d is not None and d.severity in ("error", "warning") and not d.ephemeral:
            where: Step | None = None
            if d.urn and "pulumi:pulumi:Stack" not in d.urn:
                parts = d.urn.split("::")  # urn:pulumi:STACK::PROJECT::[PARENT$]TYPE::NAME
                typ = parts[-2].rsplit("$", 1)[-1] if len(parts) >= 2 else ""
                where = Step("", typ, urn_name(d.urn), d.urn)
            self.on_event(Event("diagnostic", where, d.severity, d.message))

    def summary(self, counts: Mapping[Any, int] | None) -> ChangeSummary:
        """Counts from this run's summary event if it came, else the ones the Automation API returned."""
        return ChangeSummary.of(self.counts if self.counts is not None else counts, self.steps.values())


class PulumiEngine:
    """The :class:`Engine` that deploys: pulumi.automation over the ``pulumi`` CLI, one stack folder at a time.

    The program is the generated ``__main__.py`` in the stack folder (a "local program"); project and stack
    settings are never passed to the workspace because that would rewrite the rendered Pulumi.yaml.
    """

    def _open(self, target: Target, create: bool) -> Any:
        from pulumi import automation as auto

        if target.backend.startswith("file://"):
            Path(target.backend[len("file://"):]).mkdir(parents=True, exist_ok=True)
        opts = auto.LocalWorkspaceOptions(work_dir=str(target.stack_dir), env_vars=engine_env(target),
                                          secrets_provider=target.secrets_provider)
        opener = auto.create_or_select_stack if create else auto.select_stack
        return opener(stack_name=target.stack, work_dir=str(target.stack_dir), opts=opts)

    @contextlib.contextmanager
    def _session(self, target: Target, on_event: OnEvent = _ignore, create: bool = False,
                 program: bool = False) -> Iterator[Any]:
        """Open the stack, install the program's venv on first use, and translate every failure."""
        require_pulumi_cli()
        try:
            stack = self._open(target, create)
            if program and not (target.stack_dir / "venv").exists():
                on_event(Event("info", message="installing the program's Python dependencies into venv/ "
                                               "(first run only; needs PyPI and the alicloud plugin download)"))
                stack.workspace.install()
            yield stack
        except LiveError:
            raise
        except Exception as e:  # noqa: BLE001 every engine failure becomes one sentence
            raise engine_error(e, target) from e

    def preview(self, target: Target, on_event: OnEvent) -> ChangeSummary:
        collector = _Collector(on_event)
        with self._session(target, on_event, create=True, program=True) as stack:
            result = stack.preview(on_event=collector, color="never")
        return collector.summary(result.change_summary)

    def up(self, target: Target, on_event: OnEvent) -> UpResult:
        collector = _Collector(on_event)
        with self._session(target, on_event, create=True, program=True) as stack:
            result = stack.up(on_event=collector, color="never", show_secrets=False)
        outputs = {k: OutputValue(v.value, bool(v.secret)) for k, v in (result.outputs or {}).items()}
        return UpResult(collector.summary(result.summary.resource_changes), outputs)

    def destroy(self, target: Target, on_event: OnEvent, *, exclude_protected: bool,
                preview_only: bool = False) -> ChangeSummary:
        import inspect

        from pulumi import automation as auto

        if exclude_protected and "exclude_protected" not in inspect.signature(auto.Stack.destroy).parameters:
            raise EngineFailed("this pulumi Python SDK cannot destroy while keeping protected data: upgrade it "
                               "(pip install -U 'pulumi>=3.150,<4').")
        collector = _Collector(on_event)
        with self._session(target, on_event) as stack:
            if preview_only:
                result = stack.preview_destroy(on_event=collector, color="never", exclude_protected=exclude_protected)
                return collector.summary(result.change_summary)
            result = stack.destroy(on_event=collector, color="never", show_secrets=False,
                                   exclude_protected=exclude_protected)
        return collector.summary(result.summary.resource_changes)

    def refresh(self, target: Target, on_event: OnEvent, *, preview_only: bool = False) -> ChangeSummary:
        collector = _Collector(on_event)
        with self._session(target, on_event) as stack:
            if preview_only:
                result = stack.preview_refresh(on_event=collector, color="never")
                return collector.summary(result.change_summary)
            result = stack.refresh(on_event=collector, color="never", show_secrets=False)
        return collector.summary(result.summary.resource_changes)

    def outputs(self, target: Target) -> dict[str, OutputValue]:
        with self._session(target) as stack:
            return {k: OutputValue(v.value, bool(v.secret)) for k, v in stack.outputs().items()}

    def resources(self, target: Target) -> list[StateResource]:
        with self._session(target) as stack:
            deployment = stack.export_stack().deployment or {}
        return [StateResource(urn=r.get("urn", ""), type=r.get("type", ""), id=str(r.get("id") or ""),
                              protect=bool(r.get("protect")), retain_on_delete=bool(r.get("retainOnDelete")),
                              dependencies=tuple(r.get("dependencies") or ()), parent=r.get("parent") or "")
                for r in deployment.get("resources") or []]

    def unprotect_all(self, target: Target) -> None:
        with self._session(target) as stack:
            ws = stack.workspace
            ws.pulumi_command.run(["state", "unprotect", "--all", "--yes", "--stack", target.stack],
                                  ws.work_dir, dict(ws.env_vars))


# --------------------------------------------------------------------------------------------- fake engine
@dataclass
class FakeEngine:
    """An in-memory :class:`Engine` for tests: scripted plans and state, every call recorded.

    ``destroy(exclude_protected=True)`` keeps protected resources and everything they depend on (their parents
    and dependencies, transitively), exactly the set ``pulumi destroy --exclude-protected`` keeps.
    """

    plan_steps: list[Step] = field(default_factory=list)
    state: list[StateResource] | None = None  # None: the stack was never created
    stack_outputs: dict[str, OutputValue] = field(default_factory=dict)
    diagnostics: list[tuple[str, str]] = field(default_factory=list)  # (severity, message) from preview and up
    fail_with: LiveError | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def _record(self, name: str, **kwargs: Any) -> None:
        self.calls.append((name, kwargs))
        if self.fail_with is not None:
            raise self.fail_with

    def _require_state(self, target: Target) -> list[StateResource]:
        if self.state is None:
            raise StackNotDeployed(f"stack {target.stack} of {target.project} has no state in "
                                   f"{display_backend(target.backend)}: deploy it first with `trainstack up`.")
        return self.state

    def _diagnose(self, on_event: OnEvent) -> None:
        for severity, message in self.diagnostics:
            on_event(Event("diagnostic", None, severity, message))

    def preview(self, target: Target, on_event: OnEvent) -> ChangeSummary:
        self._record("preview", target=target)
        self._diagnose(on_event)
        return ChangeSummary.of(None, self.plan_steps)

    def up(self, target: Target, on_event: OnEvent) -> UpResult:
        self._record("up", target=target)
        self._diagnose(on_event)
        state = list(self.state or [])
        for step in self.plan_steps:
            on_event(Event("start", step))
            if step.op in ("create", "update", "replace", "same") and not any(r.urn == step.urn for r in state):
                state.append(StateResource(step.urn, step.type, id=f"id-{step.name}"))
            on_event(Event("done", step))
        self.state = state
        return UpResult(ChangeSummary.of(None, self.plan_steps), dict(self.stack_outputs))

    def _kept(self, state: list[StateResource]) -> set[str]:
        by_urn = {r.urn: r for r in state}
        kept: set[str] = set()
        todo = [r.urn for r in state if r.protect]
        while todo:
            urn = todo.pop()
            if urn in kept or urn not in by_urn:
                continue
            kept.add(urn)
            r = by_urn[urn]
            todo.extend(r.dependencies)
            if r.parent:
                todo.append(r.parent)
        return kept

    def destroy(self, target: Target, on_event: OnEvent, *, exclude_protected: bool,
                preview_only: bool = False) -> ChangeSummary:
        self._record("destroy", target=target, exclude_protected=exclude_protected, preview_only=preview_only)
        state = self._require_state(target)
        kept = self._kept(state) if exclude_protected else set()
        if not exclude_protected and any(r.protect for r in state):
            raise EngineFailed("the Pulumi engine failed: unable to delete resource: it is protected")
        doomed = [Step("delete", r.type, r.name, r.urn) for r in state if r.urn not in kept and not r.bookkeeping]
        if not preview_only:
            for step in doomed:
                on_event(Event("start", step))
                on_event(Event("done", step))
            self.state = [r for r in state if r.urn in kept]
        return ChangeSummary.of(None, doomed)

    def refresh(self, target: Target, on_event: OnEvent, *, preview_only: bool = False) -> ChangeSummary:
        self._record("refresh", target=target, preview_only=preview_only)
        state = self._require_state(target)
        return ChangeSummary.of({"same": len(state)}, ())

    def outputs(self, target: Target) -> dict[str, OutputValue]:
        self._record("outputs", target=target)
        self._require_state(target)
        return dict(self.stack_outputs)

    def resources(self, target: Target) -> list[StateResource]:
        self._record("resources", target=target)
        return list(self._require_state(target))

    def unprotect_all(self, target: Target) -> None:
        self._record("unprotect_all", target=target)
        self.state = [replace(r, protect=False) for r in self._require_state(target)]


__all__ = [
    "Engine", "PulumiEngine", "FakeEngine", "Target", "Step", "Event", "ChangeSummary", "UpResult", "OutputValue",
    "StateResource", "Prepared", "Freshness", "ProgressPrinter", "LiveError", "PulumiMissing", "CredentialsMissing",
    "PassphraseMissing", "StackLocked", "StaleStack", "DigestMismatch", "EngineFailed", "Declined", "Interrupted",
    "StackNotDeployed", "BadTarget", "preflight", "target_for", "locate", "planned_target", "prepare_up",
    "check_digest", "check_fresh", "stack_digest", "stale_files", "live_preview", "redact", "display_backend",
    "kept_report", "unkept_bucket_security", "how_to_delete", "format_outputs", "engine_error", "engine_env",
]
