import django_filters

from webapp.core.filters import FilterSet, UtcIsoDateTimeFilter
from webapp.runs.models import Experiment


class TagFilter(django_filters.CharFilter):
    """`?tags=a,b` keeps rows carrying every listed tag."""

    def filter(self, qs, value):
        tags = [tag.strip() for tag in (value or "").split(",") if tag.strip()]
        return qs.filter(tags__contains=tags) if tags else qs


class ExperimentFilter(FilterSet):
    tags = TagFilter()
    created_after = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Experiment
        fields = ["tags", "created_after", "created_before"]
