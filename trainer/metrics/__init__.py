"""Metrics of a step: the headline series and the function-calling call metrics."""
