"""Real-format SWE-Gym, SWE-bench and SWE-smith rows load through the loader swe-mini's rows go through; a
malformed one is refused by field; a row without its repository is refused for running, saying what it needs."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trainer.data.swe_mini import swe_mini_rows
from trainer.data.swe_rows import SweRowError, container_image, instruction, parse_swe_row, requires_container

# A SWE-Gym instance (getmoto/moto is one of SWE-Gym's repositories), cut down by hand.
INSTANCE = {
    "instance_id": "getmoto__moto-5752",
    "repo": "getmoto/moto",
    "base_commit": "b2300f1eae1323e3e8bc45f97e530ce129dff12e",
    "problem_statement": "describe_parameters depends on filter order",
    "patch": "diff --git a/moto/ssm/models.py b/moto/ssm/models.py\n",
    "test_patch": "diff --git a/tests/test_ssm/test_ssm_boto3.py b/tests/test_ssm/test_ssm_boto3.py\n",
    "version": "4.0",
    "created_at": "2022-12-10T20:23:01Z",
    "environment_setup_commit": "b2300f1eae1323e3e8bc45f97e530ce129dff12e",
    "hints_text": "",
}
F2P = ["tests/test_ssm/test_ssm_boto3.py::test_describe_parameters__multiple_tags"]
P2P = ["tests/test_ssm/test_ssm_boto3.py::test_get_parameter"]
SWE_GYM_ROW = {
    "prompt": [{"role": "user", "content": "Fix it."}],
    "data_source": "swe-gym",
    "ability": "coding",
    "instance": {**INSTANCE, "FAIL_TO_PASS": F2P, "PASS_TO_PASS": P2P},
}
# SWE-bench stores the test lists as JSON text, and publishes bare instances (no prompt).
SWE_BENCH_ROW = {
    **INSTANCE,
    "instance_id": "django__django-11099",
    "repo": "django/django",
    "version": "3.0",
    "FAIL_TO_PASS": json.dumps(["test_unicode_validator (auth_tests.test_validators.UsernameValidatorsTests)"]),
    "PASS_TO_PASS": json.dumps(["test_help_text (auth_tests.test_validators.UserAttributeSimilarityValidatorTest)"]),
}
# SWE-smith: `patch` is the bug it injected; base_commit the commit that carries it; the image its own.
SWE_SMITH_ROW = {
    "instance_id": "oauthlib__oauthlib.1fd52536.combine_file__09vlzwgc",
    "repo": "swesmith/oauthlib__oauthlib.1fd52536",
    "base_commit": "8c3c1b9d0e4b4e4d9e4f6b3e2c5a1d7f9b0c2e41",
    "image_name": "jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536",
    "patch": "diff --git a/oauthlib/common.py b/oauthlib/common.py\n-good\n+bug\n",
    "problem_statement": "Token request fails",
    "FAIL_TO_PASS": ["tests/test_common.py::test_token"],
    "PASS_TO_PASS": ["tests/test_common.py::test_urldecode"],
    "created_at": "2025-03-14T22:53:53.364227",
}


def test_a_swe_gym_row_with_lists_loads_with_its_prompt():
    example = parse_swe_row(SWE_GYM_ROW)
    assert example.id == "getmoto__moto-5752" and example.data_source == "swe-gym"
    assert example.prompt == [{"role": "user", "content": "Fix it."}]
    assert example.ground_truth == {"instance_id": "getmoto__moto-5752", "FAIL_TO_PASS": F2P, "PASS_TO_PASS": P2P}
    instance = example.extra_info["instance"]
    assert set(example.extra_info) == {"instance"}
    assert instance["version"] == "4.0" and instance["test_patch"].startswith("diff --git")
    assert "files" not in instance and "bug_patch" not in instance


def test_a_bare_swe_bench_row_with_json_strings_gets_skyrl_v0s_instruction():
    example = parse_swe_row(SWE_BENCH_ROW)
    assert example.data_source == "swe-bench"
    assert example.ground_truth["FAIL_TO_PASS"] == [
        "test_unicode_validator (auth_tests.test_validators.UsernameValidatorsTests)"
    ]
    ((message),) = example.prompt
    text = message["content"]
    assert message["role"] == "user" and text == instruction(example.extra_info["instance"])
    # SkyRL-v0's workspace: /workspace/<repo>__<version>, '/' spelled '__'.
    assert text.startswith("\n<uploaded_files>\n/workspace/django__django__3.0\n</uploaded_files>\n")
    assert "<issue_description>\ndescribe_parameters depends on filter order\n</issue_description>" in text
    assert f"with the base commit {INSTANCE['base_commit']}." in text
    # A bare SWE-Gym instance (lists) is named as SWE-Gym's.
    assert parse_swe_row({**INSTANCE, "FAIL_TO_PASS": F2P}).data_source == "swe-gym"


def test_a_number_version_reads_as_skyrl_v0_writes_it():
    assert parse_swe_row({**INSTANCE, "FAIL_TO_PASS": F2P, "version": 4}).extra_info["instance"]["version"] == "4.0"
    assert parse_swe_row({**INSTANCE, "FAIL_TO_PASS": F2P, "version": 0.9}).extra_info["instance"]["version"] == "0.9"


def test_a_swe_smith_row_keeps_its_injected_bug_apart_from_the_fix():
    example = parse_swe_row(SWE_SMITH_ROW)
    instance = example.extra_info["instance"]
    assert example.data_source == "swe-smith"
    assert instance["bug_patch"] == SWE_SMITH_ROW["patch"] and instance["patch"] == ""
    assert instance["base_commit"] == SWE_SMITH_ROW["base_commit"]
    assert instance["FAIL_TO_PASS"] == SWE_SMITH_ROW["FAIL_TO_PASS"]
    assert instance["PASS_TO_PASS"] == SWE_SMITH_ROW["PASS_TO_PASS"]
    # No version: the workspace is the repository's name alone.
    assert "/workspace/swesmith__oauthlib__oauthlib.1fd52536\n" in example.prompt[0]["content"]
    # Without a base commit it starts at the branch SWE-smith pushes the bug to, named after the instance.
    bare = {key: value for key, value in SWE_SMITH_ROW.items() if key != "base_commit"}
    assert parse_swe_row(bare).extra_info["instance"]["base_commit"] == SWE_SMITH_ROW["instance_id"]
    # Wrapped, the row's data_source says it is SWE-smith's.
    wrapped = parse_swe_row({"prompt": "Fix.", "data_source": "swe-smith", "ability": "coding", "instance": bare})
    assert wrapped.extra_info["instance"]["bug_patch"].startswith("diff --git")
    # Loading twice (a normalised instance read back) keeps the bug where it is.
    again = parse_swe_row({"prompt": "Fix.", "data_source": "swe-smith", "instance": instance})
    assert again.extra_info["instance"] == instance


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"FAIL_TO_PASS": "not json"}, "FAIL_TO_PASS"),
        ({"FAIL_TO_PASS": json.dumps({"a": 1})}, "FAIL_TO_PASS"),
        ({"FAIL_TO_PASS": []}, "FAIL_TO_PASS"),
        ({"FAIL_TO_PASS": None}, "FAIL_TO_PASS"),
        ({"PASS_TO_PASS": [1, 2]}, "PASS_TO_PASS"),
        ({"PASS_TO_PASS": "[1"}, "PASS_TO_PASS"),
        ({"instance_id": ""}, "instance_id"),
        ({"instance_id": 7}, "instance_id"),
        ({"repo": None}, "repo"),
        ({"base_commit": ""}, "base_commit"),
        ({"problem_statement": None}, "problem_statement"),
        ({"patch": 3}, "patch"),
        ({"test_patch": ["x"]}, "test_patch"),
        ({"image_name": 5}, "image_name"),
        ({"hints_text": {}}, "hints_text"),
        ({"files": {"../etc/passwd": "x"}}, "files"),
        ({"files": {"/etc/passwd": "x"}}, "files"),
        ({"files": {"a/../../b.py": "x"}}, "files"),
        ({"files": {"f.py": 3}}, "files"),
        ({"files": {}}, "files"),
    ],
)
def test_a_malformed_instance_is_refused_naming_its_field(change, field):
    with pytest.raises(SweRowError) as refused:
        parse_swe_row({**SWE_GYM_ROW, "instance": {**SWE_GYM_ROW["instance"], **change}}, where="row 7")
    assert str(refused.value).startswith(f"row 7: instance.{field}: ")
    assert refused.value.field == f"instance.{field}"
    # A bare instance's field is named as the row spells it.
    with pytest.raises(SweRowError) as refused:
        parse_swe_row({**INSTANCE, "FAIL_TO_PASS": F2P, **change}, where="row 7")
    assert refused.value.field == field


@pytest.mark.parametrize("missing", ["instance_id", "repo", "base_commit", "problem_statement", "FAIL_TO_PASS"])
def test_a_missing_field_is_named(missing):
    instance = {key: value for key, value in SWE_GYM_ROW["instance"].items() if key != missing}
    with pytest.raises(SweRowError, match=f"^row: instance.{missing}: missing"):
        parse_swe_row({**SWE_GYM_ROW, "instance": instance})


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({**SWE_GYM_ROW, "instance": ["not", "an", "object"]}, "instance"),
        ({**SWE_GYM_ROW, "instance": "{not json"}, "instance"),
        ({**SWE_GYM_ROW, "prompt": 5}, "prompt"),
        ({**SWE_GYM_ROW, "prompt": [{"role": "user"}]}, "prompt"),
        ({**SWE_GYM_ROW, "prompt": []}, "prompt"),
        ({**SWE_GYM_ROW, "data_source": 3}, "data_source"),
    ],
)
def test_a_malformed_row_is_refused_naming_its_field(row, field):
    with pytest.raises(SweRowError) as refused:
        parse_swe_row(row, where="row 3")
    assert refused.value.field == field and str(refused.value).startswith(f"row 3: {field}: ")


def test_an_instance_stored_as_json_text_and_a_text_prompt_load():
    example = parse_swe_row({**SWE_GYM_ROW, "prompt": "Fix it.", "instance": json.dumps(SWE_GYM_ROW["instance"])})
    assert example.prompt == [{"role": "user", "content": "Fix it."}]
    assert example.extra_info["instance"]["FAIL_TO_PASS"] == F2P


def test_running_a_real_row_needs_its_container_image_and_a_runtime():
    gym = parse_swe_row(SWE_GYM_ROW).extra_info["instance"]
    reason = requires_container(gym)
    # SkyRL-v0's image of a SWE-Gym instance: xingyaoww/sweb.eval.x86_64.<id>, '__' spelled '_s_', lower case.
    assert container_image(gym) == "docker.io/xingyaoww/sweb.eval.x86_64.getmoto_s_moto-5752"
    assert "docker.io/xingyaoww/sweb.eval.x86_64.getmoto_s_moto-5752" in reason
    assert "container runtime" in reason and "no container runtime here" in reason
    assert "instance['files']" in reason
    bench = parse_swe_row(SWE_BENCH_ROW).extra_info["instance"]
    assert "sweb.eval.x86_64.django_s_django-11099" in requires_container(bench)
    smith = parse_swe_row(SWE_SMITH_ROW).extra_info["instance"]
    assert f"image {SWE_SMITH_ROW['image_name']} " in requires_container(smith)


def test_a_generated_row_runs_here():
    generated = parse_swe_row(swe_mini_rows(1)[0]).extra_info["instance"]
    assert requires_container(generated) is None and generated["files"]


def test_a_jsonl_file_of_rows_is_a_swe_dataset_with_its_preview_and_a_bad_line_is_named(tmp_path):
    from trainer.data.datasets import DatasetError, DatasetFormat, detect_format, inspect_dataset, load_dataset

    rows = [*swe_mini_rows(2), SWE_GYM_ROW, SWE_BENCH_ROW, SWE_SMITH_ROW]
    path = tmp_path / "swe.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert detect_format(path) is DatasetFormat.SWE
    examples = load_dataset(str(path))
    assert [e.data_source for e in examples] == ["swe-mini", "swe-mini", "swe-gym", "swe-bench", "swe-smith"]
    assert examples[3].ground_truth["instance_id"] == "django__django-11099"
    info = inspect_dataset(path)
    assert info.format is DatasetFormat.SWE and info.row_count == 5
    assert info.preview[2]["instance"] == {
        "instance_id": "getmoto__moto-5752",
        "repo": "getmoto/moto",
        "problem_statement": "describe_parameters depends on filter order",
    }
    assert info.preview[2]["id"] == "getmoto__moto-5752"
    bad = {**SWE_GYM_ROW, "instance": {**SWE_GYM_ROW["instance"], "FAIL_TO_PASS": "nope"}}
    path.write_text(json.dumps(rows[0]) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(DatasetError) as refused:
        load_dataset(str(path))
    assert str(refused.value).startswith("line 2: instance.FAIL_TO_PASS: ")
    assert refused.value.line == 2 and refused.value.field == "instance.FAIL_TO_PASS"
    # A bare SWE-bench file (instances, no prompt) is a swe dataset too.
    path.write_text(json.dumps(SWE_BENCH_ROW) + "\n")
    assert detect_format(path) is DatasetFormat.SWE and load_dataset(str(path))[0].id == "django__django-11099"


def test_a_parquet_file_of_rows_loads_and_a_bad_row_is_named(tmp_path):
    from trainer.data.datasets import DatasetError, DatasetFormat, detect_format, load_dataset

    # A struct column unifies the rows' keys: a row without `files` or `image_name` reads them as None.
    rows = [*swe_mini_rows(2), SWE_GYM_ROW]
    path = tmp_path / "swe.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    assert detect_format(path) is DatasetFormat.SWE
    examples = load_dataset(str(path))
    assert [e.id for e in examples] == [row["instance"]["instance_id"] for row in rows]
    assert examples[0].extra_info["instance"]["files"] == rows[0]["instance"]["files"]
    assert requires_container(examples[0].extra_info["instance"]) is None
    assert requires_container(examples[2].extra_info["instance"]) is not None
    bad = {**SWE_GYM_ROW, "instance": {**SWE_GYM_ROW["instance"], "problem_statement": ""}}
    pq.write_table(pa.Table.from_pylist([SWE_GYM_ROW, bad]), path)
    with pytest.raises(DatasetError) as refused:
        load_dataset(str(path))
    assert refused.value.row == 1 and refused.value.field == "instance.problem_statement"
