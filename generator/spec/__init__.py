"""Stage 1, load: a YAML spec file -> a typed, frozen :class:`~generator.spec.model.Spec`, or located errors.

Modules: ``model`` (the pydantic spec language and its JSON Schema), ``loader`` (YAML with line numbers),
``units`` (sizes, counts, durations), ``limits`` (every bound the spec and the planner enforce).
"""
