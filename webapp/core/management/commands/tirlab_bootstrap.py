from django.conf import settings
from django.core.management.base import BaseCommand

from webapp.core.seed import admin_create_if_missing, admin_login_path, admin_login_stale, admin_login_write, seeders
from webapp.env import env_str


class Command(BaseCommand):
    help = "Create the admin account on first start and seed the apps' built-in rows (idempotent)."

    def handle(self, *args, **options) -> None:
        username = env_str("TIRLAB_ADMIN_USER", "admin")
        given = env_str("TIRLAB_ADMIN_PASSWORD")
        kept = admin_login_path(settings.VAR_DIR)
        password = admin_create_if_missing(username=username, password=given)
        if password is not None and given:
            kept.unlink(missing_ok=True)  # a made-up password of an earlier database
            self.stdout.write(f"Created admin account '{username}' with the password of TIRLAB_ADMIN_PASSWORD")
        elif password is not None:
            admin_login_write(kept, username, password)
            self.stdout.write(self.style.WARNING(f"Created admin account '{username}' with password: {password}"))
            self.stdout.write(f"The password is kept in {kept} (mode 0600) until you change it.")
        elif admin_login_stale(kept):
            kept.unlink()
            self.stdout.write(f"Removed {kept}: the password it kept no longer logs in.")
        for seeder in seeders():
            self.stdout.write(f"{seeder.title}: {', '.join(str(row) for row in seeder.seed())}")
