"""Placeholder until the live commands land; lists no commands."""

COMMANDS: list = []
