"""GET /api/v1/results/: the results table (webapp.runs.results) of chosen runs, as JSON or as the text a paper
pastes (webapp.runs.results_export). The same query as the results page's, refused with 400 by field where the
page shows a message instead."""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer.contract import INT_MAX, MAX_METRIC_KEY
from webapp.runs.results import (
    AT_CHOICES,
    MAX_RUNS,
    ResultsError,
    ResultsRow,
    ResultsTable,
    results_runs,
    results_table,
)
from webapp.runs.results_export import RESULTS_FORMATS

CONTENT_TYPES = {"markdown": "text/plain; charset=utf-8", "latex": "text/plain; charset=utf-8", "csv": "text/csv"}


class ResultsQuerySerializer(serializers.Serializer):
    runs = serializers.CharField(
        required=False,
        max_length=12 * MAX_RUNS,
        help_text=f"Comma-separated run ids (at most {MAX_RUNS}), in row order.",
    )
    experiment = serializers.IntegerField(
        required=False, min_value=1, max_value=INT_MAX, help_text="Every run of this experiment that you may see."
    )
    metric = serializers.CharField(
        required=False,
        max_length=MAX_METRIC_KEY,
        help_text="The cells' metric (accuracy, avg@4, pass@4, tool_call_ratio, …); default accuracy where reported.",
    )
    at = serializers.ChoiceField(
        choices=AT_CHOICES,
        required=False,
        default="last",
        help_text="Each row's step: the run's last one with the metric, `step`, or its best on `best_on`.",
    )
    step = serializers.IntegerField(required=False, min_value=0, max_value=INT_MAX, help_text="The step, at=step.")
    best_on = serializers.CharField(
        required=False,
        max_length=MAX_METRIC_KEY,
        help_text="At=best: the benchmark a row's step is best on, or `mean` (default): its mean over the run's.",
    )
    format = serializers.ChoiceField(
        choices=["json", *RESULTS_FORMATS], required=False, default="json", help_text="json, or text to paste."
    )

    def validate_runs(self, value: str) -> list[int]:
        ids = []
        for token in (part.strip() for part in value.split(",")):
            if token and not (token.isascii() and token.isdigit() and int(token) <= INT_MAX):
                raise ValidationError(f"{token!r} is not a run id")
            if token:
                ids.append(int(token))
        return ids

    def validate(self, data: dict) -> dict:
        if not data.get("runs") and data.get("experiment") is None:
            raise ValidationError({"runs": ["choose runs=1,2,3 or experiment=<id>"]})
        return data


class ResultsRowSerializer(serializers.Serializer):
    run = serializers.IntegerField(source="run_id")
    name = serializers.CharField()
    label = serializers.CharField(help_text="The name, and the step where the row is not at the run's last one.")
    url = serializers.CharField(help_text="The run's page.")
    step = serializers.IntegerField()
    last_step = serializers.IntegerField(help_text="The run's last step with the metric.")
    cells = serializers.DictField(child=serializers.FloatField(), help_text="Benchmark -> value, as logged.")
    mean = serializers.FloatField(allow_null=True, help_text="Over the cells, only when the row has every column.")


class LeftOutSerializer(serializers.Serializer):
    run = serializers.IntegerField(source="run_id")
    name = serializers.CharField()
    reason = serializers.CharField()


class ResultsTableSerializer(serializers.Serializer):
    metric = serializers.CharField(allow_null=True, help_text="Null where the runs report no benchmark metric.")
    better = serializers.ChoiceField(choices=["higher", "lower"], allow_null=True)
    at = serializers.ChoiceField(choices=AT_CHOICES)
    step = serializers.IntegerField(allow_null=True)
    best_on = serializers.CharField(allow_null=True)
    metrics = serializers.ListField(child=serializers.CharField(), help_text="What the runs report on benchmarks.")
    benchmarks = serializers.ListField(child=serializers.CharField(), help_text="Those the runs report the metric on.")
    columns = serializers.ListField(child=serializers.CharField())
    rows = ResultsRowSerializer(many=True)
    best = serializers.DictField(
        child=serializers.FloatField(), help_text="Column (and `mean`) -> its best value, where one way is better."
    )
    left_out = LeftOutSerializer(many=True, help_text="Chosen runs without a row, and why.")


def _row(row: ResultsRow) -> dict:
    return {**row.__dict__, "label": row.label}


class ResultsView(APIView):
    """A paper's table from runs: rows are runs at a step, columns benchmarks, cells one metric."""

    @extend_schema(
        parameters=[ResultsQuerySerializer],
        responses={
            200: ResultsTableSerializer,
            (200, "text/plain"): OpenApiTypes.STR,
            (200, "text/csv"): OpenApiTypes.STR,
        },
    )
    def get(self, request):
        query = ResultsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        runs, errors = results_runs(user=request.user, run_ids=data.get("runs"), experiment_id=data.get("experiment"))
        if errors:
            raise ValidationError(errors)
        try:
            table: ResultsTable = results_table(
                runs=runs, metric=data.get("metric"), at=data["at"], step=data.get("step"), best_on=data.get("best_on")
            )
        except ResultsError as exc:
            raise ValidationError(exc.errors) from None
        output = data["format"]
        if output != "json":
            return HttpResponse(RESULTS_FORMATS[output](table), content_type=CONTENT_TYPES[output])
        body = {**table.__dict__, "better": table.better, "rows": [_row(row) for row in table.rows]}
        return Response(ResultsTableSerializer(body).data)
