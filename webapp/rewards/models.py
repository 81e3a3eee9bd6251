from django.db import models

from webapp.core.models import SharedQuerySet, owner_field


class RewardConfig(models.Model):
    """A reward preset name from `trainer.rewards` and its validated parameters."""

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    owner = owner_field(null=True)
    builtin = models.BooleanField(default=False)
    reward = models.CharField(max_length=64, help_text="Registered reward name, e.g. torl.")
    params = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SharedQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["name"], condition=models.Q(builtin=True), name="rewardconfig_builtin_name_unique"
            )
        ]

    def __str__(self) -> str:
        return self.name
