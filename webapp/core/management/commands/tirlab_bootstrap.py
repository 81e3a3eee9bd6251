from django.core.management.base import BaseCommand

from webapp.core.seed import admin_create_if_missing, builtin_datasets_seed, builtin_reward_configs_seed
from webapp.env import env_str


class Command(BaseCommand):
    help = "Create the admin account on first start and seed built-in datasets and reward presets (idempotent)."

    def handle(self, *args, **options) -> None:
        username = env_str("TIRLAB_ADMIN_USER", "admin")
        password = admin_create_if_missing(username=username, password=env_str("TIRLAB_ADMIN_PASSWORD"))
        if password is not None:
            self.stdout.write(self.style.WARNING(f"Created admin account '{username}' with password: {password}"))
            self.stdout.write("This password is shown once; change it in the admin if you like.")
        datasets = builtin_datasets_seed()
        rewards = builtin_reward_configs_seed()
        self.stdout.write(f"Built-in datasets: {', '.join(d.name for d in datasets)}")
        self.stdout.write(f"Built-in reward presets: {', '.join(r.name for r in rewards)}")
