"""The run page's evaluations: the "Evaluate" form of a run (a checkpoint it saved, or the model it starts from,
on chosen datasets, greedily or with k samples a prompt), the evaluations made of it, and on an evaluation run's
own page what it evaluates. The form posts to run_views.run_evaluate_view, which asks the service
(webapp.runs.evaluations.run_evaluate) and shows its refusals here, at their fields."""

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.http import QueryDict

from trainer.contract import ACCURACY
from trainer.metrics.benchmarks import mean_key
from webapp.runs.evaluations import run_evaluation_fields, run_evaluation_refs
from webapp.runs.models import Run
from webapp.runs.verl_runs import is_verl_run
from webapp.ui.external_runs import is_external
from webapp.ui.new_run_views import dataset_choices

# The benchmarks' mean accuracy, a paper's "Avg." column.
BENCH_MEAN_ACCURACY = mean_key(ACCURACY)
# The step field's value for the model the run starts from (a checkpoint's is its step).
BASE_MODEL = "base"
DEFAULT_SAMPLES = 4


def can_evaluate(run: Run) -> bool:
    """Whether the page offers the form: the service refuses MLflow-logged runs, verl's and evaluations."""
    return not (is_external(run) or is_verl_run(run) or run.is_evaluation)


def sampling_text(config: dict[str, Any]) -> str:
    """How an evaluation samples, from its config: greedy, and with eval_pass_k > 1 k samples a prompt too."""
    schedule = config.get("schedule", {})
    samples = schedule.get("eval_pass_k", 1)
    if samples == 1:
        return "greedy"
    temperature = schedule.get("eval_temperature") or config.get("rollout", {}).get("temperature")
    return f"greedy, and {samples} samples a prompt at temperature {temperature:g}"


def dataset_labels(run: Run) -> list[str]:
    """The datasets a run evaluates on, a stored one by its name."""
    return [run.sources.get(path, {}).get("name", value) for path, value in run_evaluation_fields(run)]


def _own_datasets(run: Run, user: AbstractBaseUser, choices: dict[str, str]) -> list[dict[str, str]]:
    """The run's own validation datasets as the form's choices: a stored one by its reference (so the evaluation
    records where it came from), or its file where the dataset is no longer there to choose."""
    return [
        {"value": ref, "label": choices.get(ref) or run.sources.get(field, {}).get("name", ref)}
        for field, ref in run_evaluation_refs(run, user)
    ]


@dataclass
class EvaluateForm:
    """The Evaluate form as the user left it, as posted (strings), and what was refused in it, by field."""

    step: str
    datasets: list[str]
    sampled: bool
    samples: str
    temperature: str
    errors: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def initial(cls, run: Run, own: list[dict[str, str]]) -> "EvaluateForm":
        """The latest checkpoint (or the base model) on the run's own datasets, sampled as its own evaluations were."""
        latest = run.checkpoints.order_by("-step").first()
        schedule, rollout = run.config.get("schedule", {}), run.config.get("rollout", {})
        samples = schedule.get("eval_pass_k", 1)
        return cls(
            step=BASE_MODEL if latest is None else str(latest.step),
            datasets=[choice["value"] for choice in own],
            sampled=samples > 1,
            samples=str(samples if samples > 1 else DEFAULT_SAMPLES),
            temperature=f"{schedule.get('eval_temperature') or rollout.get('temperature', 1.0):g}",
        )

    @classmethod
    def from_post(cls, post: QueryDict) -> "EvaluateForm":
        return cls(
            step=post.get("step", ""),
            datasets=[ref for ref in post.getlist("datasets") if ref.strip()],
            sampled=post.get("sampling") == "sampled",
            samples=post.get("samples", "").strip(),
            temperature=post.get("temperature", "").strip(),
        )

    def arguments(self) -> dict[str, Any] | None:
        """run_evaluate's arguments; None, with the errors noted, where a field is not even a number."""
        arguments: dict[str, Any] = {"datasets": self.datasets, "samples": 1, "temperature": None}
        if self.step == BASE_MODEL:
            arguments["step"] = None
        elif self.step.isdigit():
            arguments["step"] = int(self.step)
        else:
            self.errors["step"] = ["choose a checkpoint or the base model"]
        if self.sampled:
            try:
                arguments["samples"] = int(self.samples)
            except ValueError:
                self.errors["samples"] = ["a whole number of samples a prompt"]
            try:
                arguments["temperature"] = float(self.temperature) if self.temperature else None
            except ValueError:
                self.errors["temperature"] = ["a number, e.g. 0.8"]
        return None if self.errors else arguments

    def placed_errors(self) -> dict[str, list[str]]:
        """The errors by where the form shows them: at the model, the datasets, the sampling, or above it all
        (the config's own fields under their names)."""
        placed: dict[str, list[str]] = {"step": [], "datasets": [], "sampling": [], "form": []}
        for key, messages in self.errors.items():
            if key in ("samples", "temperature"):
                placed["sampling"] += messages
            elif key == "datasets" or key.startswith("config.data."):
                placed["datasets"] += messages
            elif key == "step":
                placed["step"] += messages
            elif key == "non_field_errors":
                placed["form"] += messages
            else:
                placed["form"] += [f"{key}: {message}" for message in messages]
        return placed


def _evaluation_rows(run: Run, user: AbstractBaseUser) -> list[dict[str, Any]]:
    evaluations = Run.objects.visible_to(user).filter(parent=run, parent_relation="evaluation")
    return [
        {
            "run": evaluation,
            "what": evaluated(evaluation),
            "datasets": ", ".join(dataset_labels(evaluation)),
            "sampling": sampling_text(evaluation.config),
            "accuracy": evaluation.summary.get(BENCH_MEAN_ACCURACY) if evaluation.is_finished else None,
        }
        for evaluation in evaluations.order_by("-created_at", "-pk")
    ]


def evaluated(evaluation: Run) -> str:
    """What an evaluation run evaluates: a checkpoint by its step, or the base model."""
    return f"step {evaluation.evaluated_step}" if evaluation.evaluated_checkpoint else "base model"


def evaluate_section(run: Run, user: AbstractBaseUser, form: EvaluateForm | None = None) -> dict[str, Any] | None:
    """The run page's Evaluate section: the form (as left, with its errors) and the run's evaluations; None where
    the run cannot be evaluated from tirlab."""
    if not can_evaluate(run):
        return None
    problems = dataset_choices(user)[0]
    choices = {choice["value"]: choice["label"] for choice in problems}
    own = _own_datasets(run, user, choices)
    form = form or EvaluateForm.initial(run, own)
    own_values = {choice["value"] for choice in own}
    others = [choice for choice in problems if choice["value"] not in own_values]
    rows = _evaluation_rows(run, user)
    return {
        "form": form,
        "errors": form.placed_errors(),
        # What to evaluate, the form's first choice: the model the run starts from, then each checkpoint.
        "models": [
            {"value": BASE_MODEL, "label": "base model", "path": "", "saved": None},
            *(
                {"value": str(c.step), "label": f"step {c.step}", "path": c.path, "saved": c.created_at}
                for c in run.checkpoints.all()
            ),
        ],
        "model": run.config.get("model", {}).get("name_or_path", ""),
        "own": own,
        "others": others,
        # Open where the run has no datasets of its own to evaluate on, or one of the others is chosen.
        "others_open": not own or any(choice["value"] in form.datasets for choice in others),
        "evaluations": rows,
        # The paper's table of them: the base model first, then the checkpoints by step (webapp.runs.results).
        "results_runs": ",".join(
            str(row["run"].pk) for row in sorted(rows, key=lambda row: (row["run"].evaluated_step or 0, row["run"].pk))
        ),
    }


def evaluation_facts(run: Run) -> dict[str, Any] | None:
    """On an evaluation run's page: what it evaluates (its parent may have been deleted since)."""
    if not run.is_evaluation:
        return None
    return {
        "parent": run.parent,
        "what": evaluated(run),
        "checkpoint": run.evaluated_checkpoint,
        "model": run.config.get("model", {}).get("name_or_path", ""),
        "datasets": dataset_labels(run),
        "sampling": sampling_text(run.config),
    }
