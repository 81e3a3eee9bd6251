from django.apps import AppConfig


class TrackingConfig(AppConfig):
    """The MLflow-compatible tracking API: any trainer's runs, as tirlab runs."""

    name = "webapp.tracking"
    label = "tracking"
    default_auto_field = "django.db.models.BigAutoField"
