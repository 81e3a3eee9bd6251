"""Reward configs in a real browser: try a reward on a pasted completion, save a config from a preset."""

import json

import pytest

from tests.browser._helpers import in_thread, log_in, screenshot
from trainer.rewards import TEXT_REWARD_NAMES
from webapp.rewards.models import RewardConfig
from webapp.rewards.services import builtin_reward_configs_seed
from webapp.ui.reward_examples import EXAMPLES

pytestmark = pytest.mark.django_db(transaction=True)

FENCE = "```"
TORL_CORRECT = (
    "Let me compute it.\n"
    f"{FENCE}python\nprint(6 * 7)\n{FENCE}\n"
    f"{FENCE}output\n42\n{FENCE}\n"
    "So the answer is \\boxed{42}."
)


@pytest.fixture
def page_without_js(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def test_try_it_scores_a_correct_torl_completion_without_javascript(page_without_js, live_server, researcher):
    page = page_without_js
    log_in(page, live_server, "/rewards/")
    page.goto(f"{live_server.url}/rewards/")
    page.select_option("#reward-choice select[name=reward]", "torl")
    page.click("#reward-choice button[type=submit]")
    page.fill("textarea[name=completion]", TORL_CORRECT)
    page.fill("textarea[name=ground_truth]", "42")
    click_try(page)
    result = page.locator("#result")
    assert result.locator(".total strong").inner_text() == "1.0"
    assert "correct" in result.locator(".total").inner_text()
    components = dict(
        tuple(row.locator("td").all_inner_texts()) for row in result.locator("table.components tbody tr").all()
    )
    assert components == {"answer": "1.0", "exec_error_penalty": "0.0"}
    # The form keeps what was tried, so it can be tweaked and tried again.
    assert page.input_value("textarea[name=completion]") == TORL_CORRECT

    page.fill("textarea[name=ground_truth]", "41")
    click_try(page)
    assert page.locator("#result .total strong").inner_text() == "-1.0"
    assert "not correct" in page.inner_text("#result .total")
    screenshot(page, "rewards-try.png")


def test_create_a_reward_config_from_a_preset(page, live_server, researcher):
    in_thread(builtin_reward_configs_seed)
    log_in(page, live_server, "/rewards/")
    page.goto(f"{live_server.url}/rewards/")
    page.locator("table.reward-configs tr", has_text="otc_grpo").get_by_role("link", name="Load").click()
    page.wait_for_url("**config=**")
    assert page.input_value("input[name='params.c']") == "3.0"

    page.fill("input[name='params.c']", "0")
    page.fill("input[name=name]", "OTC, gentler decay")
    page.click("button[value=save]")
    field = page.locator(".param-field[data-param=c]")
    assert "params.c: Input should be greater than 0" in field.locator(".field-error").inner_text()
    assert not RewardConfig.objects.filter(name="OTC, gentler decay").exists()

    page.fill("input[name='params.c']", "1.5")
    page.check("input[name='params.global_min']")
    page.click("button[value=save]")
    assert "Saved reward config OTC, gentler decay." in page.inner_text("main")
    row = page.locator("table.reward-configs tr", has_text="OTC, gentler decay")
    assert '"c": 1.5' in row.inner_text() and '"global_min": true' in row.inner_text()
    config = RewardConfig.objects.get(name="OTC, gentler decay")
    assert (config.reward, config.owner.username, config.builtin) == ("otc_grpo", "ada", False)
    assert config.params == {"alpha": 1.0, "c": 1.5, "wrong_reward": 0.0, "global_min": True}

    # Choosing another reward (the select submits itself) regenerates the form from its schema.
    page.select_option("#reward-choice select[name=reward]", "toolrl")
    page.wait_for_url("**reward=toolrl**")
    assert page.locator("select[name='params.schedule'] option").all_inner_texts() == [
        "constant",
        "scheduled",
        "max1_step30_max3",
    ]
    screenshot(page, "rewards.png")


# --- issue 31, item 3: try it with the ground truth as tirlab shows it, an example per reward, rounded totals ---

DENTIST = {"name": "add_event", "arguments": {"title": "Dentist", "date": "2026-12-01"}}
# What the rollouts page shows as "expected" for a toolrl-mini sample, and the same call in ToolRL's text form.
EXPECTED_AS_SHOWN = json.dumps([DENTIST], ensure_ascii=False)
TOOLRL_TEXT = (
    '<tool_call>\n{"name": "add_event", "parameters": {"title": "Dentist", "date": "2026-12-01"}}\n</tool_call>'
)
NEAR_MISS = (
    "<think>The user wants the appointment in the calendar.</think>\n"
    '<tool_call>\n{"name": "add_event", "parameters": {"title": "Dentist", "date": "2026-12-02"}}\n</tool_call>'
)


def click_try(page) -> None:
    """Try it, and wait for the page the form posts to: the last result (which may show the same
    total) is still there until it loads."""
    with page.expect_navigation():
        page.click("button[value=try]")


def try_reward(page, completion: str, ground_truth: str) -> None:
    page.fill("textarea[name=completion]", completion)
    page.fill("textarea[name=ground_truth]", ground_truth)
    click_try(page)


def shown_score(page) -> tuple[str, dict[str, str]]:
    result = page.locator("#result")
    rows = result.locator("table.components tbody tr").all()
    return result.locator(".total strong").inner_text(), dict(tuple(r.locator("td").all_inner_texts()) for r in rows)


def test_toolrl_scores_the_expected_json_of_the_rollouts_page_as_its_text_form(page, live_server, researcher):
    log_in(page, live_server, "/rewards/")
    page.goto(f"{live_server.url}/rewards/?reward=toolrl")
    try_reward(page, NEAR_MISS, TOOLRL_TEXT)
    as_text = shown_score(page)
    try_reward(page, NEAR_MISS, EXPECTED_AS_SHOWN)
    assert shown_score(page) == as_text == ("2.5", {"format": "1.0", "correctness": "1.5"})
    # A ground truth that cannot be read says why instead of scoring zeros.
    try_reward(page, NEAR_MISS, EXPECTED_AS_SHOWN[:-2])
    assert page.locator("#result").count() == 0
    error = page.locator("#reward-form .message.error").inner_text()
    assert "Could not score: the ground truth starts like JSON but is not valid JSON" in error
    assert "(line 1, column" in error
    # Text in neither of its forms is ToolRL's "reply with only <think>": said beside the score.
    try_reward(page, NEAR_MISS, "add_event(title='Dentist')")
    assert "no <tool_call> and no <response>" in page.inner_text("#result")
    screenshot(page, "rewards-toolrl.png")


def test_every_reward_fills_in_an_example_that_scores_and_totals_are_rounded(page, live_server, researcher):
    log_in(page, live_server, "/rewards/")
    for reward in TEXT_REWARD_NAMES:
        page.goto(f"{live_server.url}/rewards/?reward={reward}")
        example = EXAMPLES[reward]
        assert page.get_attribute("textarea[name=ground_truth]", "placeholder") == example.ground_truth_hint
        with page.expect_navigation():  # a link: the example comes with the page it opens
            page.click("#fill-example")
        assert page.input_value("textarea[name=completion]") == example.completion
        assert page.input_value("textarea[name=ground_truth]") == example.ground_truth
        click_try(page)
        assert "not correct" not in page.inner_text("#result .total"), reward
        assert float(page.inner_text("#result .total strong")) > 0, reward
    # artist_fc's 0.5 + 0.5 + 0.2 sums to 1.2000000000000002: shown to 3 decimals at most.
    page.goto(f"{live_server.url}/rewards/?reward=artist_fc&example=1")
    click_try(page)
    assert shown_score(page) == ("1.2", {"state": "0.5", "function": "0.5", "format": "0.2"})
    screenshot(page, "rewards-example.png")
