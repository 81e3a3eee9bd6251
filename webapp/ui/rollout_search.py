"""A search trajectory's outcome as the rollouts page shows it (trainer.contract.SearchOutcomeIn): how it ended,
Search-R1's action counts, each query with the passages it retrieved -- the golden answers marked where they
appear -- and the extracted answer against the golden answers after Search-R1's normalisation
(trainer.rewards.search_r1: `normalize_answer`, `em_check`, the ground truth's shapes in `golden_answers`).

The text is handed to the template as segments (`{"text", "golden"}`) that it escapes itself: nothing of the
model's or the corpus's text is marked safe."""

from __future__ import annotations

import re
from typing import Any

from trainer.rewards.search_r1 import em_check, golden_answers, normalize_answer

END_LABELS = {
    "answered": "answered",
    "max_turns": "turn limit",
    "context_full": "context full",
    "no_answer": "no answer",
}
END_TITLES = {
    "answered": "The model wrote <answer> … </answer>.",
    "max_turns": "The trajectory reached the run's turn limit (Search-R1's max_turns) without an answer.",
    "context_full": "The response reached data.max_response_tokens without an answer.",
    "no_answer": "The model stopped without an answer.",
}


def _golden(ground_truth: Any) -> list[str]:
    """The golden answers of the ground truth, in its order without repeats; none where it is not Search-R1's."""
    try:
        answers = golden_answers(ground_truth)
    except (ValueError, TypeError):
        return []
    return list(dict.fromkeys(answer for answer in answers if answer.strip()))


def golden_pattern(golden: list[str]) -> re.Pattern[str] | None:
    """Any golden answer as a whole word or phrase, case-insensitive, any run of spaces matching any other; the
    longest first, so "New York City" wins over "New York". None without golden answers."""
    words = [answer.split() for answer in golden]
    alternatives = [r"\s+".join(map(re.escape, w)) for w in sorted(words, key=lambda w: -len(" ".join(w))) if w]
    if not alternatives:
        return None
    return re.compile(rf"(?<!\w)(?:{'|'.join(alternatives)})(?!\w)", re.IGNORECASE)


def segments(text: str, pattern: re.Pattern[str] | None) -> list[dict[str, Any]]:
    """`text` cut into the parts that are a golden answer (`golden`: True) and those between them."""
    if pattern is None:
        return [{"text": text, "golden": False}] if text else []
    parts, position = [], 0
    for match in pattern.finditer(text):
        if match.start() > position:
            parts.append({"text": text[position : match.start()], "golden": False})
        parts.append({"text": match.group(0), "golden": True})
        position = match.end()
    if position < len(text):
        parts.append({"text": text[position:], "golden": False})
    return parts


def _score(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    return f"{value:.3f}"


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _passage_view(rank: int, passage: dict[str, Any], pattern: re.Pattern[str] | None) -> dict[str, Any]:
    title = segments(str(passage.get("title") or ""), pattern)
    text = segments(str(passage.get("text") or ""), pattern)
    return {
        "rank": rank,
        "id": str(passage.get("id") or ""),
        "title": title,
        "score": _score(passage.get("score")),
        "text": text,
        "has_golden": any(part["golden"] for part in title + text),
    }


def _search_view(search: dict[str, Any], pattern: re.Pattern[str] | None) -> dict[str, Any]:
    passages = [
        _passage_view(rank, passage, pattern)
        for rank, passage in enumerate(search.get("passages") or [], start=1)
        if isinstance(passage, dict)
    ]
    return {
        "query": str(search.get("query") or ""),
        "passages": passages,
        "hits": sum(1 for passage in passages if passage["has_golden"]),
    }


def search_view(outcome: Any, ground_truth: Any = None, final_answer: Any = "") -> dict[str, Any] | None:
    """What the template shows of a search outcome; None for a trajectory without one."""
    if not isinstance(outcome, dict) or outcome.get("kind") != "search":
        return None
    golden = _golden(ground_truth)
    pattern = golden_pattern(golden)
    searches = [_search_view(s, pattern) for s in outcome.get("searches") or [] if isinstance(s, dict)]
    answer = final_answer.strip() if isinstance(final_answer, str) else ""
    end = outcome.get("end")
    end_label = END_LABELS.get(end, str(end or "?"))
    return {
        "end": end_label,
        "end_title": END_TITLES.get(end, ""),
        "actions": _count(outcome.get("actions")),
        "valid_actions": _count(outcome.get("valid_actions")),
        "valid_searches": _count(outcome.get("valid_searches")),
        "searches": searches,
        "passages": sum(len(s["passages"]) for s in searches),
        "hits": sum(s["hits"] for s in searches),
        "answer": answer,
        "normalized_answer": normalize_answer(answer) if answer else "",
        "golden": [{"text": g, "normalized": normalize_answer(g)} for g in golden],
        "match": bool(answer and golden and em_check(answer, golden)),
        # The group's expected line: the golden answers rather than the ground truth's JSON.
        "expected": " | ".join(golden),
        # The row's one-line cell: the answer, or how it ended without one.
        "cell": answer or f"({end_label})",
    }
