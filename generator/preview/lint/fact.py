"""The base of every lint finding's fact (:class:`LintFact`): the rule it breaks, typed fields, and its words
rendered from them.

In the manner of the plan's warnings (:mod:`generator.plan.warns`) and dbt's events
(``core/dbt/events/types.py`` in dbt-labs/dbt-core): a class per kind of finding, its rule id as its code, and
a :meth:`LintFact.text` built from its fields, the only place its wording lives. Each part's module
(:mod:`generator.preview.lint.network`, ...) declares the facts its checks find beside the checks; a finding
carries one, ``trainstack lint --json`` prints its event name and fields, and tests assert rule ids and
fields, never the words. docs/lint.md lists every fact (``tests/test_lint.py`` checks it against
:func:`generator.preview.lint.facts`)."""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class LintFact(abc.ABC):
    """What one finding found (abstract: each kind is a subclass with its own :meth:`text`): ``rule`` is the
    class's, the fields the instance's. Facts are hashable (their fields are plain values and tuples), so
    identical findings collapse."""

    rule: ClassVar[str] = ""
    summary: ClassVar[str] = ""  # one line for docs/lint.md

    @abc.abstractmethod
    def text(self) -> str:
        """The finding in English, rendered from the fields (the only place its wording lives)."""

    @classmethod
    def event(cls) -> str:
        """The fact's stable name (its class's), which tells apart the kinds of finding of one rule."""
        return cls.__name__

    def fields(self) -> dict[str, Any]:
        """The typed fields by name (what ``trainstack lint --json`` prints as ``findings[].fields``)."""
        return dataclasses.asdict(self)


def settings(options: tuple[str, ...]) -> str:
    """``protect=True and retain_on_delete=True``: the options (or inputs) a fact says are missing."""
    return " and ".join(f"{option}=True" for option in options)
