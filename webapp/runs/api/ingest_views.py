import json

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.parsers import JSONParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer.contract import IngestBatch
from webapp.core.ratelimit import IngestThrottle
from webapp.core.schema import ErrorSerializer
from webapp.core.tokens import bearer_token
from webapp.runs.api.serializers import IngestWrittenSerializer
from webapp.runs.ingest import IngestForbidden, IngestRejected, ingest_batch


class RunIngestView(APIView):
    """Where a trainer reports: metric steps, trajectories, log lines, heartbeat and status.

    Authenticated by the run's own token (`Authorization: Bearer tlr_…`). A batch is validated as
    a whole: any error answers 400 with field errors and writes nothing. Retrying a batch is safe.
    """

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [IngestThrottle]
    # Listed for the OpenAPI schema; the body is read raw so its size is checked before parsing.
    parser_classes = [JSONParser]

    @extend_schema(
        request=IngestBatch,
        auth=[{"runToken": []}],
        responses={
            200: OpenApiResponse(
                IngestWrittenSerializer,
                description="Counts of what was written; `stop` is true once the run was cancelled (the trainer "
                "should stop; its final flush within TIRLAB_INGEST_CANCEL_GRACE_S is still kept).",
            ),
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="Field errors; nothing written."),
            401: OpenApiResponse(ErrorSerializer, description="No `Authorization: Bearer <run token>` header."),
            403: OpenApiResponse(ErrorSerializer, description="Token not valid for this run."),
            409: OpenApiResponse(ErrorSerializer, description="The run has finished (its cancel grace is over)."),
            413: OpenApiResponse(ErrorSerializer, description="Batch over the size limit."),
        },
    )
    def post(self, request, pk: int):
        token = bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
        if token is None:
            return Response(
                {"detail": "Authorization: Bearer <run token> required"}, status=status.HTTP_401_UNAUTHORIZED
            )
        limit = settings.INGEST_MAX_BYTES
        too_big = Response(
            {"detail": f"batch over the limit of {limit} bytes; send smaller batches"},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
        try:
            if int(request.META.get("CONTENT_LENGTH") or 0) > limit:
                return too_big
            body = request.body
        except RequestDataTooBig:
            return too_big
        if len(body) > limit:
            return too_big
        try:
            # An empty body is an empty batch (a heartbeat), as DRF reads it for every other endpoint.
            payload = json.loads(body) if body else {}
        except (ValueError, UnicodeDecodeError) as exc:
            return Response({"detail": f"invalid JSON: {exc}"}, status=status.HTTP_400_BAD_REQUEST)
        try:
            ingested = ingest_batch(run_id=pk, token=token, payload=payload)
        except IngestRejected as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        except IngestForbidden as exc:
            return Response({"detail": exc.message}, status=exc.status_code)
        # "stop": the run was cancelled; this batch (its trainer's final flush) was kept all the same.
        return Response({"written": ingested.written, "stop": ingested.stop})
