"""Presentation, after the plan: the plan and the catalog as text (``text``), the plan as Markdown (``markdown``,
through ``md``, the Markdown escaping and tables the rendered README shares), as a Mermaid flowchart (``diagram``),
and ``trainstack cost``'s line-by-line report (``cost_report``). Pure functions returning strings; nothing here
decides anything the plan does not already say.
"""
