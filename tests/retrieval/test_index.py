"""BM25 ranking on the hand corpus, its determinism, and the on-disk cache keyed by the corpus file's sha256."""

import bm25s
import pytest

from retrieval import BM25Index, load_corpus
from retrieval.index import tokenize
from tests.retrieval.conftest import ROWS, write_corpus


def ranked_ids(index: BM25Index, query: str, k: int = 10) -> list[str]:
    return [index.corpus.ids[hit.index] for hit in index.search(query, k)]


def test_the_document_with_the_querys_rare_term_ranks_first(index):
    # "city" is in four documents, "harbour" in one: that one wins.
    assert ranked_ids(index, "which harbour city")[0] == "zorblat"
    assert ranked_ids(index, "explorer")[0] == "marsh"


def test_scores_are_positive_and_descending(index):
    hits = index.search("city founded by Quenby Marsh", 10)
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    # The two passages naming Quenby Marsh come before those sharing only "city".
    assert set(ranked_ids(index, "city founded by Quenby Marsh")[:2]) == {"zorblat", "marsh"}


def test_only_documents_sharing_a_term_are_hits_as_in_lucene(index):
    assert ranked_ids(index, "bridges") == ["velloria-a", "velloria-b"]
    assert index.search("unicorns xylophone", 3) == []
    assert index.search("the of and", 3) == []  # stop words only
    assert index.search("", 3) == []


def test_topk_cuts_the_ranking(index):
    assert len(index.search("city", 2)) == 2
    assert ranked_ids(index, "city", 2) == ranked_ids(index, "city", 10)[:2]


def test_equal_scores_keep_corpus_order(tmp_path):
    # Two identical passages: whichever comes first in the file comes first in the answer, whatever its id.
    forward = BM25Index.load(load_corpus(write_corpus(tmp_path / "a.jsonl")), tmp_path / "cache")
    reordered = [ROWS[5], *ROWS[:5]]
    backward = BM25Index.load(load_corpus(write_corpus(tmp_path / "b.jsonl", reordered)), tmp_path / "cache")
    assert ranked_ids(forward, "bridges") == ["velloria-a", "velloria-b"]
    assert ranked_ids(backward, "bridges") == ["velloria-b", "velloria-a"]
    hits = forward.search("bridges", 2)
    assert hits[0].score == hits[1].score


def test_the_tokenizer_lowercases_splits_words_and_drops_lucenes_stop_words():
    assert tokenize("The Capital of FRANCE, in 1802?") == ["capital", "france", "1802"]


def test_a_second_load_of_the_same_corpus_reads_the_cache(tmp_path, monkeypatch):
    path = write_corpus(tmp_path / "c.jsonl")
    first = BM25Index.load(load_corpus(path), tmp_path / "cache")
    assert first.built and (first.path / "tirlab-index.json").is_file()
    assert first.corpus.sha256 in first.path.name

    def no_indexing(*args, **kwargs):
        raise AssertionError("the corpus was indexed again")

    monkeypatch.setattr(bm25s.BM25, "index", no_indexing)
    # A copy of the file elsewhere is the same corpus: the key is its content, not its path.
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    second = BM25Index.load(load_corpus(copy), tmp_path / "cache")
    assert not second.built and second.path == first.path
    assert [(h.index, h.score) for h in second.search("harbour city", 3)] == [
        (h.index, h.score) for h in first.search("harbour city", 3)
    ]
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [first.path.name]  # nothing half-built left behind


def test_a_changed_corpus_is_indexed_anew(tmp_path):
    path = write_corpus(tmp_path / "c.jsonl")
    first = BM25Index.load(load_corpus(path), tmp_path / "cache")
    write_corpus(path, [*ROWS, {"id": "new", "contents": '"Orrin"\nOrrin is a river.'}])
    second = BM25Index.load(load_corpus(path), tmp_path / "cache")
    assert second.built and second.path != first.path
    assert ranked_ids(second, "river") == ["new"]


def test_a_damaged_cache_is_rebuilt(tmp_path):
    path = write_corpus(tmp_path / "c.jsonl")
    first = BM25Index.load(load_corpus(path), tmp_path / "cache")
    (first.path / "tirlab-index.json").write_text("{not json")
    again = BM25Index.load(load_corpus(path), tmp_path / "cache")
    assert again.built and ranked_ids(again, "harbour")[0] == "zorblat"


@pytest.mark.parametrize("k", [0, -1])
def test_no_hits_are_asked_for_none_are_given(index, k):
    assert index.search("city", k) == []
