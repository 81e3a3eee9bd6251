"""The rollouts page as the server renders it (JavaScript off), and the regex search of the API."""

import re

import pytest
from django.test import Client

from webapp.runs.ingest import ingest_batch
from webapp.runs.models import RunStatus
from webapp.runs.services import run_cancel
from webapp.runs.transitions import run_transition

pytestmark = pytest.mark.django_db

XSS = '<script>alert(1)</script><img src=x onerror="window.__pwned=1">'


def trajectory(step: int, prompt: int, sample: int, *, correct: bool = True, **extra) -> dict:
    answer = "391" if correct else "390"
    return {
        "step": step,
        "prompt_index": prompt,
        "sample_index": sample,
        "prompt": [{"role": "user", "content": f"Prompt {prompt}: what is 17 * 23?"}],
        "turns": [
            {"kind": "model", "text": f"Sample {sample} computes.\n```python\nprint(17*23)\n```"},
            {
                "kind": "tool",
                "text": "```output\n391\n```",
                "call": "print(17*23)",
                "status": "ok",
                "duration_ms": 12.5,
            },
            {"kind": "model", "text": f"The answer is \\boxed{{{answer}}}."},
        ],
        "final_answer": answer,
        "ground_truth": "391",
        "reward": 1.0 if correct else -1.0,
        "reward_components": {"answer": 1.0 if correct else -1.0},
        "correct": correct,
        "tool_call_count": 1,
        "response_tokens": 40,
        **extra,
    }


def report(run, trajectories: list[dict]) -> None:
    ingest_batch(run_id=run.pk, token=run.test_token, payload={"trajectories": trajectories})


@pytest.fixture
def run(run_and_token):
    run, token = run_and_token
    run.test_token = token
    # Steps 1, 3 and 5 (a trainer that samples every other step), 2 groups of 2 each.
    report(run, [trajectory(s, p, i, correct=(i == 0)) for s in (1, 3, 5) for p in range(2) for i in range(2)])
    return run


@pytest.fixture
def browser(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def page(client: Client, run, query: str = ""):
    return client.get(f"/runs/{run.pk}/rollouts/{query}")


def test_opens_on_the_latest_step_with_groups_side_by_side(browser, run):
    response = page(browser, run)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<strong>Step 5</strong>" in html
    assert html.count('class="group"') == 2
    assert 'id="t-0-0"' in html and 'id="t-1-1"' in html
    assert html.index('id="t-0-0"') < html.index('id="t-0-1"') < html.index('id="t-1-0"')
    assert 'rel="prev" class="step-link" href="?step=3"' in html
    assert 'rel="next"' not in html
    assert "1/2 correct" in html
    assert '<span class="preview">Prompt 1: what is 17 * 23?</span>' in html
    assert '<code data-lang="python">print(17*23)\n</code>' in html
    assert "12.5 ms" in html


def test_prev_and_next_skip_steps_without_rollouts(browser, run):
    html = page(browser, run, "?step=3").content.decode()
    assert "<strong>Step 3</strong>" in html
    assert 'href="?step=1"' in html and 'href="?step=5"' in html


def test_a_step_without_rollouts_shows_the_nearest_earlier_one(browser, run):
    html = page(browser, run, "?step=4").content.decode()
    assert "Step 4 has no matching rollouts; showing step 3." in html
    assert "<strong>Step 3</strong>" in html


def test_filter_to_incorrect_shows_only_incorrect_and_keeps_the_filter_in_links(browser, run):
    html = page(browser, run, "?step=3&correct=false").content.decode()
    assert 'id="t-0-1"' in html and 'id="t-1-1"' in html
    assert 'id="t-0-0"' not in html and 'id="t-1-0"' not in html
    assert 'href="?step=1&amp;correct=false"' in html


def test_tool_error_and_truncated_filters(browser, run):
    failing = trajectory(7, 0, 1, correct=False, truncated=True)
    failing["turns"][1]["status"] = "timeout"
    report(run, [trajectory(7, 0, 0), failing])
    html = page(browser, run, "?step=7&has_tool_error=1").content.decode()
    assert 'id="t-0-1"' in html and 'id="t-0-0"' not in html
    assert "timeout" in html
    html = page(browser, run, "?step=7&truncated=1").content.decode()
    assert 'id="t-0-1"' in html and 'id="t-0-0"' not in html
    html = page(browser, run, "?truncated=1&step=3").content.decode()
    assert "showing step" in html  # step 3 has nothing truncated: the nearest step that has


def test_deep_link_marks_the_trajectory(browser, run):
    html = page(browser, run, "?step=3&prompt=1&sample=0").content.decode()
    assert 'class="trajectory is-correct is-target" id="t-1-0"' in html
    assert html.count("is-target") == 1


def test_search_lists_matches_across_steps_with_links(browser, run):
    report(run, [trajectory(5, 1, 1, correct=False, final_answer="needle-42")])
    html = page(browser, run, "?q=NEEDLE-42").content.decode()
    assert 'href="?step=5&amp;prompt=1&amp;sample=1#t-1-1"' in html
    assert "<mark>needle-42</mark>" in html
    assert html.count("<mark>") == 1


def test_regex_search(browser, run):
    report(run, [trajectory(3, 0, 1, correct=False, final_answer="x = 12345")])
    html = page(browser, run, "?q=x+%3D+[0-9]{5}&regex=1").content.decode()
    assert "<mark>x = 12345</mark>" in html
    assert html.count("<mark>") == 1


def test_invalid_regex_is_a_clear_400(browser, run):
    response = page(browser, run, "?q=(unclosed&regex=1")
    assert response.status_code == 400
    assert "invalid regular expression" in response.content.decode()


def test_bad_parameters_are_a_400(browser, run):
    response = page(browser, run, "?step=abc")
    assert response.status_code == 400
    assert "Enter a whole number" in response.content.decode()


def test_another_users_run_is_404(run, stranger):
    client = Client()
    client.force_login(stranger)
    assert page(client, run).status_code == 404
    assert client.get(f"/runs/{run.pk}/rollouts/latest").status_code == 404


def test_anonymous_is_sent_to_login(run):
    response = page(Client(), run)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_model_text_is_escaped(browser, run):
    evil = trajectory(9, 0, 0, final_answer=XSS, ground_truth=XSS)
    evil["turns"] = [
        {"kind": "model", "text": f"{XSS}\n```python\n{XSS}\n```"},
        {"kind": "tool", "text": XSS, "call": XSS + "#other", "status": XSS},
    ]
    evil["prompt"] = XSS
    report(run, [evil])
    html = page(browser, run, "?step=9").content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_only_an_active_runs_rollouts_page_listens_for_new_steps(browser, run):
    assert 'data-live="1"' in page(browser, run).content.decode()
    run_transition(run=run, status=RunStatus.CANCELLED)
    assert 'data-live=""' in page(browser, run).content.decode()


def test_no_rollouts_yet(browser, make_run):
    empty, _ = make_run(name="fresh")
    html = page(browser, empty).content.decode()
    assert "no rollouts yet" in html


def test_a_finished_run_without_rollouts_does_not_promise_any(browser, make_run):
    cancelled, _ = make_run(name="cancelled")
    run_cancel(run=cancelled)
    html = page(browser, cancelled).content.decode()
    assert "This run reported no rollouts." in html and "yet" not in html


def test_latest_endpoint(browser, run):
    assert browser.get(f"/runs/{run.pk}/rollouts/latest").json()["last_step"] == 5


def test_api_regex_search_and_its_errors(api, run):
    report(run, [trajectory(3, 1, 1, correct=False, final_answer="abc123")])
    url = f"/api/v1/runs/{run.pk}/trajectories/"
    found = api.get(url, {"q": "^abc[0-9]+$|c1[23]", "regex": "true"}).json()["results"]
    assert [(t["step"], t["prompt_index"], t["sample_index"]) for t in found] == [(3, 1, 1)]
    # Without regex= the same text is a plain substring, found nowhere.
    assert api.get(url, {"q": "c1[23]"}).json()["results"] == []
    bad = api.get(url, {"q": "a{2,1}", "regex": "true"})
    assert bad.status_code == 400 and "invalid regular expression" in bad.json()["q"][0]
    long = api.get(url, {"q": "a" * 201})
    assert long.status_code == 400 and "at most 200" in long.json()["q"][0]


# One model turn and its highlighted call per protocol: the run's config says which protocol it used.
PROTOCOL_TURNS = [
    ("python_markdown", "Compute.\n```python\nprint(17*23)\n```\n```output", "python", "print(17*23)\n"),
    ("retool", "<think>x</think><code>```python\nprint(17*23)\n```</code>", "python", "print(17*23)\n"),
    ("artist", "<think>x</think>\n<python>\nprint(17*23)\n</python>", "python", "print(17*23)\n"),
    (
        "tool_call_json",
        '<tool_call>\n{"name": "mul", "parameters": {}}\n</tool_call>',
        "json",
        "{&quot;name&quot;: &quot;mul&quot;, &quot;parameters&quot;: {}}\n",
    ),
]


@pytest.mark.parametrize(("protocol", "text", "lang", "call"), PROTOCOL_TURNS)
def test_each_protocols_calls_are_marked_for_highlighting(browser, make_run, protocol, text, lang, call):
    run, token = make_run(config={"tools": {"protocol": protocol}})
    one = trajectory(1, 0, 0)
    one["turns"] = [{"kind": "model", "text": text}]
    ingest_batch(run_id=run.pk, token=token, payload={"trajectories": [one]})
    html = page(browser, run).content.decode()
    assert f'<code data-lang="{lang}">{call}</code>' in html
    assert html.count("<code data-lang=") == 1


@pytest.mark.parametrize(("protocol", "text"), [(name, text) for name, text, _, _ in PROTOCOL_TURNS])
def test_a_call_holding_markup_is_escaped(browser, make_run, protocol, text):
    run, token = make_run(config={"tools": {"protocol": protocol}})
    evil = trajectory(1, 0, 0)
    evil["turns"] = [{"kind": "model", "text": text.replace("print(17*23)", XSS).replace('"mul"', XSS)}]
    ingest_batch(run_id=run.pk, token=token, payload={"trajectories": [evil]})
    html = page(browser, run).content.decode()
    assert "<script>alert(1)</script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_each_group_marks_its_best_and_worst_and_puts_them_side_by_side(browser, run):
    html = page(browser, run, "?step=5").content.decode()
    assert html.count('<span class="rank is-best">best</span>') == 2
    assert html.count('<span class="rank is-worst">worst</span>') == 2
    assert 'class="best-vs-worst" href="?step=5&amp;prompt=1&amp;pair=0%2C1#pair-1"' in html
    assert 'class="pair"' not in html
    html = page(browser, run, "?step=5&prompt=1&pair=0,1").content.decode()
    assert html.count('<section class="pair" id="pair-1"') == 1
    sides = re.findall(r'<article class="side (is-\w+)" data-sample="(\d)">', html)
    assert sides == [("is-correct", "0"), ("is-incorrect", "1")]


def test_a_pair_not_shown_or_malformed_is_said(browser, run):
    html = page(browser, run, "?step=5&prompt=1&pair=0,7").content.decode()
    assert "Samples 0 and 7 of prompt 1 are not both among the rollouts shown for step 5." in html
    response = page(browser, run, "?step=5&prompt=1&pair=0")
    assert response.status_code == 400
    assert "Side by side: give two sample numbers, like 3,5." in response.content.decode()


def test_a_code_output_shows_in_its_box_without_its_fences(browser, run):
    """python_markdown's output is "```output" (the model's stop marker), the output, "```": the box
    holds the output, the opening shown with it rather than at the end of the model's turn."""
    real = trajectory(9, 0, 0)
    real["turns"][0]["text"] += "\n```output"  # as trainer.report.trajectories reports it
    real["turns"][1]["text"] = "\n391\n```\n"
    report(run, [real])
    html = page(browser, run, "?step=9").content.decode()
    assert "print(17*23)\n```\n```output" not in html
    assert '<span class="opening mono">```output</span>\n    <pre class="output">391</pre>' in html
