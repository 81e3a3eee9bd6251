from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tracking", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="mlflowrun",
            name="params",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Params logged into a run tirlab launched (a verl run's verl config); its config stays tirlab's.",
            ),
        ),
    ]
