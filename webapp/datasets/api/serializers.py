from rest_framework import serializers

from webapp.datasets.models import Dataset


class DatasetSerializer(serializers.ModelSerializer):
    """The shape of a dataset; what its name may be is webapp.datasets.services'."""

    name = serializers.CharField(allow_blank=True)
    owner = serializers.CharField(source="owner.username", read_only=True, allow_null=True, default=None)
    data_sources = serializers.DictField(
        child=serializers.IntegerField(),
        source="data_source_rows",
        read_only=True,
        help_text="Rows per data source (benchmark), in order of first appearance; {} for SFT traces and corpora.",
    )

    class Meta:
        model = Dataset
        fields = [
            "id",
            "name",
            "description",
            "owner",
            "builtin",
            "original_filename",
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
        read_only_fields = [f for f in fields if f not in ("name", "description")]


class DatasetUploadSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="JSONL (question/answer, GSM8K, function calling, SFT traces, a Search-R1 retrieval corpus) "
        "or verl parquet."
    )
    name = serializers.CharField(required=False, allow_blank=True, help_text="Default: the file's name.")
    description = serializers.CharField(required=False, allow_blank=True)
