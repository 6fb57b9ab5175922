"""Stage 3, plan: a Spec and the catalog -> an immutable :class:`~generator.plan.model.Plan`, pure (no I/O, no clock).

Modules: ``check`` (spec facts against the catalog, and each platform's rules), ``planner`` (``make_plan``, which
composes the parts), ``model`` (the Plan's frozen dataclasses and plan.json), ``pipeline`` (load, check and plan a
file), ``fit`` (what the parts share), ``naming`` (node names), ``search`` (the node-count search), ``rejections``,
``warns`` and ``refusals`` (why a type is refused, what the plan warns about and why a spec is refused, each a code
and typed fields).

The shared parts, each building its part of the Plan with its decisions: ``compute`` (the winning fit, from the fits
``layout`` finds; ``reasons``: what set the node count), ``run_hours`` (one layout's wall-clock hours and the
checkpoint tier they assume), ``placement`` (ECS's zone, fabric, VPC and node places; the IP plan), ``storage`` (with ``weights``), ``checkpoints``,
``spot`` and ``cost``. What differs by platform is in :mod:`generator.platforms`; presentation (text, Markdown,
Mermaid) in :mod:`generator.present`; ``trainstack estimate`` in :mod:`generator.estimate`.
"""

from generator import deferred as _deferred

# The refusal classes (about 60 frozen dataclasses, some 50 ms to create) are read only when a spec is refused: their
# modules run at the first name read from them (generator/deferred.py), so a spec that plans never creates them.
# Their base class is apart, in generator.plan.refusal.
for _name in ("refusals", "catalog_refusals", "spec_refusals", "shape_refusals", "unfit_refusals"):
    _deferred.defer(f"{__name__}.{_name}")
