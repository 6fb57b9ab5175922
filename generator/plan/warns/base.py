"""The base of every plan warning (:class:`PlanWarning`): a stable code, typed fields, and its text rendered from
them (the package's docstring says how warnings travel)."""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

MOE_PRESETS = "deepseek-v3, mixtral-8x7b, mixtral-8x22b, qwen3-30b-a3b, qwen3-235b-a22b"


@dataclass(frozen=True, slots=True)
class PlanWarning(abc.ABC):
    """The base of every plan warning (abstract: each warning is a subclass with its own :meth:`text`): ``code`` is
    the class's, the fields the instance's."""

    code: ClassVar[str] = ""
    summary: ClassVar[str] = ""  # one line for docs/codes.md

    @abc.abstractmethod
    def text(self) -> str:
        """The warning in English, rendered from the fields (the only place its wording lives)."""

    def fields(self) -> dict[str, Any]:
        """The typed fields by name (what plan.json's ``warnings[].fields`` holds)."""
        return dataclasses.asdict(self)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "fields": self.fields(), "text": self.text()}
