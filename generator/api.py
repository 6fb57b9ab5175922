"""trainstack's library API; the CLI is a thin shell over these functions.

Stages: :func:`load` (YAML -> Spec, checked against the catalog) -> :func:`plan` (pure) -> :func:`render_files`
(pure) -> :func:`write_stack` (the only writer) -> :func:`preview` (mock runtime) or :mod:`generator.live`.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import loader, planner, render, stackdir, validate
from .catalog import Catalog, load_catalog
from .errors import Problem, SpecErrors, TrainstackError
from .loader import Located
from .plan import Plan



def load(spec_path: str | Path, catalog: Catalog | None = None) -> Located:
    """Parse and check a spec file; raise :class:`SpecErrors` (with lines) listing every problem."""
    located = loader.load_file(spec_path)
    problems = validate.check(located.spec, catalog or load_catalog())
    if problems:
        raise SpecErrors(located.locate(problems), located.lines)
    return located


def plan_located(located: Located, catalog: Catalog | None = None) -> Plan:
    try:
        return planner.make_plan(located.spec, catalog or load_catalog())
    except planner.PlanningError as e:
        raise planner.PlanningError(located.locate(list(e.problems)), located.lines) from None


def plan(spec_path: str | Path, catalog: Catalog | None = None) -> Plan:
    catalog = catalog or load_catalog()
    return plan_located(load(spec_path, catalog), catalog)


def spec_record(spec_path: str | Path) -> str:
    """How a spec path is recorded in generated files: relative to its git repository, whatever the cwd."""
    return stackdir.spec_record(spec_path)


def render_files(the_plan: Plan, spec_path: str = "") -> dict[str, str]:
    """The stack's files; ``spec_path`` is the recorded path (:func:`spec_record`), not a path to open."""
    return render.render(the_plan, spec_path)


def default_stack_dir(the_plan: Plan, spec_path: str | Path) -> Path:
    """``stacks/<name>`` at the top of the spec's repository (beside the spec outside one), whatever the cwd."""
    return stackdir.default_stack_dir(spec_path, the_plan.name)


class LintFailed(TrainstackError):
    """A rendered program breaks a secure-by-default rule that the spec did not waive; nothing was written."""


@dataclass(frozen=True)
class RenderResult:
    plan: Plan
    dest: Path
    changes: list[stackdir.FileChange]
    lint: object = None  # lint.LintReport, when the program was linted

    @property
    def changed(self) -> list[stackdir.FileChange]:
        return [c for c in self.changes if c.changed]

    @property
    def kept(self) -> list[stackdir.FileChange]:
        """Files in the folder that trainstack did not write and left alone."""
        return [c for c in self.changes if c.action == "kept"]


def render_stack(spec_path: str | Path, out_dir: str | Path | None = None, check: bool = False,
                 catalog: Catalog | None = None) -> RenderResult:
    """Render a spec into its stack folder (or, with ``check``, only report what would change)."""
    the_plan = plan(spec_path, catalog)
    files = render_files(the_plan, spec_record(spec_path))
    dest = Path(out_dir) if out_dir else default_stack_dir(the_plan, spec_path)
    if check:
        stackdir.settle(dest)
        files = stackdir.keep_stack_config(files, dest, the_plan.stack)
        return RenderResult(the_plan, dest, stackdir.compare(files, dest))
    report = lint_files(the_plan, files)
    if report.failed:
        raise LintFailed(f"{spec_path}: the generated program breaks secure-by-default rules; "
                         f"nothing was written.\n{report.text().rstrip()}")
    return RenderResult(the_plan, dest, stackdir.write(files, dest, stack=the_plan.stack), report)


def run_files(the_plan: Plan, files: dict[str, str]) -> object:
    """Execute rendered files under the mock runtime (in a temporary folder) and return the mockrun.Graph."""
    return _run_files(the_plan, files)[0]


def _run_files(the_plan: Plan, files: dict[str, str]) -> tuple[object, str]:
    from . import live, mockrun

    with tempfile.TemporaryDirectory(prefix="trainstack-run-") as tmp:
        dest = Path(tmp) / the_plan.name
        stackdir.write(files, dest, durable=False)
        graph = mockrun.run_program(dest, project=the_plan.name, stack=the_plan.stack,
                                    config={"alicloud:region": the_plan.region})
        return graph, live.stack_digest(dest, the_plan.stack)


def lint_files(the_plan: Plan, files: dict[str, str]):  # -> lint.LintReport
    """Lint what ``files`` would deploy, with the waivers the spec gives."""
    from . import lint

    graph = run_files(the_plan, files)
    waivers = lint.waivers_of(the_plan.waivers)
    return lint.LintReport(the_plan.name, tuple(lint.lint_graph(graph, waivers)), waivers,
                           len(graph.resources))  # type: ignore[attr-defined]


@dataclass(frozen=True)
class PreviewResult:
    plan: Plan | None
    graph: object  # mockrun.Graph
    source: str
    digest: str = ""  # live.stack_digest of the folder that was run: pin a deploy to it with --expect-digest


def preview(target: str | Path, catalog: Catalog | None = None) -> PreviewResult:
    """Offline preview: render (if given a spec) into a temporary folder and run it under the mock runtime."""
    from . import mockrun

    target = Path(target)
    if target.is_dir():
        stackdir.settle(target)
        if not stackdir.is_stack_dir(target):
            raise TrainstackError(f"{target} is not a stack folder rendered by trainstack")
        from . import live

        graph = mockrun.run_program(target, project=_project_name(target), stack=_stack_name(target))
        return PreviewResult(None, graph, str(target), live.stack_digest(target, _stack_name(target)))
    the_plan = plan(target, catalog)
    graph, digest = _run_files(the_plan, render_files(the_plan, spec_record(target)))
    return PreviewResult(the_plan, graph, str(target), digest)


def _project_name(stack: Path) -> str:
    for line in (stack / "Pulumi.yaml").read_text().splitlines():
        if line.startswith("name:"):
            return line.split(":", 1)[1].strip()
    return stack.name


def _stack_name(stack: Path) -> str:
    names = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in stack.glob("Pulumi.*.yaml"))
    return names[0] if names else "dev"


def schema() -> dict:
    from .spec import json_schema

    return json_schema()


__all__ = ["load", "plan", "plan_located", "render_files", "render_stack", "preview", "schema",
           "RenderResult", "PreviewResult", "Problem", "SpecErrors", "TrainstackError", "load_catalog"]
