"""The platforms trainstack knows, one line each; :func:`platform_for`, the one way to ask which platform a spec, a
plan or a ``compute.platform`` value means; and :func:`parts_for`, its behaviour for the checks and the planner.

One registry for both without an import cycle: the declarations are data (they import :mod:`generator.platforms.base`
only), so the shared plan parts can ask them; each names its behaviour as ``"module:Class"`` (``Platform.parts``),
which is built from those shared plan parts and is imported only when :func:`parts_for` first asks for it
(``tests/test_layout.py`` checks that the registry and the declarations import nothing of ``generator.plan``).

The spec model's ``compute.platform`` literal lists the same names (``tests/test_platforms.py`` checks that they
agree), and :func:`honour_table` is the table docs/platforms.md prints: for every spec field, which platforms
honour it and what a spec that sets it gets on the others.
"""

from __future__ import annotations

import functools
import importlib
import typing
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from generator.platforms import dlc, ecs, lingjun
from generator.platforms.base import Level, Platform, Unhonoured
from generator.spec.model import Spec

if TYPE_CHECKING:
    from generator.platforms.contract import PlanParts

# One line per platform: its folder's declaration module (PLATFORM, and beside it its behaviour and templates)
_DECLARATIONS: tuple[ModuleType, ...] = (
    ecs,
    lingjun,
    dlc,
)
PLATFORMS: dict[str, Platform] = {m.PLATFORM.name: m.PLATFORM for m in _DECLARATIONS}
# what a spec without compute.platform gets (ComputeSpec.platform's default), and a plan.json written before the
# field existed: the first line
DEFAULT_PLATFORM: str = _DECLARATIONS[0].PLATFORM.name
HOMES: dict[str, Path] = {m.PLATFORM.name: Path(str(m.__file__)).parent for m in _DECLARATIONS}


def template_dirs() -> list[Path]:
    """The platforms' template folders (``<its folder>/templates``), which the renderer's loader searches after the
    shared templates: each holds ``stack/parts/`` (its program parts) and ``stack/slots/`` (its slot parts), so a
    shared template includes them by the same name as a shared part (``stack/parts/compute_ecs.py.j2``)."""
    return [home / "templates" for home in HOMES.values() if (home / "templates").is_dir()]


def platform_for(subject: Any) -> Platform:
    """The platform of a :class:`Spec`, a :class:`~generator.plan.model.Plan` (or anything with
    ``compute.platform``) or a ``compute.platform`` value (``""`` or None: :data:`DEFAULT_PLATFORM`); an unknown
    name is a ``KeyError``."""
    name = subject if subject is None or isinstance(subject, str) else subject.compute.platform
    return PLATFORMS[name or DEFAULT_PLATFORM]


def parts_for(subject: Any) -> PlanParts:
    """The behaviour (rules and plan parts) of the platform of a spec, a plan or a ``compute.platform`` value."""
    return _parts(platform_for(subject).name)


@functools.cache
def _parts(name: str) -> PlanParts:
    module, _, attr = PLATFORMS[name].parts.partition(":")
    parts: PlanParts = getattr(importlib.import_module(module), attr)()
    return parts


def live_for(subject: Any) -> ModuleType:
    """The module of the live operations of the platform of a spec, a plan, a cluster (anything with
    ``compute.platform``) or a ``compute.platform`` value (``Platform.live``), imported on first use; a
    ``LookupError`` where the platform has none (the shared live engine does all)."""
    p = platform_for(subject)
    if not p.live:
        raise LookupError(f"{p.title} has no live operations of its own")
    return importlib.import_module(p.live)


def spec_fields(model: type[BaseModel] = Spec, prefix: str = "") -> list[str]:
    """Every field path of the spec language (``network.jumbo_frames``), sections and leaves, in model order."""
    out: list[str] = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        out.append(path)
        sub = _model_of(info.annotation)
        if sub is not None:
            out.extend(spec_fields(sub, f"{path}."))
    return out


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if (m := _model_of(arg)) is not None:
            return m
    return None


def unhonoured(platform: Platform, path: str) -> Unhonoured | None:
    """What ``platform`` says about the field at ``path``: its own entry, or that of a section holding it."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        entry = platform.unhonoured.get(".".join(parts[:i]))
        if entry is not None:
            return entry
    return None


def _is_set(spec: Spec, path: str) -> bool:
    """Whether the spec file sets the field at ``path`` (any value, the default too)."""
    node: Any = spec
    for name in path.split("."):
        if not isinstance(node, BaseModel) or name not in node.model_fields_set:
            return False
        node = getattr(node, name)
    return True


def _set_unhonoured(spec: Spec, level: Level) -> list[tuple[str, Unhonoured]]:
    p = platform_for(spec)
    return [
        (path, u)
        for path, u in p.unhonoured.items()
        if u.level is level and not u.rule and _is_set(spec, path)
    ]


def unhonoured_errors(spec: Spec) -> list[tuple[str, Unhonoured]]:
    """The fields the spec sets that its platform does not honour and refuses (those its rules do not report), with
    why (the check makes each a ``FieldNotHonoured`` event: the registry imports nothing of the planner)."""
    return _set_unhonoured(spec, Level.ERROR)


def unhonoured_warnings(spec: Spec) -> list[tuple[str, Unhonoured]]:
    """The fields the spec sets that its platform ignores, with why (the planner makes each a ``FieldIgnored``
    warning: the registry imports nothing of the planner)."""
    return _set_unhonoured(spec, Level.WARNING)


def honour_table() -> list[tuple[str, ...]]:
    """One row per spec field with a platform that does not honour it: the field, then per platform ``yes``,
    ``warning`` or ``error`` (with the values a rule refuses, where only some are). Fields every platform honours are left out (the table says so)."""
    rows = []
    for path in spec_fields():
        cells = []
        for p in PLATFORMS.values():
            u = unhonoured(p, path)
            cells.append(
                "yes" if u is None else u.level.value + (f" ({u.when})" if u.when and u.when != "any" else "")
            )
        if set(cells) != {"yes"}:
            rows.append((path, *cells))
    return rows


def honour_markdown() -> str:
    """:func:`honour_table` as the Markdown table docs/platforms.md holds."""
    head = ["field", *(p.title for p in PLATFORMS.values())]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join((f"`{row[0]}`", *row[1:])) + " |" for row in honour_table()]
    return "\n".join(lines) + "\n"
