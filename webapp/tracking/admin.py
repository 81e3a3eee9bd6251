from django.contrib import admin

from webapp.tracking.models import MlflowExperiment, MlflowRun


@admin.register(MlflowRun)
class MlflowRunAdmin(admin.ModelAdmin):
    list_display = ["run", "user_id", "artifact_bytes"]
    search_fields = ["user_id", "run__name"]
    raw_id_fields = ["run"]
    list_select_related = ["run"]
    # Artifact bytes are counted by the artifact store as files are written and deleted.
    readonly_fields = ["artifact_bytes"]


@admin.register(MlflowExperiment)
class MlflowExperimentAdmin(admin.ModelAdmin):
    list_display = ["experiment"]
    raw_id_fields = ["experiment"]
    list_select_related = ["experiment"]
