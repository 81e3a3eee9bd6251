"""search_r1 (Search-R1): `<search> query </search>` asks a search engine, the passages come back in
`<information>`, the final answer is `<answer> … </answer>`.

Sources: PeterGriffinJin/Search-R1 @a14dc3a, search_r1/llm_agent/generation.py (docs/fidelity.md,
"Search-R1's protocol"). Search-R1 generates a whole turn and then cuts it after the first `</search>`, else
after the first `</answer>` (`cut`, generation.py:61-66); the turn's action is the first
`<(search|answer)>…</…>` in it (`action`, generation.py:422-425). A search is answered with
`\\n\\n<information>{passages}</information>\\n\\n` (generation.py:391), an answer ends the trajectory with
nothing after it (generation.py:385-389), and a turn with neither gets the fixed `INVALID_ACTION` text
(generation.py:396-398). Every observation, the invalid-action text included, is masked from the loss
(generation.py:120-134: the whole observation gets the information mask).

tirlab's engines stop at the stop strings instead of cutting afterwards and keep the stop string in the
text, so a turn stopped at `</search>` or `</answer>` is what `cut` leaves of the whole generation, except
where the model writes `</answer>` before `</search>` (docs/fidelity.md says what changes then).

The searching itself, the turn limit and what follows a turn without a call are the environment's
(`trainer.envs`); this module is the text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from trainer.protocols.base import Protocol, register_protocol
from trainer.protocols.feedback import TIRLAB_FEEDBACK, Feedback
from trainer.trajectory import ToolExecution

SEARCH_END, ANSWER_END = "</search>", "</answer>"

# generation.py:396-398: a string literal continued over three lines with backslashes, so one line of text.
INVALID_ACTION = (
    "\nMy previous action is invalid. "
    "If I want to search, I should put the query between <search> and </search>. "
    "If I want to give the final answer, I should put the answer between <answer> and </answer>. "
    "Let me try again.\n"
)

Action = Literal["search", "answer"]

# generation.py:422 (re.DOTALL, :423): the first search or answer block, closed by its own tag.
_ACTION = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
# What the environment inserts after a turn: search results, or the invalid-action text.
_OBSERVATION = re.compile(rf"(?P<tool>\n\n<information>.*?</information>\n\n|{re.escape(INVALID_ACTION)})", re.DOTALL)


def cut(response: str) -> str:
    """A whole generated turn as Search-R1 keeps it: up to and with the first `</search>`, else the first
    `</answer>`, else all of it (generation.py:61-66). `</search>` wins wherever `</answer>` is."""
    if SEARCH_END in response:
        return response.split(SEARCH_END)[0] + SEARCH_END
    if ANSWER_END in response:
        return response.split(ANSWER_END)[0] + ANSWER_END
    return response


def action(turn: str) -> tuple[Action | None, str]:
    """The turn's action and its content, stripped: the first `<search>…</search>` or `<answer>…</answer>`
    of the turn; (None, "") for an invalid turn (generation.py:420-434)."""
    match = _ACTION.search(turn)
    if match is None:
        return None, ""
    kind: Action = "search" if match.group(1) == "search" else "answer"
    return kind, match.group(2).strip()


def passages_to_string(results: Sequence[Mapping[str, Any]]) -> str:
    """One query's retrieved passages as Search-R1 writes them into `<information>`: `Doc {i}(Title: {title})
    {text}` and a newline for each, the title the first line of `contents` and the text the lines after it
    (generation.py:460-469). Takes the items of one query's list in a `/retrieve` answer, scored
    (`{"document": {"id", "contents"}, "score"}`, what Search-R1's trainer asks for) or not (the documents).
    The retrieval service has the same function (retrieval.passages_to_string); the trainer does not import
    the service's package, whose index needs bm25s, so the two are checked against each other by a test."""
    out = ""
    for index, item in enumerate(results):
        contents = (item["document"] if "document" in item else item)["contents"]
        title, text = contents.split("\n")[0], "\n".join(contents.split("\n")[1:])
        out += f"Doc {index + 1}(Title: {title}) {text}\n"
    return out


@register_protocol
class SearchR1(Protocol):
    name: ClassVar[str] = "search_r1"
    # The call's end; an answer's end stops generation too (`stop_strings`).
    stop_marker: ClassVar[str | None] = SEARCH_END
    # Both kinds of observation are tool text: search results and the invalid-action text.
    tool_output_re: ClassVar[re.Pattern[str] | None] = _OBSERVATION
    # The query between the tags (a truncated one runs to the end), shown as the call.
    call_re: ClassVar[re.Pattern[str]] = re.compile(r"<search>(?P<call>.*?)(?=</search>|\Z)", re.DOTALL)
    call_language: ClassVar[str] = "text"
    environments: ClassVar[tuple[str, ...]] = ("search",)

    def stop_strings(self, calls_made: int, budget: int | None) -> list[str]:
        """`</search>` and `</answer>`, whatever the budget: Search-R1 cuts every turn at them, the last one
        after its turn limit too (generation.py:278-298, searching nothing then); the limit is the
        environment's."""
        return [SEARCH_END, ANSWER_END]

    def turn(self, text: str) -> str:
        """The text generated since the last observation: the turn Search-R1 reads the action of."""
        return self._after_last_output(text)

    def extract_call(self, text: str) -> str | None:
        """The query to search for, when the turn's action is a search."""
        kind, content = action(self.turn(text))
        return content if kind == "search" else None

    def wrap_output(self, result: ToolExecution | str, *, feedback: Feedback = TIRLAB_FEEDBACK) -> str:
        """The search results as Search-R1 returns them (generation.py:391): stripped, between
        `<information>` tags, two newlines either side. `feedback` does not apply: the passages are text."""
        passages = result.output if isinstance(result, ToolExecution) else result
        return f"\n\n<information>{passages.strip()}</information>\n\n"

    def information(self, results: Sequence[Mapping[str, Any]]) -> str:
        """The observation for one query's `/retrieve` results."""
        return self.wrap_output(passages_to_string(results))

    def tool_spans(self, response: str, *, tool_outputs: int | None = None) -> list[tuple[int, int]]:
        """Each observation. `tool_outputs` caps the search results (the executions) only: an invalid-action
        text follows a turn in which nothing ran, so it is no execution, and it is always tool text."""
        spans: list[tuple[int, int]] = []
        searches = 0
        for match in _OBSERVATION.finditer(response):
            if match.group("tool") != INVALID_ACTION:
                if tool_outputs is not None and searches >= tool_outputs:
                    continue
                searches += 1
            spans.append(match.span("tool"))
        return spans

    def count_tool_calls(self, response: str) -> int:
        """Searches made: the search results inserted (an invalid action searched nothing)."""
        return sum(text != INVALID_ACTION for text in self.tool_texts(response))

    def final_answer(self, response: str, *, tool_outputs: int | None = None) -> str | None:
        """The content of the last `<answer>` of the model's own text, stripped; None without one."""
        answers = _ANSWER.findall(self.model_text(response, tool_outputs=tool_outputs))
        return answers[-1].strip() if answers else None
