"""What an MLflow client records of a run or an experiment beyond tirlab's own fields.

A run created through the MLflow API is a tirlab `Run` with `source="mlflow"`, `managed=False`, its
params as its `config` (flat keys as the client sent them) and the row below; an experiment is a
tirlab `Experiment`, with its MLflow tags below when it has some. A verl run tirlab launched logs into its
own run the same way (its run token, webapp.tracking.auth); verl's params are kept in the row below.
"""

from django.db import models

from webapp.runs.models import Experiment, Run


class MlflowRun(models.Model):
    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="mlflow")
    user_id = models.CharField(max_length=256, blank=True, help_text="The user_id the client gave (its OS user).")
    tags = models.JSONField(default=dict, blank=True, help_text="MLflow run tags, key -> value.")
    artifact_bytes = models.BigIntegerField(default=0, help_text="Bytes of artifacts stored for the run.")
    params = models.JSONField(
        default=dict,
        blank=True,
        help_text="Params logged into a run tirlab launched (a verl run's verl config); its config stays tirlab's.",
    )

    def __str__(self) -> str:
        return f"MLflow run {self.run_id}"


class MlflowExperiment(models.Model):
    experiment = models.OneToOneField(Experiment, on_delete=models.CASCADE, primary_key=True, related_name="mlflow")
    tags = models.JSONField(default=dict, blank=True, help_text="MLflow experiment tags, key -> value.")

    def __str__(self) -> str:
        return f"MLflow experiment {self.experiment_id}"
