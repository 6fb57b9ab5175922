"""CLI commands grouped by feature, and the error handling they share.

Each ``generator/cli/<feature>.py`` defines click commands and lists them in ``COMMANDS``; ``generator.cli``
registers them. Modules here import heavy libraries (pulumi) inside the command functions only, so that
``trainstack --help`` and the commands that do not run a program start fast.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from generator.errors import EXIT_FAILURE, EXIT_USAGE, SpecErrors, TrainstackError


def handle(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run a command; print SpecErrors and TrainstackErrors as text with their exit code (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = click.get_current_context().find_root().params.get("debug", False)
        try:
            return fn(*args, **kwargs)
        except SpecErrors as e:
            if debug:
                raise
            click.echo(e.render(show_source=True), err=True)
            n = len(e.problems)
            click.echo(f"{n} problem{'s' if n != 1 else ''} found; nothing was written.", err=True)
            sys.exit(EXIT_USAGE)
        except TrainstackError as e:
            if debug:
                raise
            click.echo(f"error: {e}", err=True)
            sys.exit(e.exit_code)
        except OSError as e:  # a filesystem failure outside the stack writer: one sentence, no traceback
            if debug:
                raise
            where = f"{e.filename}: " if e.filename else ""
            click.echo(f"error: {where}{e.strerror or e}", err=True)
            sys.exit(EXIT_FAILURE)
        except KeyboardInterrupt:
            click.echo(
                "interrupted; a stack folder being written is completed or rolled back, never left "
                "half-written",
                err=True,
            )
            sys.exit(130)

    return wrapper
