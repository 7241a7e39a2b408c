"""Shared pytest configuration."""

from hypothesis import settings

settings.register_profile("ci", deadline=None, derandomize=True, max_examples=100)
