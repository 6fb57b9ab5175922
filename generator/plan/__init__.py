"""Stage 2, plan: a Spec and the catalog -> an immutable :class:`~generator.plan.model.Plan`, pure (no I/O, no clock).

Modules: ``check`` (spec facts against the catalog), ``planner`` (``make_plan``, which composes the parts),
``model`` (the Plan's frozen dataclasses and plan.json), ``estimate`` (the memory and cost model without a spec),
``report`` (the plan as text), ``report_markdown`` (the plan as Markdown, through ``markdown``, the
Markdown escaping render shares), ``pipeline`` (load, check and plan a file).

The parts, each building its part of the Plan with its decisions: ``compute`` (the winning fit, from the fits
``layout`` finds), ``network``, ``storage``, ``checkpoints``, ``spot``, ``lingjun`` and ``cost``; ``fit`` holds
what they share.
"""
