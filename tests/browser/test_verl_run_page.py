"""A verl run's page in a real browser: verl's command with its overrides, the launch script to download,
the flag when verl has logged nothing, readable in both themes; and the new-run form's cluster section."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.browser._helpers import assert_readable_in_both_themes, log_in, screenshot, toggle_theme
from tests.webapp.test_verl_runs import torl_on_verl
from webapp.runs.models import Run, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_verl_runs_page_shows_its_command_script_and_silence(page, live_server, researcher, settings, tmp_path):
    settings.VERL_SILENT_AFTER_S = 600
    run = Run.objects.create(
        name="torl on verl",
        owner=researcher,
        config=torl_on_verl(),
        managed=True,
        status=RunStatus.RUNNING,
        started_at=timezone.now() - timedelta(minutes=40),
        preset="torl",
    )
    log_in(page, live_server, f"/runs/{run.pk}/")
    assert_readable_in_both_themes(page, "#verl-silent", "#verl-title", "#verl-script")
    page.click("#verl-command-box summary")
    command = page.inner_text("#verl-command")
    assert "verl.trainer.main_ppo" in command and "actor_rollout_ref.rollout.n=16" in command
    screenshot(page, "run_page_verl.png")
    toggle_theme(page)
    screenshot(page, "run_page_verl_dark.png")
    with page.expect_download() as download:
        page.click("#verl-script")
    saved = tmp_path / "launch.sh"
    download.value.save_as(saved)
    assert download.value.suggested_filename == f"tirlab-run-{run.pk}-verl.sh"
    assert "python -m verl.trainer.main_ppo" in saved.read_text()


def test_the_new_run_form_offers_verl_and_the_clusters_shape(page, live_server, researcher):
    log_in(page, live_server, "/runs/new/?preset=torl")
    gpu_warning = page.locator("#preset-gpu-warning")
    if gpu_warning.count():  # this machine has no vLLM and GPU: the paper preset warns ...
        assert gpu_warning.is_visible()
    page.select_option("[name='config.engine']", "verl")
    # ... until engine 'verl' trains it on the cluster's GPUs, which are checked at launch.
    assert not gpu_warning.is_visible()
    page.fill("[name='config.cluster.nnodes']", "2")
    page.fill("[name='config.cluster.gpus_per_node']", "8")
    assert_readable_in_both_themes(
        page, ".field[data-path='cluster.nnodes'] label", ".field[data-path='cluster.gpus_per_node'] label"
    )
    page.locator(".field[data-path='cluster.nnodes']").scroll_into_view_if_needed()
    screenshot(page, "new_run_verl.png")
