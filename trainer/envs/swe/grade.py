"""A trajectory's patch graded as SWE-bench grades it, in one sandbox snippet (with the patch taken there too).

SkyRL-v0 grades in a fresh runtime of the instance's image (NovaSky-AI/SkyRL @a0d50c4
verl/workers/agentic/codeact.py:1111-1152): `git apply -v`, and when that fails `patch --batch --fuzz=5 -p1`
(codeact.py:1000-1006; SWE-bench v4.0.4's harness has `git apply --verbose --reject` between the two,
swebench/harness/run_evaluation.py:62-66); then SWE-bench's eval script:
the files the test patch changes reset to the base, the test patch applied, the tests run
(swebench/harness/test_spec/python.py:375-395); resolved only if every FAIL_TO_PASS and every PASS_TO_PASS test
passes (swebench/harness/grading.py:180-216, an empty list counting as all passed), else the reward is 0
(codeact.py:1013-1014: a patch that does not apply is not resolved).

The tests of a repository tirlab generates (trainer.data.swe_mini) are plain functions; tirlab's runner imports
each test file and calls each listed function, all in one child process under a time limit (pass: it returns;
the message: the exception's last line). If the test patch does not apply, every test fails (SWE-bench would run
them on whatever is there). Real SWE-bench rows name pytest and Django ids and need their container image, which
the run refuses before it starts (trainer.loop.setup.check_runnable_here).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from trainer.contract import MAX_LOG_MESSAGE, MAX_SWE_TEST_MESSAGE, MAX_SWE_TEST_NAME
from trainer.envs.base import CallContext
from trainer.envs.swe.patch import PATCH_SOURCE
from trainer.envs.swe.workspace import Workspace

SENTINEL = "\x1etirlab-swe-grade\x1e"
FAIL_TO_PASS, PASS_TO_PASS = "FAIL_TO_PASS", "PASS_TO_PASS"

_RUNNER = r"""
import importlib.util, json, sys, traceback
results = {}
for test in json.loads(sys.argv[1]):
    path, _, name = test.partition("::")
    try:
        spec = importlib.util.spec_from_file_location(path[:-3].replace("/", "."), path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        getattr(module, name)()
        results[test] = [True, ""]
    except BaseException as exc:
        line = traceback.format_exception_only(type(exc), exc)[-1].strip()
        results[test] = [False, line]
print(json.dumps(results))
"""

_SNIPPET = r"""
import json, os, subprocess, sys
{patch_source}
def run(args, cwd, timeout=60):
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr
ORIGINAL, PATCH = json.loads({original!r}), json.loads({patch!r})
TEST_PATCH, TESTS = {test_patch!r}, json.loads({tests!r})
if PATCH is None:  # the trajectory's repository: its patch first
    PATCH = take_patch(ORIGINAL, json.loads({current!r}), "repo")
# The grading, in a fresh copy of the base.
os.makedirs("eval")
for path, text in ORIGINAL.items():
    os.makedirs(os.path.dirname(os.path.join("eval", path)), exist_ok=True)
    with open(os.path.join("eval", path), "w", encoding="utf-8") as handle:
        handle.write(text)
with open("model.patch", "w", encoding="utf-8") as handle:
    handle.write(PATCH)
model_patch = os.path.abspath("model.patch")
code, log = run(["git", "apply", "-v", model_patch], "eval")
if code == 0:
    log += "APPLY_PATCH_PASS\n"
else:
    log += "Failed to apply patch with git apply, trying with patch command...\n"
    code, more = run(["patch", "--batch", "--fuzz=5", "-p1", "-i", model_patch], "eval")
    log += more + ("APPLY_PATCH_PASS\n" if code == 0 else "APPLY_PATCH_FAIL\n")
applied = code == 0
results = {{}}
if applied:
    # SWE-bench resets the files the test patch changes to the base before applying it.
    for path in {reset!r}:
        if path in ORIGINAL:
            with open(os.path.join("eval", path), "w", encoding="utf-8") as handle:
                handle.write(ORIGINAL[path])
    with open("test.patch", "w", encoding="utf-8") as handle:
        handle.write(TEST_PATCH)
    code, test_log = run(["git", "apply", "-v", os.path.abspath("test.patch")], "eval")
    if code != 0:
        results = {{t: [False, "the instance's test_patch did not apply"] for t in TESTS}}
    else:
        env = {{"PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1",
               "HOME": os.getcwd()}}
        try:
            done = subprocess.run([sys.executable, "-c", {runner!r}, json.dumps(TESTS)], cwd="eval", env=env,
                                  capture_output=True, text=True, timeout={timeout!r}, start_new_session=True)
            results = json.loads(done.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            results = {{t: [False, "Timeout: the tests ran past the time limit"] for t in TESTS}}
        except (ValueError, IndexError):
            failed = "the test runner failed: " + (done.stderr.strip().splitlines() or [""])[-1]
            results = {{t: [False, failed] for t in TESTS}}
print({sentinel!r} + json.dumps({{"patch": PATCH, "applied": applied, "apply_log": log[-4000:], "results": results}}))
"""


@dataclass(frozen=True)
class TestOutcome:
    name: str
    kind: str  # FAIL_TO_PASS or PASS_TO_PASS
    passed: bool
    message: str = ""


@dataclass(frozen=True)
class Grade:
    patch: str
    applied: bool
    apply_log: str
    tests: tuple[TestOutcome, ...] = field(default_factory=tuple)

    @property
    def resolved(self) -> bool:
        """SWE-bench's "resolved": the patch applied and every FAIL_TO_PASS and PASS_TO_PASS test passes."""
        return self.applied and all(t.passed for t in self.tests)

    @property
    def patch_lines(self) -> int:
        return sum(1 for line in self.patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")))

    def as_outcome(self) -> dict[str, Any]:
        """The patch and the grading as a trajectory's outcome reports them (trainer.contract), clipped to the
        report's limits: a model that writes a large file leaves a patch the dashboard would refuse, and a
        trajectory the dashboard refuses fails the run where it is made (trainer.report.trajectories)."""
        return {
            "patch": clip(self.patch, MAX_LOG_MESSAGE, "patch"),
            "patch_lines": self.patch_lines,
            "applied": self.applied,
            "apply_log": clip(self.apply_log, MAX_LOG_MESSAGE, "apply log"),
            "resolved": self.resolved,
            "tests": [
                {
                    "name": clip(t.name, MAX_SWE_TEST_NAME, "name"),
                    "kind": t.kind,
                    "passed": t.passed,
                    "message": clip(t.message, MAX_SWE_TEST_MESSAGE, "message"),
                }
                for t in self.tests
            ],
        }


def clip(text: str, limit: int, what: str) -> str:
    """`text`, or its head with a last line saying how long it was when it runs past `limit` characters."""
    if len(text) <= limit:
        return text
    note = f"\n[... {what} clipped: {len(text):,} characters ...]"
    return text[: limit - len(note)] + note


def _tests(instance: dict[str, Any]) -> list[tuple[str, str]]:
    return [(name, kind) for kind in (FAIL_TO_PASS, PASS_TO_PASS) for name in instance.get(kind) or []]


def changed_files(patch: str) -> list[str]:
    """The files a patch changes that exist before it (SWE-bench's get_modified_files: source files, not /dev/null)."""
    return [m.group(1) for m in re.finditer(r"^--- a/(\S+)", patch, re.MULTILINE)]


async def _grade(
    instance: dict[str, Any], original: dict[str, str], *, patch: str | None, current: dict[str, str] | None,
    context: CallContext,
) -> Grade:  # fmt: skip
    tests = _tests(instance)
    test_patch = instance.get("test_patch") or ""
    code = _SNIPPET.format(
        patch_source=PATCH_SOURCE,
        original=json.dumps(original),
        patch=json.dumps(patch),
        current=json.dumps(current),
        test_patch=test_patch,
        tests=json.dumps([name for name, _ in tests]),
        reset=changed_files(test_patch),
        runner=_RUNNER,
        timeout=max(context.timeout_s - 2.0, 1.0),
        sentinel=SENTINEL,
    )
    result = await context.run(code)
    _, found, state = result.stdout.rpartition(SENTINEL)
    if not found:
        reason = (result.stderr.strip().splitlines() or [result.status])[-1]
        return Grade(patch=patch or "", applied=False, apply_log=f"grading did not finish ({result.status}): {reason}")
    data = json.loads(state)
    results = data["results"]
    outcomes = tuple(
        TestOutcome(name, kind, bool(results.get(name, [False])[0]), str(results.get(name, [False, "not run"])[1]))
        for name, kind in tests
    )
    return Grade(patch=data["patch"], applied=bool(data["applied"]), apply_log=data["apply_log"], tests=outcomes)


async def grade(instance: dict[str, Any], original: dict[str, str], patch: str, *, context: CallContext) -> Grade:
    """`patch` applied to the `original` files and graded by the instance's tests."""
    return await _grade(instance, original, patch=patch, current=None, context=context)


async def grade_workspace(workspace: Workspace, instance: dict[str, Any], *, context: CallContext) -> Grade:
    """The workspace's patch against its original files (trainer.envs.swe.patch), graded by the instance's tests,
    in the same snippet."""
    return await _grade(instance, workspace.original, patch=None, current=workspace.files, context=context)
