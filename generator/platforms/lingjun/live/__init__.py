"""Lingjun's own live operations: :mod:`~generator.platforms.lingjun.live.eflo_cure`, the action table of ``heal
--health`` over the EFLO controller (the declaration's ``live``; reached through
:func:`generator.platforms.registry.live_for`)."""
