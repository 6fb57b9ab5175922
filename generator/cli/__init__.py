"""The ``trainstack`` command: a thin shell over :mod:`generator.api`.

Exit codes: 0 success; 1 an operation failed (stale stack, lint finding, program or engine error);
2 bad input (the spec or the command line). Errors print as ``FILE:LINE:COL: field: message`` without a
traceback unless ``--debug`` is given. Commands that do not run a Pulumi program never import pulumi.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from generator.catalog import Catalog

import click

from generator.cli.common import handle as _handle
from generator.errors import EXIT_FAILURE

FAST_EXIT_ENV = "TRAINSTACK_FAST_EXIT"
# A command is a short process whose allocations mostly live until it ends: the ~600 modules and the classes it imports,
# the plan, the graphs read from the cache. At CPython 3.11's first threshold (700 allocations) young collections walk
# them again and again and promote them into full collections. A first threshold of 10,000 collects the same cyclic
# garbage, less often (at most that many objects wait for it); a mock run tunes the collector further for its own
# duration (generator/preview/lean.py). TRAINSTACK_CLI_GC=default keeps CPython's thresholds.
CLI_GC_ENV = "TRAINSTACK_CLI_GC"
CLI_GC_THRESHOLD = 10_000
# pydantic looks for plugins when it builds the first model of a process: an entry-point scan of every installed
# distribution (15-25 ms with this project's 112). The spec's models are validated without plugins, so what a spec
# means does not depend on what else is installed beside trainstack; a value the user set is kept.
PYDANTIC_PLUGINS_ENV = "PYDANTIC_DISABLE_PLUGINS"


@contextlib.contextmanager
def _command_process() -> Iterator[None]:
    """The process settings of a command (the collector's first threshold, no pydantic plugins), restored after."""
    import gc
    import os

    thresholds = gc.get_threshold()
    if os.environ.get(CLI_GC_ENV, "tuned").strip().lower() != "default":
        gc.set_threshold(max(thresholds[0], CLI_GC_THRESHOLD), *thresholds[1:])
    plugins = os.environ.get(PYDANTIC_PLUGINS_ENV)
    if plugins is None:
        os.environ[PYDANTIC_PLUGINS_ENV] = "__all__"
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if plugins is None:
            os.environ.pop(PYDANTIC_PLUGINS_ENV, None)


def entry() -> None:
    """The ``trainstack`` command as a process: :func:`main`, then the exit. After a mock run the interpreter's
    teardown (freeing every object of a heap of up to gigabytes, one at a time) is skipped: output is flushed and the
    process ends with ``os._exit``, so the exit code and everything printed or written are the same. Commands that
    did not run the mock runtime (or opened a stack with the live engine: ``pulumi_engine.OPENED``) exit normally;
    ``TRAINSTACK_FAST_EXIT=off`` always does."""
    import os

    try:
        with _command_process():
            main()
        code: str | int | None = 0
    except SystemExit as e:
        code = e.code
    preview = sys.modules.get("generator.preview.mockrun")
    # `import pulumi` loads pulumi.automation: ask the engine whether it opened a stack
    engine = sys.modules.get("generator.live.pulumi_engine")
    fast = os.environ.get(FAST_EXIT_ENV, "on").strip().lower() not in ("off", "0", "no", "false")
    if not (fast and getattr(preview, "RAN", False) and not getattr(engine, "OPENED", False)):
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message") prints the message and exits 1
        print(code, file=sys.stderr)
        status = 1
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(status)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.option("--debug", is_flag=True, help="Show Python tracebacks on errors.")
@click.version_option(package_name="trainstack")
def main(debug: bool) -> None:
    """Compile a declarative LLM-training spec into Pulumi programs for Alibaba Cloud."""


@main.command()
@click.argument("spec", type=click.Path(dir_okay=False))
@_handle
def validate(spec: str) -> None:
    """Check a spec file (syntax, types, catalog facts, sizing, lint) without writing anything."""
    from generator import api
    from generator.present.text import warning_lines

    result = api.preview(spec)  # plans, renders and runs once; the lint reads the same graph
    p = result.plan
    assert p is not None  # a spec file, not a stack folder
    report = api.lint_preview(result)
    click.echo(report.text(), nl=False)
    for line in warning_lines(p):
        click.echo(line)
    if report.failed:
        sys.exit(EXIT_FAILURE)
    nodes = f"{p.compute.nodes} x {p.compute.instance_type}"
    lint_warnings = len(report.warnings)  # printed above with the plan's; the count covers both
    split = f": {len(p.warnings)} plan, {lint_warnings} lint" if lint_warnings else ""
    click.echo(
        f"{spec}: ok ({'paused: no node; resumes as ' + nodes if p.compute.paused else nodes}, "
        f"{len(p.warnings) + lint_warnings} warning(s){split})"
    )


@main.command()
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the whole plan as JSON (the plan.json schema).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "mermaid"]),
    default="text",
    show_default=True,
    help="text for a terminal; markdown for a pull-request description or comment; "
    "mermaid: the topology as a Mermaid flowchart.",
)
@_handle
def plan(spec: str, as_json: bool, fmt: str) -> None:
    """Show what trainstack would build for SPEC, and why."""
    from generator import api
    from generator.present import diagram
    from generator.present import text as report

    p = api.plan(spec)
    if as_json:
        click.echo(p.to_json(), nl=False)
    elif fmt == "markdown":
        from generator.present.markdown import plan_markdown

        click.echo(plan_markdown(p), nl=False)
    elif fmt == "mermaid":
        click.echo(diagram.flowchart(p), nl=False)
    else:
        click.echo(report.plan_text(p), nl=False)


@main.command()
@click.argument("specs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "-o", "--output", type=click.Path(file_okay=False), help="Stack folder (default: stacks/<name>)."
)
@click.option(
    "--check", is_flag=True, help="Write nothing; exit 1 and name the files if the stack folder is stale."
)
@_handle
def render(specs: tuple[str, ...], output: str | None, check: bool) -> None:
    """Render SPECS into Pulumi stack folders (atomically; a folder trainstack did not make is never touched)."""
    from generator import api

    if output and len(specs) > 1:
        raise click.UsageError("-o takes one spec")
    stale = False
    for result in api.render_stacks(specs, output, check=check):  # all validated before any is written
        for ch in result.changes:
            if ch.changed:
                click.echo(f"{ch.action:>9}  {result.dest / ch.path}")
        same = sum(ch.action == "identical" for ch in result.changes)
        if result.kept:
            click.echo(f"{'kept':>9}  {', '.join(ch.path for ch in result.kept)} (not written by trainstack)")
        if not check:
            click.echo(f"{'ok':>9}  {result.dest}: {len(result.changed)} changed, {same} identical")
        if result.lint is not None:
            click.echo(f"     lint  {result.lint.summary()}")
        if check and result.changed:
            stale = True
        elif check:
            click.echo(f"up to date  {result.dest}")
    if stale:
        click.echo("stale: run 'trainstack render' and commit the result", err=True)
        sys.exit(EXIT_FAILURE)


@main.command()
@click.argument("target", type=click.Path(exists=False))
@click.option("--json", "as_json", is_flag=True, help="Print resources as JSON.")
@click.option(
    "--live",
    "live_",
    is_flag=True,
    help="Preview against the real stack state with the Pulumi engine (needs the pulumi CLI, Alibaba "
    "credentials and PULUMI_CONFIG_PASSPHRASE).",
)
@click.option(
    "--backend",
    metavar="URL",
    help="Pulumi state backend for --live (default: $TRAINSTACK_BACKEND, else STACK_DIR/.trainstack/state).",
)
@_handle
def preview(target: str, as_json: bool, live_: bool, backend: str | None) -> None:
    """Show the resources SPEC (or a stack folder) would create: offline under Pulumi's mock runtime by
    default, or against the deployed stack with --live."""
    from generator import api
    from generator.present import text as report

    if live_:
        if as_json:
            raise click.UsageError("--json is not supported with --live")
        from generator import live

        click.echo(live.live_preview(target, backend=backend), nl=False)
        return
    if backend:
        raise click.UsageError("--backend goes with --live")
    from pathlib import Path

    from generator.errors import BadInput, not_a_stack_folder
    from generator.render import stackdir

    if Path(target).is_dir() and not stackdir.is_stack_dir(Path(target)):
        raise BadInput(not_a_stack_folder(target))
    result = api.preview(target)
    g = result.graph
    if as_json:
        data = {
            "resources": [
                {"type": r.type, "name": r.name, "inputs": r.inputs, "protect": r.protect}
                for r in g.resources
            ],
            "outputs": g.outputs,
            "warnings": g.warnings,
        }
        data["stack_digest"] = result.digest
        click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))
    else:
        click.echo(report.preview_text(g, target), nl=False)
        click.echo(f"stack digest: {result.digest}  (pin a deploy to it: trainstack up --expect-digest ...)")


@main.command()
@click.option(
    "--gpu",
    help="Only instance types with this GPU (e.g. A100-80G, H20, L20); with --regions, the regions "
    "that offer it; with --lingjun, the machine types that have it.",
)
@click.option(
    "--region", help="Only instance types the catalog lists for this region (with --regions: that region)."
)
@click.option("--regions", "list_regions", is_flag=True, help="List regions and zones instead.")
@click.option("--lingjun", "list_lingjun", is_flag=True, help="List Lingjun (eflo) machine types instead.")
@click.option(
    "--dlc",
    "list_dlc",
    is_flag=True,
    help="Only the ECS types PAI-DLC's public resources offer as workers (compute.platform: pai-dlc).",
)
@click.option("--json", "as_json", is_flag=True)
@_handle
def catalog(
    gpu: str | None, region: str | None, list_regions: bool, list_lingjun: bool, list_dlc: bool, as_json: bool
) -> None:
    """List the GPU instance types (or regions) trainstack knows, with sources and price dates."""
    from generator.catalog import load_catalog

    if sum((list_regions, list_lingjun, list_dlc)) > 1:
        raise click.UsageError("--regions, --lingjun and --dlc are different lists; give one of them.")
    cat = load_catalog()
    g = None
    if gpu is not None:
        g = cat.gpu(gpu)
        unavailable = cat.unavailable_accelerator(gpu) if g is None else None
        if unavailable is not None:
            _echo_unavailable(cat, unavailable, region, as_json, lingjun=list_lingjun, dlc=list_dlc)
            return
        if g is None:
            _unknown_name(
                "GPU",
                gpu,
                [*cat.gpu_names(), *(a for x in cat.gpus for a in x.aliases)],
                cat.gpu_names(),
                "'--gpu'",
            )
    if region is not None and cat.region(region) is None:
        _unknown_name("region", region, cat.region_ids(), cat.region_ids(), "'--region'")
    if list_lingjun:
        _echo_lingjun(cat, g, region, as_json)
    elif list_regions:
        _echo_regions(cat, g, region, as_json)
    else:
        _echo_types(cat, g, region, list_dlc, as_json)


def _unknown_name(
    what: str, name: str, candidates: Sequence[str], known: Sequence[str], param_hint: str
) -> NoReturn:
    """Refuse an unknown ``--gpu`` or ``--region`` (exit 2), with the nearest name and the known ones."""
    from generator.errors import did_you_mean

    hint = did_you_mean(name, candidates)
    raise click.BadParameter(
        f"unknown {what} '{name}'{'; ' + hint if hint else ''} (known {what}s: {', '.join(known)}).",
        param_hint=param_hint,
    )


def _echo_lingjun(cat: Catalog, g, region: str | None, as_json: bool) -> None:
    """``catalog --lingjun``: the Lingjun machine types (of --region, with --gpu)."""
    from generator.catalog.listing import lingjun_json, lingjun_listed
    from generator.present import text as report

    lingjun = lingjun_listed(cat, g, region)
    if as_json:
        click.echo(json.dumps(lingjun_json(cat, lingjun), indent=2, sort_keys=True))
        return
    if not lingjun:
        with_gpu = f" with {g.name} GPUs" if g else ""
        click.echo(
            f"no Lingjun machine type{with_gpu}{f' in {region}' if region else ''} in catalog "
            f"{cat.version} ({cat.date})"
        )
        return
    headers = [
        "machine type",
        "GPU",
        "#",
        "GiB/GPU",
        "RDMA Gbit/s",
        "regions",
        "HPN zones",
        "payment",
        "CNY/h",
    ]
    rows = [
        [
            t.name,
            t.gpu + ("" if t.gpu_verified else "?"),
            t.gpus,
            f"{t.gpu_memory_gib:g}",
            f"{t.rdma_gbps:g}" if t.rdma_gbps else "",
            " ".join(t.regions),
            " ".join(f"{z}:{h}" for z, h in t.hpn_zones),
            "/".join(t.payment_types),
            f"{t.price.cny_per_hour:,.2f}" + ("*" if t.price.estimated else ""),
        ]
        for t in lingjun
    ]
    click.echo(report.table(headers, rows, right=(2, 3, 4, 8)))
    click.echo("? GPU model unverified   * estimated price (generator/catalog/data/v1/README.md)")


def _echo_regions(cat: Catalog, g, region: str | None, as_json: bool) -> None:
    """``catalog --regions``: regions and zones (with --gpu: those that offer it)."""
    import dataclasses

    from generator.catalog.listing import regions_listed
    from generator.present import text as report

    regions = regions_listed(cat, g, region)
    with_gpu = f" with {g.name} GPUs" if g else ""
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(r) for r, _, _ in regions], indent=2, sort_keys=True))
    elif not regions:
        click.echo(
            f"no region{with_gpu}{f' matches {region}' if region else ''} in catalog {cat.version} ({cat.date})"
        )
    else:
        rows = [
            [
                r.id,
                " ".join(r.zones),
                "yes" if r.cpfs else "",
                "yes" if lingjun else "",
                " ".join(offered) + ("" if r.verified else "  (unverified)"),
            ]
            for r, offered, lingjun in regions
        ]
        click.echo(
            report.table(["region", "zones", "CPFS", "Lingjun", f"GPU families{with_gpu} (verified?)"], rows)
        )


def _echo_types(cat: Catalog, g, region: str | None, list_dlc: bool, as_json: bool) -> None:
    """``catalog``: the ECS GPU instance types (of --region, with --gpu; with --dlc, DLC's worker types)."""
    from generator.catalog.listing import types_json, types_listed
    from generator.present import text as report

    types = types_listed(cat, g, region, list_dlc)
    if as_json:
        click.echo(json.dumps(types_json(cat, types, list_dlc), indent=2, sort_keys=True))
        return
    click.echo(f"catalog {cat.version} ({cat.date})" + (": PAI-DLC worker types" if list_dlc else ""))
    click.echo(report.catalog_text(types), nl=False)
    if list_dlc:
        unverified = [t.name for t in types if not cat.dlc_spec(t.name).verified]  # type: ignore[union-attr]
        if unverified:
            click.echo(
                f"{len(unverified)} of {len(types)} not verified on DLC's public resource list: confirm on "
                "DLC's Create Job page (generator/catalog/data/v1/dlc_specs.csv)"
            )


def _echo_unavailable(
    cat: Catalog, acc, region: str | None, as_json: bool, lingjun: bool = False, dlc: bool = False
) -> None:
    """``catalog --gpu Ascend-910B``: who offers it instead, every source, and the nearest GPUs (of --region; among
    Lingjun machine types with --lingjun, DLC worker types with --dlc)."""
    from generator.catalog.listing import unavailable_answer, unavailable_json
    from generator.catalog.unavailable import peak_label

    answer = unavailable_answer(cat, acc, region, lingjun=lingjun, dlc=dlc)
    if as_json:
        click.echo(json.dumps(unavailable_json(cat, answer, region), indent=2, sort_keys=True))
        return
    click.echo(
        f"{acc.name} ({acc.vendor}, {acc.memory_gib:g} GB, {acc.bf16_tflops:g} TFLOPS FP16/BF16): "
        f"not offered by Alibaba Cloud (checked {acc.checked})"
    )
    click.echo(f"  Alibaba Cloud: {acc.alibaba}")
    click.echo(f"  offered by:    {acc.offered_by}")
    click.echo(f"  note:          {acc.notes}")
    click.echo("  sources:")
    for s in answer.sources:
        click.echo(f"    [{s.tag}] {s.description}" + (f" {s.url}" if s.url else ""))
    where = f"in {region}" if region else "in the catalog (pass --region for one region)"
    click.echo(
        f"  nearest generally available GPUs {where}, by memory and 16-bit tensor peak (BF16, or FP16 on a "
        "GPU without BF16):"
    )
    for g in answer.nearest:
        click.echo(
            f"    {g.name:<10} {g.memory_gib:>5g} GB {peak_label(g):<26} trainstack catalog --gpu {g.name}"
        )
    if answer.skipped:
        click.echo(
            "  left out, though closer, because they are not generally available: "
            + ", ".join(
                f"{g.name} ({g.memory_gib:g} GB, {peak_label(g)}; {' or '.join(sorted(answer.availability[g.name]))})"
                for g in answer.skipped
            )
        )


@main.command()
@_handle
def schema() -> None:
    """Print the JSON Schema of spec files (for editor validation and completion)."""
    from generator import api

    click.echo(json.dumps(api.schema(), indent=2, sort_keys=True))


def _register_feature_commands() -> None:
    """Commands that live in generator/cli/<feature>.py (each module lists its click commands in COMMANDS)."""
    import importlib

    for name in ("estimate", "lint", "diff", "live", "heal", "dlc", "jobs"):
        module = importlib.import_module(f"generator.cli.{name}")
        for command in module.COMMANDS:
            main.add_command(command)


_register_feature_commands()

if __name__ == "__main__":  # pragma: no cover
    entry()
