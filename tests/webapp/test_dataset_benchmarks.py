"""A mixed evaluation file (ToRL's test parquet, tests/torl_data.py) is split into its benchmarks by data source:
the counts are stored at upload, listed on its page, and each filters the preview to its rows."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.torl_data import torl_test_parquet_bytes
from tests.webapp.conftest import client_for
from trainer.data.datasets import BUILTIN_FILES, data_source_counts
from webapp.datasets.models import Dataset
from webapp.datasets.services import builtin_datasets_seed, dataset_create_from_upload

pytestmark = pytest.mark.django_db

# ToRL's three runs of rows, in its file's order (aime24, math500, aime25), smaller.
COUNTS = {"aime24": 3, "math500": 4, "aime25": 2}


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def page_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def torl_test(owner) -> Dataset:
    upload = SimpleUploadedFile("test.parquet", torl_test_parquet_bytes(COUNTS))
    return dataset_create_from_upload(user=owner, upload=upload, name="torl test")


def row_sources(html: str) -> list[str]:
    return re.findall(r'class="hint row-source">· <code>([^<]+)</code>', html)


def row_numbers(html: str) -> list[int]:
    return [int(number) for number in re.findall(r"<h3>Row (\d+) ", html)]


def test_an_upload_through_the_page_stores_the_rows_of_each_benchmark_in_file_order(owner):
    upload = SimpleUploadedFile("test.parquet", torl_test_parquet_bytes(COUNTS))
    response = page_for(owner).post("/datasets/", {"file": upload})
    assert response.status_code == 302
    assert list(Dataset.objects.get().data_source_rows.items()) == list(COUNTS.items())


def test_the_api_shows_the_benchmarks_and_does_not_let_them_be_changed(owner, torl_test):
    api = client_for(owner)
    body = api.get(f"/api/v1/datasets/{torl_test.pk}/").json()
    assert list(body["data_sources"].items()) == list(COUNTS.items())
    changed = api.patch(f"/api/v1/datasets/{torl_test.pk}/", {"data_sources": {"aime24": 1}}, format="json")
    assert changed.status_code == 200 and changed.json()["data_sources"] == COUNTS


def test_the_page_lists_each_benchmark_with_its_rows_as_a_link(owner, torl_test):
    html = page_for(owner).get(f"/datasets/{torl_test.pk}/").content.decode()
    links = re.findall(r'<a href="\?source=([^"]+)" data-source="[^"]+">([^ ]+) <span class="rows">(\d+)</span>', html)
    assert links == [(name, name, str(count)) for name, count in COUNTS.items()]
    assert row_sources(html) == ["aime24"] * 3 + ["math500"] * 2


def test_a_source_shows_only_that_benchmarks_rows_numbered_by_their_place_in_the_file(owner, torl_test):
    html = page_for(owner).get(f"/datasets/{torl_test.pk}/?source=math500&rows=3").content.decode()
    assert row_sources(html) == ["math500"] * 3
    assert row_numbers(html) == [4, 5, 6]
    assert "The rows of <code>math500</code> only (4 of 9)" in html
    assert '<input type="hidden" name="source" value="math500">' in html


def test_a_benchmark_link_keeps_the_other_query_parameters(owner, torl_test):
    html = page_for(owner).get(f"/datasets/{torl_test.pk}/?protocol=retool&rows=2&source=aime24").content.decode()
    assert 'href="?protocol=retool&amp;rows=2&amp;source=aime25" data-source="aime25">' in html
    assert 'href="?protocol=retool&amp;rows=2&amp;source=aime24" data-source="aime24" aria-current="true">' in html
    assert 'href="?protocol=retool&amp;rows=2">all' in html


def test_an_unknown_source_shows_no_rows_and_names_the_datasets_sources(owner, torl_test):
    response = page_for(owner).get(f"/datasets/{torl_test.pk}/?source=amc23")
    html = response.content.decode()
    assert response.status_code == 200
    assert row_numbers(html) == []
    assert "No rows of data source &#x27;amc23&#x27;; this dataset&#x27;s are aime24, math500, aime25." in html


def test_another_users_dataset_and_its_benchmarks_stay_hidden(owner, stranger, staff, torl_test):
    path = f"/datasets/{torl_test.pk}/?source=aime24"
    assert page_for(stranger).get(path).status_code == 404
    assert row_sources(page_for(staff).get(path).content.decode()) == ["aime24"] * 3


def test_a_dataset_stored_before_the_counts_gets_them_counted_once_when_its_page_opens(owner, torl_test):
    Dataset.objects.filter(pk=torl_test.pk).update(data_sources=[])
    client = page_for(owner)
    client.get(f"/datasets/{torl_test.pk}/")
    assert list(Dataset.objects.get(pk=torl_test.pk).data_source_rows.items()) == list(COUNTS.items())
    with CaptureQueriesContext(connection) as queries:
        html = client.get(f"/datasets/{torl_test.pk}/").content.decode()
    assert not [query for query in queries.captured_queries if query["sql"].startswith("UPDATE")]
    assert 'data-source="aime25"' in html


def test_the_list_says_how_many_benchmarks_a_dataset_mixes(owner, torl_test):
    html = page_for(owner).get("/datasets/").content.decode()
    assert '9 <span class="hint">· 3 benchmarks</span>' in html


def test_a_builtin_dataset_is_seeded_with_its_data_sources(owner):
    seeded = {dataset.name: dataset.data_source_rows for dataset in builtin_datasets_seed()}
    assert seeded == {name: data_source_counts(dataset.path) for name, dataset in BUILTIN_FILES.items()}
    assert seeded["toolrl-test"] == {"rlla": 80}
