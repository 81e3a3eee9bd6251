from rest_framework import serializers

from webapp.accounts.models import ApiToken


class ApiTokenSerializer(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["id", "name", "key_prefix", "created_at", "last_used_at", "revoked_at"]
        read_only_fields = ["id", "key_prefix", "created_at", "last_used_at", "revoked_at"]


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    token = serializers.CharField(read_only=True, help_text="The secret; shown only in this response.")

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "token"]
