"""The one base of trainstack's facts as data: a plan's warnings and refusals, a rejected layout or type, an
estimate's refusals and notes, a diff's reasons.

Each kind of fact is a frozen dataclass subclass of :class:`Event` with a stable ``code`` and its typed fields, and
its words are rendered from those fields by :meth:`Event.text`, the only place they live; scripts and tests read the
code and the fields, never the words. The model is dbt's events (``core/dbt/events/types.py`` in
dbt-labs/dbt-core). Each family adds what it needs beside ``code`` (a refusal its spec field, a rejection its kind,
a diff reason its impact) and lists its codes in docs/codes.md (``tests/test_codes.py`` checks the tables)."""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class Event(abc.ABC):
    """A fact with a code (abstract: each kind is a subclass with its own :meth:`text`): ``code`` and ``summary``
    are the class's, the fields the instance's."""

    code: ClassVar[str] = ""
    summary: ClassVar[str] = ""  # one line for docs/codes.md

    @abc.abstractmethod
    def text(self) -> str:
        """The fact in English, rendered from the fields (the only place its wording lives)."""

    def fields(self) -> dict[str, Any]:
        """The typed fields by name (what the JSON outputs carry as ``fields``)."""
        return dataclasses.asdict(self)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "fields": self.fields(), "text": self.text()}
