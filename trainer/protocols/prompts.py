"""Prompt templates: how each paper asked its model for the tool syntax its protocol parses.

A template turns an example's question (the content of its last user message) into what the policy
is conditioned on: chat messages, which the model's chat template renders, or, for a *raw* template,
the text itself (a completion prompt for a base model, no chat template). The built-in templates
carry the papers' instructions, because a model only uses ``<code>`` or ``<tool_call>`` tags that its
prompt told it about:

- ``torl`` (raw): ToRL's ``tir_base_0309`` completion prompt, the one its training script selects,
  byte for byte; the dataset's system message is discarded, as ToRL's dataset code does.
- ``torl-chat`` (``python_markdown``'s default): ToRL's instruction as a system turn of the chat
  template, for instruct models (the SmolLM2 CPU preset trains with it).
- ``retool`` (``retool``): the verl ReTool recipe's user prompt (``<code>`` blocks, output in
  ``<interpreter>``, answer as ``<answer>\\boxed{…}</answer>``).
- ``artist`` (``artist``): the ARTIST-style system prompt (``<think>``, ``<python>``, ``<output>``,
  ``<answer>``).
- ``toolrl`` (``tool_call_json``): ToolRL's system prompt listing the tools, one JSON object per
  call line with ``parameters``.
- ``tool_n1``: Nemotron-Tool-N1's ``qwen_tool_prompts`` after the dataset's own system text, a JSON
  list of calls with ``arguments`` and the tools as ``<tools>`` signatures.
- ``search_r1`` (``search_r1``): Search-R1's base-model prompt (``<think>``, ``<search>``, ``<information>``,
  ``<answer>``) with the question at its end, the single user message, byte for byte.
- ``search_r1_mini`` (for the tiny model): the same instruction cut to one sentence naming the
  ``<search>`` and ``<answer>`` tags, then the question (search-r1-mini; Search-R1's runs to 600 characters of a
  context of 1,024).
- ``plain``: the question alone.
- ``tool-signatures`` (for small models): the example's tools as one signature a line
  (``get_weather(city: string, unit?: celsius|fahrenheit)``, ``?`` marking an optional parameter,
  an enum as its values), then the question; no instructions. The papers' prompts run to thousands
  of characters, past the tiny model's 1,024 positions; this is what the function-calling minis use.

A template that lists tools keeps an example's own system message unchanged when the example has no
structured tools: the papers' own parquet files (ToolRL's, Tool-N1's) carry their tool lists only
inside that text, and the models were trained on exactly it.

A template may also be given as text: ``{question}`` and ``{tools}`` are replaced (nothing else, so
``\\boxed{}`` needs no escaping) and the result is the single user message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from trainer.protocols.base import PROTOCOLS
from trainer.trajectory import Example


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    user: str
    system: str | None = None
    tools_format: str | None = None  # "toolrl" or "tool_n1": how {tools} lists the example's tools
    # A raw completion prompt: `user` is the whole text the model continues, with no chat template.
    raw: bool = False
    # Tool-N1 writes the dataset's own system text before its tool prompt; an example without one
    # gets this text in its place.
    own_system_default: str | None = None


# GAIR-NLP/ToRL verl/utils/dataset/rl_dataset.py:33-34 @cb78cf1 (tir_base_0309, selected by
# scripts/torl_1.5b.sh:26 @cb78cf1): "\\boxed" in its source is one backslash, and the text ends
# with the newline after "Assistant:". [PROMPT] is the question (rl_dataset.py:178).
_TORL_RAW = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it.\n"
    "User: Please integrate natural language reasoning with programs to solve the problem above, "
    "and put your final answer within \\boxed{}.\n"
    "{question}\n"
    "Assistant:\n"
)

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

# ToolRL's system prompt as its training data writes it: the "instruction" of every row of
# qiancheng0/ToolRL dataset/rlla_4k_raw/rlla_rl.json, which dataset/rlla_4k_raw/rlla.py:48,55 @8cee13e
# makes the system message of dataset/rlla_4k/*.parquet (all 80 test rows share this text around the
# tool list; the same text is SYS in benchmarks/BFCL/rlla_qwen.py:15-40 @8cee13e, which adds a
# trailing newline the training data does not have).
_TOOLRL_SYSTEM = """You are a helpful multi-turn dialogue assistant capable of leveraging tool calls to solve \
user tasks and provide structured chat responses.

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

# NVlabs/Tool-N1 verl/examples/data_preprocess/verl_toolcall_preprocess.py:24-37 @f9b4849
# (qwen_tool_prompts, after str.format: "{{" is "{"). Two lines end in a space, and the text in a newline.
_TOOL_N1_TOOLS = (
    "# Tool\n\nHere is a list of functions in JSON format that you can invoke:\n\n<tools>\n{tools}\n</tools>\n\n"
    "In each action step, you MUST: \n"
    "1. Think about the reasoning process in the mind and enclosed your reasoning within <think> </think> "
    "XML tags.\n"
    "2. Then, provide a json object with function names and arguments within <tool_call></tool_call> XML tags. "
    'i.e., <tool_call>[{"name": <function-name>, "arguments": <args-json-object>}, {"name": <function-name2>, '
    '"arguments": <args-json-object2>}, ...]</tool_call>\n'
    "3. Make sure both the reasoning and the tool call steps are included together in one single reply.\n"
    "A complete reply example is: <think>To address the query, I need to send the email to Bob and then buy "
    'the banana through walmart. </think> <tool_call> [{"name": "email", "arguments": {"receiver": "Bob", '
    '"content": "I will bug banana through walmart"}}, {"name": "walmart", "arguments": {"input": "banana"}}]'
    "</tool_call>. Please make sure the type of the arguments is correct. \n"
)
# The system prompt goes first: Tool-N1's system message is raw_system + qwen_tool_prompts
# (verl_toolcall_preprocess.py:64-68 @f9b4849). raw_system is the dataset's own system text, cut
# after this marker when it holds one (ToolACE: data_process/raw_data_process.py:43-45 @f9b4849),
# or DEFAULT_PROMPT for rows without one (xLAM: raw_data_process.py:32-33,119 @f9b4849).
_TOOL_N1_MARKER = "JSON format that you can invoke:\n"
_TOOL_N1_DEFAULT_SYSTEM = (
    "You are an expert in composing functions. You are given a question and a set of possible functions. \n"
    "Based on the question, you will need to make one or more function/tool calls to achieve the purpose. \n"
    "If none of the function can be used, point it out. If the given question lacks the parameters required "
    "by the function,\nalso point it out. You should only return the function call in tools call sections. "
    "Here is a list of functions in JSON format that you can invoke:\n"
)

# PeterGriffinJin/Search-R1 scripts/data_process/nq_search.py:32-36 @a14dc3a (make_prefix, template_type
# "base"): an f-string continued over lines with backslashes, so one line, ending in a newline after the
# question. It is the row's only user message (nq_search.py:71-74), rendered by the tokenizer's chat template
# where it has one, else used as the raw text (verl/utils/dataset/rl_dataset.py:128-131 @a14dc3a).
_SEARCH_R1_USER = (
    "Answer the given question. "
    "You must conduct reasoning inside <think> and </think> first every time you get new information. "
    "After reasoning, if you find you lack some knowledge, you can call a search engine by <search> query </search> "
    "and it will return the top searched results between <information> and </information>. "
    "You can search as many times as your want. "
    "If you find no further external knowledge needed, you can directly provide the answer inside <answer> and "
    "</answer>, without detailed illustrations. For example, <answer> Beijing </answer>. Question: {question}\n"
)

# Search-R1's instruction in one sentence, for the tiny model (search-r1-mini): the tags it writes, then the question.
_SEARCH_R1_MINI_USER = (
    "Search with <search> query </search>, answer with <answer> answer </answer>. Question: {question}\n"
)

TEMPLATES: dict[str, PromptTemplate] = {
    "torl": PromptTemplate("torl", user=_TORL_RAW, raw=True),
    "torl-chat": PromptTemplate("torl-chat", user="{question}", system=_TORL_SYSTEM),
    "retool": PromptTemplate("retool", user=_RETOOL_USER),
    "artist": PromptTemplate("artist", user="{question}", system=_ARTIST_SYSTEM),
    "toolrl": PromptTemplate("toolrl", user="{question}", system=_TOOLRL_SYSTEM, tools_format="toolrl"),
    "tool_n1": PromptTemplate(
        "tool_n1",
        user="{question}",
        system=_TOOL_N1_TOOLS,
        tools_format="tool_n1",
        own_system_default=_TOOL_N1_DEFAULT_SYSTEM,
    ),
    "search_r1": PromptTemplate("search_r1", user=_SEARCH_R1_USER),
    "search_r1_mini": PromptTemplate("search_r1_mini", user=_SEARCH_R1_MINI_USER),
    "plain": PromptTemplate("plain", user="{question}"),
    "tool-signatures": PromptTemplate("tool-signatures", user="{tools}\n{question}", tools_format="signatures"),
}

# python_markdown's default is the chat form: the quickstart's tiny model and the SmolLM2 preset were
# trained on its prompts; the raw `torl` template is for base models, chosen by name.
DEFAULT_TEMPLATES: dict[str, str] = {
    "python_markdown": "torl-chat",
    "retool": "retool",
    "artist": "artist",
    "tool_call_json": "toolrl",
    # ARTIST's function-calling prompt (its Appendix A.2) is not in the text we could read: the offered
    # tools one signature a line, the shortest prompt that shows them.
    "artist_fc": "tool-signatures",
    # SkyRL-v0's rows carry their whole instruction in the user message (trainer.data.swe_rows builds it from the
    # problem statement); the tools' text is the system message of the row where it has one.
    "codeact": "plain",
    "codeact_mini": "plain",
    "search_r1": "search_r1",
}

# ToRL keeps a raw-template row only if its prompt has at most max_prompt_length - 10 tokens
# (verl/utils/dataset/rl_dataset.py:148-149 @cb78cf1); a chat-template row, at most max_prompt_length
# (rl_dataset.py:142-145 @cb78cf1, verl's own rule).
RAW_PROMPT_MARGIN = 10


class PromptTemplateError(ValueError):
    """A template name that does not exist, or template text without ``{question}``."""


class Tokenizer(Protocol):
    """What rendering and measuring a prompt needs of a tokenizer (a transformers tokenizer has it)."""

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any: ...
    def encode(self, text: str, **kwargs: Any) -> list[int]: ...


@dataclass(frozen=True)
class Prompt:
    """What the policy is conditioned on: chat messages for the model's chat template, or, from a
    raw template, the text itself."""

    messages: list[dict[str, str]] | None = None
    text: str | None = None

    @property
    def raw(self) -> bool:
        return self.text is not None

    def render(self, tokenizer: Tokenizer) -> str:
        """The exact text the model continues."""
        if self.text is not None:
            return self.text
        return tokenizer.apply_chat_template(self.messages, add_generation_prompt=True, tokenize=False)

    def fits(self, tokenizer: Tokenizer, max_prompt_tokens: int) -> bool:
        """Whether ToRL's dataset code keeps this prompt under ``max_prompt_length = max_prompt_tokens``
        (`RAW_PROMPT_MARGIN`): a raw prompt is counted as ``tokenizer.encode(text)`` counts it, special
        tokens included (rl_dataset.py:149), a chat prompt as its templated ids (rl_dataset.py:144)."""
        if self.text is not None:
            return len(tokenizer.encode(self.text)) <= max_prompt_tokens - RAW_PROMPT_MARGIN
        ids = tokenizer.encode(self.render(tokenizer), add_special_tokens=False)
        return len(ids) <= max_prompt_tokens


def build_prompt(example: Example, protocol: str, template: str | None = None) -> Prompt:
    """The prompt for ``example`` under ``template`` (a name from TEMPLATES or text holding
    ``{question}``); ``None`` means the protocol's default.

    With ``template=None``, an example whose prompt already has a system message keeps its prompt
    unchanged: a release that ships its own prompts (ToRL's, ToolRL's parquet files) was trained on
    exactly those. An explicit template always applies; the question is the last user message.

    A raw template (``torl``) is text made of the question alone: the rest of the example's prompt is
    dropped, as ToRL's dataset code drops the parquet's system message. A chat template keeps the
    messages around the question (a dialogue's history before it, tool results after it); the
    example's system message is replaced by the template's when it has one, except where the
    template lists tools and the example has none outside its own system text, which is then kept.
    """
    if template is None:
        if protocol not in DEFAULT_TEMPLATES:
            raise PromptTemplateError(f"unknown protocol '{protocol}'; expected one of {', '.join(PROTOCOLS.names())}")
        if any(message["role"] == "system" for message in example.prompt):
            return Prompt(messages=[dict(message) for message in example.prompt])
        spec = TEMPLATES[DEFAULT_TEMPLATES[protocol]]
    else:
        spec = resolve_template(template)

    question_at = _last_user_index(example)
    question = example.prompt[question_at]["content"]
    if spec.raw:
        return Prompt(text=_fill(spec.user, question, ""))
    before = example.prompt[:question_at]
    history = [dict(message) for message in before if message["role"] != "system"]
    after = [dict(message) for message in example.prompt[question_at + 1 :]]
    own_system = [dict(message) for message in before if message["role"] == "system"]
    tools = _format_tools(example.tools or [], spec.tools_format)
    if spec.system is None or (spec.tools_format is not None and example.tools is None and own_system):
        system = own_system
    elif spec.own_system_default is not None:
        own = "".join(_cut_after(message["content"], _TOOL_N1_MARKER) for message in own_system)
        system = [{"role": "system", "content": (own or spec.own_system_default) + _fill(spec.system, "", tools)}]
    else:
        system = [{"role": "system", "content": _fill(spec.system, "", tools)}]
    user = {"role": "user", "content": _fill(spec.user, question, tools)}
    return Prompt(messages=[*system, *history, user, *after])


def apply_template(example: Example, protocol: str, template: str | None = None) -> list[dict[str, str]]:
    """The chat messages of `build_prompt`; a raw template has none and is refused."""
    prompt = build_prompt(example, protocol, template)
    if prompt.messages is None:
        raise PromptTemplateError(
            f"prompt template '{template}' is a raw completion prompt, not chat messages; use build_prompt"
        )
    return prompt.messages


def prompt_text(tokenizer: Tokenizer, example: Example, protocol: str, template: str | None = None) -> str:
    """The exact text the policy is conditioned on for ``example``."""
    return build_prompt(example, protocol, template).render(tokenizer)


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


def _cut_after(text: str, marker: str) -> str:
    at = text.find(marker)
    return text if at < 0 else text[: at + len(marker)]


def _format_tools(tools: list[dict[str, Any]], style: str | None) -> str:
    if style is None:
        return ""
    specs = [_function_spec(tool) for tool in tools]
    if style == "signatures":
        return "\n".join(_signature(spec) for spec in specs)
    if style == "tool_n1":
        # One OpenAI function signature per line (verl_toolcall_preprocess.py:54-61 @f9b4849).
        return "\n".join(json.dumps({"type": "function", "function": spec}) for spec in specs)
    # ToolRL numbers the tools, each with its name, description and parameters
    # (benchmarks/BFCL/rlla_qwen.py:53-64 @8cee13e, the format of rlla_rl.json's instructions).
    return "\n".join(
        f"{index}. Name: {spec.get('name', '')}\n"
        f"Description: {spec.get('description', '')}\n"
        f"Parameters: {json.dumps(_toolrl_parameters(spec.get('parameters', {})))}"
        for index, spec in enumerate(specs, start=1)
    )


@dataclass(frozen=True)
class ToolParameter:
    """One parameter of an offered tool: its type (an enum as its values) and description, and whether
    a call needs it; `required` is None where the tool does not say (ToolRL's and xLAM's plain maps)."""

    name: str
    kind: str
    description: str
    required: bool | None


def tool_parameters(tool: Mapping[str, Any]) -> list[ToolParameter]:
    """The parameters of `tool` (a function schema, or an OpenAI-style tool nesting one), in order."""
    parameters = _function_spec(tool).get("parameters") or {}
    properties = _toolrl_parameters(parameters)
    schema = properties is not parameters
    listed = parameters.get("required") if schema else None
    required = set(listed) if isinstance(listed, list) else set()
    out = []
    for name, param in properties.items() if isinstance(properties, Mapping) else []:
        param = param if isinstance(param, Mapping) else {}
        kind = "|".join(str(v) for v in param["enum"]) if param.get("enum") else str(param.get("type", "any"))
        out.append(ToolParameter(name, kind, str(param.get("description", "")), name in required if schema else None))
    return out


def _signature(spec: Mapping[str, Any]) -> str:
    """`name(a: string, b?: x|y)`: each parameter with its type, or an enum's values; `?` unless required."""
    parts = [f"{p.name}{'' if p.required else '?'}: {p.kind}" for p in tool_parameters(spec)]
    return f"{spec.get('name', '')}({', '.join(parts)})"


def _toolrl_parameters(parameters: Any) -> Any:
    # A JSON schema lists its properties only (rlla_qwen.py:58 @8cee13e takes .get("properties") whatever
    # the type: ToolACE's rows in Tool-N1's data say "dict", not "object"); ToolRL's training data gives
    # the parameters as a plain name -> spec mapping, listed as it is.
    if (
        isinstance(parameters, Mapping)
        and isinstance(parameters.get("type"), str)
        and isinstance(parameters.get("properties"), Mapping)
    ):
        return parameters["properties"]
    return parameters


def _function_spec(tool: Mapping[str, Any]) -> dict[str, Any]:
    # OpenAI-style tools nest the function under "function"; trainer.data.datasets accepts both shapes.
    inner = tool.get("function")
    return dict(inner) if isinstance(inner, Mapping) else dict(tool)
