"""Evaluating a run's checkpoint from its page (webapp/ui/run_evaluations.py), as the server renders it: the
checkpoints the trainer reported, the form that queues an evaluation run, its refusals, and the evaluation's page."""

import json

import pytest
from django.test import Client

from webapp.core.tokens import hash_secret
from webapp.datasets.services import builtin_datasets_seed
from webapp.runs.ingest import ingest_batch
from webapp.runs.models import Run, RunStatus
from webapp.runs.transitions import run_transition
from webapp.tracking.runs import create_run

pytestmark = pytest.mark.django_db

CONFIG = {"data": {"val_dataset": "arithmetic:hard"}, "schedule": {"max_steps": 8, "checkpoint_every": 3}}


@pytest.fixture
def browser(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def trained(make_run) -> Run:
    """A run whose trainer reported two checkpoints, after steps 3 and 6."""
    run, token = make_run(name="ToRL mini", config=CONFIG)
    checkpoints = [{"step": 3, "path": "/ckpt/run/step-3"}, {"step": 6, "path": "/ckpt/run/step-6"}]
    ingest_batch(run_id=run.pk, token=token, payload={"checkpoints": checkpoints})
    return run


def evaluate(client: Client, run: Run, **fields) -> object:
    form = {"step": "6", "datasets": ["arithmetic:hard"], "sampling": "greedy", "samples": "4", "temperature": "1"}
    return client.post(f"/runs/{run.pk}/evaluate", form | fields)


def evaluations(run: Run):
    return Run.objects.filter(parent=run, parent_relation="evaluation")


RESULTS = {"val/accuracy": 0.5, "bench/arithmetic_hard/accuracy": 0.4375, "bench-mean/accuracy": 0.4375}


def report_results(evaluation: Run, *, step: int, values: dict[str, float]) -> None:
    """Launch the evaluation as the lifecycle would (a token for its trainer) and report as `trainer evaluate`
    does: the evaluating phase, its metrics at the checkpoint's step, success."""
    Run.objects.filter(pk=evaluation.pk).update(token_hash=hash_secret("eval-token"))
    run_transition(run=evaluation, status=RunStatus.STARTING)
    phase = {"name": "eval", "done": 1, "total": 1, "detail": "16 prompts, greedy"}
    metrics = [{"step": step, "time": 1_780_000_000.0, "values": values}]
    payload = {"phase": phase, "metrics": metrics, "status": {"status": "succeeded"}}
    ingest_batch(run_id=evaluation.pk, token="eval-token", payload=payload)


def page_data(html: str, element_id: str) -> dict:
    """The JSON a page hands its JavaScript (json_script)."""
    return json.loads(html.split(f'<script id="{element_id}" type="application/json">')[1].split("</script>")[0])


def test_the_run_page_lists_its_checkpoints_after_the_base_model(browser, trained):
    html = browser.get(f"/runs/{trained.pk}/").content.decode()
    section = html[html.index('id="evaluate"') :]
    assert section.index('value="base"') < section.index('value="3"') < section.index('value="6"')
    assert "/ckpt/run/step-3" in section and "/ckpt/run/step-6" in section
    # The latest checkpoint on the run's own validation dataset is the form's first proposal.
    assert 'value="6" id="eval-step-6" checked' in section
    assert 'name="datasets" value="arithmetic:hard" checked' in section


def test_the_form_queues_an_evaluation_of_the_chosen_checkpoint_and_opens_it(browser, trained):
    response = evaluate(
        browser,
        trained,
        step="3",
        datasets=["arithmetic:easy", "arithmetic:hard"],
        sampling="sampled",
        samples="4",
        temperature="0.8",
    )
    evaluation = evaluations(trained).get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{evaluation.pk}/"
    assert (evaluation.evaluated_step, evaluation.evaluated_checkpoint) == (3, "/ckpt/run/step-3")
    assert evaluation.config["data"]["val_dataset"] == "arithmetic:easy"
    assert evaluation.config["data"]["extra_val_datasets"] == ["arithmetic:hard"]
    assert (evaluation.config["schedule"]["eval_pass_k"], evaluation.config["schedule"]["eval_temperature"]) == (4, 0.8)
    assert evaluation.status == "queued" and evaluation.managed


def test_the_base_model_is_evaluated_greedily(browser, trained):
    evaluate(browser, trained, step="base", sampling="greedy")
    evaluation = evaluations(trained).get()
    assert (evaluation.evaluated_step, evaluation.evaluated_checkpoint) == (0, "")
    assert (evaluation.config["schedule"]["eval_pass_k"], evaluation.config["schedule"]["eval_temperature"]) == (
        1,
        None,
    )


def test_a_step_without_a_checkpoint_is_refused_at_the_model(browser, trained):
    response = evaluate(browser, trained, step="4")
    assert response.status_code == 400
    html = response.content.decode()
    model = html[html.index('id="evaluate-model"') : html.index('id="evaluate-datasets"')]
    assert "saved no checkpoint after step 4; its checkpoints: 3, 6" in model
    assert not evaluations(trained).exists()


def test_a_temperature_with_one_sample_is_refused_at_the_sampling(browser, trained):
    response = evaluate(browser, trained, sampling="sampled", samples="1", temperature="0.8")
    assert response.status_code == 400
    html = response.content.decode()
    sampling = html[html.index('id="evaluate-sampling"') : html.index('id="evaluate-submit"')]
    assert "one sample a prompt is greedy" in sampling
    # The form is as it was left.
    assert 'value="sampled" id="eval-sampled" checked' in sampling and 'value="0.8"' in sampling
    assert not evaluations(trained).exists()


def test_no_dataset_is_refused_at_the_datasets(browser, trained):
    response = evaluate(browser, trained, datasets=[])
    assert response.status_code == 400
    html = response.content.decode()
    datasets = html[html.index('id="evaluate-datasets"') : html.index('id="evaluate-sampling"')]
    assert "choose at least one dataset to evaluate on" in datasets
    assert 'name="datasets" value="arithmetic:hard" checked' not in datasets
    assert not evaluations(trained).exists()


def test_the_run_page_lists_its_evaluations_with_their_mean_accuracy(browser, trained):
    evaluate(browser, trained, step="6")
    evaluation = evaluations(trained).get()
    report_results(evaluation, step=6, values=RESULTS)
    html = browser.get(f"/runs/{trained.pk}/").content.decode()
    table = html[html.index('id="evaluations"') :]
    assert f'<a href="/runs/{evaluation.pk}/">#{evaluation.pk}</a>' in table
    assert "step 6" in table and "succeeded" in table and "0.438" in table


def test_the_evaluations_link_to_their_results_table_the_base_model_first(browser, trained):
    evaluate(browser, trained, step="6")
    evaluate(browser, trained, step="base")
    step_6, base = evaluations(trained).order_by("pk")
    html = browser.get(f"/runs/{trained.pk}/").content.decode()
    assert f'href="/results/?runs={base.pk},{step_6.pk}"' in html


def test_an_evaluations_page_says_what_it_evaluates_and_offers_no_evaluation_of_itself(browser, trained):
    evaluate(browser, trained, step="6", sampling="sampled", samples="4", temperature="0.8")
    evaluation = evaluations(trained).get()
    html = browser.get(f"/runs/{evaluation.pk}/").content.decode()
    facts = html[html.index('id="evaluation-of"') : html.index("</section>", html.index('id="evaluation-of"'))]
    assert f'<a href="/runs/{trained.pk}/">#{trained.pk} ToRL mini</a>' in facts
    assert "after <strong>step 6</strong>" in facts and "/ckpt/run/step-6" in facts
    assert "arithmetic:hard" in facts and "greedy, and 4 samples a prompt at temperature 0.8" in facts
    assert 'id="evaluate-form"' not in html
    # It is queued like any managed run, and can be cancelled like one.
    assert "#1 in the launch queue" in html and 'id="cancel-form"' in html


def test_an_evaluations_page_shows_its_results_at_the_step_it_evaluates(browser, trained):
    evaluate(browser, trained, step="6")
    evaluation = evaluations(trained).get()
    report_results(evaluation, step=6, values=RESULTS)
    html = browser.get(f"/runs/{evaluation.pk}/").content.decode()
    data = page_data(html, "run-page-data")
    assert data["lastStep"] == 6 and data["metricKeys"] == sorted(RESULTS)
    # Every metric has the one point: values at step 6, not charts of one point.
    assert data["singles"] == [{"key": key, "step": 6, "value": RESULTS[key]} for key in sorted(RESULTS)]
    assert '<h3 id="metric-singles-title">Results</h3>' in html
    assert "Latest values (3 metrics, step 6)" in html and "<th>bench-mean/accuracy</th><td>0.4375</td>" in html


def test_an_mlflow_logged_run_offers_no_evaluation(browser, owner):
    run = create_run(owner, experiment_id="0", user_id="researcher", start_time=None, run_name="verl", tags={})
    html = browser.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="evaluate-form"' not in html
    assert evaluate(browser, run, step="base").status_code == 400
    assert not evaluations(run).exists()


def test_a_strangers_run_cannot_be_evaluated(trained, stranger):
    client = Client()
    client.force_login(stranger)
    assert evaluate(client, trained).status_code == 404
    assert not evaluations(trained).exists()


def test_the_runs_list_marks_an_evaluation_with_what_it_evaluates(browser, trained):
    evaluate(browser, trained, step="6")
    evaluation = evaluations(trained).get()
    html = browser.get("/runs/").content.decode()
    row = html[html.index(f'data-run-id="{evaluation.pk}"') :]
    row = row[: row.index("</tr>")]
    # Its name says which step; under it, whose evaluation it is.
    assert "ToRL mini · step 6" in row and f'evaluation of <a href="/runs/{trained.pk}/">#{trained.pk}</a>' in row


def test_a_stored_dataset_the_run_evaluated_on_is_offered_by_name_and_recorded(browser, make_run):
    builtin_datasets_seed()
    run, _ = make_run(name="gsm8k run", config={"data": {"val_dataset": "gsm8k"}})
    assert run.config["data"]["val_dataset"] != "gsm8k"  # the snapshot holds its file
    html = browser.get(f"/runs/{run.pk}/").content.decode()
    assert 'name="datasets" value="gsm8k" checked> gsm8k ·' in html
    evaluate(browser, run, step="base", datasets=["gsm8k"])
    evaluation = evaluations(run).get()
    assert evaluation.sources["data.val_dataset"]["name"] == "gsm8k"
    facts = browser.get(f"/runs/{evaluation.pk}/").content.decode()
    assert '<dd id="evaluation-datasets">gsm8k</dd>' in facts
