"""Prompt templates: how each paper asked its model for the tool syntax its protocol parses.

A template turns an example's question (the content of its last user message) into the chat
messages the policy sees. The built-in templates carry the papers' instructions, because a model
only uses ``<code>`` or ``<tool_call>`` tags that its prompt told it about:

- ``torl`` (``python_markdown``): ToRL's system prompt, the Qwen2.5-Math tool-integrated reasoning
  instruction behind a conversation preamble, as ToRL's verl data preprocessing writes it.
- ``retool`` (``retool``): the verl ReTool recipe's user prompt (``<code>`` blocks, output in
  ``<interpreter>``, answer as ``<answer>\\boxed{…}</answer>``).
- ``artist`` (``artist``): the ARTIST-style system prompt (``<think>``, ``<python>``, ``<output>``,
  ``<answer>``).
- ``toolrl`` (``tool_call_json``): ToolRL's system prompt listing the tools, one JSON object per
  call line with ``parameters``.
- ``tool_n1`` (``tool_call_json``): Nemotron-Tool-N1's system prompt, a JSON list of calls with
  ``arguments`` and the tools as ``<tools>`` signatures.
- ``plain``: the question alone.

A template may also be given as text: ``{question}`` and ``{tools}`` are replaced (nothing else, so
``\\boxed{}`` needs no escaping) and the result is the single user message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainer.protocols import PROTOCOL_NAMES
from trainer.trajectory import Example


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    user: str
    system: str | None = None
    tools_format: str | None = None  # "toolrl" or "tool_n1": how {tools} lists the example's tools


_TORL_SYSTEM = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. "
    "Please integrate natural language reasoning with programs to solve the problem above, "
    "and put your final answer within \\boxed{}."
)

_RETOOL_USER = """Solve the following problem step by step. You now have the ability to selectively write \
executable Python code to enhance your reasoning process. The Python code will be executed by an external \
sandbox, and the output (wrapped in `<interpreter>output_str</interpreter>`) can be returned to aid your \
reasoning and help you arrive at the final answer. The Python code should be complete scripts, including \
necessary imports.
Each code snippet is wrapped with `<code>
```python
code snippet
```
</code>`.
The last part of your response should be in the following format:
<answer>
\\boxed{'The final answer goes here.'}
</answer>

*user question:*
{question}

Remember to place the final answer in the last part using the format:
<answer>
\\boxed{'The final answer goes here.'}
</answer>"""

_ARTIST_SYSTEM = (
    "You are a helpful assistant that can solve complex math problems step by step with the help of a python "
    "executor tool. Given a question, you need to first think about the reasoning process in the mind and then "
    "provide the answer. During thinking, you can write python code, and invoke python tool to execute the code "
    "and get back the output of the code. The reasoning process and answer are enclosed within <think> </think> "
    "and <answer> </answer> tags respectively, and the python code and the output are enclosed within "
    "<python> </python> and <output> </output> tags respectively. Make sure to print the result at the end of "
    "the python code. You can utilize the python tool as many times as required, however each python code will "
    "be executed separately. For example, <think> reasoning process here </think> <python> python code here "
    "</python> <output> output of python code here </output> <think> reasoning process here </think> "
    "<answer> final answer here </answer>. Put the final answer within \\boxed{} inside <answer>."
)

_TOOLRL_SYSTEM = """You are a helpful dialogue assistant capable of leveraging tool calls to solve user tasks \
and provide structured chat responses.

**Available Tools**
In your response, you can use the following tools:
{tools}

**Steps for Each Turn**
1. **Think:** Recall relevant context and analyze the current user goal.
2. **Decide on Tool Usage:** If a tool is needed, specify the tool and its parameters.
3. **Respond Appropriately:** If a response is needed, generate one while maintaining consistency across \
user queries.

**Output Format**
```plaintext
<think> Your thoughts and reasoning </think>
<tool_call>
{"name": "Tool name", "parameters": {"Parameter name": "Parameter content", "... ...": "... ..."}}
{"name": "... ...", "parameters": {"... ...": "... ...", "... ...": "... ..."}}
...
</tool_call>
<response> AI's final response </response>
```

**Important Notes**
1. You must always include the `<think>` field to outline your reasoning. Provide at least one of \
`<tool_call>` or `<response>`. Decide whether to use `<tool_call>` (possibly multiple times), `<response>`, \
or both.
2. You can invoke multiple tool calls simultaneously in the `<tool_call>` fields. Each tool call should be \
a JSON object with a "name" field and an "parameters" field containing a dictionary of parameters. If no \
parameters are needed, leave the "parameters" field an empty dictionary.
3. Refer to the previous dialogue records in the history, including the user's queries, previous \
`<tool_call>`, `<response>`, and any tool feedback noted as `<obs>` (if exists)."""

_TOOL_N1_SYSTEM = """You are an expert in composing functions. You are given a question and a set of possible \
functions. Based on the question, you will need to make one or more function/tool calls to achieve the \
purpose. If none of the function can be used, point it out. If the given question lacks the parameters \
required by the function, also point it out. You should only return the function call in tools call sections.

# Tool

You are provided with function signatures within <tools></tools> XML tags:

<tools>
{tools}
</tools>

In each action step, you MUST:
1. Think about the reasoning process in the mind and enclosed your reasoning within <think> </think> XML tags.
2. Then, provide a json object with function names and arguments within <tool_call></tool_call> XML tags. \
i.e., <tool_call>[{"name": <function-name>, "arguments": <args-json-object>}, {"name": <function-name2>, \
"arguments": <args-json-object2>}, ...]</tool_call>
3. Make sure both the reasoning and the tool call steps are included together in one single reply.
A complete reply example is: <think>To address the query, I need to send the email to Bob and then buy the \
banana through walmart. </think> <tool_call> [{"name": "email", "arguments": {"receiver": "Bob", "content": \
"I will bug banana through walmart"}}, {"name": "walmart", "arguments": {"input": "banana"}}]</tool_call>. \
Please make sure the type of the arguments is correct."""

TEMPLATES: dict[str, PromptTemplate] = {
    "torl": PromptTemplate("torl", user="{question}", system=_TORL_SYSTEM),
    "retool": PromptTemplate("retool", user=_RETOOL_USER),
    "artist": PromptTemplate("artist", user="{question}", system=_ARTIST_SYSTEM),
    "toolrl": PromptTemplate("toolrl", user="{question}", system=_TOOLRL_SYSTEM, tools_format="toolrl"),
    "tool_n1": PromptTemplate("tool_n1", user="{question}", system=_TOOL_N1_SYSTEM, tools_format="tool_n1"),
    "plain": PromptTemplate("plain", user="{question}"),
}

DEFAULT_TEMPLATES: dict[str, str] = {
    "python_markdown": "torl",
    "retool": "retool",
    "artist": "artist",
    "tool_call_json": "toolrl",
}


class PromptTemplateError(ValueError):
    """A template name that does not exist, or template text without ``{question}``."""


def apply_template(example: Example, protocol: str, template: str | None = None) -> list[dict[str, str]]:
    """The chat messages for ``example`` under ``template`` (a name from TEMPLATES or text holding
    ``{question}``); ``None`` means the protocol's default.

    With ``template=None``, an example whose prompt already has a system message keeps its prompt
    unchanged: a release that ships its own prompts (ToRL's, ToolRL's parquet files) was trained on
    exactly those. An explicit template always applies; the question is the last user message, the
    messages before it (a dialogue's history) are kept, and a system message is replaced by the
    template's when it has one.
    """
    if template is None:
        if protocol not in DEFAULT_TEMPLATES:
            raise PromptTemplateError(f"unknown protocol '{protocol}'; expected one of {', '.join(PROTOCOL_NAMES)}")
        if any(message["role"] == "system" for message in example.prompt):
            return [dict(message) for message in example.prompt]
        spec = TEMPLATES[DEFAULT_TEMPLATES[protocol]]
    else:
        spec = resolve_template(template)

    question_at = _last_user_index(example)
    tools = _format_tools(example.tools or [], spec.tools_format)
    history = [dict(message) for message in example.prompt[:question_at] if message["role"] != "system"]
    kept_system = [dict(message) for message in example.prompt[:question_at] if message["role"] == "system"]
    system = [{"role": "system", "content": _fill(spec.system, "", tools)}] if spec.system else kept_system
    user = {"role": "user", "content": _fill(spec.user, example.prompt[question_at]["content"], tools)}
    return [*system, *history, user]


def resolve_template(template: str) -> PromptTemplate:
    """A built-in template by name, or one made of the given text."""
    if template in TEMPLATES:
        return TEMPLATES[template]
    if "{question}" not in template:
        names = ", ".join(TEMPLATES)
        raise PromptTemplateError(
            f"unknown prompt template '{template}': expected one of {names}, or text containing {{question}}"
        )
    # Custom text lists tools the way the tool_call_json default (ToolRL) does.
    return PromptTemplate("custom", user=template, tools_format="toolrl" if "{tools}" in template else None)


def _last_user_index(example: Example) -> int:
    for index in range(len(example.prompt) - 1, -1, -1):
        if example.prompt[index]["role"] == "user":
            return index
    raise PromptTemplateError(f"example {example.id} has no user message to take the question from")


def _fill(text: str | None, question: str, tools: str) -> str:
    # str.format would trip over the JSON braces and \boxed{} in the papers' texts.
    return (text or "").replace("{tools}", tools).replace("{question}", question)


def _format_tools(tools: list[dict[str, Any]], style: str | None) -> str:
    if style is None:
        return ""
    specs = [_function_spec(tool) for tool in tools]
    if style == "tool_n1":
        # Tool-N1 lists each tool as an OpenAI function signature, one JSON object per line.
        return "\n".join(json.dumps({"type": "function", "function": spec}) for spec in specs)
    # ToolRL numbers the tools, each with its name, description and parameter schema.
    return "\n".join(
        f"{index}. Name: {spec.get('name', '')}\n"
        f"Description: {spec.get('description', '')}\n"
        f"Parameters: {json.dumps(spec.get('parameters', {}))}"
        for index, spec in enumerate(specs, start=1)
    )


def _function_spec(tool: Mapping[str, Any]) -> dict[str, Any]:
    # OpenAI-style tools nest the function under "function"; trainer.data accepts both shapes.
    inner = tool.get("function")
    return dict(inner) if isinstance(inner, Mapping) else dict(tool)
