from rest_framework import pagination


class PageNumberPagination(pagination.PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 500


class StepCursorPagination(pagination.CursorPagination):
    """Stable paging through a run's trajectories while new steps keep arriving."""

    ordering = ("step", "prompt_index", "sample_index", "id")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


class TimeCursorPagination(pagination.CursorPagination):
    ordering = ("time", "id")
    page_size = 200
    page_size_query_param = "page_size"
    max_page_size = 2000
