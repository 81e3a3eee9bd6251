"""What services raise when they refuse a write, and how the API answers it.

Services raise Django's ValidationError (bad input, by field; or a trainer FieldErrors such as
ConfigError), PermissionDenied (not the user's to change) and Conflict (the row's state forbids it,
e.g. deleting a run that still runs). The pages show the message; the API answers 400 with field
errors, 403 and 409 through `api_exception_handler`, so no view repeats the translation.
"""

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.views import exception_handler

from trainer.contract import FieldErrors


class Conflict(Exception):
    """A write the row's current state does not allow; the message says why."""


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DjangoValidationError):
        exc = ValidationError(as_serializer_error(exc))
    elif isinstance(exc, FieldErrors):
        exc = ValidationError(exc.errors)
    elif isinstance(exc, Conflict):
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    return exception_handler(exc, context)
