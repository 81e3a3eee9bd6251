from django.db import migrations, transaction


def rebuild_all(apps, schema_editor):
    """Roll up the runs that have steps, one transaction each, under the run's row lock (as ingest
    takes it), so a long backfill neither holds one huge transaction nor races a trainer's report.

    Steps that a server still running the code from before this migration writes afterwards are not
    rolled up: migrate with the web tier stopped, or call rebuild_rollups on those runs after."""
    from webapp.runs.metric_store import rebuild_rollups

    Run = apps.get_model("runs", "Run")
    MetricStep = apps.get_model("runs", "MetricStep")
    for run_id in MetricStep.objects.values_list("run_id", flat=True).distinct().order_by("run_id"):
        with transaction.atomic():
            run = Run.objects.select_for_update().get(pk=run_id)
            rebuild_rollups(run)


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("runs", "0006_metric_rollups")]

    operations = [migrations.RunPython(rebuild_all, migrations.RunPython.noop)]
