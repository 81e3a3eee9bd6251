"""Search-R1: 1.0 when the last <answer> exactly matches a golden answer after normalisation, else 0.

As PeterGriffinJin/Search-R1 @a14dc3a computes it (verl/utils/reward_score/qa_em.py): the answer is
the last `<answer>…</answer>` (stripped, qa_em.py:73-82), compared with every golden answer of the
row's `reward_model.ground_truth["target"]` after `normalize_answer` -- lower case, punctuation
removed, the words a/an/the removed, whitespace collapsed (qa_em.py:19-46). Search-R1 reads the last
answer of prompt + response and scores 0 when there are fewer than two (the prompt's instruction
holds one, "<answer> Beijing </answer>"); tirlab's reward sees the response only, so it reads the
response's last answer and scores 0 when there is none (docs/fidelity.md, "Search-R1's reward").

`format: true` is v0.3's format-aware reward (qa_em_format.py:154-197): a response whose tags follow
think → (search → information → think)* → answer with nothing but whitespace between them
(`is_valid_sequence`, qa_em_format.py:49-121) earns `structure_format_score` even when wrong, plus
`retrieval_score` when a golden answer appears in one of its <information> blocks; a right answer
in a broken structure gets 1 - `structure_format_score`; a wrong one `final_format_score`.
"""

import re
import string
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from trainer.protocols.calls import json_ground_truth
from trainer.rewards.base import Response, RewardContext, RewardParams, per_completion, register_reward
from trainer.trajectory import RewardResult

# Search-R1's score for a right answer (compute_score_em's `score`, qa_em.py:85, qa_em_format.py:154).
EM_SCORE = 1.0

_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_INFORMATION_RE = re.compile(r"<information>(.*?)</information>", re.DOTALL)
_ARTICLES_RE = re.compile(r"\b(a|an|the)\b")
_TAGS = ("think", "search", "information", "answer")
_TAG_SPLIT_RE = re.compile(r"(</?(?:think|search|information|answer)>)")
_TAG_RE = re.compile(r"</?(?:think|search|information|answer)>")
_PUNCTUATION = frozenset(string.punctuation)
# is_valid_sequence's state machine (qa_em_format.py:87-102): (tag, state it is allowed in) -> next state.
_TRANSITIONS = {
    ("<think>", "start"): "in_think",
    ("<think>", "information"): "in_think",
    ("</think>", "in_think"): "after_think",
    ("<search>", "after_think"): "in_search",
    ("</search>", "in_search"): "after_search",
    ("<information>", "after_search"): "in_information",
    ("</information>", "in_information"): "information",
    ("<answer>", "after_think"): "in_answer",
    ("</answer>", "in_answer"): "end",
}
_INSIDE = ("in_think", "in_search", "in_information", "in_answer")
_BETWEEN = ("start", "after_think", "after_search", "information")


class SearchR1Params(RewardParams):
    """Search-R1: exact match of the last <answer>, optionally v0.3's format-aware reward."""

    format: bool = Field(
        False,
        description="v0.3's format-aware reward (qa_em_format.py): score a valid think/search/information/answer "
        "structure even when the answer is wrong. Off: plain exact match, as Search-R1's paper trains.",
    )
    structure_format_score: float = Field(
        0.2,
        ge=0,
        le=EM_SCORE,
        description="With format: paid for a valid structure with a wrong or missing answer; a right answer in "
        "a broken structure gets 1 minus it (v0.3's scripts: 0.2).",
    )
    final_format_score: float = Field(
        0.1,
        ge=0,
        le=EM_SCORE,
        description="With format: paid for a wrong <answer> in a broken structure (v0.3's scripts: 0.1).",
    )
    retrieval_score: float = Field(
        0.0,
        ge=0,
        le=EM_SCORE,
        description="With format: added to structure_format_score when a golden answer appears in a retrieved "
        "<information> block and the answer is not right (v0.3's scripts: 0; the code's comments assume 0.1).",
    )


def normalize_answer(text: str) -> str:
    """qa_em.py:19-33: lower case, punctuation dropped, articles dropped, whitespace collapsed."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES_RE.sub(" ", text).split())


def em_check(prediction: str, golden_answers: Sequence[str]) -> bool:
    """qa_em.py:36-46: the normalised prediction equals some normalised golden answer."""
    normalized = normalize_answer(prediction)
    return any(normalize_answer(golden) == normalized for golden in golden_answers)


def last_answer(text: str) -> str | None:
    """The last complete <answer>…</answer> of the text, stripped; None without one."""
    matches = _ANSWER_RE.findall(text)
    return matches[-1].strip() if matches else None


def valid_sequence(content: str) -> tuple[bool, str]:
    """qa_em_format.py:49-121 on what follows the assistant marker: balanced tags, in the order
    think → (search → information → think)* → answer, only whitespace between them; why not, if not."""
    for tag in _TAGS:
        opening, closing = len(re.findall(f"<{tag}>", content)), len(re.findall(f"</{tag}>", content))
        if opening != closing:
            return False, f"Mismatch in {tag} tags: {opening} opening vs {closing} closing tags"
    state = "start"
    for part in _TAG_SPLIT_RE.split(content):
        if not part.strip():
            continue
        if _TAG_RE.match(part):
            following = _TRANSITIONS.get((part, state))
            if following is None:
                return False, f"Unexpected tag {part} in state {state}"
            state = following
        elif state in _BETWEEN:
            return False, f"Unexpected content '{part.strip()}' between tags (state: {state})"
        elif state not in _INSIDE:
            return False, f"Unexpected content in state {state}"
    if state != "end":
        return False, f"Incomplete sequence, ended in state {state}"
    return True, "Valid sequence format"


def answer_retrieved(text: str, golden_answers: Sequence[str]) -> bool:
    """qa_em_format.py:139-151: some normalised golden answer is a substring of a normalised <information> block."""
    blocks = [normalize_answer(block.strip()) for block in _INFORMATION_RE.findall(text)]
    return any(normalize_answer(golden) in block for block in blocks for golden in golden_answers)


def golden_answers(ground_truth: Any) -> list[str]:
    """The golden answers of a Search-R1 row: {"target": [...]} (its reward_model.ground_truth), a list
    of answers, one answer, or any of them as JSON text (as the rollouts page shows them)."""
    value = json_ground_truth(ground_truth)
    if isinstance(value, dict):
        if "target" not in value:
            keys = ", ".join(map(str, value))
            raise ValueError(f"a Search-R1 ground truth object holds its golden answers under 'target'; got {keys}")
        value = value["target"]
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()  # a parquet row read with pandas holds a numpy array
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(answer, str) for answer in value):
        raise ValueError(
            'a Search-R1 ground truth is {"target": [answers]}, a list of answers or one answer, all strings; '
            f"not {_shown(value)}"
        )
    if not value:
        raise ValueError("a Search-R1 ground truth needs at least one golden answer; 'target' is empty")
    return list(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _search_r1(response: Response, ground_truth: Any, ctx: RewardContext) -> RewardResult:
    golden = golden_answers(ground_truth)
    text = response.text
    answer = last_answer(text)
    em = answer is not None and em_check(answer, golden)
    valid, why = valid_sequence(text)
    retrieved = answer_retrieved(text, golden)
    if ctx.params["format"]:
        total = _format_score(em, answer is not None, valid, retrieved, ctx.params)
    else:
        total = EM_SCORE if em else 0.0
    return RewardResult(
        total=total,
        components={"em": float(em), "format": float(valid), "retrieval": float(retrieved)},
        correct=em,
        details={"answer": answer, "format": why},
    )


def _format_score(em: bool, answered: bool, valid: bool, retrieved: bool, params: dict[str, Any]) -> float:
    """compute_score_em's branches, qa_em_format.py:177-197 (retrieval counts only in a valid structure, :165-167)."""
    structure = float(params["structure_format_score"])
    if em:
        return EM_SCORE if valid else EM_SCORE - structure
    if valid:
        return structure + (float(params["retrieval_score"]) if retrieved else 0.0)
    return float(params["final_format_score"]) if answered else 0.0


register_reward(
    "search_r1",
    params=SearchR1Params,
    description="1 if the last <answer> matches a golden answer after normalisation (case, punctuation, articles, "
    "spaces), 0 otherwise; optionally v0.3's format-aware reward (Search-R1).",
    protocol="search_r1",
)(per_completion(_search_r1))
