"""Stage 2, plan: a Spec and the catalog -> an immutable :class:`~generator.plan.model.Plan`, pure (no I/O, no clock).

Modules: ``check`` (spec facts against the catalog), ``planner`` (the decisions, with reasons), ``model`` (the
Plan's frozen dataclasses and plan.json), ``estimate`` (the memory and cost model without a spec), ``report``
(the plan as text).
"""
