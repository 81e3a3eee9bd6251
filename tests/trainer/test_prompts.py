import json

import pytest

from trainer.protocols.prompts import (
    DEFAULT_TEMPLATES,
    TEMPLATES,
    PromptTemplateError,
    apply_template,
    resolve_template,
)
from trainer.trajectory import Example

WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {"city": {"type": "str"}},
}


def math_example(*prompt: dict[str, str]) -> Example:
    messages = list(prompt) or [{"role": "user", "content": "What is 6 * 7?"}]
    return Example(id="1", prompt=messages, ground_truth="42", data_source="arithmetic")


def tool_example(tools: list[dict]) -> Example:
    return Example(
        id="2",
        prompt=[{"role": "user", "content": "Weather in Paris?"}],
        ground_truth=[{"name": "get_weather", "arguments": {"city": "Paris"}}],
        data_source="function_calling",
        tools=tools,
    )


def test_every_protocol_has_a_default_template() -> None:
    from trainer.protocols import PROTOCOL_NAMES

    assert set(DEFAULT_TEMPLATES) == set(PROTOCOL_NAMES)
    assert all(name in TEMPLATES for name in DEFAULT_TEMPLATES.values())


def test_torl_chat_is_the_python_markdown_default() -> None:
    assert DEFAULT_TEMPLATES["python_markdown"] == "torl-chat"
    system, user = apply_template(math_example(), "python_markdown")
    assert system["role"] == "system"
    assert "integrate natural language reasoning with programs" in system["content"]
    assert system["content"].endswith("within \\boxed{}.")
    assert user == {"role": "user", "content": "What is 6 * 7?"}


def test_retool_wraps_the_question_in_the_recipe_user_prompt() -> None:
    (user,) = apply_template(math_example(), "retool")
    content = user["content"]
    assert user["role"] == "user"
    assert "*user question:*\nWhat is 6 * 7?\n" in content
    assert "<code>\n```python\ncode snippet\n```\n</code>" in content
    assert "<interpreter>output_str</interpreter>" in content
    assert content.endswith("<answer>\n\\boxed{'The final answer goes here.'}\n</answer>")


def test_artist_names_its_tags() -> None:
    system, user = apply_template(math_example(), "artist")
    for tag in ("<think>", "<python>", "<output>", "<answer>"):
        assert tag in system["content"]
    assert user["content"] == "What is 6 * 7?"


def test_toolrl_system_prompt_lists_the_tools() -> None:
    system, user = apply_template(tool_example([WEATHER]), "tool_call_json")
    expected_listing = (
        '1. Name: get_weather\nDescription: Current weather for a city\nParameters: {"city": {"type": "str"}}'
    )
    assert f"In your response, you can use the following tools:\n{expected_listing}\n\n" in system["content"]
    assert '{"name": "Tool name", "parameters": {"Parameter name": "Parameter content"' in system["content"]
    assert user == {"role": "user", "content": "Weather in Paris?"}


def test_tool_n1_lists_openai_signatures_and_accepts_nested_tools() -> None:
    nested = {"type": "function", "function": WEATHER}
    system, _ = apply_template(tool_example([nested]), "tool_call_json", "tool_n1")
    listing = system["content"].split("<tools>\n")[1].split("\n</tools>")[0]
    assert json.loads(listing) == {"type": "function", "function": WEATHER}
    assert '<tool_call>[{"name": <function-name>, "arguments": <args-json-object>}' in system["content"]


def test_several_tools_are_numbered() -> None:
    clock = {"name": "get_time", "description": "Current time", "parameters": {}}
    system, _ = apply_template(tool_example([WEATHER, clock]), "tool_call_json")
    assert "\n2. Name: get_time\nDescription: Current time\nParameters: {}" in system["content"]


def test_default_keeps_a_prompt_that_ships_its_own_system_message() -> None:
    shipped = math_example({"role": "system", "content": "Release prompt."}, {"role": "user", "content": "Q"})
    assert apply_template(shipped, "python_markdown") == shipped.prompt
    # An explicit template replaces it.
    system, user = apply_template(shipped, "python_markdown", "artist")
    assert system["content"] == TEMPLATES["artist"].system
    assert user == {"role": "user", "content": "Q"}


def test_dialogue_history_is_kept_and_question_is_the_last_user_message() -> None:
    example = math_example(
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "What is 2 + 2?"},
    )
    messages = apply_template(example, "retool", "retool")
    # retool has no system prompt of its own, so the example's stays.
    assert messages[:3] == example.prompt[:3]
    assert messages[3]["role"] == "user" and "What is 2 + 2?" in messages[3]["content"]


def test_custom_text_template() -> None:
    (user,) = apply_template(math_example(), "python_markdown", "Q: {question}\nAnswer in \\boxed{}.")
    assert user == {"role": "user", "content": "Q: What is 6 * 7?\nAnswer in \\boxed{}."}
    (user,) = apply_template(tool_example([WEATHER]), "tool_call_json", "Tools:\n{tools}\n{question}")
    assert user["content"].startswith("Tools:\n1. Name: get_weather\n")
    assert user["content"].endswith("\nWeather in Paris?")


def test_plain_is_the_question_alone() -> None:
    assert apply_template(math_example(), "artist", "plain") == [{"role": "user", "content": "What is 6 * 7?"}]


def test_tool_signatures_list_each_tool_on_one_line_before_the_question() -> None:
    schema = {
        "name": "get_weather",
        "description": "Weather.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
            },
            "required": ["city"],
        },
    }
    timer = {"type": "function", "function": {"name": "set_timer", "parameters": {"minutes": {"type": "integer"}}}}
    messages = apply_template(tool_example([schema, timer]), "tool_call_json", "tool-signatures")
    assert messages == [
        {
            "role": "user",
            "content": "get_weather(city: string, unit?: celsius|fahrenheit, days?: integer)\n"
            "set_timer(minutes?: integer)\nWeather in Paris?",
        }
    ]


def test_the_example_is_not_modified() -> None:
    example = math_example()
    apply_template(example, "retool")
    assert example.prompt == [{"role": "user", "content": "What is 6 * 7?"}]


def test_errors() -> None:
    with pytest.raises(PromptTemplateError, match="unknown prompt template 'nope'.*torl.*\\{question\\}"):
        resolve_template("nope")
    with pytest.raises(PromptTemplateError, match="unknown protocol"):
        apply_template(math_example(), "xml")
    with pytest.raises(PromptTemplateError, match="no user message"):
        apply_template(math_example({"role": "system", "content": "only"}), "retool", "retool")


def test_toolace_dict_schemas_list_their_properties_in_either_tool_layout() -> None:
    # ToolACE's rows in Tool-N1's data type their parameters "dict", not "object" (rlla_qwen.py:58 reads
    # .get("properties") whatever the type).
    schema = {
        "name": "book_table",
        "description": "Book.",
        "parameters": {"type": "dict", "properties": {"people": {"type": "integer"}}, "required": ["people"]},
    }
    (message,) = apply_template(tool_example([schema]), "tool_call_json", "tool-signatures")
    assert message["content"].startswith("book_table(people: integer)\n")
    (system, _) = apply_template(tool_example([schema]), "tool_call_json", "toolrl")
    assert 'Parameters: {"people": {"type": "integer"}}' in system["content"]
