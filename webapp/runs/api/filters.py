import django_filters

from webapp.runs.models import Experiment, Run, RunStatus


class TagFilter(django_filters.CharFilter):
    """`?tags=a,b` keeps rows carrying every listed tag."""

    def filter(self, qs, value):
        tags = [tag.strip() for tag in (value or "").split(",") if tag.strip()]
        return qs.filter(tags__contains=tags) if tags else qs


class ExperimentFilter(django_filters.FilterSet):
    tags = TagFilter()
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Experiment
        fields = ["tags", "created_after", "created_before"]


class RunFilter(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=RunStatus.choices)
    tags = TagFilter()
    archived = django_filters.BooleanFilter()
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Run
        fields = ["status", "experiment", "preset", "parent", "tags", "archived", "created_after", "created_before"]
