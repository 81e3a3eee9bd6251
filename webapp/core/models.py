from django.conf import settings
from django.db import models


class OwnedQuerySet(models.QuerySet):
    def visible_to(self, user) -> "OwnedQuerySet":
        """Rows a user may see: their own, built-in rows (no owner) where the model has them; staff see all."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self
        return self.filter(owner=user)


class SharedQuerySet(OwnedQuerySet):
    def visible_to(self, user) -> "SharedQuerySet":
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self
        return self.filter(models.Q(owner=user) | models.Q(owner__isnull=True))


def owner_field(*, null: bool = False) -> models.ForeignKey:
    return models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=null,
        blank=null,
        related_name="+",
        help_text="Empty for built-in rows that every user sees." if null else "",
    )
