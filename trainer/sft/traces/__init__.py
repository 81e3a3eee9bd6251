"""Seeded SFT trace generators, one module per family of tasks."""
