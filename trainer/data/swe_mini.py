"""A seeded generator of small Python repositories with one injected bug and hidden tests: swe-mini's tasks.

Each repository is one file, `f.py`, holding two functions; one of them carries a single mutation in
SWE-smith's procedural style (an operator swapped, a comparison flipped, a constant moved by one), kept only
if it breaks at least one hidden test. The hidden tests (`test_f.py`, added by the instance's `test_patch` as
SWE-bench adds its tests) check both functions: the tests the bug breaks are FAIL_TO_PASS, the rest
PASS_TO_PASS. The issue text is written from the first failing test, as SWE-smith writes issues from a
failing test: "add(2, 3) returns -1, expected 5 (python repro.py)." -- with the reporter's reproducer, `repro.py`,
which prints the example's value and exits 1 while it is wrong (as a SWE-bench issue often carries its snippet).

Which fix is right follows from the function's name (`add` adds, `big` returns the larger, `inc` adds one),
so a policy can learn it; the tiny model's cold start (trainer.sft.traces.swe) picks among the plausible
fixes (`PLAUSIBLE`) without looking at the name. The repository fits the tiny model's context with room
for five turns.

Rows are SWE-Gym's row format (trainer.data.swe_rows: prompt, data_source, ability, instance) with the
repository itself in `instance["files"]`, so they load like a real SWE-Gym row and run in tirlab's sandbox.
Train and test draw from their own seeds (the split is part of the seed), and a repository with its issue goes
to test or to train by its hash, so a held-out repository is never a training one.
"""

from __future__ import annotations

import difflib
import hashlib
import random
from dataclasses import dataclass

from trainer.data.arithmetic import example_count
from trainer.data.swe_rows import parse_swe_row
from trainer.trajectory import Example

DATA_SOURCE = "swe-mini"
SOURCE_FILE, TEST_FILE, REPRO_FILE = "f.py", "test_f.py", "repro.py"
PROMPT = "Fix: {issue}\n{path}:\n{source}"


@dataclass(frozen=True)
class Kind:
    """A function of the repositories: its name, arity and the body's expression for each plausible fix
    (`{a}`/`{b}` the parameters); `right` is the correct one's index."""

    name: str
    arity: int
    fixes: tuple[str, ...]
    right: int

    def body(self, fix: int, a: str, b: str) -> str:
        return self.fixes[fix].format(a=a, b=b)

    def value(self, fix: int, x: int, y: int) -> int:
        return eval(self.body(fix, "x", "y"), {}, {"x": x, "y": y})  # noqa: S307 - our own expressions


_ARITH = ("{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} // {b}")
_PICK = ("{a} if {a} > {b} else {b}", "{a} if {a} < {b} else {b}")
KINDS: tuple[Kind, ...] = (
    Kind("add", 2, _ARITH, 0),
    Kind("sub", 2, _ARITH, 1),
    Kind("mul", 2, _ARITH, 2),
    Kind("big", 2, _PICK, 0),
    Kind("small", 2, _PICK, 1),
    Kind("inc", 1, ("{a} + 0", "{a} + 1", "{a} + 2", "{a} + 3"), 1),
    Kind("dec", 1, ("{a} - 0", "{a} - 1", "{a} - 2", "{a} - 3"), 1),
)
KINDS_BY_NAME = {kind.name: kind for kind in KINDS}
# The fixes a policy that does not read the name would consider: the kind's expressions, the buggy one included.
PLAUSIBLE = {kind.name: kind.fixes for kind in KINDS}
# One pair of parameter names: the tiny model copies the buggy expression from the prompt, and a name of its own
# there is a str_replace that matches nothing.
PARAMS = ("a", "b")
TESTS_PER_FUNCTION = 2
# One repository-and-issue in HELD_OUT is a test one, by its hash; the others train (and make the SFT traces).
HELD_OUT = 5
# Held-out repositories by default: greedy evaluation of each runs up to five turns and a grading.
TEST_SIZE = 100


def _call(kind: Kind, x: int, y: int) -> str:
    return f"{kind.name}({x}, {y})" if kind.arity == 2 else f"{kind.name}({x})"


def _function(kind: Kind, fix: int, params: tuple[str, str]) -> str:
    a, b = params
    args = f"{a}, {b}" if kind.arity == 2 else a
    return f"def {kind.name}({args}):\n    return {kind.body(fix, a, b)}\n"


def _diff_new_file(path: str, text: str) -> str:
    """A `diff --git` that creates `path` with `text` (as SWE-bench's test_patch adds a test file)."""
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    header = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
    return f"{header}@@ -0,0 +1,{len(lines)} @@\n{body}"


def _inputs(rng: random.Random, kind: Kind) -> tuple[int, int]:
    return rng.randint(2, 9), rng.randint(2, 9)


def swe_mini_row(rng: random.Random, index: int, split: str) -> dict:
    """One row: a repository of two functions, one with a bug that a hidden test catches. The other function
    is of a kind none of whose plausible bodies the buggy one's can take, so an expression names one line."""
    while True:
        buggy = rng.choice(KINDS)
        wrong = [i for i in range(len(buggy.fixes)) if i != buggy.right]
        bug = rng.choice(wrong)
        other = rng.choice([k for k in KINDS if not set(k.fixes) & set(buggy.fixes)])
        functions = [(buggy, bug), (other, other.right)]
        rng.shuffle(functions)
        source = "".join(_function(kind, fix, PARAMS) for kind, fix in functions)
        fixed = "".join(_function(kind, kind.right, PARAMS) for kind, _ in functions)
        tests, fail, passing, issue, repro = [], [], [], None, ""
        for kind, fix in functions:
            for t in range(TESTS_PER_FUNCTION):
                x, y = _inputs(rng, kind)
                want, got = kind.value(kind.right, x, y), kind.value(fix, x, y)
                name = f"test_{kind.name}_{t}"
                tests.append(f"def {name}():\n    assert {_call(kind, x, y)} == {want}\n")
                (fail if got != want else passing).append(f"{TEST_FILE}::{name}")
                if got != want and issue is None:
                    issue = f"{_call(kind, x, y)} returns {got}, expected {want} (python {REPRO_FILE})."
                    repro = _repro(_call(kind, x, y), want)
        # Content decides the split, so no held-out repository and issue is ever trained on (SFT's included).
        held_out = int(hashlib.sha1(f"{source}{issue}".encode()).hexdigest(), 16) % HELD_OUT == 0
        if fail and held_out == (split == "test"):
            break
    names = ", ".join(kind.name for kind, _ in functions)
    test_text = f"from f import {names}\n\n\n" + "\n\n".join(tests)
    digest = hashlib.sha1(f"{split}:{index}:{source}".encode()).hexdigest()[:8]
    return {
        "prompt": [{"role": "user", "content": PROMPT.format(path=SOURCE_FILE, issue=issue, source=source)}],
        "data_source": DATA_SOURCE,
        "ability": "coding",
        "instance": {
            "instance_id": f"swe-mini__{split}-{index}-{digest}",
            "repo": "tirlab/swe-mini",
            "base_commit": "0" * 40,
            "problem_statement": issue,
            "patch": _fix_patch(source, fixed),
            "test_patch": _diff_new_file(TEST_FILE, test_text),
            "FAIL_TO_PASS": fail,
            "PASS_TO_PASS": passing,
            "files": {SOURCE_FILE: source, REPRO_FILE: repro},
        },
    }


def _repro(call: str, want: int) -> str:
    """The issue's reproducer: the example's value, and exit status 1 while it is not the expected one."""
    return f"import f\n\nvalue = f.{call}\nprint(value)\nraise SystemExit(value != {want})\n"


def _fix_patch(source: str, fixed: str) -> str:
    """The gold patch: `git diff` of the buggy file against its fixed version."""
    lines = difflib.unified_diff(
        source.splitlines(keepends=True), fixed.splitlines(keepends=True), f"a/{SOURCE_FILE}", f"b/{SOURCE_FILE}"
    )
    return f"diff --git a/{SOURCE_FILE} b/{SOURCE_FILE}\n" + "".join(lines)


def swe_mini_rows(size: int | None = None, *, seed: int = 0, split: str = "train") -> list[dict]:
    """`size` rows (default 1000 for train, `TEST_SIZE` otherwise); the split is part of the seed, so train and
    test repositories come from disjoint streams."""
    rng = random.Random(f"swe-mini:{split}:{seed}")
    count = example_count(size if size is not None or split == "train" else TEST_SIZE, split)
    return [swe_mini_row(rng, i, split) for i in range(count)]


def swe_mini_examples(size: int | None = None, *, seed: int = 0, split: str = "train") -> list[Example]:
    """The rows as the trainer reads them: through the loader of real SWE-Gym rows (trainer.data.swe_rows)."""
    return [
        parse_swe_row(row, where=f"swe-mini {split} row {i}")
        for i, row in enumerate(swe_mini_rows(size, seed=seed, split=split))
    ]
