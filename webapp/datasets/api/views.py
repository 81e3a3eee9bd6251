from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import BaseParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from retrieval.server import DEFAULT_TOPK, MAX_BODY, MAX_QUERIES, MAX_TOPK, BadRequest, parse_body, retrieve
from trainer.data.datasets import DatasetError
from webapp.accounts.authentication import ApiTokenAuthentication, ApiTokenBasicAuthentication
from webapp.core.permissions import IsOwnerOrReadOnlyShared
from webapp.core.schema import ErrorSerializer
from webapp.datasets.api.serializers import DatasetSerializer, DatasetUploadSerializer
from webapp.datasets.models import Dataset
from webapp.datasets.services import corpus_index, dataset_create_from_upload, dataset_delete, dataset_update


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


RETRIEVE_REQUEST = {
    "type": "object",
    "properties": {
        "queries": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_QUERIES},
        "query": {"type": "string"},
        "topk": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_TOPK, "description": "0 or null: 3."},
        "return_scores": {"type": "boolean", "default": False},
    },
    "oneOf": [{"required": ["queries"]}, {"required": ["query"]}],
}
RETRIEVE_ANSWER = {
    "type": "object",
    "properties": {
        "result": {
            "type": "array",
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "description": '{"document": {"id", "contents", "title", "text"}, "score": s} with '
                    "return_scores, else the document itself",
                },
            },
        }
    },
    "required": ["result"],
}


class CorpusRetrieveView(APIView):
    """`POST /retrieve` over one of your corpora, as `python -m retrieval serve` answers it (retrieval.server's own
    parsing and answer): Search-R1's and verl's `{"queries": [...], "topk", "return_scores"}` or SkyRL-gym's
    `{"query": "...", ...}`; a bad request is a 400 `{"detail", "field"}`.

    Authenticated like the rest of the API (a Bearer API token, or a session), and by an API token as the Basic
    password, which `requests` sends from ~/.netrc for clients that set no header (verl's, SkyRL-gym's)."""

    authentication_classes = [ApiTokenAuthentication, ApiTokenBasicAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request={"application/json": RETRIEVE_REQUEST},
        responses={
            200: OpenApiResponse(RETRIEVE_ANSWER, description="One list of passages per query, best first."),
            413: OpenApiResponse(ErrorSerializer, description=f"A body over {MAX_BODY} bytes."),
        },
        examples=[
            OpenApiExample(
                "Search-R1 / verl", value={"queries": ["who founded Zorblat"], "topk": 3, "return_scores": True}
            ),
            OpenApiExample("SkyRL-gym", value={"query": "who founded Zorblat", "topk": 3, "return_scores": True}),
        ],
    )
    def post(self, request: Request, pk: int) -> Response:
        dataset = Dataset.objects.visible_to(request.user).filter(pk=pk).first()
        if dataset is None:
            return Response({"detail": f"No dataset {pk}."}, status=status.HTTP_404_NOT_FOUND)
        if dataset.owner_id != request.user.pk:
            return Response(
                {"detail": "Only the owner of a corpus may search it here."}, status=status.HTTP_403_FORBIDDEN
            )
        if not dataset.is_corpus:
            return Response(
                {"detail": f"Dataset {pk} is a {dataset.get_format_display()} dataset, not a retrieval corpus."},
                status=status.HTTP_404_NOT_FOUND,
            )
        body = request.body
        if len(body) > MAX_BODY:
            return Response(
                {"detail": f"request body over {MAX_BODY} bytes", "field": None},
                status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            )
        try:
            queries, topk, return_scores = parse_body(body, DEFAULT_TOPK)
        except BadRequest as exc:
            return Response({"detail": str(exc), "field": exc.field}, status=status.HTTP_400_BAD_REQUEST)
        return Response(retrieve(corpus_index(dataset), queries, topk, return_scores))
