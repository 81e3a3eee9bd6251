from django.apps import AppConfig

from webapp.core.seed import seeder_register


class DatasetsConfig(AppConfig):
    name = "webapp.datasets"
    label = "datasets"

    def ready(self) -> None:
        # Imported here: services import models, which load only once the app registry is ready.
        from webapp.datasets.services import builtin_datasets_seed

        seeder_register(title="Built-in datasets", seed=builtin_datasets_seed)
