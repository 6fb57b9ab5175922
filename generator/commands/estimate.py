"""Placeholder until the estimate commands land; lists no commands."""

COMMANDS: list = []
