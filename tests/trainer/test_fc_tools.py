"""The function-calling catalogue's tools, run in the sandbox: every ground-truth call of the task family
succeeds with a deterministic result, and a bad call is refused with a message that says what is wrong."""

import asyncio
import json

import pytest

from trainer.data.function_calling import CATALOGUE, TOOLS, function_calling_examples
from trainer.envs.tools.run import MALFORMED, execute_calls

SCHEMAS = [tool.schema() for tool in CATALOGUE]


def run(text: str, tools=SCHEMAS):
    return asyncio.run(execute_calls(text, tools))


def lines(execution) -> list[dict]:
    return [json.loads(line) for line in execution.output.splitlines()]


def test_every_ground_truth_call_runs_and_gives_the_same_result_twice() -> None:
    examples = [e for e in function_calling_examples(120, seed=3, level="hard") if e.ground_truth]
    assert {c["name"] for e in examples for c in e.ground_truth} == set(TOOLS)  # every tool is exercised
    for example in examples:
        block = json.dumps(example.ground_truth)
        first, second = run(block, example.tools), run(block, example.tools)
        assert first.status == "ok", (example.ground_truth, first.output, first.stderr)
        results = lines(first)
        assert [r["name"] for r in results] == [c["name"] for c in example.ground_truth]
        assert all("result" in r for r in results) and first.output == second.output


def test_results_answer_what_was_asked() -> None:
    (weather,) = lines(run('[{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3, "unit": "fahrenheit"}}]'))
    assert weather["result"]["city"] == "Oslo" and [d["day"] for d in weather["result"]["forecast"]] == [1, 2, 3]
    (money,) = lines(run('[{"name": "convert_currency", "arguments": {"amount": 100, "from_currency": "USD", '
                         '"to_currency": "EUR"}}]'))  # fmt: skip
    assert money["result"] == {"amount": 92.0, "currency": "EUR"}
    (hello,) = lines(
        run('{"name": "translate_text", "parameters": {"text": "thank you", "target_language": "German"}}')
    )
    assert hello["result"]["translation"] == "danke"  # ToolRL's layout: one call a line, "parameters"
    (flights,) = lines(run('[{"name": "search_flights", "arguments": {"origin": "Lima", "destination": "Oslo", '
                           '"date": "2026-05-02", "direct_only": true}}]'))  # fmt: skip
    assert flights["result"]["flights"] and all(f["stops"] == 0 for f in flights["result"]["flights"])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"name": "get_time", "arguments": {}}, "unknown tool 'get_time'"),
        ({"name": "set_timer", "arguments": {}}, "missing required parameter 'minutes'"),
        ({"name": "set_timer", "arguments": {"minutes": "5"}}, "parameter 'minutes' must be an integer, got \"5\""),
        ({"name": "set_timer", "arguments": {"minutes": True}}, "parameter 'minutes' must be an integer, got true"),
        ({"name": "set_timer", "arguments": {"minutes": 5, "sound": "bell"}}, "unknown parameter 'sound'"),
        (
            {"name": "convert_currency", "arguments": {"amount": 5, "from_currency": "USD", "to_currency": "BTC"}},
            "parameter 'to_currency' must be one of",
        ),
        ({"name": "set_timer", "arguments": {"minutes": 0}}, "minutes must be at least 1"),
    ],
)
def test_a_bad_call_is_refused_with_what_is_wrong_and_the_others_still_run(call, message) -> None:
    execution = run(json.dumps([call, {"name": "set_timer", "arguments": {"minutes": 5}}]))
    assert execution.status == "error"
    refused, ran = lines(execution)
    assert message in refused["error"] and "result" not in refused
    assert ran["result"]["minutes"] == 5


def test_a_tool_not_offered_is_unknown_though_it_is_implemented() -> None:
    offered = [TOOLS["set_timer"].schema()]
    (line,) = lines(run('[{"name": "get_weather", "arguments": {"city": "Oslo"}}]', offered))
    assert line["error"] == "unknown tool 'get_weather'"


def test_a_block_that_is_not_calls_runs_nothing() -> None:
    execution = run('<think>x</think>\n<tool_call>[{"name": "set_timer", </tool_call>')
    assert (execution.status, execution.output) == ("error", MALFORMED)


def test_arguments_are_data_never_code() -> None:
    subject = "'); import os; os.system('echo pwned') #\"\"\" \\ {}"
    (line,) = lines(run(json.dumps([{"name": "send_email", "arguments": {"to": "Ana", "subject": subject}}])))
    assert line["result"]["subject"] == subject
