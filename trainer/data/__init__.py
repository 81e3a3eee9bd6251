"""Datasets: built-in generators, file formats, detection, validation, preview and reading."""
