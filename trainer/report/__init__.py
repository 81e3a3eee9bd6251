"""Reporting a run: to the dashboard's ingest endpoint, or to files in the output folder."""
