"""Writes to datasets: an upload is validated in full before anything is stored."""

import tempfile
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files import File
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from trainer.data import DatasetError, DatasetInfo, inspect_dataset
from webapp.datasets.models import Dataset


def _fields(info: DatasetInfo) -> dict:
    return {
        "format": info.format.value,
        "row_count": info.row_count,
        "size_bytes": info.size_bytes,
        "checksum": info.checksum,
        "columns": info.columns,
        "preview": info.preview,
    }


def dataset_create_from_upload(
    *, user: AbstractBaseUser, upload: UploadedFile, name: str = "", description: str = ""
) -> Dataset:
    """Validate an uploaded file and store it; raises DatasetError and stores nothing if it is bad."""
    if upload.size is not None and upload.size > settings.DATASET_MAX_BYTES:
        mb = 1024 * 1024
        raise DatasetError(
            f"file is {upload.size / mb:.1f} MB, over the limit of {settings.DATASET_MAX_BYTES / mb:.0f} MB"
        )
    with tempfile.NamedTemporaryFile(suffix=Path(upload.name or "").suffix) as tmp:
        for chunk in upload.chunks():
            tmp.write(chunk)
        tmp.flush()
        info = inspect_dataset(Path(tmp.name), max_bytes=settings.DATASET_MAX_BYTES, filename=upload.name)
        dataset = Dataset(
            name=name or Path(upload.name or "dataset").stem,
            description=description,
            owner=user,
            original_filename=upload.name or "",
            **_fields(info),
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


def dataset_delete(*, dataset: Dataset) -> None:
    stored = dataset.file.name if dataset.file else ""
    with transaction.atomic():
        dataset.delete()
        if stored:
            transaction.on_commit(lambda: dataset.file.storage.delete(stored))
