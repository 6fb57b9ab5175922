"""trainstack's library API, which composes the stages; the CLI is a thin shell over these functions.

Stages: :func:`load` (YAML -> Spec, checked against the catalog) -> :func:`plan` (pure) -> :func:`render_files`
(pure) -> :func:`render_stack` (through :mod:`generator.render.stackdir`, the only writer) -> :func:`preview`
and :func:`lint_target` (mock runtime) or :mod:`generator.live`. No stage imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generator.catalog import Catalog, load_catalog
from generator.errors import Problem, SpecErrors, TrainstackError
from generator.plan import pipeline
from generator.plan.model import Plan
from generator.plan.pipeline import load, plan_located
from generator.render import files as render
from generator.render import stackdir

if TYPE_CHECKING:  # imported where used at run time: the mock runtime pulls in the Pulumi SDK
    from generator.preview.lint import LintReport
    from generator.preview.mockrun import Graph


def plan(spec_path: str | Path, catalog: Catalog | None = None) -> Plan:
    """Load, check and plan a spec file (:func:`generator.plan.pipeline.plan_file`)."""
    return pipeline.plan_file(spec_path, catalog)


def spec_record(spec_path: str | Path) -> str:
    """How a spec path is recorded in generated files: relative to its git repository, whatever the cwd."""
    return stackdir.spec_record(spec_path)


def render_files(the_plan: Plan, spec_path: str = "") -> dict[str, str]:
    """The stack's files; ``spec_path`` is the recorded path (:func:`spec_record`), not a path to open."""
    return render.render(the_plan, spec_path)


def default_stack_dir(the_plan: Plan, spec_path: str | Path) -> Path:
    """``stacks/<name>`` at the top of the spec's repository (beside the spec outside one), whatever the cwd."""
    return stackdir.default_stack_dir(spec_path, the_plan.name, the_plan.stack)


class LintFailed(TrainstackError):
    """A rendered program breaks a secure-by-default rule that the spec did not waive; nothing was written."""


@dataclass(frozen=True)
class RenderResult:
    plan: Plan
    dest: Path
    changes: list[stackdir.FileChange]
    lint: LintReport | None = None  # when the program was linted

    @property
    def changed(self) -> list[stackdir.FileChange]:
        return [c for c in self.changes if c.changed]

    @property
    def kept(self) -> list[stackdir.FileChange]:
        """Files in the folder that trainstack did not write and left alone."""
        return [c for c in self.changes if c.action == "kept"]


@dataclass(frozen=True)
class PreparedRender:
    """A spec planned, rendered (in memory) and linted, with the folder it goes to: nothing written yet."""

    spec: Path
    plan: Plan
    files: dict[str, str]
    dest: Path
    lint: LintReport | None = None


def prepare_render(
    spec_path: str | Path,
    out_dir: str | Path | None = None,
    check: bool = False,
    catalog: Catalog | None = None,
) -> PreparedRender:
    """Plan, render and (unless ``check``) lint one spec; raise on any problem. Writes nothing."""
    catalog = catalog or load_catalog()
    the_plan, text = _plan_read(Path(spec_path), catalog)
    record = spec_record(spec_path)
    files = render_files(the_plan, record)
    dest = Path(out_dir) if out_dir else default_stack_dir(the_plan, spec_path)
    if check:
        return PreparedRender(Path(spec_path), the_plan, files, dest)
    report = lint_files(the_plan, files)
    _remember_side(text, record, catalog, the_plan)
    if report.failed:
        raise LintFailed(
            f"{spec_path}: the generated program breaks secure-by-default rules; "
            f"nothing was written.\n{report.text().rstrip()}"
        )
    return PreparedRender(Path(spec_path), the_plan, files, dest, report)


def render_stacks(
    spec_paths: list[str | Path] | tuple[str | Path, ...],
    out_dir: str | Path | None = None,
    check: bool = False,
    catalog: Catalog | None = None,
) -> list[RenderResult]:
    """Render several specs: every spec is planned, rendered and linted, and every folder checked (one folder per
    stack, none outside the repository, no user file in the way), before the first is written; so a bad spec
    leaves every folder as it was. With ``check``, only report what would change."""
    import os

    prepared: list[PreparedRender] = []
    by_folder: dict[str, PreparedRender] = {}
    for spec in spec_paths:
        item = prepare_render(spec, out_dir, check, catalog)
        key = os.path.realpath(item.dest)
        first = by_folder.get(key)
        if first is not None:
            if os.path.realpath(first.spec) == os.path.realpath(item.spec):
                continue  # the same spec named twice
            raise stackdir.collision(first.spec, item.spec, item.dest)
        by_folder[key] = item
        prepared.append(item)
    for item in prepared:
        stackdir.check_placement(item.dest)
        stackdir.check_claim(item.files, item.dest, item.spec)
        if not check:
            stackdir.check_user_files(item.files, item.dest)
    results = []
    for item in prepared:
        if check:
            stackdir.settle(item.dest)
            files = stackdir.keep_stack_config(item.files, item.dest, item.plan.stack)
            results.append(RenderResult(item.plan, item.dest, stackdir.compare(files, item.dest)))
        else:
            changes = stackdir.write(item.files, item.dest, stack=item.plan.stack)
            results.append(RenderResult(item.plan, item.dest, changes, item.lint))
    return results


def render_stack(
    spec_path: str | Path,
    out_dir: str | Path | None = None,
    check: bool = False,
    catalog: Catalog | None = None,
) -> RenderResult:
    """Render a spec into its stack folder (or, with ``check``, only report what would change)."""
    return render_stacks([spec_path], out_dir, check, catalog)[0]


def stack_folder_conflicts(spec_paths: list[str | Path] | tuple[str | Path, ...]) -> None:
    """Raise :class:`~generator.render.stackdir.UnsafeStackDir` (exit 2, naming both files) when two of the specs,
    or one of them and the spec a folder records, render to one stack folder. For callers that read several specs
    without rendering them (the pull-request diff)."""
    import os

    seen: dict[str, Path] = {}
    for spec in spec_paths:
        dest = stackdir.spec_folder(Path(spec))
        if dest is None:
            continue
        key = os.path.realpath(dest)
        if key in seen and os.path.realpath(seen[key]) != os.path.realpath(spec):
            raise stackdir.collision(seen[key], spec, dest)
        seen.setdefault(key, Path(spec))


def run_files(the_plan: Plan, files: dict[str, str]) -> Graph:
    """Execute rendered files under the mock runtime (in a temporary folder) and return the mockrun.Graph.

    Every mock run goes through :mod:`generator.preview.cache`: the same files, config and SDKs run once."""
    return _run_files(the_plan, files)[0]


def _run_files(the_plan: Plan, files: dict[str, str]) -> tuple[Graph, str]:
    from generator.preview import cache
    from generator.render.digest import stack_digest

    graph, digest = cache.run_files(
        files,
        project=the_plan.name,
        stack=the_plan.stack,
        region=the_plan.region,
        inspect=lambda dest: stack_digest(dest, the_plan.stack),
    )
    return graph, digest or ""


def lint_files(the_plan: Plan, files: dict[str, str]) -> LintReport:
    """Lint what ``files`` would deploy, with the waivers the spec gives."""
    from generator.preview import lint

    graph = run_files(the_plan, files)
    waivers = lint.waivers_of(the_plan.waivers)
    return lint.LintReport(
        the_plan.name, tuple(lint.lint_graph(graph, waivers)), waivers, len(graph.resources)
    )


@dataclass(frozen=True)
class PreviewResult:
    plan: Plan | None
    graph: Graph
    source: str
    digest: str = ""  # the stack digest of the folder that was run: pin a deploy to it with --expect-digest


def preview(target: str | Path, catalog: Catalog | None = None) -> PreviewResult:
    """Offline preview: render (if given a spec) into a temporary folder and run it under the mock runtime."""
    from generator.preview import cache

    target = Path(target)
    if target.is_dir():
        stackdir.settle(target)
        if not stackdir.is_stack_dir(target):
            raise TrainstackError(f"{target} is not a stack folder rendered by trainstack")
        from generator.render.digest import stack_digest

        ident = stack_identity(target)
        graph = cache.run_program(
            target, project=ident.project, stack=ident.stack, config=_folder_config(target, ident.stack)
        )
        return PreviewResult(None, graph, str(target), stack_digest(target, ident.stack))
    catalog = catalog or load_catalog()
    the_plan, text = _plan_read(target, catalog)
    record = spec_record(target)
    graph, digest = _run_files(the_plan, render_files(the_plan, record))
    _remember_side(text, record, catalog, the_plan)
    return PreviewResult(the_plan, graph, str(target), digest)


def _plan_read(spec_path: Path, catalog: Catalog) -> tuple[Plan, str]:
    """:func:`plan` of a spec file, with the text it was planned from (read once: the side cache keys that text)."""
    from generator.spec import loader

    text = loader.read_text(spec_path)
    return plan_located(pipeline.checked(loader.load_text(text, str(spec_path)), catalog), catalog), text


def _remember_side(text: str, record: str, catalog: Catalog, the_plan: Plan) -> None:
    """Leave a spec that was planned and run (``preview``, ``validate``, ``lint``, ``render``'s lint) in ``diff``'s
    side cache, so the next diff with it on a side (a pull request's BASE) neither plans nor runs it."""
    from generator.preview import cache, side_cache

    side_cache.remember(text, record, catalog, the_plan, cache.last_key())


def lint_target(target: str | Path):  # -> lint.LintReport
    """Lint a spec file or a rendered stack folder: run its program under mocks, then :func:`lint_graph`.

    A spec is planned and rendered into a temporary folder (nothing is written beside it) and its waivers come
    from the plan; a stack folder is run as it is on disk and its waivers come from its plan.json, so a
    hand-edited ``__main__.py`` is checked too. Spec problems raise :class:`~generator.errors.SpecErrors`.
    """
    from generator.errors import not_a_stack_folder
    from generator.preview import lint

    path = Path(target)
    if path.is_dir() and not stackdir.is_stack_dir(path):
        raise lint.LintInputError(not_a_stack_folder(path))
    return lint_preview(preview(path))


def lint_preview(result: PreviewResult):  # -> lint.LintReport
    """Lint what :func:`preview` already ran, so a command that needs the plan too (``validate``) plans, renders
    and runs the program once. Waivers come from the plan, or from a stack folder's plan.json."""
    from generator.preview import lint

    plan_ = result.plan
    waivers = lint.waivers_of(plan_.waivers) if plan_ is not None else lint.stack_waivers(Path(result.source))
    graph: Any = result.graph
    return lint.LintReport(
        result.source, tuple(lint.lint_graph(graph, waivers)), waivers, len(graph.resources)
    )


def _folder_config(stack: Path, name: str) -> dict[str, str]:
    """The CPFS mount address a folder's stack config holds once `trainstack up` has set it; without one the mock
    run uses its placeholder (:data:`generator.preview.mockrun.PLACEHOLDER_SHARED_FS_ADDRESS`)."""
    from generator.preview.mockrun import SHARED_FS_ADDRESS_KEY

    config_file = stack / f"Pulumi.{name}.yaml"
    data = stackdir.load_yaml(config_file.read_text(encoding="utf-8")) if config_file.is_file() else None
    config = data.get("config") if isinstance(data, dict) else None
    address = config.get(SHARED_FS_ADDRESS_KEY) if isinstance(config, dict) else None
    return {SHARED_FS_ADDRESS_KEY: address} if isinstance(address, str) and address else {}


def stack_identity(folder: str | Path) -> stackdir.StackIdentity:
    """The project and stack a rendered folder deploys (plan.json): the one answer preview, its digest and the live
    commands share (:func:`generator.render.stackdir.stack_identity`)."""
    return stackdir.stack_identity(folder)


def schema() -> dict:
    """The spec's JSON Schema, with ``model.preset`` an enum of the presets sizing knows (the spec stage cannot import
    sizing, so the enum is added here)."""
    from generator.sizing import PRESETS
    from generator.spec.model import json_schema

    out = json_schema()
    preset = out["$defs"]["ModelSpec"]["properties"]["preset"]
    preset["anyOf"] = [{"type": "string", "enum": list(PRESETS)}, {"type": "null"}]
    return out


__all__ = [
    "PreviewResult",
    "Problem",
    "RenderResult",
    "SpecErrors",
    "TrainstackError",
    "lint_preview",
    "lint_target",
    "load",
    "load_catalog",
    "plan",
    "plan_located",
    "prepare_render",
    "preview",
    "render_files",
    "render_stack",
    "render_stacks",
    "schema",
    "stack_folder_conflicts",
    "stack_identity",
]
