from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.response import Response

from webapp.accounts.api.serializers import ApiTokenCreatedSerializer, ApiTokenSerializer
from webapp.accounts.models import ApiToken
from webapp.accounts.services import api_token_create, api_token_revoke


class ApiTokenViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    """Your personal API tokens. The secret is shown once, at creation; DELETE revokes."""

    serializer_class = ApiTokenSerializer
    filter_backends: list = []

    queryset = ApiToken.objects.none()  # for the schema; requests use get_queryset

    def get_queryset(self):
        return ApiToken.objects.filter(user=self.request.user)

    @extend_schema(request=ApiTokenSerializer, responses={201: ApiTokenCreatedSerializer})
    def create(self, request):
        serializer = ApiTokenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        token, secret = api_token_create(user=request.user, name=serializer.validated_data["name"])
        token.token = secret
        return Response(ApiTokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: ApiToken) -> None:
        api_token_revoke(token=instance)
