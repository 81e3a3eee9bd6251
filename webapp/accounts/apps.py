from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "webapp.accounts"
    label = "accounts"

    def ready(self) -> None:
        from webapp.accounts import schema  # noqa: F401 — registers the OpenAPI description of API tokens
