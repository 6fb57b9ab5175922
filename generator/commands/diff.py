"""Placeholder until the diff commands land; lists no commands."""

COMMANDS: list = []
