"""The rollouts page read as a researcher reads a GRPO group, in a real browser, on the trajectories
the minis really report: a row per sample, the whole group on a laptop screen; a row opens into its
turns, each tool call and its output a turn of its own; the best and the worst sample side by side.

tests/browser/data/rollouts/<preset>.jsonl are the trajectories of `python -m trainer run --preset
<preset> --max-steps 3 --out DIR` (DIR/trajectories.jsonl, as the trainer sends them to the dashboard).
"""

import json
from pathlib import Path

import pytest

from tests.browser._helpers import in_thread, log_in, screenshot, toggle_theme
from webapp.runs.ingest import ingest_batch
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)

DATA = Path(__file__).parent / "data" / "rollouts"
PROTOCOLS = {"quickstart": "python_markdown", "toolrl-mini": "tool_call_json", "artist-fc-mini": "artist_fc"}


def reported_run(user, preset: str) -> int:
    """A run holding what the preset's run reported, under the preset's protocol."""
    run, token = run_create(user=user, name=preset, config={"tools": {"protocol": PROTOCOLS[preset]}}, managed=False)
    rows = [json.loads(line) for line in (DATA / f"{preset}.jsonl").read_text().splitlines()]
    ingest_batch(run_id=run.pk, token=token, payload={"trajectories": rows})
    return run.pk


@pytest.fixture
def open_rollouts(page, live_server, researcher):
    """Log in and open the rollouts page of a preset's reported run at `query`."""

    def go(preset: str, query: str = "?step=2"):
        run_id = in_thread(reported_run, user=researcher, preset=preset)
        if "/accounts/" in page.url or page.url == "about:blank":
            log_in(page, live_server, f"/runs/{run_id}/rollouts/{query}", wait_for="#rollouts")
        else:
            page.goto(f"{live_server.url}/runs/{run_id}/rollouts/{query}")
        return run_id

    return go


def rows(page, prompt: int = 0):
    return page.locator(f"#g-{prompt} .trajectory")


def open_row(page, row_id: str):
    page.click(f"#{row_id} > summary")
    page.wait_for_selector(f"#{row_id}[open] .trajectory-body", state="visible")
    return page.locator(f"#{row_id}")


def shoot_both_themes(page, name: str) -> None:
    screenshot(page, f"{name}.png")
    toggle_theme(page)
    screenshot(page, f"{name}_dark.png")
    toggle_theme(page)


@pytest.mark.parametrize("preset", ["quickstart", "toolrl-mini", "artist-fc-mini"])
@pytest.mark.parametrize("viewport", [(1280, 800), (1920, 1080)])
def test_a_whole_group_of_eight_fits_a_laptop_screen(page, open_rollouts, preset, viewport):
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    open_rollouts(preset)
    group = rows(page)
    assert group.count() == 8
    boxes = [group.nth(i).bounding_box() for i in range(8)]
    # One row each, one under the other, all eight on the screen at once, none wider than it.
    assert all(box["height"] <= 40 for box in boxes), [box["height"] for box in boxes]
    assert [box["y"] for box in boxes] == sorted(box["y"] for box in boxes)
    assert boxes[-1]["y"] + boxes[-1]["height"] <= viewport[1]
    assert page.evaluate("document.scrollingElement.scrollWidth <= document.scrollingElement.clientWidth")
    if viewport == (1280, 800):
        shoot_both_themes(page, f"rollouts-{preset}")
    else:
        screenshot(page, f"rollouts-{preset}-{viewport[0]}.png")


def test_a_code_output_is_one_box_with_its_fences_outside(page, open_rollouts):
    """The quickstart's call stops at ```output and the output ends with ```: the box holds what the
    code printed, and the fence that opens it is shown with it, not at the end of the model's turn."""
    open_rollouts("quickstart")
    row = next(r for r in rows(page).all() if r.locator(".calls-made").inner_text() == "1")
    row_id = row.get_attribute("id")
    open_row(page, row_id)
    tool = page.locator(f"#{row_id} .turn.tool")
    output = tool.locator("pre.output").inner_text()
    assert "```" not in output and output.strip().lstrip("-").isdigit(), output
    assert tool.locator(".opening").inner_text() == "```output"
    model = page.locator(f"#{row_id} .turn.model").first.inner_text()
    assert "```output" not in model and "print(" in model


def test_function_calls_count_and_read_as_calls(page, open_rollouts):
    """A ToolRL reply's calls are counted (not "tool calls 0"), its answer is the calls it made, the
    expected calls read as calls, and a tool's name never breaks inside the calls table."""
    open_rollouts("toolrl-mini")
    first = rows(page).nth(0)
    made, expected = first.locator(".calls-made").inner_text().split()[0:3:2]
    assert int(made) >= 1 and int(expected) >= 1
    answer = first.locator(".answer-cell").inner_text()
    assert answer != "—" and "(" in answer and not answer.startswith("[")
    expected_line = page.inner_text("#g-0 .expected")
    assert "(" in expected_line and not expected_line.startswith(("[", "{"))
    row = open_row(page, first.get_attribute("id"))
    for name in row.locator(".call-diff .call-name code").all():
        assert name.evaluate("n => n.getClientRects().length") == 1
        assert name.bounding_box()["height"] < 22, name.inner_text()
    # The model's turn is shown, not folded away: its <tool_call> block is there to read.
    assert row.locator(".turn.model pre.call").first.is_visible()


def test_artists_calls_and_results_are_turns_of_their_own(page, open_rollouts):
    """ARTIST's <tool> block is the model's turn and its <tool_result> the tool's: both shown, the
    result without the call repeated above it and without its tags."""
    open_rollouts("artist-fc-mini")
    row = open_row(page, rows(page).nth(0).get_attribute("id"))
    tool = row.locator(".turn.tool").first
    assert tool.is_visible()
    assert tool.locator("pre.code").count() == 0
    output = tool.locator("pre.output").inner_text()
    assert output.startswith('{"name"') and "tool_result" not in output
    assert "ok" in tool.locator(".turn-head").inner_text()
    assert row.locator(".turn.model pre.call").first.inner_text().lstrip().startswith('{"name"')
    assert row.locator(".answer pre.state").is_visible()
    shoot_both_themes(page, "rollouts-artist-fc-mini-open")


def test_the_best_and_the_worst_sample_side_by_side(page, open_rollouts):
    open_rollouts("quickstart")
    group = next(g for g in page.locator(".group").all() if g.locator(".best-vs-worst").count())
    best = group.locator(".rank.is-best").locator("xpath=ancestor::details").get_attribute("data-sample")
    worst = group.locator(".rank.is-worst").locator("xpath=ancestor::details").get_attribute("data-sample")
    group.locator(".best-vs-worst").click()
    page.wait_for_url(f"**pair={best}%2C{worst}**")
    sides = page.locator(".pair .side")
    assert sides.count() == 2
    assert [sides.nth(i).get_attribute("data-sample") for i in range(2)] == [best, worst]
    left, right = sides.nth(0).bounding_box(), sides.nth(1).bounding_box()
    assert left["y"] == right["y"] and left["x"] + left["width"] <= right["x"]
    assert "correct" in sides.nth(0).inner_text() and "incorrect" in sides.nth(1).inner_text()
    screenshot(page, "rollouts-side-by-side.png")
    page.click(".pair-head a")
    assert page.locator(".pair").count() == 0
