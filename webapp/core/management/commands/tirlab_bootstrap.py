from django.core.management.base import BaseCommand

from webapp.core.seed import admin_create_if_missing, seeders
from webapp.env import env_str


class Command(BaseCommand):
    help = "Create the admin account on first start and seed the apps' built-in rows (idempotent)."

    def handle(self, *args, **options) -> None:
        username = env_str("TIRLAB_ADMIN_USER", "admin")
        password = admin_create_if_missing(username=username, password=env_str("TIRLAB_ADMIN_PASSWORD"))
        if password is not None:
            self.stdout.write(self.style.WARNING(f"Created admin account '{username}' with password: {password}"))
            self.stdout.write("This password is shown once; change it in the admin if you like.")
        for seeder in seeders():
            self.stdout.write(f"{seeder.title}: {', '.join(str(row) for row in seeder.seed())}")
