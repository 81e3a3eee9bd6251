"""Environments: what a tool call does, by name (`tools.environment`; trainer.envs.base says what one owns).

- ``python``: the call is code, run in the sandbox (python_markdown, retool, artist);
- ``function_calling``: the call is JSON calls, run against the offered tools, results fed back
  (tool_call_json, multi-turn);
- ``none``: single step, the calls are scored and nothing runs (tool_call_json: ToolRL, Tool-N1).
"""

from trainer.config import default_environment
from trainer.envs.base import CallContext, CodeRunner, Environment
from trainer.envs.function_calling import FunctionCallingEnvironment
from trainer.envs.none import NoEnvironment
from trainer.envs.python import PythonEnvironment

_ENVIRONMENTS: dict[str, Environment] = {
    e.name: e for e in (PythonEnvironment(), FunctionCallingEnvironment(), NoEnvironment())
}
ENVIRONMENT_NAMES: tuple[str, ...] = tuple(_ENVIRONMENTS)


def get_environment(name: str) -> Environment:
    """The environment called `name` (one of ENVIRONMENT_NAMES)."""
    try:
        return _ENVIRONMENTS[name]
    except KeyError:
        raise ValueError(f"unknown environment {name!r}; choose one of: {', '.join(ENVIRONMENT_NAMES)}") from None


__all__ = [
    "ENVIRONMENT_NAMES",
    "CallContext",
    "CodeRunner",
    "Environment",
    "default_environment",
    "get_environment",
]
