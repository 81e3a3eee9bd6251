import csv
from collections.abc import Iterator

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer.config import config_json_schema, default_config
from trainer.contract import INT_MAX
from webapp.core.filters import parse_bool
from webapp.core.pagination import StepCursorPagination, TimeCursorPagination
from webapp.core.schema import ErrorSerializer
from webapp.runs.api.filters import ExperimentFilter
from webapp.runs.api.serializers import (
    CheckpointSerializer,
    ExperimentSerializer,
    MetricsResponseSerializer,
    RunCreatedSerializer,
    RunCreateSerializer,
    RunEvaluateSerializer,
    RunForkSerializer,
    RunListQuerySerializer,
    RunLogLineSerializer,
    RunResumeSerializer,
    RunSerializer,
    RunUpdateSerializer,
    TrajectorySerializer,
)
from webapp.runs.evaluations import run_evaluate
from webapp.runs.metric_store import run_metric_rows, run_metric_series
from webapp.runs.models import Experiment, Run
from webapp.runs.selectors import InvalidSearch, run_list, run_trajectories
from webapp.runs.services import (
    experiment_create,
    experiment_delete,
    experiment_update,
    preset_run_config,
    run_cancel,
    run_create,
    run_delete,
    run_fork,
    run_resume,
    run_update,
)
from webapp.runs.transitions import IllegalTransition


class ExperimentViewSet(viewsets.ModelViewSet):
    """Experiments group runs; deleting one deletes its runs, so it is refused while one is active."""

    serializer_class = ExperimentSerializer
    filterset_class = ExperimentFilter
    search_fields = ["name", "description"]
    ordering_fields = ["created_at", "name"]

    def get_queryset(self):
        return Experiment.objects.visible_to(self.request.user).select_related("owner")

    def perform_create(self, serializer) -> None:
        serializer.instance = experiment_create(user=self.request.user, **serializer.validated_data)

    def perform_update(self, serializer) -> None:
        serializer.instance = experiment_update(experiment=serializer.instance, **serializer.validated_data)

    @extend_schema(responses={204: None, 409: ErrorSerializer})
    def destroy(self, request, *args, **kwargs):
        return super().destroy(request, *args, **kwargs)

    def perform_destroy(self, instance: Experiment) -> None:
        experiment_delete(experiment=instance)


def _bool_param(request, name: str) -> bool | None:
    try:
        return parse_bool(request.query_params.get(name))
    except ValueError:
        raise ValidationError({name: ["must be true or false"]}) from None


def _int_param(request, name: str, default: int | None, *, low: int = 0, high: int = INT_MAX) -> int | None:
    value = request.query_params.get(name)
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except ValueError:
        raise ValidationError({name: ["must be an integer"]}) from None
    if number < low or (high is not None and number > high):
        raise ValidationError({name: [f"must be between {low} and {high}"]})
    return number


def _bounded_int(low: int, high: int) -> dict:
    """The schema of a query parameter read with `_int_param(low=, high=)`."""
    return {"type": "integer", "minimum": low, "maximum": high}


class _Echo:
    def write(self, value: str) -> str:
        return value


def _csv_lines(header: list[str], rows: Iterator) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(header)
    for step, time, values in rows:
        yield writer.writerow([step, time, *("" if v is None else v for v in values)])


class RunViewSet(viewsets.ModelViewSet):
    """GRPO runs. Creating one validates its config; it stays queued until the run lifecycle starts it."""

    # The list filters and sorts through the runs list's selector (see `list`), nothing else does.
    filter_backends: list = []
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return Run.objects.visible_to(self.request.user).select_related("owner")

    @extend_schema(parameters=[RunListQuerySerializer])
    def list(self, request):
        query = RunListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        page = self.paginate_queryset(run_list(user=request.user, filters=query.filters()))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def get_serializer_class(self):
        if self.action == "partial_update":
            return RunUpdateSerializer
        return RunSerializer

    @extend_schema(request=RunCreateSerializer, responses={201: RunCreatedSerializer})
    def create(self, request):
        data = RunCreateSerializer(data=request.data, context={"request": request})
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        fields["config"] = preset_run_config(fields["preset"], fields["config"])
        managed = fields.pop("launch")
        run, token = run_create(user=request.user, managed=managed, **fields)
        run.ingest_token = token or None
        return Response(RunCreatedSerializer(run).data, status=status.HTTP_201_CREATED)

    def perform_update(self, serializer) -> None:
        serializer.instance = run_update(run=serializer.instance, **serializer.validated_data)

    @extend_schema(responses={204: None, 409: ErrorSerializer})
    def destroy(self, request, *args, **kwargs):
        return super().destroy(request, *args, **kwargs)

    def perform_destroy(self, instance: Run) -> None:
        run_delete(run=instance)

    @extend_schema(request=None, responses={200: RunSerializer, 409: ErrorSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        try:
            run = run_cancel(run=self.get_object())
        except IllegalTransition as exc:
            return Response(
                {"detail": f"run is {exc.current}; it cannot be cancelled"}, status=status.HTTP_409_CONFLICT
            )
        return Response(RunSerializer(run).data)

    @extend_schema(request=RunForkSerializer, responses={201: RunCreatedSerializer})
    @action(detail=True, methods=["post"])
    def fork(self, request, pk=None):
        parent = self.get_object()
        data = RunForkSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        run, token = run_fork(run=parent, user=request.user, **data.validated_data)
        run.ingest_token = token or None
        return Response(RunCreatedSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=RunResumeSerializer, responses={201: RunCreatedSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        """A new run continuing this one from its last checkpoint; its metric steps continue the series."""
        parent = self.get_object()
        data = RunResumeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        run, token = run_resume(run=parent, user=request.user, **data.validated_data)
        run.ingest_token = token or None
        return Response(RunCreatedSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=RunEvaluateSerializer, responses={201: RunSerializer})
    @action(detail=True, methods=["post"])
    def evaluate(self, request, pk=None):
        """Queue an evaluation run: a checkpoint this run saved, or the model it starts from, evaluated on chosen
        datasets, greedily or with k samples a prompt. Its metrics and trajectories are recorded at the
        checkpoint's step, per benchmark (bench/<data_source>/…)."""
        parent = self.get_object()
        data = RunEvaluateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        run = run_evaluate(run=parent, user=request.user, **data.validated_data)
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=CheckpointSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None)
    def checkpoints(self, request, pk=None):
        """The checkpoints the run's trainer saved, by step: what `evaluate` can evaluate."""
        return Response(CheckpointSerializer(self.get_object().checkpoints.all(), many=True).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("keys", str, description="Comma-separated metric names; default all."),
            OpenApiParameter(
                "max_points",
                _bounded_int(1, settings.METRICS_MAX_POINTS),
                description="Buckets per series (default 2000).",
            ),
            OpenApiParameter("x", str, enum=["step", "time"], description="Bucket along steps or relative time."),
            OpenApiParameter("format", str, enum=["json", "csv"], description="csv streams the full series."),
        ],
        responses={200: MetricsResponseSerializer, (200, "text/csv"): OpenApiTypes.STR},
    )
    @action(detail=True, methods=["get"])
    def metrics(self, request, pk=None):
        run = self.get_object()
        # Every parameter is checked whatever the format, so a bad one is never silently ignored.
        output = request.query_params.get("format") or "json"
        if output not in ("json", "csv"):
            raise ValidationError({"format": ["must be json or csv"]})
        x = request.query_params.get("x") or "step"
        if x not in ("step", "time"):
            raise ValidationError({"x": ["must be step or time"]})
        max_points = _int_param(request, "max_points", 2000, low=1, high=settings.METRICS_MAX_POINTS)
        keys_param = request.query_params.get("keys", "")
        keys = [key.strip() for key in keys_param.split(",") if key.strip()] or list(run.metric_keys)
        if output == "csv":
            response = StreamingHttpResponse(
                _csv_lines(["step", "time", *keys], run_metric_rows(run=run, keys=keys)), content_type="text/csv"
            )
            response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-metrics.csv"'
            return response
        series = run_metric_series(run=run, keys=keys, max_points=max_points, x=x)
        return Response({"run": run.pk, "x": x, "max_points": max_points, "series": series})

    @extend_schema(
        parameters=[
            OpenApiParameter("step", _bounded_int(0, INT_MAX)),
            OpenApiParameter("correct", bool),
            OpenApiParameter("has_tool_error", bool),
            OpenApiParameter("used_tool", bool),
            OpenApiParameter("truncated", bool),
            OpenApiParameter(
                "data_source",
                str,
                description="Only the trajectories of this benchmark: their row's data source, e.g. aime24 (an "
                "evaluation run reports one per row). A value no trajectory has gives an empty list.",
            ),
            OpenApiParameter("q", str, description="Case-insensitive text search in prompt, turns and answer."),
            OpenApiParameter("regex", bool, description="Read q as a PostgreSQL regular expression (~*)."),
        ],
        responses=TrajectorySerializer(many=True),
    )
    @action(detail=True, methods=["get"], pagination_class=StepCursorPagination)
    def trajectories(self, request, pk=None):
        run = self.get_object()
        try:
            queryset = run_trajectories(
                run=run,
                step=_int_param(request, "step", None),
                correct=_bool_param(request, "correct"),
                has_tool_error=_bool_param(request, "has_tool_error"),
                used_tool=_bool_param(request, "used_tool"),
                truncated=_bool_param(request, "truncated"),
                data_source=request.query_params.get("data_source") or None,
                q=request.query_params.get("q") or None,
                regex=bool(_bool_param(request, "regex")),
            )
        except InvalidSearch as exc:
            raise ValidationError({"q": [str(exc)]}) from None
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(TrajectorySerializer(page, many=True).data)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "after", _bounded_int(0, INT_MAX), description="Only lines with an id above this (new lines)."
            )
        ],
        responses=RunLogLineSerializer(many=True),
    )
    @action(detail=True, methods=["get"], pagination_class=TimeCursorPagination)
    def logs(self, request, pk=None):
        run = self.get_object()
        lines = run.log_lines.all()
        after = _int_param(request, "after", None)
        if after is not None:
            lines = lines.filter(id__gt=after)
        page = self.paginate_queryset(lines)
        return self.get_paginated_response(RunLogLineSerializer(page, many=True).data)


class RunConfigSchemaView(APIView):
    """The JSON schema of a run config and its defaults (the run form is rendered from it)."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        return Response({"schema": config_json_schema(), "defaults": default_config()})
