"""`search`: Search-R1's search engine as an environment (trainer.envs.search.environment)."""

from trainer.envs.search import environment as environment  # noqa: F401 - registers 'search'
