import django.contrib.postgres.fields
import django.db.models.deletion
from django.db import migrations, models

# MetricRollup is partitioned by width (one table per width), which Django's schema editor cannot
# create: with one heap, the rows of the wide buckets would be scattered among the 32-step ones, and
# reading a series' rows of one width (1,954 of width 512 for 2,000 points of a 1,000,000-step
# series) would touch most pages of the table.
# webapp.runs.metric_store.WIDTHS names the widths. No foreign key constraint (see the model).
ROLLUP_SQL = """
CREATE TABLE runs_metricrollup (
    width integer NOT NULL,
    bucket integer NOT NULL,
    n integer NOT NULL,
    first_step integer NOT NULL,
    last_step integer NOT NULL,
    time_step integer NOT NULL,
    last_value double precision NOT NULL,
    min_value double precision NOT NULL,
    max_value double precision NOT NULL,
    time_value double precision NOT NULL,
    time_us bigint NOT NULL,
    series_id bigint NOT NULL,
    PRIMARY KEY (series_id, width, bucket)
) PARTITION BY LIST (width);
CREATE TABLE runs_metricrollup_32 PARTITION OF runs_metricrollup FOR VALUES IN (32);
CREATE TABLE runs_metricrollup_128 PARTITION OF runs_metricrollup FOR VALUES IN (128);
CREATE TABLE runs_metricrollup_512 PARTITION OF runs_metricrollup FOR VALUES IN (512);
CREATE TABLE runs_metricrollup_2048 PARTITION OF runs_metricrollup FOR VALUES IN (2048);
CREATE TABLE runs_metricrollup_8192 PARTITION OF runs_metricrollup FOR VALUES IN (8192);
CREATE TABLE runs_metricrollup_32768 PARTITION OF runs_metricrollup FOR VALUES IN (32768);
CREATE TABLE runs_metricrollup_131072 PARTITION OF runs_metricrollup FOR VALUES IN (131072);
"""


class Migration(migrations.Migration):
    dependencies = [("runs", "0005_run_phase")]

    operations = [
        migrations.AlterField(
            model_name="run",
            name="metric_keys",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.CharField(max_length=250), blank=True, default=list, size=None
            ),
        ),
        migrations.CreateModel(
            name="MetricSeries",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("key", models.CharField(max_length=250)),
                (
                    "sealed_step",
                    models.IntegerField(
                        blank=True,
                        help_text="Its rollups wider than 32 steps are exact below the one of their width holding this "
                        "step.",
                        null=True,
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="metric_series", to="runs.run"
                    ),
                ),
            ],
            options={"verbose_name_plural": "metric series"},
        ),
        migrations.AddConstraint(
            model_name="metricseries",
            constraint=models.UniqueConstraint(fields=("run", "key"), name="metricseries_run_key_unique"),
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(ROLLUP_SQL, reverse_sql="DROP TABLE runs_metricrollup")],
            state_operations=[
                migrations.CreateModel(
                    name="MetricRollup",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "series", "width", "bucket", blank=True, editable=False, primary_key=True, serialize=False
                            ),
                        ),
                        ("width", models.IntegerField()),
                        ("bucket", models.IntegerField()),
                        ("n", models.IntegerField()),
                        ("first_step", models.IntegerField()),
                        ("last_step", models.IntegerField()),
                        (
                            "time_step",
                            models.IntegerField(help_text="Step of the point latest in (time, step) order."),
                        ),
                        ("last_value", models.FloatField(help_text="Value at last_step.")),
                        ("min_value", models.FloatField()),
                        ("max_value", models.FloatField()),
                        (
                            "time_value",
                            models.FloatField(help_text="Value of the point latest in (time, step) order."),
                        ),
                        ("time_us", models.BigIntegerField(help_text="Its time, microseconds since the Unix epoch.")),
                        (
                            "series",
                            models.ForeignKey(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="rollups",
                                to="runs.metricseries",
                            ),
                        ),
                    ],
                ),
            ],
        ),
    ]
