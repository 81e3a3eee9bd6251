"""MLflow's error answers: `{"error_code": NAME, "message": TEXT}` with the HTTP status MLflow gives NAME.

The official client turns such an answer into `MlflowException(message, error_code=NAME)`; several of its
calls depend on the exact name (`set_experiment` creates the experiment only when get-by-name answers
404 RESOURCE_DOES_NOT_EXIST, and takes RESOURCE_ALREADY_EXISTS from a racing create as "someone else
made it"). The client retries 429 and 5xx for minutes, so bad input must never be a 5xx.
"""

from __future__ import annotations

from django.http import JsonResponse

# mlflow/exceptions.py ERROR_CODE_TO_HTTP_STATUS, for the names tirlab answers with.
STATUS = {
    "INVALID_PARAMETER_VALUE": 400,
    "RESOURCE_ALREADY_EXISTS": 400,
    "BAD_REQUEST": 400,
    "MALFORMED_REQUEST": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "RESOURCE_DOES_NOT_EXIST": 404,
    "ENDPOINT_NOT_FOUND": 404,
    "REQUEST_LIMIT_EXCEEDED": 429,
    "TEMPORARILY_UNAVAILABLE": 503,
}


class MlflowError(Exception):
    """An answer in MLflow's error shape; raising it anywhere in a handler rolls the request back."""

    def __init__(self, code: str, message: str, *, headers: dict[str, str] | None = None):
        self.code, self.message, self.headers = code, message, headers or {}
        super().__init__(f"{code}: {message}")

    @property
    def status(self) -> int:
        return STATUS[self.code]

    def response(self) -> JsonResponse:
        response = JsonResponse({"error_code": self.code, "message": self.message}, status=self.status)
        for name, value in self.headers.items():
            response[name] = value
        return response


def invalid(message: str) -> MlflowError:
    return MlflowError("INVALID_PARAMETER_VALUE", message)


def missing(name: str) -> MlflowError:
    # MLflow's own wording (mlflow/server/handlers.py), which its users will have seen before.
    return invalid(
        f"Missing value for required parameter '{name}'. See the API docs for more information about "
        "request parameters."
    )


def not_found(message: str) -> MlflowError:
    return MlflowError("RESOURCE_DOES_NOT_EXIST", message)


def refused(entity: str, errors: dict[str, list[str]]) -> MlflowError:
    """A service's refusal by field (webapp.runs.services: the rules the dashboard's doors apply too)
    as INVALID_PARAMETER_VALUE, each field named: "Invalid run name: At most 200 characters."."""
    named = (f"Invalid {entity} {field.replace('_', ' ')}: {' '.join(messages)}" for field, messages in errors.items())
    return invalid(" ".join(named))
