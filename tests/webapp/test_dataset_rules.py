"""Datasets through both doors: uploads, renames and deletes go through webapp.datasets.services,
so the datasets page and the API apply the same rules; built-in names mean the same file to the
dashboard and to the trainer's CLI."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.webapp.conftest import client_for
from trainer.data.datasets import BUILTIN_FILES, load_dataset
from webapp.datasets.models import Dataset
from webapp.datasets.services import builtin_datasets_seed, dataset_create_from_upload
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db

ROWS = json.dumps({"question": "1+1?", "answer": "2"}).encode() + b"\n"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def page_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_long_name_is_refused_by_both_doors_with_the_same_message(owner):
    name = "x" * 201
    page = page_for(owner).post("/datasets/", {"file": SimpleUploadedFile("a.jsonl", ROWS), "name": name})
    assert page.status_code == 400 and "At most 200 characters." in page.content.decode()
    api = client_for(owner).post(
        "/api/v1/datasets/", {"file": SimpleUploadedFile("a.jsonl", ROWS), "name": name}, format="multipart"
    )
    assert api.status_code == 400 and api.json() == {"name": ["At most 200 characters."]}
    assert not Dataset.objects.exists()


def test_renaming_through_the_api_follows_the_same_rules(owner, stranger):
    dataset = dataset_create_from_upload(user=owner, upload=SimpleUploadedFile("a.jsonl", ROWS))
    api = client_for(owner)
    assert api.patch(f"/api/v1/datasets/{dataset.pk}/", {"name": " "}, format="json").json() == {
        "name": ["Give the dataset a name."]
    }
    assert api.patch(f"/api/v1/datasets/{dataset.pk}/", {"name": " b "}, format="json").json()["name"] == "b"
    assert client_for(stranger).patch(f"/api/v1/datasets/{dataset.pk}/", {"name": "c"}).status_code == 404


def delete_from_the_page(user, dataset: Dataset) -> int:
    return page_for(user).post(f"/datasets/{dataset.pk}/delete").status_code


def delete_from_the_api(user, dataset: Dataset) -> int:
    return client_for(user).delete(f"/api/v1/datasets/{dataset.pk}/").status_code


@pytest.mark.parametrize("door", [delete_from_the_page, delete_from_the_api])
def test_who_may_delete_is_the_same_on_both_doors(door, owner, stranger, staff):
    builtin = builtin_datasets_seed()[0]
    mine = dataset_create_from_upload(user=owner, upload=SimpleUploadedFile("a.jsonl", ROWS))
    assert door(stranger, mine) == 404
    assert door(owner, builtin) == 403 and door(staff, builtin) == 403
    assert door(staff, mine) in (204, 302)
    assert not Dataset.objects.filter(pk=mine.pk).exists() and Dataset.objects.filter(pk=builtin.pk).exists()


def test_the_builtin_rows_are_the_trainers_files(owner):
    rows = {dataset.name: dataset for dataset in builtin_datasets_seed()}
    assert {name: row.path for name, row in rows.items()} == {
        name: str(dataset.path) for name, dataset in BUILTIN_FILES.items()
    }


@pytest.mark.parametrize("name", list(BUILTIN_FILES))
def test_a_builtin_name_is_the_same_file_from_the_dashboard_and_the_cli(owner, name):
    builtin_datasets_seed()
    run, _ = run_create(
        user=owner, name="r", config={"data": {"train_dataset": name, "val_dataset": name}}, managed=False
    )
    resolved = run.config["data"]
    assert resolved["train_dataset"] == resolved["val_dataset"] == str(BUILTIN_FILES[name].path)
    # The trainer loads a run's val_dataset as its test split: a built-in name still means its own file.
    for split in ("train", "test"):
        assert load_dataset(name, split=split, size=3) == load_dataset(resolved["val_dataset"], size=3)
