from rest_framework import pagination
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.views import APIView


class _StrictPageSize:
    """A `page_size` that is not a positive integer is refused (400) rather than read as the default.

    One above the maximum is capped, as the schema's description says.
    """

    page_size: int
    page_size_query_param = "page_size"
    max_page_size: int

    def get_page_size(self, request: Request) -> int:
        value = request.query_params.get(self.page_size_query_param)
        if value in (None, ""):
            return self.page_size
        try:
            size = int(value)
        except ValueError:
            size = 0
        if size < 1:
            raise ValidationError({self.page_size_query_param: ["must be a positive integer"]})
        return min(size, self.max_page_size)

    def get_schema_operation_parameters(self, view: APIView) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["minimum"] = 1
                parameter["description"] = f"Results per page (default {self.page_size}, at most {self.max_page_size})."
        return parameters


class PageNumberPagination(_StrictPageSize, pagination.PageNumberPagination):
    max_page_size = 500


class StepCursorPagination(_StrictPageSize, pagination.CursorPagination):
    """Stable paging through a run's trajectories while new steps keep arriving."""

    ordering = ("step", "prompt_index", "sample_index", "id")
    page_size = 50
    max_page_size = 500


class TimeCursorPagination(_StrictPageSize, pagination.CursorPagination):
    ordering = ("time", "id")
    page_size = 200
    max_page_size = 2000
