from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("runs", "0007_rebuild_metric_rollups")]

    operations = [
        migrations.AddField(
            model_name="run",
            name="source",
            field=models.CharField(
                choices=[("tirlab", "tirlab"), ("mlflow", "MLflow")],
                default="tirlab",
                help_text="Who reports it: tirlab's trainer (ingest), or any trainer through the MLflow API (external).",
                max_length=16,
            ),
        ),
    ]
