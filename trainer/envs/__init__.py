"""Environments: what a tool call does, by name (`tools.environment`; trainer.envs.base says what one owns).

One module per environment, each registering itself (`@register_environment`, trainer.registry):

- ``python``: the call is code, run in the sandbox (python_markdown, retool, artist);
- ``function_calling``: the call is JSON calls, run against the offered tools, results fed back
  (tool_call_json, multi-turn; artist_fc); the tools themselves are in trainer.envs.tools;
- ``none``: single step, the calls are scored and nothing runs (tool_call_json: ToolRL, Tool-N1).

Which environments can run a protocol's calls is the protocol's `environments` (the first its default).
"""

from trainer.envs.base import ENVIRONMENTS, CallContext, CodeRunner, Environment, environment_task, get_environment

ENVIRONMENT_NAMES: tuple[str, ...] = ENVIRONMENTS.names()

__all__ = [
    "ENVIRONMENTS",
    "ENVIRONMENT_NAMES",
    "CallContext",
    "CodeRunner",
    "Environment",
    "environment_task",
    "get_environment",
]
