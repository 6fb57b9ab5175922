"""The base of every plan warning (:class:`PlanWarning`): a stable code, typed fields, and its text rendered from
them (the package's docstring says how warnings travel)."""

from __future__ import annotations

from dataclasses import dataclass

from generator.events import Event

MOE_PRESETS = "deepseek-v3, mixtral-8x7b, mixtral-8x22b, qwen3-30b-a3b, qwen3-235b-a22b"


@dataclass(frozen=True, slots=True)
class PlanWarning(Event):
    """The base of every plan warning (abstract: each warning is a subclass with its own :meth:`text`): ``code`` is
    the class's, the fields the instance's (what plan.json's ``warnings[].fields`` holds)."""
