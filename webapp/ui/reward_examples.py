"""One worked example per registered reward for the rewards page's *try it* box: a completion written in
the reward's own protocol and a ground truth in the form tirlab shows it (the rollouts page's
"expected", the dataset preview's "ground truth"), which the reward scores as correct with its
default parameters. tests/webapp/test_reward_examples.py checks that every registered reward has one
and that it scores."""

import json
from dataclasses import dataclass

FENCE = "```"


@dataclass(frozen=True)
class RewardExample:
    completion: str
    ground_truth: str
    note: str = ""

    @property
    def ground_truth_hint(self) -> str:
        """The ground truth's first line, as the box's placeholder (a long one cut)."""
        line = self.ground_truth.splitlines()[0] if self.ground_truth else ""
        return "e.g. " + (line if len(line) <= 90 else line[:89] + "…")


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False)


_PYTHON_MARKDOWN = RewardExample(
    completion=(
        "6 times 7, checked in Python.\n"
        f"{FENCE}python\nprint(6 * 7)\n{FENCE}\n"
        f"{FENCE}output\n42\n{FENCE}\n"
        "So the answer is \\boxed{42}."
    ),
    ground_truth="42",
    note="The answer in \\boxed{} against the ground truth; the code block and its output are one tool call.",
)

_TIMER = {"name": "set_timer", "arguments": {"minutes": 10}}
_FIND = {"name": "find_flight", "arguments": {"origin": "Cairo", "destination": "Denver", "date": "2026-07-21"}}
_BOOK = {"name": "book_flight", "arguments": {"flight": "TL 974", "passengers": 4}}

EXAMPLES: dict[str, RewardExample] = {
    "torl": _PYTHON_MARKDOWN,
    "otc_ppo": _PYTHON_MARKDOWN,
    "otc_grpo": RewardExample(
        _PYTHON_MARKDOWN.completion,
        "42",
        "A group of one is its own optimum: in training, fewer calls than the group's others score higher.",
    ),
    "weighted": RewardExample(
        _PYTHON_MARKDOWN.completion, "42", "With its default terms, torl with weight 1: the same score as torl."
    ),
    "zerotir": RewardExample(
        completion=(
            "<think>6 times 7; let me run it.</think>\n"
            f"{FENCE}python\nprint(6 * 7)\n{FENCE}\n"
            f"{FENCE}output\n42\n{FENCE}\n"
            "<answer>\\boxed{42}</answer>"
        ),
        ground_truth="42",
        note="<think>, then code, then one <answer> holding \\boxed{}.",
    ),
    "retool": RewardExample(
        completion=(
            "6 times 7:\n<code>\n"
            f"{FENCE}python\nprint(6 * 7)\n{FENCE}\n"
            "</code><interpreter>\n42\n</interpreter>\n"
            "<answer>\\boxed{42}</answer>"
        ),
        ground_truth="42",
        note="Code in <code>, its result in <interpreter>, the answer in <answer>\\boxed{}.",
    ),
    "artist": RewardExample(
        completion=(
            "<think>6 times 7; compute it.</think>\n"
            "<python>\nprint(6 * 7)\n</python>\n"
            "<output>\n42\n</output>\n"
            "<answer>\\boxed{42}</answer>"
        ),
        ground_truth="42",
        note="Answer 2, format 0.5 and the share of calls that ran (an <output> without an error).",
    ),
    "toolrl": RewardExample(
        completion=(
            "<think>The user wants a ten-minute timer.</think>\n"
            '<tool_call>\n{"name": "set_timer", "parameters": {"minutes": 10}}\n</tool_call>'
        ),
        ground_truth=_json([_TIMER]),
        note="The ground truth as a JSON list of calls, as the rollouts page shows it, or in ToolRL's text form "
        '(a <tool_call> block of one {"name", "parameters"} call a line): both score the same.',
    ),
    "tool_n1": RewardExample(
        completion=(f"<think>The user wants a ten-minute timer.</think>\n<tool_call>\n{_json([_TIMER])}\n</tool_call>"),
        ground_truth=_json([_TIMER]),
        note="1 only when the calls in the last <tool_call> block match the ground truth's exactly.",
    ),
    "search_r1": RewardExample(
        completion=(
            "<think>I need the capital of France.</think>\n<search> capital of France </search>\n\n"
            '<information>Doc 1(Title: "Paris") Paris is the capital and largest city of France.</information>\n\n'
            "<think>The passage says Paris.</think>\n<answer> Paris </answer>"
        ),
        ground_truth=_json({"target": ["Paris", "Paris, France"]}),
        note="The last <answer> against each golden answer (Search-R1's reward_model.ground_truth.target, or a "
        "list, or one answer) after lower-casing and dropping punctuation, articles and extra spaces.",
    ),
    "artist_fc": RewardExample(
        completion=(
            "<reasoning>Find the flight first.</reasoning>\n"
            f"<tool>\n{_json(_FIND)}\n</tool>\n"
            '<tool_result>\n{"flight": "TL 974"}\n</tool_result>\n'
            "<reasoning>Now book it for four.</reasoning>\n"
            f"<tool>\n{_json(_BOOK)}\n</tool>\n"
            '<tool_result>\n{"confirmation": "B-1"}\n</tool_result>\n'
            "<reasoning>Booked.</reasoning>\nBooked TL 974 for 4 passengers."
        ),
        ground_truth=_json({"calls": [_FIND, _BOOK], "state": {}}),
        note="A pasted completion has no environment, so its final state is empty: a ground truth's "
        '"state" variables score only in a run.',
    ),
}


def reward_example(name: str) -> RewardExample | None:
    return EXAMPLES.get(name)
