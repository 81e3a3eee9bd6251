"""Math answers: find the model's last \\boxed{} answer and decide whether it equals the ground truth.

Equivalence is math-verify's (LaTeX vs decimals, 1,000 vs 1000, x=3 vs 3, ...). A verifier that
raises or runs past its time limit makes the answer count as wrong: a reward must never crash a
training step because a model wrote pathological LaTeX.
"""

import logging
import math
import re
import threading
from collections.abc import Callable
from typing import TypeVar

from math_verify import parse, verify

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 5.0


class _OwnTimeoutFilter(logging.Filter):
    """Drops math-verify's "Timeout is disabled" warning: off the main thread we disable its
    SIGALRM timeouts on purpose and bound the call ourselves (_bounded)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Timeout is disabled" not in record.getMessage()


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_OwnTimeoutFilter())

# \boxed and \fbox are the two wrappers MATH-style answers use; longer names first so that the
# regex alternation never stops inside a longer command name.
_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")


def _braced(text: str, start: int) -> tuple[str, int] | None:
    """The content of the brace group opening at text[start] and the index after it, or None
    when the braces never balance (a response cut off mid-answer)."""
    depth = 0
    for i in range(start, len(text)):
        char = text[i]
        if char == "{" and text[i - 1] != "\\":
            depth += 1
        elif char == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i + 1
    return None


def boxed_answers(text: str) -> list[str]:
    """Every complete \\boxed{...} / \\fbox{...} content in order (nested braces kept whole)."""
    found: list[str] = []
    for match in _BOX_RE.finditer(text):
        pos = match.end()
        while pos < len(text) and text[pos] == " ":
            pos += 1
        if pos < len(text) and text[pos] == "{":
            group = _braced(text, pos)
            if group is not None:
                found.append(group[0].strip())
        elif match.end() < len(text) and text[match.end()] == " ":
            # "\boxed 5$": MATH's unbraced form takes the answer up to "$" or the end of the line.
            rest = re.match(r" +([^$\n]+)", text[match.end() :])
            if rest:
                found.append(rest.group(1).strip())
    return found


def last_boxed(text: str) -> str | None:
    """The content of the last \\boxed{} (or \\fbox{}) in `text`, or None.

    If the last box is unbalanced (the response was cut off inside it) the answer is None, not
    an earlier box: an earlier box is typically an intermediate result, and ToRL/MATH's
    last_boxed_only_string behave the same way.
    """
    matches = list(_BOX_RE.finditer(text))
    if not matches:
        return None
    last = matches[-1]
    answers = boxed_answers(text[last.start() :])
    return answers[0] if answers else None


def last_complete_boxed(text: str) -> str | None:
    """The content of the last complete top-level \\boxed{} (or \\fbox{}) in `text`, or None.

    Boxes are read left to right without overlap, and a box that never closes is skipped, so a
    response cut off inside its last box answers with the box before it and `\\boxed{\\boxed{1}+2}`
    answers `\\boxed{1}+2`. This is ToRL's reading: `boxed_pattern.findall(response)[-1]`
    (GAIR-NLP/ToRL verl/utils/reward_score/math_verifier.py:38,63-65 @cb78cf1).
    """
    found: str | None = None
    pos = 0
    while (match := _BOX_RE.search(text, pos)) is not None:
        brace = match.end()
        while brace < len(text) and text[brace] == " ":
            brace += 1
        if brace < len(text) and text[brace] == "{":
            group = _braced(text, brace)
            if group is not None:
                found, pos = group[0].strip(), group[1]
                continue
        elif rest := re.match(r" +([^$\n]+)", text[match.end() :]):
            found, pos = rest.group(1).strip(), match.end() + rest.end()
            continue
        pos = match.end()
    return found


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _bounded(func: Callable[[], T], timeout_s: float) -> T | None:
    """Run `func` in a helper thread and give up after timeout_s (None on timeout).

    Used off the main thread, where math-verify's SIGALRM timeouts cannot be installed. A
    pathological expression may keep its daemon thread busy, but the caller moves on.
    """
    box: dict[str, T] = {}

    def target() -> None:
        box["value"] = func()

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout_s)
    return box.get("value")


def _verify(pred: str, gt: str, timeout_s: float) -> bool:
    # math-verify's own timeouts are SIGALRM based: only usable on the main thread, in whole seconds.
    alarm = max(1, math.ceil(timeout_s)) if _in_main_thread() else None
    gold = parse(f"\\boxed{{{gt}}}", parsing_timeout=alarm, raise_on_error=False)
    target = parse(f"\\boxed{{{pred}}}", parsing_timeout=alarm, raise_on_error=False)
    if not gold or not target:
        return False
    return bool(verify(gold, target, timeout_seconds=alarm, raise_on_error=False))


def _normalise(answer: str) -> str:
    return re.sub(r"\s+", "", answer).rstrip(".")


# Text and font commands that only dress an answer: \textbf{1.25} is the answer 1.25.
_WRAPPER_RE = re.compile(r"\\(?:text|textbf|textrm|textit|mathbf|mathrm|mathit|boldsymbol|bm|mbox)\s*(?=\{)")


def unwrap(answer: str) -> str:
    """The answer without text or font commands that wrap the whole of it (nested ones too)."""
    while (match := _WRAPPER_RE.match(answer)) is not None:
        group = _braced(answer, match.end())
        if group is None or answer[group[1] :].strip():
            break
        answer = group[0].strip()
    return answer


def answers_equivalent(pred: str | None, gt: str | None, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
    """Whether the predicted answer (a \\boxed content, LaTeX or plain) equals the ground truth.

    Identical strings short-cut the verifier; anything the verifier cannot decide in time, or
    fails on, is False.
    """
    if pred is None or gt is None:
        return False
    pred, gt = str(pred).strip(), str(gt).strip()
    if not pred or not gt:
        return False
    if _equivalent(pred, gt, timeout_s):
        return True
    # math-verify reads \\textbf{1.25} as no number at all; compare what the wrappers hold.
    bare_pred, bare_gt = unwrap(pred), unwrap(gt)
    if (bare_pred, bare_gt) == (pred, gt) or not bare_pred or not bare_gt:
        return False
    return _equivalent(bare_pred, bare_gt, timeout_s)


def _equivalent(pred: str, gt: str, timeout_s: float) -> bool:
    if _normalise(pred) == _normalise(gt):
        return True
    try:
        if _in_main_thread():
            return _verify(pred, gt, timeout_s)
        return bool(_bounded(lambda: _verify(pred, gt, timeout_s), timeout_s))
    except Exception:  # noqa: BLE001 - any verifier failure is a wrong answer, never a crashed step
        return False
