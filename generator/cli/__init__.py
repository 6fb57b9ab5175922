"""The ``trainstack`` command: a thin shell over :mod:`generator.api`.

Exit codes: 0 success; 1 an operation failed (stale stack, lint finding, program or engine error);
2 bad input (the spec or the command line). Errors print as ``FILE:LINE:COL: field: message`` without a
traceback unless ``--debug`` is given. Commands that do not run a Pulumi program never import pulumi.
"""

from __future__ import annotations

import json
import sys

import click

from generator.cli.common import handle as _handle
from generator.errors import EXIT_FAILURE

FAST_EXIT_ENV = "TRAINSTACK_FAST_EXIT"


def entry() -> None:
    """The ``trainstack`` command as a process: :func:`main`, then the exit. After a mock run the interpreter's
    teardown (freeing every object of a heap of up to gigabytes, one at a time) is skipped: output is flushed and the
    process ends with ``os._exit``, so the exit code and everything printed or written are the same. Commands that
    did not run the mock runtime (or ran the live engine) exit normally; ``TRAINSTACK_FAST_EXIT=off`` always does."""
    import os

    try:
        main()
        code: str | int | None = 0
    except SystemExit as e:
        code = e.code
    preview = sys.modules.get("generator.preview.mockrun")
    fast = os.environ.get(FAST_EXIT_ENV, "on").strip().lower() not in ("off", "0", "no", "false")
    if not (fast and getattr(preview, "RAN", False) and "pulumi.automation" not in sys.modules):
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
    import dataclasses

    from generator.catalog import load_catalog
    from generator.errors import did_you_mean
    from generator.present import text as report

    if sum((list_regions, list_lingjun, list_dlc)) > 1:
        raise click.UsageError("--regions, --lingjun and --dlc are different lists; give one of them.")
    cat = load_catalog()
    g = None
    if gpu is not None:
        g = cat.gpu(gpu)
        unavailable = cat.unavailable_accelerator(gpu) if g is None else None
        if unavailable is not None:
            _unavailable_answer(cat, unavailable, region, as_json, lingjun=list_lingjun, dlc=list_dlc)
            return
        if g is None:
            hint = did_you_mean(gpu, [*cat.gpu_names(), *(a for x in cat.gpus for a in x.aliases)])
            raise click.BadParameter(
                f"unknown GPU '{gpu}'{'; ' + hint if hint else ''} (known GPUs: "
                f"{', '.join(cat.gpu_names())}).",
                param_hint="'--gpu'",
            )
    if region is not None and cat.region(region) is None:
        hint = did_you_mean(region, cat.region_ids())
        raise click.BadParameter(
            f"unknown region '{region}'{'; ' + hint if hint else ''} (known regions: "
            f"{', '.join(cat.region_ids())}).",
            param_hint="'--region'",
        )
    with_gpu = f" with {g.name} GPUs" if g else ""
    if list_lingjun:
        lingjun = [
            t
            for t in cat.lingjun_types
            if (not region or region in t.regions) and (g is None or t.gpu == g.name)
        ]
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "version": cat.version,
                        "date": cat.date,
                        "lingjun_machine_types": [dataclasses.asdict(t) for t in lingjun],
                    },
                    indent=2,
                    sort_keys=True,
                )
            )
        elif not lingjun:
            click.echo(
                f"no Lingjun machine type{with_gpu}{f' in {region}' if region else ''} in catalog "
                f"{cat.version} ({cat.date})"
            )
        else:
            click.echo(
                report.table(
                    [
                        "machine type",
                        "GPU",
                        "#",
                        "GiB/GPU",
                        "RDMA Gbit/s",
                        "regions",
                        "HPN zones",
                        "payment",
                        "CNY/h",
                    ],
                    [
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
                    ],
                    right=(2, 3, 4, 8),
                )
            )
            click.echo("? GPU model unverified   * estimated price (generator/catalog/data/v1/README.md)")
        return
    if list_regions:
        # with --gpu: the regions where an ECS family or a Lingjun machine type with that GPU is offered
        families = {t.family for t in cat.instance_types if g is None or t.gpu == g.name}
        lingjun_regions = {r for t in cat.lingjun_types if g is None or t.gpu == g.name for r in t.regions}
        regions = []
        for r in cat.regions:
            offered = tuple(f for f in r.gpu_families if f in families)
            on_lingjun = r.lingjun and (g is None or r.id in lingjun_regions)
            if (region is None or r.id == region) and (g is None or offered or on_lingjun):
                regions.append((r, offered, on_lingjun))
        if as_json:
            click.echo(json.dumps([dataclasses.asdict(r) for r, _, _ in regions], indent=2, sort_keys=True))
        elif not regions:
            click.echo(
                f"no region{with_gpu}{f' matches {region}' if region else ''} in catalog {cat.version} "
                f"({cat.date})"
            )
        else:
            click.echo(
                report.table(
                    ["region", "zones", "CPFS", "Lingjun", f"GPU families{with_gpu} (verified?)"],
                    [
                        [
                            r.id,
                            " ".join(r.zones),
                            "yes" if r.cpfs else "",
                            "yes" if lingjun else "",
                            " ".join(offered) + ("" if r.verified else "  (unverified)"),
                        ]
                        for r, offered, lingjun in regions
                    ],
                )
            )
        return
    types = list(cat.instance_types)
    if g is not None:
        types = [t for t in types if t.gpu == g.name]
    if region:
        names = {t.name for t in cat.types_in_region(region)}
        types = [t for t in types if t.name in names]
    if list_dlc:
        types = [t for t in types if cat.dlc_spec(t.name) is not None]
    if as_json:
        data: dict[str, object] = {
            "version": cat.version,
            "date": cat.date,
            "instance_types": [dataclasses.asdict(t) for t in types],
        }
        if list_dlc:
            data["dlc_specs"] = [
                dataclasses.asdict(d) for d in cat.dlc_specs if any(t.name == d.name for t in types)
            ]
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        click.echo(f"catalog {cat.version} ({cat.date})" + (": PAI-DLC worker types" if list_dlc else ""))
        click.echo(report.catalog_text(types), nl=False)
        if list_dlc:
            unverified = [t.name for t in types if not cat.dlc_spec(t.name).verified]  # type: ignore[union-attr]
            if unverified:
                click.echo(
                    f"{len(unverified)} of {len(types)} not verified on DLC's public resource list: confirm on "
                    "DLC's Create Job page (generator/catalog/data/v1/dlc_specs.csv)"
                )


def _unavailable_answer(
    cat, acc, region: str | None, as_json: bool, lingjun: bool = False, dlc: bool = False
) -> None:
    """``catalog --gpu Ascend-910B``: who offers it instead, every source, and the nearest GPUs (of --region; among
    Lingjun machine types with --lingjun, DLC worker types with --dlc)."""
    import dataclasses

    from generator.catalog import source_tags
    from generator.catalog.unavailable import distance, has_bf16, left_out, nearest_gpus, peak_label
    from generator.plan.check import offered_gpus

    r = cat.region(region) if region else None
    near = nearest_gpus(acc, offered_gpus(cat, r, lingjun=lingjun, dlc=dlc), limit=5)
    types = (
        cat.instance_types
        if r is None
        else cat.dlc_types_in_region(r.id)
        if dlc
        else cat.lingjun_types_in_region(r.id)
        if lingjun
        else cat.types_in_region(r.id)
    )
    availability: dict[str, set[str]] = {}
    for t in types:
        availability.setdefault(t.gpu, set()).add(t.availability)
    skipped = [
        g
        for g in left_out(acc, near, [g for g in cat.gpus if g.name in availability])
        if "ga" not in availability[g.name]
    ]
    sources = [s for t in source_tags(acc.source) if (s := cat.source(t)) is not None]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "version": cat.version,
                    "date": cat.date,
                    "unavailable": dataclasses.asdict(acc),
                    "sources": [dataclasses.asdict(s) for s in sources],
                    "nearest": [
                        {
                            "gpu": g.name,
                            "memory_gib": g.memory_gib,
                            "bf16_tflops": g.bf16_tflops,
                            "bf16": has_bf16(g),
                            "distance": round(
                                distance(acc.memory_gib, acc.bf16_tflops, g.memory_gib, g.bf16_tflops), 3
                            ),
                        }
                        for g in near
                    ],
                    "left_out": [
                        {"gpu": g.name, "availability": sorted(availability[g.name])} for g in skipped
                    ],
                    "region": region,
                },
                indent=2,
                sort_keys=True,
            )
        )
        return
    click.echo(
        f"{acc.name} ({acc.vendor}, {acc.memory_gib:g} GB, {acc.bf16_tflops:g} TFLOPS FP16/BF16): "
        f"not offered by Alibaba Cloud (checked {acc.checked})"
    )
    click.echo(f"  Alibaba Cloud: {acc.alibaba}")
    click.echo(f"  offered by:    {acc.offered_by}")
    click.echo(f"  note:          {acc.notes}")
    click.echo("  sources:")
    for s in sources:
        click.echo(f"    [{s.tag}] {s.description}" + (f" {s.url}" if s.url else ""))
    where = f"in {region}" if region else "in the catalog (pass --region for one region)"
    click.echo(
        f"  nearest generally available GPUs {where}, by memory and 16-bit tensor peak (BF16, or FP16 on a "
        "GPU without BF16):"
    )
    for g in near:
        click.echo(
            f"    {g.name:<10} {g.memory_gib:>5g} GB {peak_label(g):<26} trainstack catalog --gpu {g.name}"
        )
    if skipped:
        click.echo(
            "  left out, though closer, because they are not generally available: "
            + ", ".join(
                f"{g.name} ({g.memory_gib:g} GB, {peak_label(g)}; {' or '.join(sorted(availability[g.name]))})"
                for g in skipped
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
    main()
