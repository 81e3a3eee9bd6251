from django.apps import AppConfig

from webapp.core.seed import seeder_register


class RewardsConfig(AppConfig):
    name = "webapp.rewards"
    label = "rewards"

    def ready(self) -> None:
        # Imported here: services import models, which load only once the app registry is ready.
        from webapp.rewards.services import builtin_reward_configs_seed

        seeder_register(title="Built-in reward presets", seed=builtin_reward_configs_seed)
