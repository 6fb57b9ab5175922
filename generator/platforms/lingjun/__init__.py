"""Lingjun (eflo): the platform's plan parts (``plan``)."""
