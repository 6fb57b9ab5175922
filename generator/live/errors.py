"""The live engine's failures: the :class:`LiveError` family and the distinct exit code each one carries.

Distinct codes let pipelines tell "fix your setup" from "the cloud said no" (the table is in docs/live.md). Every
message is redacted when the error is made, so no credential can reach the terminal through an error.
"""

from __future__ import annotations

from generator.errors import EXIT_USAGE, TrainstackError
from generator.live.redaction import redact

EXIT_NO_PULUMI = 20  # the pulumi CLI is missing, does not start, or is of a version trainstack cannot drive
EXIT_NO_CREDENTIALS = 21  # no Alibaba Cloud credentials in the environment or a profile
EXIT_NO_PASSPHRASE = 22  # the passphrase secrets provider has no passphrase, or a wrong one
EXIT_LOCKED = 23  # another update holds the stack's lock
EXIT_STALE = 24  # the stack folder is not what its spec renders
EXIT_DIGEST = 25  # the stack folder is not the one --expect-digest names
EXIT_ENGINE = 26  # the engine ran and failed (cloud API error, program error, ...)
EXIT_DECLINED = 27  # the user (or a missing --yes / --confirm-name) did not confirm; nothing changed
EXIT_NOT_DEPLOYED = 28  # the stack has no state in the backend yet
EXIT_NO_NAS_SDK = (
    29  # an Alibaba Cloud SDK of trainstack[live] is missing (NAS: CPFS mount address; ECS: stock)
)
EXIT_NO_SDK = EXIT_NO_NAS_SDK  # the same fix for both SDKs: pip install 'trainstack[live]'
EXIT_NO_STOCK = 30  # the zone has no stock of the instance type for the nodes a run would create
EXIT_INTERRUPTED = 130  # Ctrl-C during an engine run (the shell's convention for SIGINT)


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


class NasSdkMissing(LiveError):
    """A CPFS stack's first ``up`` looks up the export's mount address with the NAS SDK, which is not installed."""

    exit_code = EXIT_NO_NAS_SDK


class EcsSdkMissing(LiveError):
    """The stock preflight asks the ECS API's DescribeAvailableResource through the ECS SDK, which is not installed."""

    exit_code = EXIT_NO_SDK


class NoStock(LiveError):
    """The planned zone has no stock of the instance type for the nodes to create; nothing was created."""

    exit_code = EXIT_NO_STOCK


class Interrupted(LiveError):
    """Ctrl-C while the engine ran: unlike a render, cloud work may be half done, and the user must know it."""

    exit_code = EXIT_INTERRUPTED


class BadTarget(LiveError):
    """The command line names something that is neither a spec nor a stack folder, or a backend Pulumi lacks."""

    exit_code = EXIT_USAGE
