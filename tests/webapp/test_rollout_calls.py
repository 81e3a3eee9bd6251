"""The rollouts page of a function-calling run (JavaScript off): each trajectory's JSON calls beside the
ground truth's, what differs marked, and the text still there."""

import json
import re

import pytest
from django.test import Client

from webapp.runs.ingest import ingest_batch

pytestmark = pytest.mark.django_db

WEATHER = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
XSS = '<script>alert(1)</script><img src=x onerror="window.__pwned=1">'


def completion(*calls: dict) -> str:
    return f"<think>The user wants the weather.</think>\n<tool_call>{json.dumps(list(calls))}</tool_call>"


def trajectory(sample: int, text: str, *, ground_truth=None, correct: bool = False) -> dict:
    return {
        "step": 1,
        "prompt_index": 0,
        "sample_index": sample,
        "prompt": [{"role": "user", "content": "What is the weather in Paris, in celsius?"}],
        "turns": [{"kind": "model", "text": text}],
        "final_answer": "",
        "ground_truth": [WEATHER] if ground_truth is None else ground_truth,
        "reward": 1.0 if correct else 0.0,
        "correct": correct,
        "tool_call_count": 1,
    }


@pytest.fixture
def client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def rollouts(client: Client, make_run, trajectories: list[dict], *, protocol: str = "tool_call_json") -> str:
    run, token = make_run(config={"tools": {"protocol": protocol}})
    ingest_batch(run_id=run.pk, token=token, payload={"trajectories": trajectories})
    response = client.get(f"/runs/{run.pk}/rollouts/")
    assert response.status_code == 200
    return response.content.decode()


def card(html: str, sample: int) -> str:
    """One trajectory's row and what it opens into."""
    found = re.search(rf'<details [^>]*id="t-0-{sample}".*?</details>', html, re.DOTALL)
    assert found, f"no trajectory t-0-{sample}"
    return found.group(0)


def row(html: str, key: str) -> str:
    found = re.search(rf'<tr class="call-arg is-(\w+)" data-key="{key}">(.*?)</tr>', html, re.DOTALL)
    assert found, f"no argument row {key}"
    return found.group(0)


def text_of(fragment: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment)).strip()


def test_a_wrong_value_shows_the_call_beside_the_ground_truth(client, make_run):
    html = card(
        rollouts(
            client, make_run, [trajectory(0, completion({**WEATHER, "arguments": {"city": "Lima", "unit": "celsius"}}))]
        ),
        0,
    )
    assert '<section class="calls"' in html
    assert '<tbody class="call is-differs">' in html
    assert "<code>get_weather</code>" in html
    city = row(html, "city")
    assert 'class="call-arg is-wrong_value"' in city
    assert text_of(city) == "city = &quot;Lima&quot; city = &quot;Paris&quot; wrong value"
    assert text_of(row(html, "unit")) == "unit = &quot;celsius&quot; unit = &quot;celsius&quot; match"
    assert "1 difference<" in html


def test_a_missing_parameter_and_an_unexpected_one(client, make_run):
    made = {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}
    html = card(rollouts(client, make_run, [trajectory(0, completion(made))]), 0)
    assert text_of(row(html, "unit")) == "unit = &quot;celsius&quot; missing parameter"
    assert text_of(row(html, "days")) == "days = 3 unexpected parameter"
    assert "2 differences<" in html


def test_missing_and_unexpected_calls(client, make_run):
    timer = {"name": "set_timer", "arguments": {"minutes": 5}}
    html = card(rollouts(client, make_run, [trajectory(0, completion(timer, timer), ground_truth=[WEATHER, timer])]), 0)
    assert '<tbody class="call is-missing_call">' not in html  # set_timer is paired, get_weather is not:
    assert '<tbody class="call is-wrong_name">' in html and "wrong tool name" in html  # the other timer takes its place
    html = card(rollouts(client, make_run, [trajectory(0, completion(), ground_truth=[WEATHER])]), 0)
    assert '<tbody class="call is-missing_call">' in html and "missing call" in html
    html = card(rollouts(client, make_run, [trajectory(0, completion(timer), ground_truth=[])]), 0)
    assert '<tbody class="call is-unexpected_call">' in html and "unexpected call" in html


def test_a_wrong_tool_name_shows_both_names_and_compares_the_arguments(client, make_run):
    forecast = {"name": "get_forecast", "arguments": {"city": "Paris"}}
    html = card(rollouts(client, make_run, [trajectory(0, completion(forecast))]), 0)
    assert '<tbody class="call is-wrong_name">' in html and "wrong tool name" in html
    assert html.index("<code>get_forecast</code>") < html.index("<code>get_weather</code>")  # predicted, then truth
    assert text_of(row(html, "city")) == "city = &quot;Paris&quot; city = &quot;Paris&quot; match"
    assert "2 differences<" in html  # the name, and the unit left out


def test_an_exact_match(client, make_run):
    html = card(rollouts(client, make_run, [trajectory(0, completion(WEATHER), correct=True)]), 0)
    assert '<span class="diff-mark is-match">exact match</span>' in html
    assert "difference" not in html


def test_a_reply_where_no_call_is_due_matches(client, make_run):
    reply = "<think>No tool tells jokes.</think>\n<response>Here is one.</response>"
    html = card(rollouts(client, make_run, [trajectory(0, reply, ground_truth=[], correct=True)]), 0)
    assert "exact match" in html
    assert "No call expected and none made" in html
    assert '<table class="call-diff">' not in html


def test_a_format_error_shows_the_text_that_did_not_parse(client, make_run):
    broken = '<think>x</think>\n<tool_call>[{"name": "get_weather", "arguments": {"city": </tool_call>'
    html = card(rollouts(client, make_run, [trajectory(0, broken)]), 0)
    assert '<span class="diff-mark is-format_error">format error</span>' in html
    assert (
        '<code data-lang="json">[{&quot;name&quot;: &quot;get_weather&quot;, &quot;arguments&quot;: {&quot;city&quot;:'
        in html
    )
    assert '<tbody class="call is-missing_call">' in html


def test_the_turns_follow_the_calls_never_folded(client, make_run):
    html = card(rollouts(client, make_run, [trajectory(0, completion(WEATHER))]), 0)
    assert html.index('<section class="calls"') < html.index('<ol class="turns">')
    assert "<details" not in html[html.index("<summary") :]  # nothing folded inside the opened row
    assert "The user wants the weather." in html
    assert '<dd class="ground-truth">get_weather(city=&quot;Paris&quot;, unit=&quot;celsius&quot;)</dd>' in html


def test_toolrl_text_ground_truth_and_layout(client, make_run):
    def block(unit: str) -> str:
        return (
            f'<tool_call>\n{{"name": "get_weather", "parameters": {{"city": "Paris", "unit": "{unit}"}}}}\n</tool_call>'
        )

    truth, made = block("celsius"), "<think>x</think>\n" + block("kelvin")
    html = card(rollouts(client, make_run, [trajectory(0, made, ground_truth=truth)]), 0)
    assert text_of(row(html, "unit")) == "unit = &quot;kelvin&quot; unit = &quot;celsius&quot; wrong value"


def test_each_sample_of_a_group_has_its_own_diff(client, make_run):
    samples = [
        trajectory(0, completion(WEATHER), correct=True),
        trajectory(1, completion({"name": "get_weather", "arguments": {"city": "Paris"}})),
    ]
    html = rollouts(client, make_run, samples)
    assert "exact match" in card(html, 0) and "missing parameter" not in card(html, 0)
    assert "missing parameter" in card(html, 1)


@pytest.mark.parametrize(
    ("protocol", "ground_truth"),
    [("tool_call_json", "391"), ("python_markdown", [WEATHER]), ("artist", [WEATHER])],
)
def test_no_calls_view_without_json_calls_and_call_ground_truth(client, make_run, protocol, ground_truth):
    html = rollouts(
        client, make_run, [trajectory(0, completion(WEATHER), ground_truth=ground_truth)], protocol=protocol
    )
    assert 'class="calls"' not in html
    assert '<ol class="turns">' in html


def test_call_names_and_values_are_escaped(client, make_run):
    evil = {"name": XSS, "arguments": {XSS: XSS}}
    html = rollouts(client, make_run, [trajectory(0, completion(evil), ground_truth=[evil])])
    assert "<script>alert(1)</script>" not in html and "<img src=x" not in html
    assert "<code>&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_multi_turn_artist_trajectory_shows_every_call_and_reads_none_from_the_tool_results(client, make_run):
    lookup = {"name": "find_flight", "arguments": {"origin": "Oslo", "destination": "Lima", "date": "2026-03-14"}}
    book = {"name": "book_flight", "arguments": {"flight": "TL 345", "passengers": 2}}
    miscopied = {**book, "arguments": {"flight": "TL 354", "passengers": 2}}

    def call(c: dict) -> str:
        return f"<reasoning></reasoning>\n<tool>\n{json.dumps(c)}\n</tool>"

    # The tool results hold a call-shaped line of their own; only the model's two blocks are its calls.
    result = (
        '\n<tool_result>\n{"name": "find_flight", "result": {"flight": "TL 345", "departs": "09:15"}}\n</tool_result>\n'
    )
    turns = [
        {"kind": "model", "text": call(lookup)},
        {"kind": "tool", "text": result, "call": json.dumps(lookup), "status": "ok"},
        {"kind": "model", "text": call(miscopied)},
        {
            "kind": "tool",
            "text": result.replace("find_flight", "book_flight"),
            "call": json.dumps(book),
            "status": "ok",
        },
        {"kind": "model", "text": "Booked."},
    ]
    sample = {**trajectory(0, ""), "turns": turns, "ground_truth": {"calls": [lookup, book], "state": {}}}
    html = card(rollouts(client, make_run, [sample], protocol="artist_fc"), 0)
    assert html.count('<tbody class="call is-') == 2 and '<tbody class="call is-match">' in html
    assert text_of(row(html, "flight")) == "flight = &quot;TL 354&quot; flight = &quot;TL 345&quot; wrong value"
    assert "1 difference<" in html
