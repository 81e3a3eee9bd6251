from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import BaseParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from trainer.data.datasets import DatasetError
from webapp.core.permissions import IsOwnerOrReadOnlyShared
from webapp.datasets.api.serializers import DatasetSerializer, DatasetUploadSerializer
from webapp.datasets.models import Dataset
from webapp.datasets.services import dataset_create_from_upload, dataset_delete, dataset_update


class DatasetViewSet(viewsets.ModelViewSet):
    """Datasets: upload a file (multipart) and get its detected format, row count and a preview."""

    serializer_class = DatasetSerializer
    permission_classes = [IsAuthenticated, IsOwnerOrReadOnlyShared]
    filterset_fields = ["format", "builtin"]
    search_fields = ["name", "description"]
    ordering_fields = ["created_at", "name", "row_count"]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_parsers(self) -> list[BaseParser]:
        # An upload is a file, so multipart; renaming a dataset is JSON like the rest of the API.
        if self.request is not None and self.request.method == "POST":
            return [MultiPartParser()]
        return [JSONParser()]

    def get_queryset(self):
        return Dataset.objects.visible_to(self.request.user).select_related("owner")

    @extend_schema(request={"multipart/form-data": DatasetUploadSerializer}, responses={201: DatasetSerializer})
    def create(self, request):
        upload = DatasetUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        try:
            dataset = dataset_create_from_upload(
                user=request.user,
                upload=upload.validated_data["file"],
                name=upload.validated_data.get("name", ""),
                description=upload.validated_data.get("description", ""),
            )
        except DatasetError as exc:
            raise ValidationError({"file": [str(exc)]}) from None
        return Response(DatasetSerializer(dataset).data, status=status.HTTP_201_CREATED)

    def perform_update(self, serializer) -> None:
        serializer.instance = dataset_update(
            dataset=serializer.instance, user=self.request.user, **serializer.validated_data
        )

    def perform_destroy(self, instance: Dataset) -> None:
        dataset_delete(dataset=instance, user=self.request.user)
