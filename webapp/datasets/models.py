from django.db import models

from webapp.core.models import SharedQuerySet, owner_field


class Dataset(models.Model):
    """A dataset file on disk; rows are read by the trainer, never copied into Postgres.

    Problems for RL (data.train_dataset, data.val_dataset) in every format but `sft_traces`, whose
    rows are traces for the SFT cold start (sft.dataset), and `search_corpus`, whose rows are the documents a
    search run searches (tools.search_corpus); trainer.data.datasets tells which, at upload, and
    webapp.datasets.services tells a corpus (retrieval.load_corpus)."""

    FORMATS = [
        ("jsonl_qa", "JSONL question/answer"),
        ("gsm8k", "GSM8K JSONL"),
        ("verl_parquet", "verl parquet"),
        ("function_calling", "function-calling JSONL"),
        ("sft_traces", "SFT traces JSONL"),
        ("swe", "software-engineering rows (SWE-Gym, SWE-bench)"),
        ("search_corpus", "Search-R1 retrieval corpus JSONL"),
    ]
    CORPUS = "search_corpus"

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    owner = owner_field(null=True)
    builtin = models.BooleanField(default=False)
    file = models.FileField(upload_to="datasets/%Y/%m/", blank=True)
    path = models.CharField(max_length=500, blank=True, help_text="File path of a built-in dataset.")
    original_filename = models.CharField(max_length=255, blank=True)
    format = models.CharField(max_length=32, choices=FORMATS)
    protocol = models.CharField(
        max_length=32,
        blank=True,
        help_text="The tool protocol SFT traces are written in; empty for problems and for traces without a tool call.",
    )
    row_count = models.PositiveIntegerField()
    size_bytes = models.BigIntegerField()
    checksum = models.CharField(max_length=64, help_text="sha256 of the file")
    columns = models.JSONField(default=list)
    preview = models.JSONField(default=list)
    # [data source, rows] pairs, not an object: jsonb keeps an object's keys in its own order, and these keep the
    # file's (ToRL's test parquet: aime24, math500, aime25). `data_source_rows` reads them as a dict.
    data_sources = models.JSONField(
        default=list,
        blank=True,
        help_text="[data source, rows] per benchmark, in order of first appearance; empty for SFT traces and "
        "corpora, and for problems stored before they were counted (services.dataset_count_data_sources).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SharedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["name"], condition=models.Q(builtin=True), name="dataset_builtin_name_unique"
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def file_path(self) -> str:
        return self.path if self.builtin else self.file.path

    @property
    def is_corpus(self) -> bool:
        """Documents to search (tools.search_corpus, POST .../retrieve), not problems or traces."""
        return self.format == self.CORPUS

    @property
    def data_source_rows(self) -> dict[str, int]:
        """Rows per data source, in the file's order of first appearance."""
        return {source: rows for source, rows in self.data_sources}

    @property
    def offers_tools(self) -> bool:
        """Whether its rows offer tools to call (function calling), as the stored preview rows say."""
        return any(row.get("tools") is not None for row in self.preview if isinstance(row, dict))
