"""Software-engineering rows: SWE-Gym / SWE-bench / SWE-smith instances, read and checked, as the swe environment
runs them (docs/swe_rows.md has the sources).

A row is `{prompt, data_source, ability, instance}` (SkyRL-v0's SWE-Gym parquet: the rollout reads
`non_tensor_batch['instance']`, NovaSky-AI/SkyRL@a0d50c48 verl/workers/agentic/codeact.py:818,897), or a bare
instance as SWE-bench, SWE-Gym and SWE-smith publish them; a bare instance's prompt is SkyRL-v0's instruction
written from its problem statement (`instruction`). The instance's fields are SWE-bench's: instance_id, repo,
base_commit, problem_statement, patch (the gold fix), test_patch (the hidden tests), FAIL_TO_PASS and
PASS_TO_PASS -- lists in SWE-Gym and SWE-smith, JSON text in SWE-bench, read either way as SWE-bench's harness
reads them (SWE-bench/SWE-bench@v4.0.4 swebench/harness/test_spec/test_spec.py:195-205).

SWE-smith rows carry the bug they inject as `patch`, and their fix is that patch reversed: SWE-smith's harness
grades its gold prediction with `git apply --reverse` ("Because gold patches = bug patches, so fix = revert",
SWE-bench/SWE-smith@cf2e649d swesmith/harness/utils.py:192-196). Here the bug is kept as `bug_patch` and `patch`
(the fix) left empty; FAIL_TO_PASS / PASS_TO_PASS stay as given. Their base_commit is the commit with the bug
applied, on a branch named after the instance (swesmith/harness/gather.py:297,321); a row without it starts at
that branch.

tirlab's generated rows (trainer.data.swe_mini) add the repository itself, `files` ({relative path: text}), and
run in the sandbox. A real row names a repository at a commit inside its own container image; `requires_container`
says which, and a run refuses such rows before it starts (no container runtime here).
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from trainer.trajectory import Example

DATA_SOURCES = ("swe-gym", "swe-bench", "swe-smith", "swe-mini")
# SkyRL-v0's container image of an instance (SWE-Gym and SWE-bench alike): OpenHands' name for SWE-bench's
# per-instance image, `__` spelled `_s_`, under xingyaoww/ (NovaSky-AI/SkyRL@a0d50c48
# verl/workers/agentic/codeact.py:68,253-258).
SKYRL_IMAGE_PREFIX = "docker.io/xingyaoww/"


class SweRowError(ValueError):
    """A software-engineering row that cannot be read. `field` is the field at fault as the row spells it
    (`instance.FAIL_TO_PASS` in a wrapped row, `FAIL_TO_PASS` in a bare instance); the message starts with
    `where` (the row) and the field."""

    def __init__(self, where: str, field: str, detail: str) -> None:
        super().__init__(f"{where}: {field}: {detail}")
        self.where, self.field, self.detail = where, field, detail


class SweInstance(BaseModel):
    """One SWE-bench-format instance. Unknown fields are kept (SWE-Gym and SWE-smith add their own)."""

    model_config = ConfigDict(extra="allow")

    instance_id: str = Field(min_length=1)
    repo: str = Field(min_length=1)
    base_commit: str = Field(min_length=1)
    problem_statement: str = Field(min_length=1)
    patch: str = ""
    test_patch: str = ""
    FAIL_TO_PASS: list[str] = Field(min_length=1)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    version: str | None = None
    environment_setup_commit: str | None = None
    created_at: str | None = None
    hints_text: str | None = None
    image_name: str | None = None
    # SWE-smith: the bug the instance's repository carries (its `patch`); the fix is its reverse.
    bug_patch: str | None = None
    # tirlab: the repository at base_commit, {relative path: text}; a row with it runs in tirlab's sandbox.
    files: dict[str, str] | None = None

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        if isinstance(value, str):  # SWE-bench stores the test lists as JSON text
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise ValueError(
                    "expected a list of test ids or a JSON string of one, got text that is not JSON"
                ) from None
            if not isinstance(value, list):
                raise ValueError("expected a list of test ids; the JSON string holds something else")
        if hasattr(value, "tolist"):  # a pandas / numpy array from a parquet column
            value = value.tolist()
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        # SWE-Gym's parquet may hold 4.0 as a number; SkyRL-v0 writes an int one as "4.0"
        # (NovaSky-AI/SkyRL@a0d50c48 verl/utils/swedev_utils.py:138-139).
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return f"{value}.0"
        return str(value) if isinstance(value, float) else value

    @field_validator("created_at", mode="before")
    @classmethod
    def _timestamp(cls, value: Any) -> Any:
        return value.isoformat() if hasattr(value, "isoformat") else value  # parquet timestamps

    @field_validator("patch", "test_patch", mode="before")
    @classmethod
    def _no_patch(cls, value: Any) -> Any:
        return "" if value is None else value  # a parquet struct column holds None where a row has no such key

    @field_validator("files", mode="before")
    @classmethod
    def _repository(cls, value: Any) -> Any:
        # From parquet a {path: text} map comes back as (path, text) pairs (a map column) or as a struct of
        # every row's paths, None where this row has no such file.
        if isinstance(value, list) and all(isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in value):
            value = dict(value)
        if isinstance(value, dict):
            value = {path: text for path, text in value.items() if text is not None}
        return value

    @field_validator("files")
    @classmethod
    def _inside(cls, files: dict[str, str] | None) -> dict[str, str] | None:
        if files is not None and not files:
            raise ValueError("an empty repository: give at least one file, or leave 'files' out")
        for path in files or {}:
            norm = posixpath.normpath(path)
            if (
                not path
                or "\0" in path
                or "\\" in path
                or path.startswith("/")
                or norm in (".", "..")
                or norm.startswith("../")
            ):
                raise ValueError(f"path {path!r} is not a relative path inside the repository")
        return files


# SkyRL-v0's instruction, verbatim (NovaSky-AI/SkyRL@a0d50c48 verl/workers/agentic/utils.py:61-112), one line of it per
# source line (long ones split); `instruction` fills it.
_INSTRUCTION = (
    "\n"
    "<uploaded_files>\n"
    "/workspace/{workspace}\n"
    "</uploaded_files>\n"
    "\n"
    "I've uploaded a python code repository in the directory {workspace}. Consider the following "
    "issue description:\n"
    "\n"
    "<issue_description>\n"
    "{problem_statement}\n"
    "</issue_description>\n"
    "\n"
    "Can you help me implement the necessary changes to the repository so that the requirements "
    "specified in the <issue_description> are met?\n"
    "I've already taken care of all changes to any of the test files described in the "
    "<issue_description>. This means you DON'T have to modify the testing logic or any of the tests "
    "in any way!\n"
    "Also the development Python environment is already set up for you (i.e., all dependencies "
    "already installed), so you don't need to install other packages.\n"
    "Your task is to make the minimal changes to non-test files in the /workspace/{workspace} "
    "directory to ensure the <issue_description> is satisfied.\n"
    "\n"
    "Follow these steps to resolve the issue:\n"
    "\n"
    "1. EXPLORATION: First, thoroughly explore the repository structure using tools like `find` and "
    "`grep`.\n"
    "   - Identify all files mentioned in the problem statement\n"
    "   - Locate where the issue occurs in the codebase\n"
    "   - Understand the surrounding context and dependencies\n"
    "   - Use `grep` to search for relevant functions, classes, or error messages\n"
    "\n"
    "2. ANALYSIS: Based on your exploration, think carefully about the problem and propose 2-5 "
    "possible approaches to fix the issue.\n"
    "   - Analyze the root cause of the problem\n"
    "   - Consider trade-offs between different solutions\n"
    "   - Select the most promising approach and explain your reasoning\n"
    "\n"
    "3. TEST CREATION: Before implementing any fix, create a script to reproduce and verify the "
    "issue.\n"
    "   - Look at existing test files in the repository to understand the test format/structure\n"
    "   - Create a minimal reproduction script that demonstrates the issue\n"
    "   - Run your script to confirm the error exists\n"
    "\n"
    "4. IMPLEMENTATION: Edit the source code to implement your chosen solution.\n"
    "   - Make minimal, focused changes to fix the issue\n"
    "\n"
    "5. VERIFICATION: Test your implementation thoroughly.\n"
    "   - Run your reproduction script to verify the fix works\n"
    "   - Add edge cases to your test script to ensure comprehensive coverage\n"
    "   - Run existing tests related to the modified code to ensure you haven't broken anything\n"
    "\n"
    "6. FINAL REVIEW: Carefully re-read the problem description and compare your changes with the "
    "base commit {base_commit}.\n"
    "   - Ensure you've fully addressed all requirements\n"
    "   - Run any tests in the repository related to:\n"
    "     * The issue you are fixing\n"
    "     * The files you modified\n"
    "     * The functions you changed\n"
    "   - If any tests fail, revise your implementation until all tests pass\n"
    "\n"
    "Be thorough in your exploration, testing, and reasoning. It's fine if your thinking process is "
    "lengthy - quality and completeness are more important than brevity.\n"
)


def instruction(instance: dict[str, Any]) -> str:
    """SkyRL-v0's first user message for an instance: OpenHands' SWE-bench instruction as SkyRL-v0 pins it,
    verbatim, browsing off (NovaSky-AI/SkyRL@a0d50c48 verl/workers/agentic/utils.py:56-120; the rollout sets it
    for every instance, codeact.py:876-882). The workspace is `/workspace/<repo>__<version>` with `/` spelled
    `__` (utils.py:56-57); an instance without a version (SWE-smith's) drops the `__<version>`."""
    version = instance.get("version")
    workspace_dir_name = (f"{instance['repo']}__{version}" if version else instance["repo"]).replace("/", "__")
    return _INSTRUCTION.format(
        workspace=workspace_dir_name,
        problem_statement=instance["problem_statement"],
        base_commit=instance["base_commit"],
    )


def is_swe_smith(raw: dict[str, Any], data_source: str | None = None) -> bool:
    """A SWE-smith instance: its row says so, or it names SWE-smith's repository or image
    (`swesmith/<owner>__<repo>.<commit8>`, image `swesmith.<arch>.<owner>__<repo>.<commit8>`, published under
    jyangballin/ with `__` spelled `_1776_`; SWE-bench/SWE-smith@cf2e649d swesmith/harness/gather.py:233,238,
    swesmith/utils.py:156-161,203-207, swesmith/constants.py:30)."""
    if data_source is not None:
        return data_source == "swe-smith"
    repo, image = str(raw.get("repo", "")), str(raw.get("image_name", ""))
    return repo.startswith("swesmith/") or "swesmith." in image


def normalise_instance(
    raw: dict[str, Any], *, where: str = "row", prefix: str = "instance.", data_source: str | None = None
) -> dict[str, Any]:
    """The instance as the environment reads it: lists for the test ids, SWE-smith's bug kept apart from the fix.
    A malformed field is refused (SweRowError) by its name, `prefix` + field."""
    data = dict(raw)
    if is_swe_smith(data, data_source) and data.get("bug_patch") is None:
        data["bug_patch"], data["patch"] = data.get("patch", ""), ""
        if not data.get("base_commit") and isinstance(data.get("instance_id"), str):
            data["base_commit"] = data["instance_id"]  # the branch gather.py pushes the bug to
    try:
        instance = SweInstance.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"][:1]) or "instance"
        detail = first["msg"].removeprefix("Value error, ")
        if first["type"] == "missing":
            detail = (
                "missing: an SWE-bench instance has instance_id, repo, base_commit, problem_statement, FAIL_TO_PASS"
            )
        elif first["type"] == "too_short" and field == "FAIL_TO_PASS":
            detail = "empty: an instance needs at least one test that fails before the fix"
        raise SweRowError(where, prefix + field, detail) from None
    return instance.model_dump(exclude_none=True)


def parse_swe_row(row: dict[str, Any], *, where: str = "row") -> Example:
    """One row -- `{prompt, data_source, ability, instance}` or a bare instance -- as an Example: ground truth the
    instance's id and test lists (what the reward grades), `extra_info["instance"]` what the swe environment runs.
    A malformed row raises SweRowError naming `where` and the field."""
    if not isinstance(row, dict):
        raise SweRowError(where, "row", "expected an object with the SWE-bench fields or an 'instance'")
    wrapped = "instance" in row
    data_source = row.get("data_source") if wrapped else None
    if data_source is not None and not isinstance(data_source, str):
        raise SweRowError(where, "data_source", "expected text such as 'swe-gym'")
    raw = row["instance"] if wrapped else row
    if isinstance(raw, str):  # an instance stored as JSON text
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raise SweRowError(where, "instance", "text that is not JSON") from None
    if not isinstance(raw, dict):
        raise SweRowError(where, "instance", "expected an object with the SWE-bench fields")
    instance = normalise_instance(raw, where=where, prefix="instance." if wrapped else "", data_source=data_source)
    prompt = row.get("prompt") if wrapped else None
    if prompt is None:
        prompt = [{"role": "user", "content": instruction(instance)}]
    elif isinstance(prompt, str):
        prompt = [{"role": "user", "content": prompt}]
    if hasattr(prompt, "tolist"):
        prompt = prompt.tolist()
    if not (
        isinstance(prompt, list)
        and prompt
        and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in prompt)
    ):
        raise SweRowError(where, "prompt", "expected text or a list of {role, content} messages")
    return Example(
        id=instance["instance_id"],
        prompt=[{"role": str(m.get("role") or "user"), "content": m["content"]} for m in prompt],
        ground_truth={
            "instance_id": instance["instance_id"],
            "FAIL_TO_PASS": instance["FAIL_TO_PASS"],
            "PASS_TO_PASS": instance["PASS_TO_PASS"],
        },
        data_source=data_source or _bare_source(raw, instance),
        extra_info={"instance": instance},
    )


def _bare_source(raw: dict[str, Any], instance: dict[str, Any]) -> str:
    # A bare instance is named by how it is published: SWE-smith by its repository or image, SWE-bench by its
    # JSON-text test lists, SWE-Gym by its lists.
    if "bug_patch" in instance:
        return "swe-smith"
    return "swe-bench" if isinstance(raw.get("FAIL_TO_PASS"), str) else "swe-gym"


def container_image(instance: dict[str, Any]) -> str:
    """The image an instance runs in: its own `image_name` (SWE-smith's), else SkyRL-v0's name for the SWE-Gym /
    SWE-bench instance image (codeact.py:253-258). SWE-bench's harness names the same image
    `swebench/sweb.eval.x86_64.<id>:latest` with `__` spelled `_1776_` (SWE-bench/SWE-bench@v4.0.4
    swebench/harness/test_spec/test_spec.py:108-113, namespace run_evaluation.py:275)."""
    if instance.get("image_name"):
        return str(instance["image_name"])
    name = "sweb.eval.x86_64." + str(instance.get("instance_id", "?")).replace("__", "_s_")
    return (SKYRL_IMAGE_PREFIX + name).lower()


def requires_container(instance: dict[str, Any]) -> str | None:
    """None when tirlab's sandbox can run the instance (its repository is in the row, `files`); else what running
    it needs and that this machine lacks it."""
    if instance.get("files"):
        return None
    return (
        f"{instance.get('instance_id', 'this instance')} runs in its container image {container_image(instance)} "
        f"({instance.get('repo')} at {instance.get('base_commit')}), which needs a container runtime (Docker or "
        "Podman); there is no container runtime here, and tirlab's sandbox runs only rows that carry their "
        "repository in instance['files'] (as swe-mini's do)"
    )
