"""What a reviewer must know about the whole change beside each resource's reasons: one event class per note, each
with a stable code (``TSD019``...) and typed fields; the notes' English is rendered here only.

A reason (:mod:`generator.preview.diff.reasons`) says why one change has its impact; a note says what the diff as a
whole means and no impact class shows: HEAD deploys to another stack or region (:func:`compare.diff_graphs
<generator.preview.diff.compare>` adds those to :attr:`DiffResult.notes <generator.preview.diff.model.DiffResult>`),
a deleted, renamed or new stack, a layout whose checkpoints must be resharded (:func:`summary.what_changed
<generator.preview.diff.summary.what_changed>` adds those to ``WhatChanged.notes``). The JSON report carries each as
``{"code", "fields", "text"}``, so a tool (and a test) reads the code and the fields, never the words;
``docs/codes.md`` lists every code (``tests/test_codes.py`` checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.events import Event


@dataclass(frozen=True, slots=True)
class DiffNote(Event):
    """A note of a diff (the notes are the subclasses below)."""


# -- the whole diff (compare.py)


@dataclass(frozen=True, slots=True)
class OtherStack(DiffNote):
    code = "TSD019"
    summary = (
        "HEAD deploys to another Pulumi stack: every resource is created there, the old stack keeps running"
    )
    base_stack: str  # project/stack
    head_stack: str
    resources: int  # the old stack's resources

    def text(self) -> str:
        return (
            f"HEAD deploys to another Pulumi stack ({self.base_stack} -> {self.head_stack}), so every resource is "
            f"created there; the {self.resources} resources of the old stack are not changed and keep running (and "
            "billing) until it is destroyed."
        )


@dataclass(frozen=True, slots=True)
class RegionChanged(DiffNote):
    code = "TSD020"
    summary = "the region changes: every resource is replaced, data included"
    base_region: str
    head_region: str

    def text(self) -> str:
        return (
            f"The region changes ({self.base_region} -> {self.head_region}): every resource is replaced, data "
            "included."
        )


# -- the spec-level change (summary.py)


@dataclass(frozen=True, slots=True)
class StackNotDestroyed(DiffNote):
    code = "TSD021"
    summary = "the spec is deleted: merging does not destroy its stack, which keeps billing"
    stack: str  # name/stack

    def text(self) -> str:
        return (
            "Merging this does not remove the cluster: the deploy job only deploys specs that exist. Run "
            f"`trainstack destroy` on `{self.stack}` first (its checkpoints and data are deleted with it unless "
            "they are kept), or keep the spec."
        )


@dataclass(frozen=True, slots=True)
class OldStackKept(DiffNote):
    code = "TSD022"
    summary = "a rename or a new stack beside the old one: the old stack keeps running and billing"
    old_stack: str  # name/stack

    def text(self) -> str:
        return (
            f"This is a rename or a new stack, not an update: the old stack `{self.old_stack}` is not changed and "
            "keeps running and billing until someone destroys it."
        )


@dataclass(frozen=True, slots=True)
class NewStackEmpty(DiffNote):
    code = "TSD023"
    summary = "a new stack starts without checkpoints: a new, empty bucket and file system"
    stack: str  # name/stack

    def text(self) -> str:
        return (
            f"The new stack `{self.stack}` starts without checkpoints: a new, empty bucket and file system; the run "
            "starts from step 0 unless its checkpoints are copied over."
        )


@dataclass(frozen=True, slots=True)
class Reshard(DiffNote):
    code = "TSD024"
    summary = (
        "the tensor or pipeline degree changes: the checkpoints must be resharded before the job resumes"
    )
    base_tp: int
    base_pp: int
    head_tp: int
    head_pp: int
    base_layout: str  # "tp=8 pp=1 dp=4", as the facts table shows it
    head_layout: str

    def text(self) -> str:
        return (
            f"The layout changes ({self.base_layout} -> {self.head_layout}): the running job's checkpoints must be "
            "resharded for the new tensor/pipeline degrees before it resumes."
        )


def codes() -> list[type[DiffNote]]:
    """Every note class, by code (docs/codes.md lists them)."""
    found = {
        v for v in globals().values() if isinstance(v, type) and issubclass(v, DiffNote) and v is not DiffNote
    }
    return sorted(found, key=lambda c: c.code)
