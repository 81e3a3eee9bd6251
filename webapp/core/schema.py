"""The OpenAPI schema documents the errors an operation can answer, not only its success."""

from drf_spectacular import openapi
from drf_spectacular.plumbing import ComponentRegistry
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong.")


FIELD_ERRORS = OpenApiResponse(
    {
        "oneOf": [
            {"type": "object", "additionalProperties": True},
            {"type": "array", "items": {"type": "string"}},
        ]
    },
    description="Invalid input: each field (or `detail`) with what is wrong with it, or a list of messages.",
)


TOO_MANY_REQUESTS = OpenApiResponse(
    ErrorSerializer,
    description="Over this credential's rate limit (`RateLimit-Limit`, `-Remaining`, `-Reset` say where it stands, "
    "on every answer); nothing was done. Send it again after `Retry-After` seconds.",
)
UNAVAILABLE = OpenApiResponse(
    ErrorSerializer,
    description="The database is busy or unreachable; nothing was written. Send it again after `Retry-After` seconds.",
)


class AutoSchema(openapi.AutoSchema):
    """DRF's error responses, added to every operation that can answer them.

    An empty query parameter is documented as allowed (it means the parameter was not given).
    401/403 where a user must be authenticated, 404 where a path names a row or a page can be out of
    range, 400 where a body or a query parameter can be refused, 415 where a body is taken, 429 where a
    rate limit applies, 503 everywhere (the database can be busy or down).
    Codes an operation declares itself win.
    """

    def get_operation(
        self, path: str, path_regex: str, path_prefix: str, method: str, registry: ComponentRegistry
    ) -> dict | None:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        parameters = operation.get("parameters", [])
        for parameter in parameters:
            if parameter["in"] == "query":
                # `?status=` is `status` not given, as in an HTML form: django-filter's rule, and ours.
                parameter["allowEmptyValue"] = True
        errors: dict[str, object] = {}
        if "requestBody" in operation or any(p["in"] == "query" for p in parameters):
            errors["400"] = FIELD_ERRORS
        if "requestBody" in operation:
            errors["415"] = OpenApiResponse(ErrorSerializer, description="A body in a media type not listed here.")
        if any(requirement for requirement in operation.get("security", [])):
            errors["401"] = OpenApiResponse(ErrorSerializer, description="Not authenticated.")
            errors["403"] = OpenApiResponse(ErrorSerializer, description="Not allowed for this user.")
        if any(p["in"] == "path" for p in parameters) or (self._is_list_view() and self._get_paginator()):
            errors["404"] = OpenApiResponse(ErrorSerializer, description="No such row visible to you, or no such page.")
        if self.view.throttle_classes:
            errors["429"] = TOO_MANY_REQUESTS
        errors["503"] = UNAVAILABLE
        responses = operation["responses"]
        for code, response in errors.items():
            if code not in responses:
                responses[code] = self._get_response_for_code(response, code)
        return operation
