"""``trainstack diff BASE HEAD``: the offline, classified infrastructure diff for pull requests.

Exit codes differ from the other commands on purpose, like ``git diff --exit-code``: 0 no changes, 2 changes,
1 anything went wrong. That includes a bad spec on either side (printed as FILE:LINE, exit 1, not the usual 2)
and a command-line mistake, so that CI can tell "this PR changes infrastructure" from "the diff failed".
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from generator.cli.common import handle
from generator.errors import EXIT_FAILURE, SpecErrors, TrainstackError

EXIT_CHANGES = 2


class _DiffCommand(click.Command):
    """click exits 2 on a usage error; here 2 means "changes", so a usage error exits 1 instead."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            # click types exit_code as a ClassVar, but ClickException.show/main read it from the instance
            e.exit_code = EXIT_FAILURE  # type: ignore[misc]
            raise


@click.command("diff", cls=_DiffCommand)
@click.argument("base")
@click.argument("head")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="text for a terminal, markdown for a pull-request comment, json (schema_version 4) for tools.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the report to this file instead of standard output.",
)
@handle
def diff(base: str, head: str, fmt: str, output: str | None) -> None:
    """Show what changing BASE into HEAD does to the cluster, offline, worst impact first.

    BASE and HEAD are spec files or GIT_REF:path (e.g. origin/main:examples/pretrain-70b.yaml); BASE may be /dev/null (or -) for a spec that is new,
    and HEAD /dev/null, or a path that no longer exists (REF:path path), for a spec the change deletes. Both are
    rendered and run under Pulumi's mock runtime; no credentials and no Pulumi CLI are needed.
    Every format also shows the cost per hour, per month and for the whole run, base -> head.
    Exit status: 0 no changes, 2 changes, 1 error (including a bad spec on either side).
    """
    from generator.preview import diff as diff_mod

    try:
        result = diff_mod.diff_sides(base, head)
    except SpecErrors as e:
        _fail(e.render(show_source=True) + "\n" + _count(len(e.problems)) + "; no diff was computed.", e)
    except TrainstackError as e:
        if e.exit_code != EXIT_FAILURE:  # another feature's error class with its own code: still exit 1 here
            _fail(f"error: {e}", e)
        raise
    report = diff_mod.FORMATTERS[fmt](result)
    if output:
        try:
            Path(output).write_text(report, encoding="utf-8")
        except OSError as e:
            raise diff_mod.DiffError(f"cannot write {output}: {e.strerror}") from None
    else:
        click.echo(report, nl=False)
    if result.has_changes:
        sys.exit(EXIT_CHANGES)


def _count(n: int) -> str:
    return f"{n} problem{'s' if n != 1 else ''} found"


def _fail(message: str, error: Exception) -> Any:
    """Print an error the diff cannot get past and exit 1 (re-raise with --debug, as ``handle`` does)."""
    if click.get_current_context().find_root().params.get("debug", False):
        raise error
    click.echo(message, err=True)
    sys.exit(EXIT_FAILURE)


COMMANDS = [diff]
