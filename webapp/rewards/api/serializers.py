from rest_framework import serializers

from trainer.rewards import REWARD_NAMES, RewardParamsError, validate_reward_params
from webapp.rewards.models import RewardConfig


class RewardConfigSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True, default=None)
    reward = serializers.ChoiceField(choices=REWARD_NAMES)
    params = serializers.JSONField(required=False, help_text="Parameters of the reward; defaults filled in.")

    class Meta:
        model = RewardConfig
        fields = ["id", "name", "description", "owner", "builtin", "reward", "params", "created_at", "updated_at"]
        read_only_fields = ["id", "owner", "builtin", "created_at", "updated_at"]

    def validate(self, attrs: dict) -> dict:
        reward = attrs.get("reward", getattr(self.instance, "reward", None))
        params = attrs.get("params", {} if "reward" in attrs else getattr(self.instance, "params", {}))
        if not isinstance(params, dict):
            raise serializers.ValidationError({"params": ["must be a JSON object"]})
        try:
            attrs["params"] = validate_reward_params(reward, params)
        except RewardParamsError as exc:
            raise serializers.ValidationError(exc.errors) from None
        return attrs


class RewardSchemaSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    defaults = serializers.JSONField()
    schema = serializers.JSONField()
