"""The plan stage from a file: load a spec, check it against the catalog and plan it, errors located in the file.

Later stages (render, preview, live) and the library API start here when they are given a spec path.
"""

from __future__ import annotations

from pathlib import Path

from generator.catalog import Catalog, load_catalog
from generator.errors import SpecErrors
from generator.plan import check, planner
from generator.plan.model import Plan
from generator.spec import loader
from generator.spec.loader import Located


def load(spec_path: str | Path, catalog: Catalog | None = None) -> Located:
    """Parse and check a spec file; raise :class:`SpecErrors` (with lines) listing every problem."""
    located = loader.load_file(spec_path)
    return checked(located, catalog)


def checked(located: Located, catalog: Catalog | None = None) -> Located:
    """``located`` if its spec agrees with the catalog; else :class:`SpecErrors` with every problem located."""
    problems = check.check(located.spec, catalog or load_catalog())
    if problems:
        raise SpecErrors(located.locate(problems), located.lines)
    return located


def plan_located(located: Located, catalog: Catalog | None = None) -> Plan:
    """Plan a loaded spec; a :class:`~generator.plan.planner.PlanningError` points at the spec's lines."""
    try:
        return planner.make_plan(located.spec, catalog or load_catalog())
    except planner.PlanningError as e:
        raise planner.PlanningError(located.locate(list(e.problems)), located.lines) from None


def plan_file(spec_path: str | Path, catalog: Catalog | None = None) -> Plan:
    """Load, check and plan the spec at ``spec_path``."""
    catalog = catalog or load_catalog()
    return plan_located(load(spec_path, catalog), catalog)
