"""``trainstack lint``: secure-by-default policy checks over the resources a spec or stack folder declares.

Exit codes follow the rest of the CLI: 0 when no unwaived error remains (warnings and waived findings do not
fail), 1 when one does (a failed check, like a stale stack), 2 for bad input (a missing or wrong spec, a folder
that is not a stack). The rules, their checks and findings live in :mod:`generator.preview.lint`; this module only prints.
"""

from __future__ import annotations

import json
import sys

import click

from generator.cli.common import handle
from generator.errors import EXIT_FAILURE


@click.command("lint")
@click.argument("target", required=False, type=click.Path(exists=False))
@click.option(
    "--json", "as_json", is_flag=True, help="Print the report (or, with --rules, the rules) as JSON."
)
@click.option("--rules", "list_rules", is_flag=True, help="List the rules (id, severity, title) and exit.")
@handle
def lint(target: str | None, as_json: bool, list_rules: bool) -> None:
    """Check what SPEC (or a stack folder) would create against trainstack's security rules.

    Findings print as 'SEVERITY RULE resource: message' (with --json: each finding's rule, event and
    fields, the message rendered from them). A spec waives a rule only with a reason
    (waivers: [{rule: TS002, reason: "..."}]); waived findings are shown but do not fail.
    Exit 1 if an unwaived error remains.
    """
    from generator.preview import lint as lint_mod

    if list_rules:
        rules = sorted(lint_mod.RULES.values(), key=lambda r: r.id)
        if as_json:
            click.echo(
                json.dumps(
                    [
                        {
                            "id": r.id,
                            "severity": r.severity,
                            "part": r.part,
                            "title": r.title,
                            "rationale": r.rationale,
                        }
                        for r in rules
                    ],
                    indent=2,
                )
            )
        else:
            for r in rules:
                click.echo(f"{r.id}  {r.severity:<7}  {r.part:<11}  {r.title}")
        return
    if target is None:
        raise click.UsageError("give a spec file or a stack folder to lint (or --rules to list the rules)")
    from generator import api

    report = api.lint_target(target)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        click.echo(report.text(), nl=False)
    if report.failed:
        if not as_json:
            click.echo(
                f"lint failed: {len(report.errors)} unwaived error(s); fix them, or waive a rule in the spec "
                "with a written reason",
                err=True,
            )
        sys.exit(EXIT_FAILURE)


COMMANDS = [lint]
