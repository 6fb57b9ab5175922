"""What may be printed: the secret environment variables whose values never reach the terminal, and a safe form of
backend URLs.

Every line trainstack shows about a live operation (progress, errors, reports) passes through :func:`redact`.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from pathlib import Path

# Values that must never reach the terminal, even inside an engine error message.
SECRET_ENV_VARS = (
    "ALIBABA_CLOUD_ACCESS_KEY_ID",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
    "ALIBABA_CLOUD_SECURITY_TOKEN",
    "ALICLOUD_ACCESS_KEY",
    "ALICLOUD_SECRET_KEY",
    "ALICLOUD_SECURITY_TOKEN",
    "PULUMI_CONFIG_PASSPHRASE",
    "PULUMI_ACCESS_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)


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
    url = re.sub(r"^([a-z0-9+.-]+://)[^/@]*@", r"\1***@", url, flags=re.IGNORECASE)
    return url.split("?", 1)[0] + ("?..." if "?" in url else "")
