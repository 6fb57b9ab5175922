"""The base of every planning refusal, apart from the refusal classes themselves.

The classes (:mod:`generator.plan.refusals`, ``catalog_refusals``, ``spec_refusals``, ``shape_refusals``,
``unfit_refusals``) are needed only when a spec is refused, so :mod:`generator.plan` defers them
(:mod:`generator.deferred`); the parts that define refusals of their own (each platform's) subclass this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from generator.errors import Problem
from generator.events import Event


@dataclass(frozen=True, slots=True)
class Refusal(Event):
    """The base of every planning problem: ``code`` and ``path`` (the spec field it names) are the class's, the
    fields the instance's."""

    path: ClassVar[tuple[str, ...]] = ()

    def hint(self) -> str:
        """What to change ("" when the message says it)."""
        return ""

    def where(self) -> tuple[str | int, ...]:
        """The spec field the problem names: the class's ``path``, or (an item of a list, a tag) one the fields
        complete."""
        return self.path

    def problem(self) -> Problem:
        """The problem the CLI prints (path, message, hint) with the code and fields beside them."""
        return Problem(
            self.where(), self.text(), self.hint(), code=self.code, fields=tuple(self.fields().items())
        )


__all__ = ["Refusal"]
