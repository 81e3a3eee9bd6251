"""`search`: Search-R1's search engine -- the model writes `<search> query </search>`, the passages come back in
`<information>`, and `<answer> … </answer>` ends the trajectory (the protocol's text: trainer.protocols.search_r1).

The loop is Search-R1's (PeterGriffinJin/Search-R1 @a14dc3a, search_r1/llm_agent/generation.py, `run_llm_loop`
:220-313 and `execute_predictions` :353-405), one trajectory at a time:

- each turn is generated up to the first `</search>` or `</answer>`; its action is the first
  `<(search|answer)>…</…>` in it (the protocol's `action`);
- a search is answered with the top-k passages of the run's retriever (tools.search_corpus searched in-process, or
  tools.search_url asked; trainer.envs.search.retriever), as `\\n\\n<information>{passages}</information>\\n\\n`;
- an answer ends the trajectory with nothing after it;
- a turn with neither -- a stop without a valid action, or the model's end of turn -- gets the fixed
  invalid-action text, as a reply to a turn without a call (Completion.replies);
- `tools.max_tool_calls` is Search-R1's `max_turns`: after that many turns (searches and invalid ones alike) the
  model generates once more, still cut at `</search>`/`</answer>`, and nothing is searched or appended after it
  (`do_search=False`, generation.py:279-302).

The trajectory's outcome (trainer.contract.SearchOutcomeIn) holds how it ended, Search-R1's action counts
(`turns_stats`, `valid_action_stats`, `valid_search_stats`, read by its trainer's env/ metrics,
verl/trainer/ppo/ray_trainer.py:266-276) and each search's query with the passages it got (id, title, score),
which the rollouts page shows.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from trainer.envs.base import CallContext, Environment, register_environment
from trainer.protocols.base import Protocol
from trainer.protocols.feedback import Feedback
from trainer.protocols.search_r1 import INVALID_ACTION, SearchR1, action, passages_to_string
from trainer.trajectory import ToolExecution

# What the outcome keeps of a passage's text for the rollouts page (the observation has all of it).
PASSAGE_TEXT_CHARS = 1_000


class SearchTaskError(ValueError):
    """A search trajectory without a retriever: the run names neither a corpus nor a retrieval URL."""


def _state(context: CallContext) -> dict[str, Any]:
    search = context.state.get("search")
    if search is None:
        search = context.state["search"] = {"turns": 0, "valid": 0, "valid_searches": 0, "searches": [], "end": None}
    return search


def _final(search: dict[str, Any], context: CallContext) -> bool:
    """Whether the turn being generated is the last one, after `max_turns` turns: nothing is searched after it."""
    return context.max_calls is not None and search["turns"] >= context.max_calls


def _passage(item: dict[str, Any]) -> dict[str, Any]:
    document = item.get("document", item)
    contents = str(document.get("contents", ""))
    title, _, text = contents.partition("\n")
    score = item.get("score")
    return {
        "id": str(document.get("id", "")),
        "title": title.strip('"'),
        "score": float(score) if isinstance(score, int | float) else None,
        "text": text[:PASSAGE_TEXT_CHARS],
    }


@register_environment
class SearchEnvironment(Environment):
    name: ClassVar[str] = "search"
    description: ClassVar[str] = (
        "Search-R1's search engine: <search> gets the top-k passages of a BM25 corpus or a retrieval server, "
        "<answer> ends the trajectory"
    )

    def stop_strings(self, protocol: Protocol, calls_made: int, budget: int | None) -> list[str]:
        # Every turn is cut at </search> or </answer>, the last one too; the turn limit is the environment's.
        return protocol.stop_strings(calls_made, budget)

    def is_call(self, protocol: Protocol, stopped: str) -> bool:
        # A stop without a valid action is answered like a turn without a call: with the invalid-action text.
        assert isinstance(protocol, SearchR1), protocol.name
        kind, _ = action(protocol.turn(stopped))
        return kind is not None

    async def run_call(
        self, protocol: Protocol, stopped: str, feedback: Feedback, context: CallContext
    ) -> ToolExecution | None:
        assert isinstance(protocol, SearchR1), protocol.name
        search = _state(context)
        kind, query = action(protocol.turn(stopped))
        search["valid"] += 1
        if kind == "answer":
            search["end"] = "answered"
            return None
        search["valid_searches"] += 1
        if _final(search, context):
            # The last generation's search is searched for nothing and nothing follows it (do_search=False).
            search["end"] = "max_turns"
            return None
        if context.retriever is None:
            raise SearchTaskError(
                "the search environment needs a retriever: set tools.search_corpus or tools.search_url"
            )
        search["turns"] += 1
        results = await asyncio.to_thread(context.retriever.search, query)
        search["searches"].append({"query": query, "passages": [_passage(item) for item in results]})
        return ToolExecution(call=query, status="ok", output=passages_to_string(results))

    def append_output(
        self, protocol: Protocol, stopped: str, execution: ToolExecution | None, feedback: Feedback
    ) -> str:
        if execution is None:
            return stopped  # an answer, or the last turn's search: nothing follows
        return protocol.append_output(stopped, execution, feedback=feedback)

    def on_no_call(self, protocol: Protocol, context: CallContext) -> str | None:
        search = _state(context)
        if _final(search, context):
            search["end"] = "max_turns"
            return None
        search["turns"] += 1
        return INVALID_ACTION

    def finished(self, context: CallContext) -> bool:
        search = context.state.get("search")
        return search is not None and search["end"] is not None

    async def outcome(self, protocol: Protocol, context: CallContext, *, truncated: bool) -> dict[str, Any] | None:
        search = _state(context)
        end = search["end"] or ("context_full" if truncated else "no_answer")
        return {
            "kind": "search",
            "end": end,
            # Search-R1's turns_stats: 1, and 1 more for each turn of its main loop that left the trajectory
            # active (generation.py:224, 255) -- each search and each invalid turn.
            "actions": search["turns"] + 1,
            # valid_action_stats and valid_search_stats (generation.py:256-257, 297-298): the last turn's search
            # counts though nothing is searched for it.
            "valid_actions": search["valid"],
            "valid_searches": search["valid_searches"],
            "searches": search["searches"],
        }
