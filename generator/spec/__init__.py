"""Stage 1, load: a YAML spec file -> a typed, frozen :class:`~generator.spec.model.Spec`, or located errors.

Modules: ``model`` (the pydantic spec language and its JSON Schema; its sections in ``training``, ``compute``,
``storage``, its field types in ``fieldtypes``), ``loader`` (file -> Spec; the YAML with line numbers in ``yamltext``,
pydantic's errors in ``pydantic_errors``),
``units`` (sizes, counts, durations), ``limits`` (every bound the spec and the planner enforce).
"""
