"""``python -m generator``: the ``trainstack`` command, as the console script runs it (:func:`generator.cli.entry`)."""

from generator.cli import entry

entry()
