"""swe-mini's repositories: seeded, disjoint across splits, one bug that the hidden tests catch, and a gold
patch that `git apply` takes and that makes every test pass."""

import subprocess
from pathlib import Path

import pytest

from trainer.data.swe_mini import KINDS_BY_NAME, REPRO_FILE, SOURCE_FILE, TEST_FILE, swe_mini_rows


def _tests_results(files: dict[str, str]) -> dict[str, bool]:
    """Run the hidden tests in-process: test id -> passed."""
    module: dict = {}
    exec(files[SOURCE_FILE], module)  # noqa: S102 - generated code
    tests = dict(module)
    exec(files[TEST_FILE].replace("from f import", "# from f import"), tests)  # noqa: S102
    results = {}
    for name, value in tests.items():
        if name.startswith("test_") and callable(value):
            try:
                value()
                results[f"{TEST_FILE}::{name}"] = True
            except AssertionError:
                results[f"{TEST_FILE}::{name}"] = False
    return results


def _git(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, text=True, check=False)


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for path, text in files.items():
        (repo / path).write_text(text)
    _git(repo, "init", "-q")
    return repo


def test_rows_are_seeded_and_the_splits_disjoint():
    assert swe_mini_rows(20, seed=0) == swe_mini_rows(20, seed=0)
    train = {r["instance"]["files"][SOURCE_FILE] + r["instance"]["problem_statement"] for r in swe_mini_rows(300)}
    test = {
        r["instance"]["files"][SOURCE_FILE] + r["instance"]["problem_statement"]
        for r in swe_mini_rows(100, split="test")
    }
    sft = {
        r["instance"]["files"][SOURCE_FILE] + r["instance"]["problem_statement"]
        for r in swe_mini_rows(300, split="sft")
    }
    assert test and not train & test and not sft & test


@pytest.mark.parametrize("row", swe_mini_rows(12, seed=5), ids=lambda r: r["instance"]["instance_id"])
def test_the_bug_breaks_the_fail_to_pass_tests_and_the_gold_patch_fixes_them(row, tmp_path):
    instance = row["instance"]
    repo = _repo(tmp_path, instance["files"])
    assert _git(repo, "apply", "-v", "-", stdin=instance["test_patch"]).returncode == 0
    files = {SOURCE_FILE: (repo / SOURCE_FILE).read_text(), TEST_FILE: (repo / TEST_FILE).read_text()}
    before = _tests_results(files)
    assert instance["FAIL_TO_PASS"] and {t for t, ok in before.items() if not ok} == set(instance["FAIL_TO_PASS"])
    assert {t for t, ok in before.items() if ok} == set(instance["PASS_TO_PASS"])
    applied = _git(repo, "apply", "-v", "-", stdin=instance["patch"])
    assert applied.returncode == 0, applied.stderr
    after = _tests_results({**files, SOURCE_FILE: (repo / SOURCE_FILE).read_text()})
    assert all(after.values()) and len(after) == len(before)


@pytest.mark.parametrize("row", swe_mini_rows(6, seed=7), ids=lambda r: r["instance"]["instance_id"])
def test_the_issues_reproducer_fails_on_the_bug_and_passes_with_the_fix(row, tmp_path):
    instance = row["instance"]
    repo = _repo(tmp_path, instance["files"])
    got, want = instance["problem_statement"].split(" returns ")[1].split(" (")[0].split(", expected ")

    def reproduce() -> subprocess.CompletedProcess:
        return subprocess.run(["python3", REPRO_FILE], cwd=repo, capture_output=True, text=True, check=False)

    assert (reproduce().returncode, reproduce().stdout) == (1, f"{got}\n")
    assert _git(repo, "apply", "-v", "-", stdin=instance["patch"]).returncode == 0
    assert (reproduce().returncode, reproduce().stdout) == (0, f"{want}\n")


def test_the_issue_is_written_from_a_failing_test_and_the_name_tells_the_fix():
    for row in swe_mini_rows(50, seed=1):
        instance = row["instance"]
        issue = instance["problem_statement"]
        name = issue.split("(")[0]
        assert any(t.startswith(f"{TEST_FILE}::test_{name}_") for t in instance["FAIL_TO_PASS"])
        assert name in KINDS_BY_NAME
        assert issue in row["prompt"][0]["content"] and instance["files"][SOURCE_FILE] in row["prompt"][0]["content"]
        assert issue.endswith(f"(python {REPRO_FILE}).") and REPRO_FILE in instance["files"]
        assert len(row["prompt"][0]["content"]) < 200  # the tiny model's context holds it with five turns
