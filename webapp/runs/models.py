from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models

from trainer import contract
from webapp.core.models import OwnedQuerySet, owner_field


class Experiment(models.Model):
    """A group of runs."""

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    owner = owner_field()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="experiment_owner_name_unique")]
        indexes = [GinIndex(fields=["tags"], name="experiment_tags_gin")]

    def __str__(self) -> str:
        return self.name


# The contract's statuses as model choices (labels "Queued", "Starting", …).
RunStatus = models.TextChoices("RunStatus", [(status.name, status.value) for status in contract.RunStatus])
ACTIVE_STATUSES = tuple(RunStatus(status) for status in contract.ACTIVE_STATUSES)
FINISHED_STATUSES = tuple(RunStatus(status) for status in contract.FINISHED_STATUSES)

# Run ingest tokens start "tlr_" (API tokens "tlp_"), so a leaked one says what it is.
RUN_TOKEN_PREFIX = "tlr"


class Run(models.Model):
    """One GRPO training run; `config` is the resolved snapshot it was created with."""

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, null=True, blank=True, related_name="runs")
    owner = owner_field()
    preset = models.CharField(max_length=64, blank=True, help_text="Preset the config started from, if any.")
    config = models.JSONField(help_text="Resolved run config (trainer.config.RunConfig) at creation.")
    sources = models.JSONField(
        default=dict, blank=True, help_text="The stored datasets and reward config the snapshot was resolved from."
    )
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    ray_job_id = models.CharField(max_length=128, blank=True)
    managed = models.BooleanField(
        default=True,
        help_text="Launched and supervised by tirlab as a Ray job; False when you run the trainer yourself.",
    )
    source = models.CharField(
        max_length=16,
        choices=[("tirlab", "tirlab"), ("mlflow", "MLflow")],
        default="tirlab",
        help_text="Who reports it: tirlab's trainer (ingest), or any trainer through the MLflow API (external).",
    )
    submitted_at = models.DateTimeField(null=True, blank=True, help_text="When its Ray job was submitted.")
    resume_from = models.CharField(
        max_length=contract.MAX_CHECKPOINT, blank=True, help_text="Checkpoint this run starts from (a resumed run)."
    )
    token_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the run's ingest token.")
    error = models.TextField(blank=True)
    summary = models.JSONField(default=dict, blank=True, help_text="Last value of every metric.")
    last_step = models.IntegerField(null=True, blank=True)
    metric_keys = ArrayField(models.CharField(max_length=contract.MAX_METRIC_KEY), default=list, blank=True)
    parent = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="children")
    parent_relation = models.CharField(
        max_length=10,
        blank=True,
        choices=[("fork", "fork"), ("resume", "resume"), ("evaluation", "evaluation")],
        help_text="An evaluation run evaluates a checkpoint of its parent, or the model its parent starts from.",
    )
    checkpoint_path = models.CharField(max_length=contract.MAX_CHECKPOINT, blank=True)
    evaluated_step = models.IntegerField(
        null=True,
        blank=True,
        help_text="An evaluation run's step: the training steps its parent's checkpoint was saved after (0: the "
        "model the parent starts from). Its metrics and trajectories are recorded at this step.",
    )
    evaluated_checkpoint = models.CharField(
        max_length=contract.MAX_CHECKPOINT,
        blank=True,
        help_text="The checkpoint an evaluation run evaluates; empty for the model its parent starts from.",
    )
    phase = models.JSONField(
        null=True,
        blank=True,
        help_text="The trainer's latest phase (trainer.contract.PhaseIn: loading, sft or rl, done of total, "
        "ETA) and when it was received; null until its trainer reports one.",
    )
    archived = models.BooleanField(default=False, help_text="Hidden from the runs list unless asked for.")

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["experiment", "-created_at"], name="run_experiment_created"),
            models.Index(fields=["status", "-created_at"], name="run_status_created"),
            models.Index(fields=["owner", "-created_at"], name="run_owner_created"),
            models.Index(fields=["-created_at"], name="run_created"),
            GinIndex(fields=["tags"], name="run_tags_gin"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.name}"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def is_evaluation(self) -> bool:
        return self.parent_relation == "evaluation"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_STATUSES


class MetricStep(models.Model):
    """All metric values of one training step of a run."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metric_steps")
    step = models.IntegerField()
    time = models.DateTimeField(help_text="When the trainer recorded the step.")
    values = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "step"], name="metricstep_run_step_unique")]

    def __str__(self) -> str:
        return f"run {self.run_id} step {self.step}"


class MetricSeries(models.Model):
    """A metric key of a run that webapp.runs.metric_store rolls up; its id keys the key's rollups.

    A key without a row has not been rolled up (its steps were written around the store); readers
    then scan runs_metricstep for it."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metric_series")
    key = models.CharField(max_length=contract.MAX_METRIC_KEY)
    sealed_step = models.IntegerField(
        null=True,
        blank=True,
        help_text="Its rollups wider than 32 steps are exact below the one of their width holding this step.",
    )

    class Meta:
        verbose_name_plural = "metric series"
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="metricseries_run_key_unique")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.key}"


class MetricRollup(models.Model):
    """A series' numbers in the steps width × bucket to width × (bucket + 1) - 1: their count, min,
    max, first and last step, the value at the last step, and the point latest in (time, step)
    order, which the time axis needs. Stored partitioned by width (migration 0006), so that each
    width's rows lie together. Only webapp.runs.metric_store writes it; see there which rows are
    exact (covering_rollups_sql)."""

    pk = models.CompositePrimaryKey("series", "width", "bucket")
    # No database constraint: checking it at commit cost 1.3 ms for the 280 rows a 100-step batch of
    # 40 keys added (measured with 16-step buckets). Only the store writes these rows, for series it
    # has just upserted; Django's delete still cascades. (The table puts series_id last, after the
    # integers and floats: no alignment padding in a row.)
    series = models.ForeignKey(MetricSeries, on_delete=models.CASCADE, related_name="rollups", db_constraint=False)
    width = models.IntegerField()
    bucket = models.IntegerField()
    n = models.IntegerField()
    first_step = models.IntegerField()
    last_step = models.IntegerField()
    time_step = models.IntegerField(help_text="Step of the point latest in (time, step) order.")
    last_value = models.FloatField(help_text="Value at last_step.")
    min_value = models.FloatField()
    max_value = models.FloatField()
    time_value = models.FloatField(help_text="Value of the point latest in (time, step) order.")
    time_us = models.BigIntegerField(help_text="Its time, microseconds since the Unix epoch.")

    def __str__(self) -> str:
        return f"series {self.series_id} width {self.width} bucket {self.bucket}"


class Trajectory(models.Model):
    """One sampled rollout; a step stores whole GRPO groups (same prompt_index)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="trajectories")
    step = models.IntegerField()
    prompt_index = models.IntegerField()
    sample_index = models.IntegerField()
    prompt = models.JSONField(help_text="The prompt as text or chat messages.")
    turns = models.JSONField(default=list, help_text="Model text, tool calls and tool outputs in order.")
    final_answer = models.TextField(blank=True)
    ground_truth = models.JSONField(null=True, blank=True)
    reward = models.FloatField()
    reward_components = models.JSONField(default=dict, blank=True)
    correct = models.BooleanField()
    tool_call_count = models.IntegerField(default=0)
    has_tool_error = models.BooleanField(default=False)
    truncated = models.BooleanField(default=False)
    prompt_tokens = models.IntegerField(null=True, blank=True)
    response_tokens = models.IntegerField(null=True, blank=True)
    outcome = models.JSONField(
        null=True, blank=True, help_text="An environment's result of the trajectory: the swe patch, end and tests."
    )
    data_source = models.CharField(
        max_length=contract.MAX_DATA_SOURCE, blank=True, help_text="Its row's data source: the benchmark it is of."
    )
    search_text = models.TextField(blank=True, help_text="Prompt, turns and answer as plain text, for search.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "trajectories"
        ordering = ["step", "prompt_index", "sample_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "step", "prompt_index", "sample_index"], name="trajectory_run_step_sample_unique"
            )
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} step {self.step} prompt {self.prompt_index} sample {self.sample_index}"


class Checkpoint(models.Model):
    """A checkpoint a run's trainer saved (trainer.contract.CheckpointIn): what an evaluation run can evaluate."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="checkpoints")
    step = models.IntegerField(help_text="Training steps done when it was saved.")
    path = models.CharField(max_length=contract.MAX_CHECKPOINT, help_text="Its folder, as the trainer saw it.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["step"]
        constraints = [models.UniqueConstraint(fields=["run", "step"], name="checkpoint_run_step_unique")]

    def __str__(self) -> str:
        return f"run {self.run_id} step {self.step}"


class RunLogLine(models.Model):
    """A log line of a run: from the trainer (with its sequence number) or from tirlab itself."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="log_lines")
    seq = models.BigIntegerField(
        null=True, blank=True, help_text="Trainer's sequence number; makes retries idempotent."
    )
    time = models.DateTimeField()
    level = models.CharField(max_length=10, default="info")
    source = models.CharField(max_length=16, default="trainer")
    message = models.TextField()

    class Meta:
        ordering = ["time", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runlogline_run_seq_unique")]
        indexes = [models.Index(fields=["run", "time"], name="runlogline_run_time")]

    def __str__(self) -> str:
        return self.message[:80]
