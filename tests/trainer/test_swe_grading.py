"""A trajectory's patch is SkyRL-v0's (`git add -A && git diff --no-color --cached <base>`, cleaned by
process_git_patch) and is graded as SWE-bench grades it (`git apply -v`, else `patch --batch --fuzz=5 -p1`; resolved
only if every FAIL_TO_PASS and PASS_TO_PASS test passes). docs/swe_sources.md cites the sources."""

import asyncio
import subprocess
from pathlib import Path

import pytest

from sandbox import SandboxPool
from trainer.contract import MAX_LOG_MESSAGE, SweOutcomeIn
from trainer.envs import CallContext
from trainer.envs.swe.grade import Grade, TestOutcome, grade, grade_workspace
from trainer.envs.swe.patch import make_patch, process_git_patch
from trainer.envs.swe.workspace import Workspace

SOURCE = (
    "".join(f"# line {i}\n" for i in range(1, 9))
    + "def add(a, b):\n    return a - b\n\n\ndef inc(a):\n    return a + 1\n"
)
TESTS = (
    "from f import add, inc\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_inc():\n    assert inc(1) == 2\n"
)
TEST_PATCH = (
    "diff --git a/test_f.py b/test_f.py\nnew file mode 100644\n--- /dev/null\n+++ b/test_f.py\n"
    f"@@ -0,0 +1,{len(TESTS.splitlines())} @@\n" + "".join(f"+{line}\n" for line in TESTS.splitlines())
)
INSTANCE = {
    "instance_id": "t-1",
    "test_patch": TEST_PATCH,
    "FAIL_TO_PASS": ["test_f.py::test_add"],
    "PASS_TO_PASS": ["test_f.py::test_inc"],
}
ORIGINAL = {"f.py": SOURCE}


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(size=2) as pool:
        yield pool


def context(pool: SandboxPool) -> CallContext:
    return CallContext(run_code=pool.arun, timeout_s=20.0)


def edited(old: str, new: str) -> Workspace:
    workspace = Workspace.from_files(ORIGINAL, root="/workspace/repo")
    workspace.files["f.py"] = workspace.files["f.py"].replace(old, new)
    return workspace


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def test_process_git_patch_drops_what_comes_before_the_first_diff():
    assert process_git_patch("\x1b[K0\r\ndiff --git a/f b/f\r\n+x\r\n\n\n") == "diff --git a/f b/f\n+x\n"
    assert process_git_patch("  \n") == ""


def test_the_patch_applies_with_git_apply_to_the_original_files_outside_the_sandbox(pool, tmp_path):
    workspace = edited("a - b", "a + b")
    workspace.files["notes.txt"] = "new file\n"
    patch = asyncio.run(make_patch(workspace, context=context(pool)))
    assert patch.startswith("diff --git a/f.py b/f.py\n") and patch.endswith("\n")
    (tmp_path / "f.py").write_text(SOURCE)
    (tmp_path / "model.patch").write_text(patch)
    git("init", "-q", cwd=tmp_path)
    applied = git("apply", "-v", "model.patch", cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr
    assert (tmp_path / "f.py").read_text() == workspace.files["f.py"]
    assert (tmp_path / "notes.txt").read_text() == "new file\n"


def test_an_unchanged_repository_has_an_empty_patch_and_is_not_resolved(pool):
    # git apply refuses an empty patch; GNU patch takes it, so the tests run on the base, where FAIL_TO_PASS fails.
    graded = asyncio.run(grade_workspace(Workspace.from_files(ORIGINAL), INSTANCE, context=context(pool)))
    assert graded.patch == ""
    assert not graded.resolved
    assert not graded.tests[0].passed


def test_a_fix_resolves(pool):
    graded = asyncio.run(grade_workspace(edited("a - b", "a + b"), INSTANCE, context=context(pool)))
    assert graded.applied and graded.resolved
    assert "APPLY_PATCH_PASS" in graded.apply_log
    assert [(t.name, t.kind, t.passed) for t in graded.tests] == [
        ("test_f.py::test_add", "FAIL_TO_PASS", True),
        ("test_f.py::test_inc", "PASS_TO_PASS", True),
    ]
    outcome = graded.as_outcome()
    assert outcome["resolved"] and outcome["patch_lines"] == 2


def test_breaking_a_pass_to_pass_test_is_not_resolved(pool):
    workspace = edited("a - b", "a + b")
    workspace.files["f.py"] = workspace.files["f.py"].replace("a + 1", "a + 2")
    graded = asyncio.run(grade_workspace(workspace, INSTANCE, context=context(pool)))
    assert graded.applied and not graded.resolved
    inc = graded.tests[1]
    assert (inc.kind, inc.passed, inc.message) == ("PASS_TO_PASS", False, "AssertionError")


def test_the_fail_to_pass_test_still_failing_is_not_resolved(pool):
    graded = asyncio.run(grade_workspace(edited("a - b", "a * b"), INSTANCE, context=context(pool)))
    assert graded.applied and not graded.resolved
    assert not graded.tests[0].passed and graded.tests[1].passed


def test_a_patch_that_does_not_apply_is_not_resolved(pool):
    patch = "diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n-nothing like this\n+x\n context\n"
    graded = asyncio.run(grade(INSTANCE, ORIGINAL, patch, context=context(pool)))
    assert not graded.applied and not graded.resolved
    assert "Failed to apply patch with git apply, trying with patch command..." in graded.apply_log
    assert graded.apply_log.endswith("APPLY_PATCH_FAIL\n")
    assert all(not t.passed for t in graded.tests)


def test_a_patch_that_applies_only_with_fuzz_is_applied_by_patch_and_graded(pool, tmp_path):
    # The fix made against a copy whose context lines differ from the base: git apply refuses it, patch --fuzz=5
    # takes it (SWE-bench's second try).
    drifted = SOURCE.replace("# line 7\n", "# line seven\n").replace("# line 8\n", "# line eight\n")
    workspace = Workspace(files={"f.py": drifted.replace("a - b", "a + b")}, original={"f.py": drifted})
    patch = asyncio.run(make_patch(workspace, context=context(pool)))
    graded = asyncio.run(grade(INSTANCE, ORIGINAL, patch, context=context(pool)))
    assert "Failed to apply patch with git apply" in graded.apply_log
    assert graded.applied and graded.resolved
    assert graded.apply_log.endswith("APPLY_PATCH_PASS\n")


def test_the_test_patch_files_are_reset_before_the_test_patch(pool):
    existing = {"f.py": SOURCE, "test_g.py": "def test_g():\n    assert False\n"}
    test_patch = (
        "diff --git a/test_g.py b/test_g.py\n--- a/test_g.py\n+++ b/test_g.py\n@@ -1,2 +1,2 @@\n def test_g():\n"
        "-    assert False\n+    assert True\n"
    )
    instance = {"test_patch": test_patch, "FAIL_TO_PASS": ["test_g.py::test_g"], "PASS_TO_PASS": []}
    workspace = Workspace.from_files(existing)
    workspace.files["f.py"] = SOURCE.replace("a - b", "a + b")
    workspace.files["test_g.py"] = "def test_g():\n    raise SystemExit\n"  # the model's edit of the test
    graded = asyncio.run(grade_workspace(workspace, instance, context=context(pool)))
    assert graded.applied and graded.resolved


def test_a_patch_past_the_reports_limit_is_clipped_and_the_trajectory_still_reports():
    # A model that writes a large file: its patch runs past what the dashboard stores (MAX_LOG_MESSAGE).
    lines = "".join(f"+{i}\n" for i in range(40_000))
    header = "diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n"
    patch = f"{header}@@ -0,0 +1,40000 @@\n{lines}"
    failure = TestOutcome("test_f.py::test_add", "FAIL_TO_PASS", False, "E" * 50_000)
    graded = Grade(patch=patch, applied=True, apply_log="x" * 200_000, tests=(failure,))
    outcome = graded.as_outcome()
    reported = SweOutcomeIn.model_validate({"kind": "swe", "end": "finished", "turns": 2, **outcome})
    assert len(reported.patch) == MAX_LOG_MESSAGE and reported.patch.startswith(patch[:1000])
    assert reported.patch.endswith(f"[... patch clipped: {len(patch):,} characters ...]")
    assert reported.patch_lines == 40_000  # counted on the whole patch
    assert reported.apply_log.endswith("[... apply log clipped: 200,000 characters ...]")
    assert reported.tests[0].message.endswith("[... message clipped: 50,000 characters ...]")
