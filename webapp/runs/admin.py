from django.contrib import admin

from webapp.runs.models import Checkpoint, Experiment, MetricSeries, MetricStep, Run, RunLogLine, Trajectory


@admin.register(Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "created_at"]
    search_fields = ["name", "description"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "experiment", "owner", "status", "last_step", "created_at"]
    list_filter = ["status", "preset"]
    search_fields = ["name", "description", "ray_job_id"]
    raw_id_fields = ["experiment", "parent"]
    # Status changes go through the state machine (webapp.runs.transitions), not through a form.
    readonly_fields = ["status", "token_hash", "summary", "metric_keys", "last_step", "heartbeat_at"]


@admin.register(MetricStep)
class MetricStepAdmin(admin.ModelAdmin):
    list_display = ["run", "step", "time"]
    raw_id_fields = ["run"]
    list_select_related = ["run"]


@admin.register(MetricSeries)
class MetricSeriesAdmin(admin.ModelAdmin):
    """The keys the chart rollups cover; the rollups themselves are derived and rebuilt by
    `webapp.runs.metric_store.rebuild_rollups`, never edited."""

    list_display = ["run", "key", "sealed_step"]
    search_fields = ["key"]
    raw_id_fields = ["run"]
    list_select_related = ["run"]
    readonly_fields = ["sealed_step"]


@admin.register(Trajectory)
class TrajectoryAdmin(admin.ModelAdmin):
    list_display = ["run", "step", "prompt_index", "sample_index", "reward", "correct", "tool_call_count"]
    list_filter = ["correct", "has_tool_error", "truncated"]
    raw_id_fields = ["run"]
    list_select_related = ["run"]


@admin.register(Checkpoint)
class CheckpointAdmin(admin.ModelAdmin):
    """What the trainer reported saving; an evaluation run reads its path."""

    list_display = ["run", "step", "path", "created_at"]
    raw_id_fields = ["run"]
    list_select_related = ["run"]


@admin.register(RunLogLine)
class RunLogLineAdmin(admin.ModelAdmin):
    list_display = ["run", "time", "level", "source", "message"]
    list_filter = ["level", "source"]
    raw_id_fields = ["run"]
    list_select_related = ["run"]
