"""Writes to datasets, with one set of rules for the datasets page and the API: an upload is
validated in full before anything is stored; built-in datasets and other users' cannot be changed.

A retrieval corpus in Search-R1's jsonl format (`{"id", "contents"}` rows) is stored as a dataset of format
`search_corpus`: a jsonl file whose first row has `contents` and that is no dataset trainer.data.datasets knows is
read whole with retrieval.load_corpus at upload. Its BM25 index is built lazily, on first use (`corpus_index`, the
dashboard's /retrieve; the trainer's search environment alike), cached under trainer.data.corpora.index_dir() by the
file's sha256, so it is built once per machine whoever asks first."""

import json
import tempfile
import threading
from collections import OrderedDict
from itertools import islice
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files import File
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from retrieval import BM25Index, CorpusError, load_corpus, split_title_text
from trainer.data.corpora import index_dir
from trainer.data.datasets import (
    BUILTIN_FILES,
    DatasetError,
    DatasetFormat,
    DatasetInfo,
    data_source_counts,
    detect_format,
    inspect_dataset,
)
from webapp.core.permissions import may_change
from webapp.datasets.models import Dataset

NAME_MAX = Dataset._meta.get_field("name").max_length


def _fields(info: DatasetInfo) -> dict:
    return {
        "format": info.format.value,
        "row_count": info.row_count,
        "size_bytes": info.size_bytes,
        "checksum": info.checksum,
        "columns": info.columns,
        "preview": info.preview,
        "protocol": info.protocol or "",
        "data_sources": list(info.data_sources.items()),
    }


PREVIEW_DOCUMENTS = 5
# A corpus row's preview text is cut to this many characters (the file keeps it whole).
PREVIEW_TEXT_CHARS = 500


def _first_record(path: Path) -> object:
    """The first non-blank line of a jsonl file, decoded; None when it is not JSON (or the file is not text)."""
    try:
        with path.open("rb") as file:
            for raw in file:
                if raw.strip():
                    return json.loads(raw.decode("utf-8").removeprefix("\ufeff"))
    except (OSError, ValueError):
        return None
    return None


def is_corpus_file(path: Path) -> bool:
    """Whether a file is meant as a retrieval corpus: its first row has `contents` and it is no dataset that
    trainer.data.datasets recognises (every file detected before keeps its format)."""
    record = _first_record(path)
    if not isinstance(record, dict) or "contents" not in record:
        return False
    try:
        detect_format(path)
    except DatasetError:
        return True
    return False


def corpus_document_view(row: dict) -> dict:
    """A corpus row as a preview shows it: its id, the title (quotes stripped) and the text, cut."""
    title, text = split_title_text(row["contents"])
    cut = text if len(text) <= PREVIEW_TEXT_CHARS else text[:PREVIEW_TEXT_CHARS] + "…"
    return {"id": row["id"], "title": title.strip('"'), "text": cut}


def _corpus_fields(path: Path, *, filename: str | None) -> dict:
    """What is stored of a corpus file read whole with retrieval.load_corpus; DatasetError naming the line of the
    first bad row otherwise."""
    try:
        corpus = load_corpus(path)
    except CorpusError as exc:
        raise DatasetError(f"retrieval corpus: {exc}", filename=filename) from None
    return {
        "format": Dataset.CORPUS,
        "row_count": len(corpus),
        "size_bytes": path.stat().st_size,
        "checksum": corpus.sha256,
        "columns": ["id", "contents"],
        "preview": [
            corpus_document_view({"id": corpus.ids[i], "contents": corpus.contents[i]})
            for i in range(min(PREVIEW_DOCUMENTS, len(corpus)))
        ],
        "protocol": "",
    }


def corpus_documents(dataset: Dataset, count: int) -> list[dict]:
    """The first `count` documents of a stored corpus (validated whole at upload), as previews show them."""
    with Path(dataset.file_path).open(encoding="utf-8") as file:
        rows = (json.loads(line) for line in file if line.strip())
        return [corpus_document_view(row) for row in islice(rows, count)]


_INDEXES: OrderedDict[tuple[str, str], BM25Index] = OrderedDict()
_INDEXES_LOCK = threading.Lock()
# Indexes this process keeps loaded (the corpus rows in memory, the index memory-mapped).
INDEXES_KEPT = 4


def corpus_index(dataset: Dataset) -> BM25Index:
    """The BM25 index of a stored corpus: kept in this process once loaded, read from the cache under
    trainer.data.corpora.index_dir() (where the trainer's search environment reads it too), built there on the
    first use of this file's content."""
    key = (dataset.file_path, dataset.checksum)
    with _INDEXES_LOCK:
        if key in _INDEXES:
            _INDEXES.move_to_end(key)
            return _INDEXES[key]
        index = BM25Index.load(load_corpus(dataset.file_path), index_dir())
        _INDEXES[key] = index
        while len(_INDEXES) > INDEXES_KEPT:
            _INDEXES.popitem(last=False)
        return index


def _check_name(name: str) -> None:
    if len(name) > NAME_MAX:
        raise ValidationError({"name": [f"At most {NAME_MAX} characters."]})


def dataset_create_from_upload(
    *, user: AbstractBaseUser, upload: UploadedFile, name: str = "", description: str = ""
) -> Dataset:
    """Validate an uploaded file and store it, named `name` or after the file; raises DatasetError
    (the file) or ValidationError (the name) and stores nothing if either is bad."""
    name, description = name.strip(), description.strip()
    _check_name(name)
    if upload.size is not None and upload.size > settings.DATASET_MAX_BYTES:
        mb = 1024 * 1024
        raise DatasetError(
            f"file is {upload.size / mb:.1f} MB, over the limit of {settings.DATASET_MAX_BYTES / mb:.0f} MB"
        )
    with tempfile.NamedTemporaryFile(suffix=Path(upload.name or "").suffix) as tmp:
        for chunk in upload.chunks():
            tmp.write(chunk)
        tmp.flush()
        if is_corpus_file(Path(tmp.name)):
            fields = _corpus_fields(Path(tmp.name), filename=upload.name)
        else:
            fields = _fields(
                inspect_dataset(Path(tmp.name), max_bytes=settings.DATASET_MAX_BYTES, filename=upload.name)
            )
        dataset = Dataset(
            name=name or Path(upload.name or "dataset").stem,
            description=description,
            owner=user,
            original_filename=upload.name or "",
            **fields,
        )
        tmp.seek(0)
        dataset.file.save(Path(upload.name or "dataset").name, File(tmp), save=False)
    try:
        with transaction.atomic():
            dataset.save()
    except Exception:
        dataset.file.delete(save=False)
        raise
    return dataset


def dataset_register_builtin(*, name: str, path: Path, description: str) -> Dataset:
    """Create or refresh a built-in dataset that lives in the repository."""
    info = inspect_dataset(path)
    dataset, _ = Dataset.objects.update_or_create(
        builtin=True,
        name=name,
        defaults={"description": description, "path": str(path), "original_filename": path.name, **_fields(info)},
    )
    return dataset


def builtin_datasets_seed() -> list[Dataset]:
    """The trainer's built-in dataset files as rows, so a name means the same file on both sides."""
    return [
        dataset_register_builtin(name=dataset.name, path=dataset.path, description=dataset.description)
        for dataset in BUILTIN_FILES.values()
    ]


def dataset_count_data_sources(*, dataset: Dataset) -> dict[str, int]:
    """A dataset of problems' rows per data source, as stored at upload; a dataset stored before they were counted
    (none stored: a file of problems has at least one row) has them counted from its file now, once, and stored.
    Traces and corpora have none; nor does a file that cannot be read any more (its page says why)."""
    if dataset.data_sources or dataset.is_corpus or dataset.format == DatasetFormat.SFT_TRACES.value:
        return dataset.data_source_rows
    try:
        counts = data_source_counts(Path(dataset.file_path), DatasetFormat(dataset.format))
    except (DatasetError, OSError, ValueError):
        return {}
    dataset.data_sources = list(counts.items())
    dataset.save(update_fields=["data_sources"])
    return counts


def _check_may_change(dataset: Dataset, user: AbstractBaseUser) -> None:
    if not may_change(user, dataset):
        raise PermissionDenied("Built-in datasets and other users' datasets cannot be changed.")


def dataset_update(
    *, dataset: Dataset, user: AbstractBaseUser, name: str | None = None, description: str | None = None
) -> Dataset:
    """Rename or describe a dataset; its file and what was read from it never change."""
    _check_may_change(dataset, user)
    if name is not None:
        name = name.strip()
        if not name:
            raise ValidationError({"name": ["Give the dataset a name."]})
        _check_name(name)
        dataset.name = name
    if description is not None:
        dataset.description = description.strip()
    dataset.save(update_fields=["name", "description"])
    return dataset


def dataset_delete(*, dataset: Dataset, user: AbstractBaseUser) -> None:
    """Delete the row, and its stored file once that commits."""
    _check_may_change(dataset, user)
    stored = dataset.file.name if dataset.file else ""
    with transaction.atomic():
        dataset.delete()
        if stored:
            transaction.on_commit(lambda: dataset.file.storage.delete(stored))
