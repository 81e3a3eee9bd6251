from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer.rewards import REWARD_DESCRIPTIONS, REWARD_NAMES, reward_defaults, reward_params_schema
from webapp.core.permissions import IsOwnerOrReadOnlyShared
from webapp.rewards.api.serializers import RewardConfigSerializer, RewardSchemaSerializer
from webapp.rewards.models import RewardConfig
from webapp.rewards.services import reward_config_create, reward_config_delete, reward_config_update


class RewardConfigViewSet(viewsets.ModelViewSet):
    """Stored reward configs: a registered reward and its parameters, validated by trainer.rewards."""

    serializer_class = RewardConfigSerializer
    permission_classes = [IsAuthenticated, IsOwnerOrReadOnlyShared]
    filterset_fields = ["reward", "builtin"]
    search_fields = ["name", "description"]
    ordering_fields = ["name", "created_at", "updated_at"]
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]

    def get_queryset(self):
        return RewardConfig.objects.visible_to(self.request.user).select_related("owner")

    def perform_create(self, serializer) -> None:
        serializer.instance = reward_config_create(user=self.request.user, **serializer.validated_data)

    def perform_update(self, serializer) -> None:
        serializer.instance = reward_config_update(
            config=serializer.instance, user=self.request.user, **serializer.validated_data
        )

    def perform_destroy(self, instance: RewardConfig) -> None:
        reward_config_delete(config=instance, user=self.request.user)


class RewardCatalogView(APIView):
    """The registered rewards with their parameter schemas and defaults."""

    @extend_schema(responses=RewardSchemaSerializer(many=True))
    def get(self, request):
        defaults = reward_defaults()
        return Response(
            [
                {
                    "name": name,
                    "description": REWARD_DESCRIPTIONS[name],
                    "defaults": defaults[name],
                    "schema": reward_params_schema(name),
                }
                for name in REWARD_NAMES
            ]
        )
