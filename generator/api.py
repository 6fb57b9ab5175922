"""trainstack's library API; the CLI is a thin shell over these functions.

Stages: :func:`load` (YAML -> Spec, checked against the catalog) -> :func:`plan` (pure) -> :func:`render_files`
(pure) -> :func:`write_stack` (the only writer) -> :func:`preview` (mock runtime) or :mod:`generator.live`.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import loader, planner, render, stackdir, validate
from .catalog import Catalog, load_catalog
from .errors import Problem, SpecErrors, TrainstackError
from .loader import Located
from .plan import Plan

DEFAULT_STACKS_DIR = Path("stacks")


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


def display_path(path: str | Path) -> str:
    """How a spec path is recorded in generated files: relative to the working folder, POSIX separators."""
    p = Path(path)
    try:
        rel = os.path.relpath(p.resolve(), Path.cwd().resolve())
    except ValueError:  # another drive on Windows
        rel = p.name
    if rel.startswith(".."):
        rel = p.name
    return rel.replace(os.sep, "/")


def render_files(the_plan: Plan, spec_path: str = "") -> dict[str, str]:
    return render.render(the_plan, spec_path)


def default_stack_dir(the_plan: Plan, stacks_dir: str | Path = DEFAULT_STACKS_DIR) -> Path:
    return Path(stacks_dir) / the_plan.name


@dataclass(frozen=True)
class RenderResult:
    plan: Plan
    dest: Path
    changes: list[stackdir.FileChange]

    @property
    def changed(self) -> list[stackdir.FileChange]:
        return [c for c in self.changes if c.action != "identical"]


def render_stack(spec_path: str | Path, out_dir: str | Path | None = None, check: bool = False,
                 catalog: Catalog | None = None) -> RenderResult:
    """Render a spec into its stack folder (or, with ``check``, only report what would change)."""
    the_plan = plan(spec_path, catalog)
    files = render_files(the_plan, display_path(spec_path))
    dest = Path(out_dir) if out_dir else default_stack_dir(the_plan)
    if check:
        return RenderResult(the_plan, dest, stackdir.compare(files, dest))
    return RenderResult(the_plan, dest, stackdir.write(files, dest))


@dataclass(frozen=True)
class PreviewResult:
    plan: Plan | None
    graph: object  # mockrun.Graph
    source: str


def preview(target: str | Path, catalog: Catalog | None = None) -> PreviewResult:
    """Offline preview: render (if given a spec) into a temporary folder and run it under the mock runtime."""
    from . import mockrun

    target = Path(target)
    if target.is_dir():
        if not stackdir.is_stack_dir(target):
            raise TrainstackError(f"{target} is not a stack folder rendered by trainstack")
        graph = mockrun.run_program(target, project=_project_name(target), stack=_stack_name(target))
        return PreviewResult(None, graph, str(target))
    the_plan = plan(target, catalog)
    files = render_files(the_plan, display_path(target))
    with tempfile.TemporaryDirectory(prefix="trainstack-preview-") as tmp:
        dest = Path(tmp) / the_plan.name
        stackdir.write(files, dest)
        graph = mockrun.run_program(dest, project=the_plan.name, stack=the_plan.stack,
                                    config={"alicloud:region": the_plan.region})
    return PreviewResult(the_plan, graph, str(target))


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
