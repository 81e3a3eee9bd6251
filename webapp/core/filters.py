"""The API's query filters: a value that cannot be read is refused (400), never silently ignored."""

from datetime import UTC, datetime

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django_filters import fields, rest_framework
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

BOOLEAN_WORDS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def parse_bool(value: object) -> bool | None:
    """A query parameter's boolean: None when empty, else true/false (or 1/0, yes/no); ValueError otherwise."""
    if value in (None, ""):
        return None
    try:
        return BOOLEAN_WORDS[str(value).lower()]
    except KeyError:
        raise ValueError(value) from None


@extend_schema_field(OpenApiTypes.BOOL)
class BooleanParam(serializers.Field):
    """A boolean query parameter of a serializer-read query, with the words of `parse_bool`."""

    default_error_messages = {"invalid": "must be true or false"}

    def to_internal_value(self, data: object) -> bool | None:
        try:
            return parse_bool(data)
        except ValueError:
            self.fail("invalid")

    def to_representation(self, value: bool) -> bool:
        return value


class StrictBooleanField(forms.NullBooleanField):
    # Django's NullBooleanField and its widget read anything they do not know as "no filter".
    widget = forms.TextInput

    def to_python(self, value: object) -> bool | None:
        try:
            return parse_bool(value)
        except ValueError:
            raise ValidationError("must be true or false", code="invalid") from None


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField


class UtcIsoDateTimeField(fields.IsoDateTimeField):
    """ISO 8601 allows UTC offsets up to ±23:59 but PostgreSQL refuses those past ±15:59: compare in UTC."""

    def to_python(self, value: object) -> datetime | None:
        parsed = super().to_python(value)
        if parsed is None:
            return None
        try:
            return parsed.astimezone(UTC)
        except OverflowError:  # the instant falls outside the years 1-9999
            raise ValidationError(self.error_messages["invalid"], code="invalid") from None


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class _ChoicesIgnoringEmptyField(fields.MultipleChoiceField):
    def clean(self, value: list[str] | None) -> list[str]:
        return super().clean([item for item in value or [] if item != ""])


class MultipleChoiceFilter(django_filters.MultipleChoiceFilter):
    """`?status=a&status=b`; an empty `?status=` is no value given, as everywhere else (and on the runs page)."""

    field_class = _ChoicesIgnoringEmptyField


class FilterSet(rest_framework.FilterSet):
    FILTER_DEFAULTS = {
        **rest_framework.FilterSet.FILTER_DEFAULTS,
        models.BooleanField: {"filter_class": StrictBooleanFilter},
    }


class FilterBackend(rest_framework.DjangoFilterBackend):
    """DRF's django-filter backend, building `filterset_fields` filters with the FilterSet above."""

    filterset_base = FilterSet
