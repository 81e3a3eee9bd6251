"""Writes to datasets, with one set of rules for the datasets page and the API: an upload is
validated in full before anything is stored; built-in datasets and other users' cannot be changed."""

import tempfile
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files import File
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from trainer.data.datasets import BUILTIN_FILES, DatasetError, DatasetInfo, inspect_dataset
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
    }


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


def builtin_datasets_seed() -> list[Dataset]:
    """The trainer's built-in dataset files as rows, so a name means the same file on both sides."""
    return [
        dataset_register_builtin(name=dataset.name, path=dataset.path, description=dataset.description)
        for dataset in BUILTIN_FILES.values()
    ]


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
