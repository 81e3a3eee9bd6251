"""Search-R1's corpus rows read whole or refused with the line at fault; its title/text split and passage format."""

import hashlib
import json

import pytest

from retrieval import CorpusError, load_corpus, passages_to_string, split_title_text
from tests.retrieval.conftest import ROWS, write_corpus


def test_rows_are_read_in_file_order_with_the_files_checksum(tmp_path):
    path = write_corpus(tmp_path / "c.jsonl")
    corpus = load_corpus(path)
    assert corpus.ids == tuple(row["id"] for row in ROWS)
    assert corpus.contents[1] == '"Zorblat"\nZorblat is a harbour city founded by Quenby Marsh in 1802.'
    assert corpus.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("not json at all", r"line 3: not JSON"),
        ('["a", "list"]', r"line 3: a JSON object is expected, got list"),
        ('{"contents": "\\"T\\"\\nx"}', r"line 3: missing 'id'"),
        ('{"id": "x"}', r"line 3: missing 'contents'"),
        ('{"id": 7, "contents": "\\"T\\"\\nx"}', r"line 3: 'id' must be a string, got int"),
        ('{"id": "x", "contents": null}', r"line 3: 'contents' must be a string, got NoneType"),
        ('{"id": "paris", "contents": "\\"T\\"\\nx"}', r"line 3: duplicate id 'paris' \(first on line 1\)"),
    ],
)
def test_a_malformed_line_is_refused_naming_its_line_number(tmp_path, bad_line, message):
    path = tmp_path / "c.jsonl"
    lines = [json.dumps(ROWS[0]), json.dumps(ROWS[1]), bad_line, json.dumps(ROWS[2])]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CorpusError, match=message):
        load_corpus(path)


def test_blank_lines_are_skipped_but_counted(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n\n   \n" + "{broken\n")
    with pytest.raises(CorpusError, match="line 4: not JSON"):
        load_corpus(path)


def test_bytes_that_are_not_utf8_are_refused_with_their_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(json.dumps(ROWS[0]).encode() + b"\n" + b'{"id": "\xff", "contents": "x"}\n')
    with pytest.raises(CorpusError, match="line 2: not UTF-8"):
        load_corpus(path)


def test_a_corpus_without_documents_is_refused(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text("\n\n")
    with pytest.raises(CorpusError, match="no documents"):
        load_corpus(path)


def test_title_is_the_first_line_with_its_quotes_and_text_the_rest():
    # search_r1/llm_agent/generation.py:465-466
    assert split_title_text('"Quenby Marsh"\nAn explorer.\nShe founded a city.') == (
        '"Quenby Marsh"',
        "An explorer.\nShe founded a city.",
    )
    assert split_title_text("no newline") == ("no newline", "")


def test_documents_carry_the_row_and_the_title_without_quotes(tmp_path):
    corpus = load_corpus(write_corpus(tmp_path / "c.jsonl"))
    assert corpus.document(3) == {
        "id": "marsh",
        "contents": '"Quenby Marsh"\nQuenby Marsh was an explorer born in Velloria.\nShe founded a city.',
        "title": "Quenby Marsh",
        "text": "Quenby Marsh was an explorer born in Velloria.\nShe founded a city.",
    }


def test_passages_render_as_search_r1_writes_them_into_information():
    # Search-R1's _passages2string (search_r1/llm_agent/generation.py:460-469) on the same two results.
    results = [
        {"document": {"id": "1", "contents": '"Zorblat"\nA harbour city.'}, "score": 2.0},
        {"document": {"id": "2", "contents": '"Quenby Marsh"\nAn explorer.\nShe founded a city.'}, "score": 1.0},
    ]
    expected = (
        'Doc 1(Title: "Zorblat") A harbour city.\n'
        'Doc 2(Title: "Quenby Marsh") An explorer.\nShe founded a city.\n'
    )
    assert passages_to_string(results) == expected
    assert passages_to_string([item["document"] for item in results]) == expected
    assert passages_to_string([]) == ""
