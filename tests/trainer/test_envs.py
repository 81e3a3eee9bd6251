"""Environments: what a tool call does. The rollout asks the run's environment where to stop, runs the
call there and appends what it feeds back -- the sandbox for code, the offered tools' implementations
for JSON calls, nothing for single-step scoring. Driven by ScriptedEngine (tests.trainer.test_rollout)
with the real sandbox."""

import json

import pytest

from tests.trainer.test_rollout import SCRIPTED_LOGPROB, ScriptedEngine
from trainer.config import ConfigError, RunConfig, validate_config
from trainer.data.function_calling import TOOLS
from trainer.envs import ENVIRONMENT_NAMES, get_environment
from trainer.metrics.step import step_metrics
from trainer.models import CharTokenizer
from trainer.protocols import get_protocol
from trainer.rollout.multi_turn import RolloutSettings, rollout

WEATHER_TOOLS = [TOOLS["get_weather"].schema(), TOOLS["convert_currency"].schema()]
CALL = '<think></think>\n<tool_call>\n{"name": "get_weather", "parameters": {"city": "Oslo"}}\n</tool_call>'
OSLO = (
    '{"name": "get_weather", "result": {"city": "Oslo", "unit": "celsius", "forecast": [{"day": 1, "high": 4, '
    '"sky": "windy"}]}}'
)
REPLY = "<response>Windy, 4 degrees.</response>"


@pytest.fixture
def tokenizer() -> CharTokenizer:
    return CharTokenizer()


def _roll(tokenizer, scripts, tools, **settings):
    engine = ScriptedEngine(tokenizer, scripts)
    prompts = [tokenizer.encode(p) for p in scripts]
    return rollout(
        engine, prompts, RolloutSettings(protocol="tool_call_json", max_response_tokens=1024, **settings), tools=tools
    )


def test_function_calling_runs_the_block_against_the_offered_tools_and_feeds_the_results_back(tokenizer):
    result = _roll(tokenizer, {"Weather in Oslo?\n": [CALL, REPLY]}, [WEATHER_TOOLS], environment="function_calling")
    (trajectory,) = result.trajectories
    completion = trajectory.completion
    fed_back = f"\n<tool_response>\n{OSLO}\n</tool_response>\n"
    assert completion.text == CALL + fed_back + REPLY
    (execution,) = completion.executions
    assert execution.status == "ok"
    assert json.loads(execution.call) == [{"name": "get_weather", "arguments": {"city": "Oslo"}}]
    # The results are tool text: masked from the loss, log-prob 0, and what the protocol reads as tool output.
    masked = [t for t, m in zip(trajectory.response_ids, trajectory.tool_mask, strict=True) if m]
    assert tokenizer.decode(masked) == fed_back
    assert all(
        lp == (0.0 if m else SCRIPTED_LOGPROB) for lp, m in zip(trajectory.logprobs, trajectory.tool_mask, strict=True)
    )
    assert get_protocol("tool_call_json").tool_texts(completion.text, tool_outputs=1) == [fed_back]
    assert [s.kind for s in trajectory.spans] == ["gen", "tool", "gen"]
    assert step_metrics_of(completion)["tool_exec/success_ratio"] == 1.0


def step_metrics_of(completion):
    from trainer.trajectory import RewardResult

    return step_metrics([[(completion, RewardResult(total=0.0))]])


def test_a_call_the_offered_schema_refuses_is_fed_back_as_an_error_and_the_model_goes_on(tokenizer):
    wrong = CALL.replace('"city"', '"town"')
    result = _roll(tokenizer, {"Weather?\n": [wrong, REPLY]}, [WEATHER_TOOLS], environment="function_calling")
    completion = result.trajectories[0].completion
    assert completion.executions[0].status == "error"
    assert "missing required parameter 'city'" in completion.text and completion.text.endswith(REPLY)
    metrics = step_metrics_of(completion)
    assert metrics["tool_exec/success_ratio"] == 0.0 and metrics["tool_exec/error_ratio"] == 1.0


def test_the_call_budget_ends_execution(tokenizer):
    second = "\n<tool_call>\n" + CALL.split("<tool_call>\n")[1]
    result = _roll(
        tokenizer,
        {"Twice?\n": [CALL, second + REPLY]},
        [WEATHER_TOOLS],
        environment="function_calling",
        max_tool_calls=1,
    )
    completion = result.trajectories[0].completion
    assert len(completion.executions) == 1 and completion.text.count("<tool_response>") == 1
    assert completion.text.endswith(second + REPLY)  # the second block is the model's text, not run


def test_single_step_scores_the_calls_as_written(tokenizer):
    # tool_call_json's default environment is 'none': generation does not stop at </tool_call>.
    result = _roll(tokenizer, {"Weather?\n": [CALL + "\n" + REPLY]}, [WEATHER_TOOLS])
    completion = result.trajectories[0].completion
    assert completion.text == CALL + "\n" + REPLY and completion.executions == ()
    assert "tool_exec/success_ratio" not in step_metrics_of(completion)


def test_a_prompt_without_tools_gets_an_error_not_a_crash(tokenizer):
    result = _roll(tokenizer, {"Weather?\n": [CALL, REPLY]}, [None], environment="function_calling")
    (execution,) = result.trajectories[0].completion.executions
    assert execution.status == "error" and "offers no tools" in execution.output


def test_the_config_pairs_each_protocol_with_the_environments_that_run_its_calls():
    assert set(ENVIRONMENT_NAMES) == {"python", "function_calling", "none", "swe", "search"}
    assert RunConfig.model_validate({"tools": {"protocol": "codeact"}}).tools.run_environment == "swe"
    assert RunConfig().tools.run_environment == "python"
    assert RunConfig.model_validate({"tools": {"protocol": "tool_call_json"}}).tools.run_environment == "none"
    config = validate_config({"tools": {"protocol": "tool_call_json", "environment": "function_calling"}})
    assert RolloutSettings.from_config(config).env() is get_environment("function_calling")
    with pytest.raises(ConfigError) as refused:
        validate_config({"tools": {"protocol": "python_markdown", "environment": "function_calling"}})
    assert refused.value.errors == {
        "tools.environment": ["protocol 'python_markdown' runs its calls in 'python', not 'function_calling'"]
    }
    with pytest.raises(ConfigError) as refused:
        validate_config({"tools": {"protocol": "tool_call_json", "environment": "python"}})
    assert "runs its calls in 'none' or 'function_calling'" in refused.value.errors["tools.environment"][0]
    # ARTIST's function-calling syntax exists to run its calls.
    assert RunConfig.model_validate({"tools": {"protocol": "artist_fc"}}).tools.run_environment == "function_calling"
    with pytest.raises(ConfigError):
        validate_config({"tools": {"protocol": "artist_fc", "environment": "none"}})


def test_a_run_in_the_function_calling_environment_executes_its_calls_and_reports_them(tiny_model_cache, tmp_path):
    from tests.trainer._learning import run_preset

    overrides = {
        "tools": {"environment": "function_calling", "max_tool_calls": 2},
        "rollout": {"prompts_per_step": 4, "group_size": 2},
        "schedule": {"max_steps": 1},
    }
    (values,) = run_preset("toolrl-mini", tmp_path / "run", tiny_model_cache, overrides=overrides)
    assert 0.0 <= values["tool_exec/success_ratio"] <= 1.0
    assert values["tool_exec/success_ratio"] + values["tool_exec/error_ratio"] == pytest.approx(1.0)
    trajectories = [json.loads(line) for line in (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()]
    called = [t for t in trajectories if t["tool_call_count"]]
    assert called, "the JSON-call model made no call in 8 responses"
    for t in called:
        # The model's block, then the results as tool text, then the model again.
        assert t["turns"][0]["text"].rstrip().endswith("</tool_call>")
        assert t["turns"][1]["kind"] == "tool" and t["turns"][1]["text"].startswith("\n<tool_response>\n")


def test_the_tool_state_carries_from_call_to_call_and_stays_out_of_what_the_model_reads(tokenizer):
    tools = [TOOLS["set_timer"].schema(), TOOLS["add_event"].schema(), TOOLS["get_weather"].schema()]
    timer = '<tool_call>\n{"name": "set_timer", "parameters": {"minutes": 5, "label": "tea"}}\n</tool_call>'
    event = '<tool_call>\n{"name": "add_event", "parameters": {"title": "Dentist", "date": "2026-05-02"}}\n</tool_call>'
    refused = '<tool_call>\n{"name": "set_timer", "parameters": {"minutes": 0}}\n</tool_call>'
    query = '<tool_call>\n{"name": "get_weather", "parameters": {"city": "Oslo"}}\n</tool_call>'
    result = _roll(
        tokenizer,
        {"Tea, then the dentist.\n": [timer, event, refused, query, REPLY]},
        [tools],
        environment="function_calling",
        max_tool_calls=4,
    )
    completion = result.trajectories[0].completion
    states = [e.state for e in completion.executions]
    tea = {"timers": [{"minutes": 5, "label": "tea"}]}
    both = {**tea, "calendar_events": [{"title": "Dentist", "date": "2026-05-02"}]}
    # A side effect adds to the state; a refused call and a query change nothing.
    assert states == [tea, both, both, both]
    assert [e.status for e in completion.executions] == ["ok", "ok", "error", "ok"]
    assert "#state" not in completion.text and "calendar_events" not in completion.text


def test_an_artist_chain_looks_the_flight_up_reads_the_result_books_it_and_earns_artists_full_reward(tokenizer):
    from trainer.data.tool_chains import tool_chain_examples
    from trainer.rewards import score

    (task,) = tool_chain_examples(1, seed=2, level="chain", split="test")
    lookup, book = task.ground_truth["calls"]
    turns = [f"<reasoning></reasoning>\n<tool>\n{json.dumps(call)}\n</tool>" for call in (lookup, book)] + ["Booked."]
    engine = ScriptedEngine(tokenizer, {"Chain?\n": turns})
    settings = RolloutSettings(
        protocol="artist_fc", environment="function_calling", max_tool_calls=3, max_response_tokens=1024
    )
    result = rollout(engine, [tokenizer.encode("Chain?\n")], settings, tools=[task.tools])
    completion = result.trajectories[0].completion
    looked_up, booked = completion.executions
    # The lookup's result is fed back, and the flight the booking names is the one it returned.
    assert f'"flight": "{book["arguments"]["flight"]}"' in completion.text.split("</tool_result>")[0]
    assert completion.text.count("\n<tool_result>\n") == 2 and completion.text.endswith("</tool_result>\nBooked.")
    assert looked_up.state == {} and booked.state == task.ground_truth["state"]
    reward = score("artist_fc", completion, task.ground_truth)
    assert reward.correct and reward.total == pytest.approx(1.2)
    assert reward.components == pytest.approx({"state": 0.5, "function": 0.5, "format": 0.2})


def test_the_none_environment_never_stops_for_a_call_and_refuses_to_run_one():
    import asyncio

    from trainer.envs import CallContext
    from trainer.protocols.feedback import Feedback

    none, protocol = get_environment("none"), get_protocol("tool_call_json")
    assert none.stop_strings(protocol, 0, None) == []
    with pytest.raises(RuntimeError, match="'none' environment runs no calls"):
        asyncio.run(none.run_call(protocol, CALL, Feedback("tirlab"), CallContext()))
