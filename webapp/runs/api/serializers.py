from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.rewards.models import RewardConfig
from webapp.runs.models import Experiment, Run, RunLogLine, Trajectory
from webapp.runs.selectors import queue_positions


class ExperimentSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    tags = serializers.ListField(child=serializers.CharField(max_length=64), required=False)

    class Meta:
        model = Experiment
        fields = ["id", "name", "description", "tags", "owner", "created_at", "updated_at"]
        read_only_fields = ["id", "owner", "created_at", "updated_at"]

    def validate_name(self, name: str) -> str:
        user = self.context["request"].user
        clash = Experiment.objects.filter(owner=user, name=name)
        if self.instance is not None:
            clash = clash.exclude(pk=self.instance.pk)
        if clash.exists():
            raise serializers.ValidationError("you already have an experiment with this name")
        return name


class RunSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    queue_position = serializers.SerializerMethodField(
        help_text="1-based place in the launch queue while the run is queued, else null."
    )

    @extend_schema_field(OpenApiTypes.INT)
    def get_queue_position(self, run: Run) -> int | None:
        if run.status != "queued" or not run.managed:
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
            "archived",
        ]
        read_only_fields = fields


class RunUpdateSerializer(serializers.ModelSerializer):
    tags = serializers.ListField(child=serializers.CharField(max_length=64), required=False)

    class Meta:
        model = Run
        fields = ["name", "description", "tags", "archived"]


@extend_schema_field(OpenApiTypes.INT)
class _VisibleExperimentField(serializers.PrimaryKeyRelatedField):
    def get_queryset(self):
        return Experiment.objects.visible_to(self.context["request"].user)


@extend_schema_field(OpenApiTypes.INT)
class _VisibleRewardConfigField(serializers.PrimaryKeyRelatedField):
    def get_queryset(self):
        return RewardConfig.objects.visible_to(self.context["request"].user)


class RunCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    tags = serializers.ListField(child=serializers.CharField(max_length=64), required=False, default=list)
    experiment = _VisibleExperimentField(required=False, allow_null=True, default=None)
    preset = serializers.CharField(required=False, allow_blank=True, default="", max_length=64)
    config = serializers.JSONField(
        required=False, default=dict, help_text="A trainer.config.RunConfig; omitted fields take their defaults."
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


class TrajectorySerializer(serializers.ModelSerializer):
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
