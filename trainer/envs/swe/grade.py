"""A trajectory's patch, and its grading as SWE-bench grades it, in one sandbox snippet.

The patch is what SkyRL-v0 takes from its runtime when a trajectory ends: the repository as the trajectory
left it against its base, `git add -A && git diff --no-color --cached <base>`, anything before the first
`diff --git` dropped. The grading is SWE-bench's: in a fresh copy of the base repository, `git apply -v`, and
when that fails `patch --batch --fuzz=5 -p1`; then the instance's `test_patch` (its hidden tests), then the
FAIL_TO_PASS and PASS_TO_PASS tests; resolved only if the patch applied and every one of them passes
(docs/swe_sources.md).

The tests of a repository tirlab generates (trainer.data.swe_mini) are plain functions; tirlab's runner imports
each test file and calls each listed function in a child process under a time limit (pass: it returns;
the message: the exception's last line). Real SWE-bench rows name pytest and Django ids and need their
container image, which the run refuses before it starts (trainer.loop.setup.check_runnable_here).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from trainer.envs.base import CallContext
from trainer.envs.swe.workspace import Workspace

SENTINEL = "\x1etirlab-swe-grade\x1e"
GIT = "git -c user.name=tirlab -c user.email=tirlab@localhost -c init.defaultBranch=main"
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
import json, os, shutil, subprocess, sys
GIT = {git!r}.split()
def run(args, cwd, stdin=None, timeout=30):
    done = subprocess.run(args, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr
def write(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as handle:
            handle.write(text)
ORIGINAL, CURRENT = json.loads({original!r}), json.loads({current!r})
TEST_PATCH, TESTS = {test_patch!r}, json.loads({tests!r})
# The patch: the trajectory's repository against its base.
write("repo", ORIGINAL)
run(GIT + ["init", "-q"], "repo")
run(GIT + ["add", "-A"], "repo")
run(GIT + ["commit", "-q", "-m", "base"], "repo")
for path in ORIGINAL:
    if path not in CURRENT:
        os.remove(os.path.join("repo", path))
write("repo", CURRENT)
run(GIT + ["add", "-A"], "repo")
_, diff = run(GIT + ["diff", "--no-color", "--cached", "HEAD"], "repo")
at = diff.find("diff --git")
patch = diff[at:] if at >= 0 else ""
# The grading, in a fresh copy of the base.
write("eval", ORIGINAL)
applied, log = False, "empty patch: nothing to apply"
if patch:
    with open("model.patch", "w", encoding="utf-8") as handle:
        handle.write(patch)
    code, log = run(["git", "apply", "-v", os.path.abspath("model.patch")], "eval")
    applied = code == 0
    if not applied:
        code, more = run(["patch", "--batch", "--fuzz=5", "-p1", "-i", os.path.abspath("model.patch")], "eval")
        log += more
        applied = code == 0
results = {{}}
if applied:
    with open("test.patch", "w", encoding="utf-8") as handle:
        handle.write(TEST_PATCH)
    code, test_log = run(["git", "apply", "-v", os.path.abspath("test.patch")], "eval")
    if code != 0:
        results = {{t: [False, "the instance's test_patch did not apply"] for t in TESTS}}
    else:
        env = {{"PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}}
        try:
            done = subprocess.run([sys.executable, "-c", {runner!r}, json.dumps(TESTS)], cwd="eval", env=env,
                                  capture_output=True, text=True, timeout={timeout!r})
            results = json.loads(done.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            results = {{t: [False, "Timeout: the tests ran past the time limit"] for t in TESTS}}
        except (ValueError, IndexError):
            failed = "the test runner failed: " + (done.stderr.strip().splitlines() or [""])[-1]
            results = {{t: [False, failed] for t in TESTS}}
print({sentinel!r} + json.dumps({{"patch": patch, "applied": applied, "apply_log": log[-4000:], "results": results}}))
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
        return self.applied and bool(self.tests) and all(t.passed for t in self.tests)

    @property
    def patch_lines(self) -> int:
        return sum(1 for line in self.patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")))

    def as_outcome(self) -> dict[str, Any]:
        """The patch and the grading as a trajectory's outcome reports them (trainer.contract)."""
        return {
            "patch": self.patch,
            "patch_lines": self.patch_lines,
            "applied": self.applied,
            "apply_log": self.apply_log,
            "resolved": self.resolved,
            "tests": [{"name": t.name, "kind": t.kind, "passed": t.passed, "message": t.message} for t in self.tests],
        }


def _tests(instance: dict[str, Any]) -> list[tuple[str, str]]:
    return [(name, kind) for kind in (FAIL_TO_PASS, PASS_TO_PASS) for name in instance.get(kind) or []]


async def grade_workspace(workspace: Workspace, instance: dict[str, Any], *, context: CallContext) -> Grade:
    """The workspace's patch against its original files, graded by the instance's tests."""
    tests = _tests(instance)
    code = _SNIPPET.format(
        git=GIT,
        original=json.dumps(workspace.original),
        current=json.dumps(workspace.files),
        test_patch=instance.get("test_patch") or "",
        tests=json.dumps([name for name, _ in tests]),
        runner=_RUNNER,
        timeout=max(context.timeout_s - 2.0, 1.0),
        sentinel=SENTINEL,
    )
    result = await context.run(code)
    _, found, state = result.stdout.rpartition(SENTINEL)
    if not found:
        reason = (result.stderr.strip().splitlines() or [result.status])[-1]
        return Grade(patch="", applied=False, apply_log=f"grading did not finish ({result.status}): {reason}")
    data = json.loads(state)
    results = data["results"]
    outcomes = tuple(
        TestOutcome(name, kind, bool(results.get(name, [False])[0]), str(results.get(name, [False, "not run"])[1]))
        for name, kind in tests
    )
    return Grade(patch=data["patch"], applied=bool(data["applied"]), apply_log=data["apply_log"], tests=outcomes)
