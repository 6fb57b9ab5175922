"""Placeholder until the lint commands land; lists no commands."""

COMMANDS: list = []
