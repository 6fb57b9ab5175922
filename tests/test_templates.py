"""The program template is one part per cluster section: a short main template composes them, each part says
what it owns, and the ECS, Lingjun and PAI-DLC programs do not interleave (only ``*_lingjun`` parts read the Lingjun
plan, and only ``*_dlc`` parts the DLC plan).
Byte-identity of what they render is proved by the committed stacks (tests/test_examples.py)."""

from __future__ import annotations

import re
from pathlib import Path

from generator.platforms.registry import template_dirs
from generator.render.files import templates_dir

STACK = templates_dir() / "stack"


def _parts() -> list[Path]:
    """Every program part: the shared ones and each platform's (generator/platforms/<name>/templates/stack/parts)."""
    return [p for root in (templates_dir(), *template_dirs()) for p in (root / "stack" / "parts").glob("*.j2")]
INCLUDE = re.compile(r'\{% include "stack/parts/([^"]+)" %\}')


def test_main_template_is_short_and_includes_every_part() -> None:
    main = (STACK / "__main__.py.j2").read_text()
    assert len(main.splitlines()) <= 80
    included = set(INCLUDE.findall(main))
    from generator.platforms.registry import PLATFORMS  # each platform lists the parts its program includes

    assert '{% include "stack/parts/" ~ part ~ ".py.j2" %}' in main
    included |= {f"{name}.py.j2" for p in PLATFORMS.values() for name in p.program_parts}
    for part in _parts():
        included |= set(INCLUDE.findall(part.read_text()))
    assert included == {p.name for p in _parts()}, "a part that nothing includes, or a missing one"


def test_each_part_opens_with_one_line_saying_what_it_owns() -> None:
    for part in sorted(_parts()):
        first = part.read_text().splitlines()[0]
        assert first.startswith("{# The ") and first.endswith(". #}"), part.name


def test_only_lingjun_parts_read_the_lingjun_plan() -> None:
    for part in sorted(_parts()):
        if not part.name.endswith("_lingjun.py.j2"):
            assert not re.search(r"\blj\b|lingjun|eflo", part.read_text(), re.IGNORECASE), part.name


def test_only_dlc_parts_read_the_dlc_plan() -> None:
    for part in sorted(_parts()):
        if not part.name.endswith("_dlc.py.j2"):
            assert not re.search(r"\bdl\b|dlc_datasets|\bpai\b", part.read_text()), part.name
