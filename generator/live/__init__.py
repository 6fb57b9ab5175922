"""The live engine: preview, deploy, refresh, read and destroy a rendered stack folder in Alibaba Cloud.

This package's ``__init__`` is a facade: ``from generator import live`` then ``live.X`` reaches every public name
of the modules below, which is how the CLI (``generator/cli/live.py``), the library API and the tests use it.

Everything that touches the cloud goes through the :class:`Engine` port (:mod:`~generator.live.engine`).
:class:`PulumiEngine` (:mod:`~generator.live.pulumi_engine`) implements it with the Pulumi Automation API (which
drives the ``pulumi`` CLI on PATH); :class:`FakeEngine` (:mod:`~generator.live.fake`) implements it in memory so
the commands, their checks and their messages are tested without a CLI, credentials or a network.

What the package adds around the engine, and where:

* **Preflight checks** (:func:`preflight`, :mod:`~generator.live.checks`) turn the usual first-run failures (no
  ``pulumi`` CLI, no Alibaba Cloud credentials, no secrets passphrase) into one sentence with the fix and a
  distinct exit code, before anything slow starts. A locked stack and any other engine failure get their own codes
  too (:mod:`~generator.live.errors`, docs/live.md).
* **Freshness and pinning** (:mod:`~generator.live.target`). ``up`` deploys a stack folder only if it still is
  what its spec renders (:func:`stale_files`), and ``--expect-digest`` pins a deploy to the exact folder a reviewer
  saw (:func:`stack_digest`, printed by every preview and up).
* **State location.** By default the Pulumi state lives next to the program, in ``<stack>/.trainstack/state``
  (a ``file://`` backend the stack's .gitignore already excludes); ``--backend`` or ``TRAINSTACK_BACKEND`` moves it.
* **No secret ever printed.** Every line shown to the user passes through :func:`redact`
  (:mod:`~generator.live.redaction`), which masks the values of the credential and passphrase variables in the
  environment.
* **The CPFS mount address** (:mod:`~generator.live.mountaddr`). A CPFS program declares its nodes only once
  ``trainstack:sharedFsAddress`` is set; ``up`` looks the export's address up in the NAS API after its first pass
  (behind the :class:`MountAddressResolver` port), sets it with :meth:`Engine.set_config` and deploys again.
* **The stock preflight** (:mod:`~generator.live.stock`). Before ``up`` or ``heal`` creates nodes, ECS
  DescribeAvailableResource is asked (behind the :class:`StockChecker` port) whether their zone has stock of the
  instance type; without stock the run stops before creating anything (exit 30) and names the spec's zones that do.
* **Heal** (:mod:`~generator.live.heal`). ``trainstack heal`` refreshes the nodes, finds those missing from the
  state or stopped, and re-creates exactly those with targeted engine runs (``targets=`` URNs), once or ``--watch``.
* **What the user reads:** progress lines (:mod:`~generator.live.progress`), the reports after a destroy and the
  outputs (:mod:`~generator.live.reports`), and the live preview (:mod:`~generator.live.preview`).

The library never imports click; ``generator/cli/live.py`` is the command-line shell over it. Code that replaces
a name for a test must replace it where it is used (its module), not on this facade.
"""

from __future__ import annotations

from generator.live.checks import (
    INSTALL_PULUMI,
    credential_source,
    preflight,
    require_credentials,
    require_passphrase,
    require_pulumi_cli,
)
from generator.live.engine import (
    CHANGE_OPS,
    DEFAULT_SECRETS_PROVIDER,
    ChangeSummary,
    Engine,
    Event,
    OnEvent,
    OutputValue,
    StateResource,
    Step,
    Target,
    UpResult,
    short_type,
    urn_name,
)
from generator.live.errors import (
    EXIT_DECLINED,
    EXIT_DIGEST,
    EXIT_ENGINE,
    EXIT_INTERRUPTED,
    EXIT_LOCKED,
    EXIT_NO_CREDENTIALS,
    EXIT_NO_NAS_SDK,
    EXIT_NO_PASSPHRASE,
    EXIT_NO_PULUMI,
    EXIT_NO_SDK,
    EXIT_NO_STOCK,
    EXIT_NOT_DEPLOYED,
    EXIT_STALE,
    BadTarget,
    CredentialsMissing,
    Declined,
    DigestMismatch,
    EcsSdkMissing,
    EngineFailed,
    Interrupted,
    LiveError,
    NasSdkMissing,
    NoStock,
    PassphraseMissing,
    PulumiMissing,
    StackLocked,
    StackNotDeployed,
    StaleStack,
)
from generator.live.fake import FakeEngine
from generator.live.heal import (
    SickNode,
    diagnose,
    heal_once,
    node_urn,
    require_healable,
    wait_for_stock,
    watch,
)
from generator.live.keypair import (
    KeyPairChecker,
    KeyPairCheckFailed,
    NoKeyPair,
    SdkKeyPairChecker,
    key_pair_preflight,
)
from generator.live.mountaddr import (
    INSTALL_LIVE,
    SHARED_FS_ADDRESS_KEY,
    MountAddressError,
    MountAddressResolver,
    SdkMountAddressResolver,
    configured_address,
    deployed_export,
    needs_mount_address,
    require_mount_address_sdk,
    resolve_mount_address,
    wait_for_mount_address,
)
from generator.live.preview import live_preview
from generator.live.progress import ProgressPrinter, collect_lines
from generator.live.pulumi_engine import PulumiEngine, engine_env, engine_error
from generator.live.redaction import SECRET_ENV_VARS, display_backend, redact
from generator.live.reports import (
    BUCKET_SECURING,
    OSS_BUCKET,
    format_outputs,
    how_to_delete,
    kept_report,
    unkept_bucket_security,
)
from generator.live.stock import (
    ECS_INSTANCE,
    Fleet,
    PlannedNode,
    SdkStockChecker,
    StockChecker,
    StockCheckFailed,
    StockVerdict,
    fleet_of,
    nodes_to_create,
    short_stock,
    stock_preflight,
    zone_stock,
)
from generator.live.target import (
    STATE_DIR,
    Freshness,
    Prepared,
    check_backend,
    check_digest,
    check_fresh,
    default_backend,
    find_spec,
    has_state,
    locate,
    other_state_folders,
    planned_target,
    prepare_up,
    recorded_spec,
    render_for_up,
    stack_digest,
    stale_files,
    target_for,
)
from generator.render.digest import PULUMI_BOOKKEEPING_KEYS

__all__ = [
    "BUCKET_SECURING",
    "CHANGE_OPS",
    "DEFAULT_SECRETS_PROVIDER",
    "ECS_INSTANCE",
    "EXIT_DECLINED",
    "EXIT_DIGEST",
    "EXIT_ENGINE",
    "EXIT_INTERRUPTED",
    "EXIT_LOCKED",
    "EXIT_NOT_DEPLOYED",
    "EXIT_NO_CREDENTIALS",
    "EXIT_NO_NAS_SDK",
    "EXIT_NO_PASSPHRASE",
    "EXIT_NO_PULUMI",
    "EXIT_NO_SDK",
    "EXIT_NO_STOCK",
    "EXIT_STALE",
    "INSTALL_LIVE",
    "INSTALL_PULUMI",
    "OSS_BUCKET",
    "PULUMI_BOOKKEEPING_KEYS",
    "SECRET_ENV_VARS",
    "SHARED_FS_ADDRESS_KEY",
    "STATE_DIR",
    "BadTarget",
    "ChangeSummary",
    "CredentialsMissing",
    "Declined",
    "DigestMismatch",
    "EcsSdkMissing",
    "Engine",
    "EngineFailed",
    "Event",
    "FakeEngine",
    "Fleet",
    "Freshness",
    "Interrupted",
    "KeyPairCheckFailed",
    "KeyPairChecker",
    "LiveError",
    "MountAddressError",
    "MountAddressResolver",
    "NasSdkMissing",
    "NoKeyPair",
    "NoStock",
    "OnEvent",
    "OutputValue",
    "PassphraseMissing",
    "PlannedNode",
    "Prepared",
    "ProgressPrinter",
    "PulumiEngine",
    "PulumiMissing",
    "SdkKeyPairChecker",
    "SdkMountAddressResolver",
    "SdkStockChecker",
    "SickNode",
    "StackLocked",
    "StackNotDeployed",
    "StaleStack",
    "StateResource",
    "Step",
    "StockCheckFailed",
    "StockChecker",
    "StockVerdict",
    "Target",
    "UpResult",
    "check_backend",
    "check_digest",
    "check_fresh",
    "collect_lines",
    "configured_address",
    "credential_source",
    "default_backend",
    "deployed_export",
    "diagnose",
    "display_backend",
    "engine_env",
    "engine_error",
    "find_spec",
    "fleet_of",
    "format_outputs",
    "has_state",
    "heal_once",
    "how_to_delete",
    "kept_report",
    "key_pair_preflight",
    "live_preview",
    "locate",
    "needs_mount_address",
    "node_urn",
    "nodes_to_create",
    "other_state_folders",
    "planned_target",
    "preflight",
    "prepare_up",
    "recorded_spec",
    "redact",
    "render_for_up",
    "require_credentials",
    "require_healable",
    "require_mount_address_sdk",
    "require_passphrase",
    "require_pulumi_cli",
    "resolve_mount_address",
    "short_stock",
    "short_type",
    "stack_digest",
    "stale_files",
    "stock_preflight",
    "target_for",
    "unkept_bucket_security",
    "urn_name",
    "wait_for_mount_address",
    "wait_for_stock",
    "watch",
    "zone_stock",
]
