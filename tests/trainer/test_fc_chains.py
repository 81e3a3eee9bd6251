"""Tool chains (ARTIST's multi-turn function calling at CPU scale): a second call that needs the first
call's result, ground truths the sandbox agrees with, and SFT traces ARTIST's reward scores as meant."""

import asyncio
import json

import pytest

from trainer.data.datasets import load_dataset
from trainer.data.function_calling import TOOLS
from trainer.data.sft_traces import parse_record
from trainer.data.tool_chains import tool_chain_examples
from trainer.envs.tools.run import execute_calls
from trainer.rewards import score
from trainer.sft.traces.tool_chains import CHAIN_FLAWS, tool_chain_traces
from trainer.trajectory import Completion, ToolExecution


def test_a_chain_books_the_flight_its_lookup_returns_in_the_sandbox():
    (chain,) = tool_chain_examples(1, seed=4, level="chain", split="test")
    lookup, book = chain.ground_truth["calls"]
    assert lookup["name"] == "find_flight" and book["name"] == "book_flight"
    assert chain.extra_info == {"difficulty": "chain", "calls": 2}
    found = asyncio.run(execute_calls(json.dumps(lookup), chain.tools))
    result = json.loads(found.output)["result"]
    # The first flight search_flights lists for the route, alone: a short result to read the number from.
    searched = asyncio.run(
        execute_calls(json.dumps({**lookup, "name": "search_flights"}), [TOOLS["search_flights"].schema()])
    )
    assert result["flight"] == json.loads(searched.output)["result"]["flights"][0]["flight"]
    assert result["flight"] == book["arguments"]["flight"] and set(result) == {"flight", "departs"}
    booked = asyncio.run(execute_calls(json.dumps(book), chain.tools, state=found.state))
    assert booked.status == "ok" and booked.state == chain.ground_truth["state"]


def test_the_generator_is_seeded_and_named_in_the_data_loader():
    assert tool_chain_examples(20, seed=1) == tool_chain_examples(20, seed=1)
    rows = load_dataset("tool-chains:one", split="train", size=5)
    assert all(len(r.ground_truth["calls"]) == 1 and len(r.tools) == 3 for r in rows)
    with pytest.raises(Exception, match="unknown tool-chains level 'three'"):
        load_dataset("tool-chains:three", split="train", size=5)


def test_the_traces_score_full_marks_except_where_they_are_flawed_on_purpose():
    rows = tool_chain_traces(300, seed=0, flaws=CHAIN_FLAWS)
    examples = tool_chain_examples(300, seed=0, split="sft")
    totals = {"one": [], "chain": []}
    for row, example in zip(rows, examples, strict=True):
        record = parse_record(row, protocol="artist_fc", number=1, where="row")
        assert record.tool_outputs == row["tool_outputs"]
        booked = [json.loads(b.split("\n</tool>")[0])["arguments"] for b in row["response"].split("<tool>\n")[1:]]
        state = {"flight_bookings": [b for b in booked if "flight" in b]}
        executions = tuple(ToolExecution(call="", status="ok", state=state) for _ in range(row["tool_outputs"]))
        result = score("artist_fc", Completion(row["response"], "artist_fc", executions), example.ground_truth)
        totals[example.extra_info["difficulty"]].append(round(result.total, 3))
    # One-call tasks are always right; chains are right, booked unsearched (format only) or searched only.
    assert set(totals["one"]) == {1.2}
    assert set(totals["chain"]) == {1.2, 0.2, 0.45}
    share = {t: totals["chain"].count(t) / len(totals["chain"]) for t in (0.2, 0.45)}
    assert share[0.2] == pytest.approx(CHAIN_FLAWS["book_unsearched"], abs=0.1)
    assert share[0.45] == pytest.approx(CHAIN_FLAWS["search_only"], abs=0.1)
