from django.contrib import admin

from webapp.datasets.models import Dataset


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "format", "row_count", "size_bytes", "owner", "builtin", "created_at"]
    list_filter = ["format", "builtin"]
    search_fields = ["name", "description", "checksum"]
    readonly_fields = [
        "format",
        "protocol",
        "row_count",
        "size_bytes",
        "checksum",
        "columns",
        "preview",
        "data_sources",
        "created_at",
    ]
