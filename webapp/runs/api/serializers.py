from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from trainer.contract import INT_MAX, MAX_PHASE_DETAIL, PHASES
from webapp.core.filters import BooleanParam
from webapp.rewards.models import RewardConfig
from webapp.runs.evaluations import MAX_SAMPLES
from webapp.runs.models import Checkpoint, Experiment, Run, RunLogLine, RunStatus, Trajectory
from webapp.runs.selectors import DEFAULT_RUN_SORT, RUN_SORTS, RunFilters, queue_positions

# The serializers give the API its shapes; what a name or a tag may be is webapp.runs.services',
# so blank and long values reach the service and are refused there, as the pages refuse them.


class ExperimentSerializer(serializers.ModelSerializer):
    name = serializers.CharField(allow_blank=True)
    owner = serializers.CharField(source="owner.username", read_only=True)
    tags = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)

    class Meta:
        model = Experiment
        fields = ["id", "name", "description", "tags", "owner", "created_at", "updated_at"]
        read_only_fields = ["id", "owner", "created_at", "updated_at"]


class RunPhaseSerializer(serializers.Serializer):
    """The trainer's latest phase as stored from its ingest (trainer.contract.PhaseIn), and when it came."""

    name = serializers.ChoiceField(
        choices=PHASES, help_text="loading (the model, data, engine), sft, rl, or eval (an evaluation run)."
    )
    done = serializers.IntegerField(min_value=0, max_value=INT_MAX, help_text="Units of the phase done so far.")
    total = serializers.IntegerField(min_value=1, max_value=INT_MAX, help_text="Units the phase has in all.")
    eta_s = serializers.FloatField(
        min_value=0, allow_null=True, help_text="Seconds the phase still needed when reported, if known."
    )
    detail = serializers.CharField(max_length=MAX_PHASE_DETAIL, allow_blank=True)
    at = serializers.DateTimeField(help_text="When the dashboard received it.")


class RunSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    phase = RunPhaseSerializer(
        read_only=True,
        allow_null=True,
        help_text="What the trainer reported doing last, with its progress; null until it reports a phase.",
    )
    queue_position = serializers.SerializerMethodField(
        help_text="1-based place in the launch queue while the run is queued, else null."
    )

    # Read-only model fields lose `blank`; without it the schema would refuse the "" of a run with no parent.
    parent_relation = serializers.ChoiceField(
        choices=Run._meta.get_field("parent_relation").choices, allow_blank=True, read_only=True
    )

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_queue_position(self, run: Run) -> int | None:
        if run.status != RunStatus.QUEUED or not run.managed:
            return None
        # One query per response, shared by every run in it.
        if "queue_positions" not in self.context:
            self.context["queue_positions"] = queue_positions()
        return self.context["queue_positions"].get(run.pk)

    class Meta:
        model = Run
        fields = [
            "id",
            "name",
            "description",
            "tags",
            "experiment",
            "owner",
            "preset",
            "status",
            "config",
            "sources",
            "created_at",
            "started_at",
            "finished_at",
            "heartbeat_at",
            "managed",
            "queue_position",
            "submitted_at",
            "ray_job_id",
            "error",
            "summary",
            "last_step",
            "metric_keys",
            "parent",
            "parent_relation",
            "checkpoint_path",
            "resume_from",
            "evaluated_step",
            "evaluated_checkpoint",
            "archived",
            "phase",
        ]
        read_only_fields = fields


class RunListQuerySerializer(serializers.Serializer):
    """The query parameters of GET /api/v1/runs/, read into the selector's RunFilters (their rules
    are webapp.runs.selectors.run_list's, the same as the runs page's)."""

    status = serializers.ListField(
        # An empty ?status= is no status given, as every other empty parameter.
        child=serializers.ChoiceField(choices=RunStatus.choices, allow_blank=True),
        required=False,
        help_text="Runs in any of these statuses (repeat the parameter for several).",
    )
    experiment = serializers.IntegerField(required=False, help_text="Runs of this experiment id.")
    preset = serializers.CharField(required=False, help_text="Runs created from this preset.")
    parent = serializers.IntegerField(required=False, help_text="Forks and resumes of this run id.")
    tags = serializers.CharField(required=False, help_text="Comma-separated; runs carrying every one of them.")
    archived = BooleanParam(
        required=False,
        default=False,
        help_text="Archived runs are hidden unless true, which lists them along with the others.",
    )
    created_after = serializers.DateTimeField(required=False, help_text="Created at or after this time.")
    created_before = serializers.DateTimeField(required=False, help_text="Created before this time.")
    search = serializers.CharField(
        required=False,
        help_text="A case-insensitive part of the name, description or experiment name, the exact preset "
        "or tag, or a run id.",
    )
    ordering = serializers.ChoiceField(
        choices=[order for key in RUN_SORTS for order in (key, f"-{key}")],
        required=False,
        default=DEFAULT_RUN_SORT,
        help_text="Sort key, '-' first for descending.",
    )

    def filters(self) -> RunFilters:
        data = self.validated_data
        return RunFilters(
            q=data.get("search", "").strip(),
            statuses=tuple(status for status in data.get("status", ()) if status),
            experiment=data.get("experiment"),
            preset=data.get("preset", ""),
            parent=data.get("parent"),
            tags=tuple(tag.strip() for tag in data.get("tags", "").split(",") if tag.strip()),
            archived=bool(data["archived"]),
            created_after=data.get("created_after"),
            created_before=data.get("created_before"),
            sort=data["ordering"],
        )


class RunUpdateSerializer(serializers.ModelSerializer):
    name = serializers.CharField(allow_blank=True, required=False)
    tags = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)

    class Meta:
        model = Run
        fields = ["name", "description", "tags", "archived"]


class _IdField(serializers.PrimaryKeyRelatedField):
    def run_validation(self, data: object = empty) -> object:
        # DRF reads "" as null, for HTML forms; in the JSON this API takes, "" is no id.
        if data == "":
            self.fail("incorrect_type", data_type="str")
        return super().run_validation(data)


@extend_schema_field(OpenApiTypes.INT)
class _VisibleExperimentField(_IdField):
    def get_queryset(self):
        return Experiment.objects.visible_to(self.context["request"].user)


@extend_schema_field(OpenApiTypes.INT)
class _VisibleRewardConfigField(_IdField):
    def get_queryset(self):
        return RewardConfig.objects.visible_to(self.context["request"].user)


class RunCreateSerializer(serializers.Serializer):
    name = serializers.CharField(allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    tags = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False, default=list)
    experiment = _VisibleExperimentField(required=False, allow_null=True, default=None)
    preset = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="A trainer.presets preset: the run starts from its config, `config` deep-merged over it.",
    )
    config = serializers.JSONField(
        required=False,
        default=dict,
        help_text="A trainer.config.RunConfig, or with `preset` the fields to change; omitted fields take the "
        "preset's values, or the defaults without one.",
    )
    reward_config = _VisibleRewardConfigField(
        required=False, allow_null=True, default=None, help_text="A stored reward config that replaces config.reward."
    )
    launch = serializers.BooleanField(
        required=False,
        default=True,
        help_text="Launch it as a Ray job (the default). false: you run the trainer yourself with the ingest "
        "token of the response.",
    )

    def validate_config(self, config):
        if not isinstance(config, dict):
            raise serializers.ValidationError("must be a JSON object")
        return config


class RunCreatedSerializer(RunSerializer):
    ingest_token = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text="The ingest token of a run created with launch=false; shown only here.",
    )

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "ingest_token"]
        read_only_fields = fields


class RunResumeSerializer(serializers.Serializer):
    max_steps = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=1,
        help_text="Train up to this step (default: the config's).",
    )


class RunForkSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, max_length=200)
    overrides = serializers.JSONField(required=False, default=dict, help_text="Deep-merged over the parent's config.")

    def validate_overrides(self, overrides):
        if not isinstance(overrides, dict):
            raise serializers.ValidationError("must be a JSON object")
        return overrides


class RunEvaluateSerializer(serializers.Serializer):
    step = serializers.IntegerField(
        allow_null=True,
        min_value=0,
        max_value=INT_MAX,
        help_text="The checkpoint the run saved after this many training steps; null evaluates the model the run "
        "starts from (the table's first row).",
    )
    datasets = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        allow_null=True,
        default=None,
        help_text="Dataset references to evaluate on (built-in names, dataset:<id>); default: the run's own "
        "validation datasets. Rows are reported per data source (bench/<source>/…).",
    )
    samples = serializers.IntegerField(
        required=False,
        default=1,
        help_text=f"Samples a prompt: 1 is greedy; more adds avg@k and pass@k (at most {MAX_SAMPLES}).",
    )
    temperature = serializers.FloatField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Temperature of the samples (samples > 1); null: the run's rollout temperature.",
    )


class CheckpointSerializer(serializers.ModelSerializer):
    class Meta:
        model = Checkpoint
        fields = ["step", "path", "created_at"]


class TrajectorySerializer(serializers.ModelSerializer):
    # Any JSON value, null included. Declared: the nullable model fields' schema would be oneOf {} and null, which
    # refuses null (both branches accept it).
    ground_truth = serializers.JSONField(
        read_only=True, help_text="What a right answer must match, as the row gave it."
    )
    outcome = serializers.JSONField(
        read_only=True, help_text="An environment's result of the trajectory (swe, search), or null."
    )

    class Meta:
        model = Trajectory
        exclude = ["run", "search_text"]


class RunLogLineSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunLogLine
        fields = ["id", "seq", "time", "level", "source", "message"]


class MetricSeriesSerializer(serializers.Serializer):
    x = serializers.ListField(child=serializers.FloatField())
    step = serializers.ListField(child=serializers.IntegerField())
    min = serializers.ListField(child=serializers.FloatField())
    max = serializers.ListField(child=serializers.FloatField())
    last = serializers.ListField(child=serializers.FloatField())
    count = serializers.ListField(child=serializers.IntegerField())


class MetricsResponseSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    x = serializers.ChoiceField(choices=["step", "time"])
    max_points = serializers.IntegerField()
    series = serializers.DictField(child=MetricSeriesSerializer())


class IngestCountsSerializer(serializers.Serializer):
    metrics = serializers.IntegerField(help_text="Metric steps written (merged into existing steps).")
    trajectories = serializers.IntegerField()
    logs = serializers.IntegerField(help_text="New log lines (retried ones are not counted).")
    checkpoints = serializers.IntegerField(help_text="Checkpoints recorded.")


class IngestWrittenSerializer(serializers.Serializer):
    written = IngestCountsSerializer()
    stop = serializers.BooleanField(help_text="The run was cancelled: the trainer should stop.")
