"""Reward configs in a real browser: try a reward on a pasted completion, save a config from a preset."""

import pytest

from tests.browser._helpers import in_thread, log_in, screenshot
from webapp.rewards.models import RewardConfig
from webapp.rewards.services import builtin_reward_configs_seed

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
    page.click("button[value=try]")
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
    page.click("button[value=try]")
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
