"""``python -m generator.cli``: the trainstack command."""

from generator.cli import entry

entry()
