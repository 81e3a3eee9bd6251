"""A function-calling run's rollouts in a real browser: each sample's calls beside the ground truth's,
what differs marked and readable in both themes, the completion's turns under them."""

import json

import pytest

from tests.browser._helpers import assert_readable_in_both_themes, in_thread, log_in, screenshot, toggle_theme
from webapp.runs.ingest import ingest_batch
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)

WEATHER = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
TIMER = {"name": "set_timer", "arguments": {"minutes": 5}}


def completion(*calls: dict) -> str:
    return f"<think>Weather first, then the timer.</think>\n<tool_call>{json.dumps(list(calls))}</tool_call>"


COMPLETIONS = [
    completion(WEATHER, TIMER),  # exact match
    completion({"name": "get_weather", "arguments": {"city": "Lima", "days": 3}}, TIMER),  # value, missing, extra
    # a wrong tool name, and a second timer nobody asked for
    completion(
        {"name": "get_forecast", "arguments": {"city": "Paris"}},
        TIMER,
        {"name": "set_timer", "arguments": {"minutes": 9}},
    ),
    '<think>x</think>\n<tool_call>[{"name": "get_weather", "arguments": {"city": </tool_call>',  # format error
]


def report_run(user) -> int:
    run, token = run_create(
        user=user, name="ToolRL calls", config={"tools": {"protocol": "tool_call_json"}}, managed=False
    )
    trajectories = [
        {
            "step": 2,
            "prompt_index": 0,
            "sample_index": sample,
            "prompt": [{"role": "user", "content": "Weather in Paris in celsius, then a 5 minute timer."}],
            "turns": [{"kind": "model", "text": text}],
            "final_answer": "",
            "ground_truth": [WEATHER, TIMER],
            "reward": 1.0 if sample == 0 else 0.0,
            "correct": sample == 0,
            "tool_call_count": 2,
        }
        for sample, text in enumerate(COMPLETIONS)
    ]
    ingest_batch(run_id=run.pk, token=token, payload={"trajectories": trajectories})
    return run.pk


@pytest.fixture
def run_id(researcher) -> int:
    return in_thread(report_run, user=researcher)


def open_rows(page, *row_ids: str) -> None:
    for row_id in row_ids:
        page.click(f"#{row_id} > summary")
        page.wait_for_selector(f"#{row_id}[open] .trajectory-body", state="visible")


def test_calls_beside_the_ground_truth_with_what_differs(page, live_server, run_id):
    log_in(page, live_server, f"/runs/{run_id}/rollouts/", wait_for="#rollouts")
    open_rows(page, "t-0-0", "t-0-1", "t-0-2", "t-0-3")
    assert page.inner_text("#t-0-0 .calls-head").split() == [
        "calls",
        "exact",
        "match",
        "2",
        "made",
        "·",
        "2",
        "expected",
    ]
    city = page.locator("#t-0-1 tr[data-key=city]")
    assert city.locator("td.got").inner_text() == 'city = "Lima"'
    assert city.locator("td.expected").inner_text() == 'city = "Paris"'
    assert city.locator(".diff-mark").inner_text() == "wrong value"
    # Predicted and expected side by side, on one line.
    got, expected = city.locator("td.got").bounding_box(), city.locator("td.expected").bounding_box()
    assert got["y"] == expected["y"] and got["x"] + got["width"] <= expected["x"]
    assert page.inner_text("#t-0-1 tr[data-key=unit] .diff-mark") == "missing parameter"
    assert page.inner_text("#t-0-1 tr[data-key=days] .diff-mark") == "unexpected parameter"
    wrong_name = page.locator("#t-0-2 tbody.is-wrong_name")
    assert wrong_name.locator("td.got code").inner_text() == "get_forecast"
    assert wrong_name.locator("td.expected code").inner_text() == "get_weather"
    assert wrong_name.locator(".call-name .diff-mark").inner_text() == "wrong tool name"
    assert page.locator("#t-0-2 tbody.is-unexpected_call code").inner_text() == "set_timer"
    # A completion whose calls do not parse makes none: each expected call is missing.
    assert page.locator("#t-0-3 tbody.is-missing_call code").all_inner_texts() == ["get_weather", "set_timer"]
    # Each row says how its calls went without opening it.
    assert page.inner_text("#t-0-0 .calls-made") == "2 / 2 exact"
    assert page.inner_text("#t-0-1 .calls-made") == "2 / 2 3 diff"
    assert page.inner_text("#t-0-3 .calls-made") == "– / 2 format error"

    screenshot(page, "rollouts_calls.png")
    toggle_theme(page)
    screenshot(page, "rollouts_calls_dark.png")
    toggle_theme(page)
    assert_readable_in_both_themes(
        page,
        "#t-0-0 .calls-head .diff-mark",  # exact match
        "#t-0-1 .calls-head .diff-mark",  # 3 differences
        "#t-0-1 tr[data-key=city] .diff-mark",  # wrong value
        "#t-0-1 tr[data-key=city] td.got .arg-value",  # on the tint of a wrong value
        "#t-0-1 tr[data-key=city] td.got .arg-key",
        "#t-0-1 tr[data-key=city] td.expected .arg-value",
        "#t-0-1 tr[data-key=unit] .diff-mark",  # missing parameter
        "#t-0-1 tr[data-key=days] .diff-mark",  # unexpected parameter
        "#t-0-2 tbody.is-wrong_name .call-name .diff-mark",
        "#t-0-2 tbody.is-wrong_name .call-name td.got code",  # on the tint of a wrong name
        "#t-0-2 tbody.is-wrong_name .call-name td.expected code",
        "#t-0-2 tbody.is-unexpected_call .diff-mark",
        "#t-0-2 tbody.is-unexpected_call td.got code",
        "#t-0-3 tbody.is-missing_call:first-of-type .diff-mark",
        "#t-0-3 .calls-head .diff-mark",  # format error
        "#t-0-3 .calls-made .diff-mark",
    )


def test_the_completion_text_is_shown_as_turns_under_the_calls(page, live_server, run_id):
    """The model's text is never folded away behind its calls: opened, a sample shows its calls
    against the ground truth's and then its turns, the <tool_call> block highlighted."""
    log_in(page, live_server, f"/runs/{run_id}/rollouts/", wait_for="#rollouts")
    open_rows(page, "t-0-1", "t-0-3")
    assert page.locator("#t-0-1 .turns").is_visible()
    assert "Weather first, then the timer." in page.inner_text("#t-0-1 .turns")
    assert page.locator("#t-0-1 .turns code.highlighted .hl-string").first.inner_text() == '"name"'
    calls, turns = page.locator("#t-0-1 .calls").bounding_box(), page.locator("#t-0-1 .turns").bounding_box()
    assert calls["y"] + calls["height"] <= turns["y"]
    assert page.inner_text("#t-0-3 .calls-head .diff-mark") == "format error"
    assert '"arguments": {"city":' in page.inner_text("#t-0-3 .turns")
