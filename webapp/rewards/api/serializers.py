from rest_framework import serializers

from trainer.rewards import REWARD_NAMES
from webapp.rewards.models import RewardConfig


class RewardConfigSerializer(serializers.ModelSerializer):
    """The shape of a reward config; its rules (name, params) are webapp.rewards.services'."""

    # Blank and long names reach the service, which refuses them as the reward page does.
    name = serializers.CharField(allow_blank=True)
    owner = serializers.CharField(source="owner.username", read_only=True, allow_null=True, default=None)
    reward = serializers.ChoiceField(choices=REWARD_NAMES)
    params = serializers.JSONField(required=False, help_text="Parameters of the reward; defaults filled in.")

    class Meta:
        model = RewardConfig
        fields = ["id", "name", "description", "owner", "builtin", "reward", "params", "created_at", "updated_at"]
        read_only_fields = ["id", "owner", "builtin", "created_at", "updated_at"]


class RewardSchemaSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    defaults = serializers.JSONField()
    schema = serializers.JSONField()
