"""The function-calling catalogue's tools: their implementations and how calls to them run."""
