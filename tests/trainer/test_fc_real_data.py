"""The papers' own function-calling data, loaded, scored and trained on through the path runs use.

ToolRL: dataset/rlla_4k/{train,test}.parquet of qiancheng0/ToolRL @8cee13e, both written by the same
process_fn (dataset/rlla_4k_raw/rlla.py:46-67): data_source "rlla", prompt [system, user] where the
system message lists the tools as numbered text, reward_model.ground_truth in ToolRL's text form, no
tools column. tirlab ships the test split (data/toolrl/test.parquet); the train split is the same shape.

Tool-N1: the parquet NVlabs/Tool-N1's verl_toolcall_preprocess.py writes, built by hand in
tests/tool_n1_data.py (which cites each line it mirrors): a tools column (JSON), the system message
listing the tools in <tools>, reward_model.ground_truth the JSON list of {name, arguments}.
"""

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.model_cache import MODEL_CACHE
from tests.tool_n1_data import (
    BOOK,
    CANCEL,
    CONVERT,
    RAW_ROWS,
    WEATHER,
    tool_n1_rows,
    tool_n1_table,
    write_tool_n1_parquet,
)
from trainer.config import validate_config
from trainer.contract import EXACT_MATCH
from trainer.data.datasets import BUILTIN_FILES, DatasetError, load_dataset
from trainer.loop.train import run_training
from trainer.protocols.calls import call_scores, ground_truth_calls
from trainer.protocols.prompts import apply_template
from trainer.report.client import Reporter
from trainer.rewards import score
from trainer.trajectory import Example

TOOLRL_TEST = BUILTIN_FILES["toolrl-test"].path
# ToolRL's reward with train_grpo.sh's switches (all 0): format {0, 1} + correctness [-3, 3].
TOOLRL_PARAMS = {"schedule": "constant"}


@pytest.fixture
def toolrl_train(tmp_path: Path) -> Path:
    """ToolRL's parquet where the toolrl preset reads its train split (data/toolrl/train.parquet)."""
    path = tmp_path / "data" / "toolrl" / "train.parquet"
    path.parent.mkdir(parents=True)
    shutil.copy(TOOLRL_TEST, path)
    return path


@pytest.fixture
def tool_n1_train(tmp_path: Path) -> Path:
    """Tool-N1's parquet where the tool-n1 preset reads it (data/tool_n1/train.parquet)."""
    return write_tool_n1_parquet(tmp_path / "data" / "tool_n1" / "train.parquet")


def toolrl_reply(calls: list[dict]) -> str:
    """A reply in ToolRL's layout (its system prompt's Output Format): one call a line, "parameters"."""
    if not calls:
        return "<think>No tool fits.</think>\n<response>I cannot do that with these tools.</response>"
    lines = "\n".join(json.dumps({"name": c["name"], "parameters": c["arguments"]}) for c in calls)
    return f"<think>Call them.</think>\n<tool_call>\n{lines}\n</tool_call>"


def tool_n1_reply(calls: list[dict]) -> str:
    """A reply in Tool-N1's layout (qwen_tool_prompts): one JSON list of {name, arguments}."""
    return f"<think>Call them.</think> <tool_call>{json.dumps(calls)}</tool_call>"


def write_parquet(path: Path, table: pa.Table) -> Path:
    pq.write_table(table, path)
    return path


def with_cell(table: pa.Table, column: str, row: int, value) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = value
    index = table.schema.get_field_index(column)
    return table.set_column(index, column, pa.array(values, type=table.schema.field(column).type))


# -- ToolRL's rlla_4k ------------------------------------------------------------------------------


def test_toolrl_rows_carry_the_tools_their_system_prompt_lists(toolrl_train):
    examples = load_dataset(str(toolrl_train))
    assert len(examples) == 80 and all(e.tools for e in examples)
    first = examples[0]
    names = [tool["name"] for tool in first.tools]
    assert names == ["GetPowerBINews", "SingleOffer", "Domain WHOIS Lookup API", "GetNews"]
    page = {"description": "The page number of news articles to retrieve", "type": "int", "default": ""}
    assert first.tools[3] == {
        "name": "GetNews",
        "description": "Retrieve Azure news articles",
        "parameters": {"page": page},
    }
    # The ground truth stays ToolRL's text: its reward reads the expected reply's shape from it.
    assert first.ground_truth.endswith('<tool_call>\n{"name": "GetNews", "parameters": {"page": "1"}}\n</tool_call>')
    assert (first.data_source, first.id) == ("rlla", "0")


def test_toolrl_template_rebuilds_every_rows_own_system_prompt_from_the_tools_read():
    # The listing read back is the listing written: ToolRL's template over the parsed tools gives each
    # row's system message byte for byte (rlla_qwen.py:53-64 @8cee13e writes that listing).
    for example in load_dataset("toolrl-test"):
        assert example.tools, example.id
        system, user = apply_template(example, "tool_call_json", "toolrl")
        assert system == example.prompt[0] and user == example.prompt[1], example.id


def test_toolrl_ground_truth_scores_full_under_toolrl_and_matches_in_the_call_metrics():
    examples = load_dataset("toolrl-test")
    shapes = set()
    for example in examples:
        truth = example.ground_truth
        has_call = "<tool_call>" in truth
        shapes.add(has_call)
        result = score("toolrl", truth, truth, params=TOOLRL_PARAMS)
        # Format max 1, plus correctness max 3 when calls are due (0 when the truth is a reply).
        assert (result.components["format"], result.components["correctness"]) == (1.0, 3.0 if has_call else 0.0)
        assert result.correct, example.id
        assert call_scores(truth, ground_truth_calls(truth))[EXACT_MATCH] == 1.0, example.id
    assert shapes == {True, False}  # the test split has both call rows and reply rows


def toolrl_table() -> pa.Table:
    return pq.read_table(TOOLRL_TEST).slice(0, 3)


def test_toolrl_tool_listing_that_is_not_json_names_row_and_tool(tmp_path):
    table = toolrl_table()
    prompt = table.column("prompt").to_pylist()[1]
    prompt[0]["content"] = prompt[0]["content"].replace('Parameters: {"', 'Parameters: {oops"', 1)
    path = write_parquet(tmp_path / "rlla.parquet", with_cell(table, "prompt", 1, prompt))
    with pytest.raises(DatasetError) as caught:
        load_dataset(str(path))
    assert (caught.value.row, caught.value.field) == (1, "prompt")
    assert str(caught.value).startswith("row 1: column 'prompt': the Parameters of tool 1 (")
    assert "are not valid JSON" in str(caught.value)


def test_toolrl_tool_listing_out_of_layout_names_row_and_tool(tmp_path):
    table = toolrl_table()
    prompt = table.column("prompt").to_pylist()[2]
    prompt[0]["content"] = prompt[0]["content"].replace("\nDescription: ", "\nAbout: ", 2)
    path = write_parquet(tmp_path / "rlla.parquet", with_cell(table, "prompt", 2, prompt))
    with pytest.raises(DatasetError, match=r"^row 2: column 'prompt': tool 1 of the system message's tool list is not"):
        load_dataset(str(path))


def test_toolrl_ground_truth_with_a_broken_call_line_names_row_and_column(tmp_path):
    table = toolrl_table()
    reward_model = table.column("reward_model").to_pylist()[0]
    reward_model["ground_truth"] = reward_model["ground_truth"].replace('"parameters": {', '"parameters": ', 1)
    path = write_parquet(tmp_path / "rlla.parquet", with_cell(table, "reward_model", 0, reward_model))
    with pytest.raises(DatasetError) as caught:
        load_dataset(str(path))
    assert (caught.value.row, caught.value.field) == (0, "reward_model")
    assert "<tool_call> block must hold one JSON call a line" in str(caught.value)


# -- Tool-N1's training parquet ----------------------------------------------------------------------


def test_tool_n1_rows_load_with_their_tools_prompt_and_calls(tool_n1_train):
    examples = load_dataset(str(tool_n1_train))
    rows = tool_n1_rows()
    assert [e.tools for e in examples] == [raw["tools"] for raw in RAW_ROWS]
    assert [e.ground_truth for e in examples] == [raw["answer"] for raw in RAW_ROWS]
    assert [e.prompt for e in examples] == [row["prompt"] for row in rows]
    assert {e.data_source for e in examples} == {"toolcall"}
    assert [e.id for e in examples] == ["0", "1", "2", "3", "4"]
    # The multi-turn row ends on the user's turn after the call, its result and the reply.
    assert [m["role"] for m in examples[4].prompt] == ["system", "user", "assistant", "tool", "assistant", "user"]


def test_tool_n1_rows_without_the_tools_column_read_the_tools_from_the_system_prompt(tmp_path, tool_n1_train):
    # verl reads only prompt, reward_model, data_source and extra_info: a file cut to them still lists
    # the tools in <tools>, one {"type": "function", "function": tool} a line.
    full = load_dataset(str(tool_n1_train))
    table = tool_n1_table().drop_columns(["tools", "conversations", "answer", "raw_system"])
    cut = load_dataset(str(write_parquet(tmp_path / "cut.parquet", table)))
    assert cut == full
    assert cut[3].tools == [BOOK, CANCEL] and cut[0].tools == [WEATHER, CONVERT]


def test_tool_n1_ground_truth_scores_one_under_tool_n1_and_full_under_toolrl(tool_n1_train):
    for example in load_dataset(str(tool_n1_train)):
        calls = example.ground_truth
        assert score("tool_n1", tool_n1_reply(calls), calls).total == 1.0, example.id
        # ToolRL's reward over the same truth, answered in ToolRL's layout: format 1, correctness 3 when
        # calls are due; a no-call truth asks for a <response>, worth the format point alone.
        toolrl = score("toolrl", toolrl_reply(calls), calls, params=TOOLRL_PARAMS)
        assert toolrl.total == (4.0 if calls else 1.0) and toolrl.correct, example.id
        assert call_scores(tool_n1_reply(calls), ground_truth_calls(calls))[EXACT_MATCH] == 1.0, example.id


def test_tool_n1_ground_truth_naming_a_tool_not_offered_names_row_and_column(tmp_path):
    rows = tool_n1_rows()
    rows[2]["reward_model"]["ground_truth"] = json.dumps([{"name": "get_weather", "arguments": {"city": "Oslo"}}])
    path = write_parquet(tmp_path / "n1.parquet", tool_n1_table(rows))
    with pytest.raises(DatasetError) as caught:
        load_dataset(str(path))
    assert (caught.value.row, caught.value.field) == (2, "reward_model")
    assert str(caught.value) == (
        "row 2: column 'reward_model': the ground truth: call 1 names tool 'get_weather', which is not in 'tools'"
    )


def test_tool_n1_ground_truth_that_is_not_json_names_row_and_column(tmp_path):
    rows = tool_n1_rows()
    rows[1]["reward_model"]["ground_truth"] = '[{"name": "convert_currency", "arguments": {'
    path = write_parquet(tmp_path / "n1.parquet", tool_n1_table(rows))
    with pytest.raises(DatasetError, match=r"^row 1: column 'reward_model': the ground truth starts like a JSON list"):
        load_dataset(str(path))


def test_tool_n1_ground_truth_that_is_one_call_not_a_list_is_refused(tmp_path):
    rows = tool_n1_rows()
    rows[0]["reward_model"]["ground_truth"] = json.dumps({"name": "get_weather", "arguments": {"city": "Lyon"}})
    path = write_parquet(tmp_path / "n1.parquet", tool_n1_table(rows))
    with pytest.raises(DatasetError, match=r"^row 0: column 'reward_model': the ground truth must be a JSON list"):
        load_dataset(str(path))


def test_tool_n1_tools_block_line_that_is_not_json_names_row_and_line(tmp_path):
    rows = tool_n1_rows()
    system = rows[0]["prompt"][0]
    system["content"] = system["content"].replace('{"type": "function", "function": {"name": "convert', "{oops", 1)
    table = tool_n1_table(rows).drop_columns(["tools"])
    with pytest.raises(DatasetError) as caught:
        load_dataset(str(write_parquet(tmp_path / "n1.parquet", table)))
    assert (caught.value.row, caught.value.field) == (0, "prompt")
    assert "line 2 of the system message's <tools> block is not valid JSON" in str(caught.value)


# -- one training step on each ---------------------------------------------------------------------


@pytest.mark.parametrize(("paper", "reward"), [("toolrl", "toolrl"), ("tool_n1", "tool_n1")])
def test_one_training_step_on_the_papers_data(random_tiny, tmp_path, request, paper, reward):
    train_file = request.getfixturevalue(f"{paper}_train")
    config = {
        "model": {"name_or_path": str(random_tiny)},
        "data": {
            "train_dataset": str(train_file),
            "val_dataset": str(train_file),
            "prompt_template": "tool-signatures",
            "max_prompt_tokens": 600,
            "max_response_tokens": 48,
        },
        "tools": {"protocol": "tool_call_json", "max_tool_calls": 1},
        "reward": {"name": reward, "params": TOOLRL_PARAMS if reward == "toolrl" else {}},
        "rollout": {"prompts_per_step": 3, "group_size": 4, "trajectories_to_report": 1},
        "optim": {"learning_rate": 1e-4},
        "schedule": {"max_steps": 1, "eval_every": 1, "checkpoint_every": 0},
    }
    out = tmp_path / "run"
    with Reporter(out) as reporter:
        run_training(validate_config(config), reporter=reporter, out_dir=out, model_cache=MODEL_CACHE)
    (metrics,) = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    values = metrics["values"]
    # Call metrics exist only for examples whose ground truth reads as calls.
    for prefix in ("", "val/"):
        assert 0.0 <= values[f"{prefix}calls/exact_match"] <= 1.0
    # The prompt listed the row's tools as signatures ('tool-signatures'), read from the row.
    reported = json.loads((out / "trajectories.jsonl").read_text().splitlines()[0])
    user = [m["content"] for m in reported["prompt"] if m["role"] == "user"][-1]
    examples: list[Example] = load_dataset(str(train_file))
    names = {tool["name"] for example in examples for tool in example.tools or []}
    assert any(user.startswith(name + "(") for name in names), user


# -- where the papers' files go ----------------------------------------------------------------------


def test_a_missing_paper_file_points_at_its_folders_readme(tmp_path):
    folder = tmp_path / "data" / "tool_n1"
    folder.mkdir(parents=True)
    (folder / "README.md").write_text("Download Tool-N1's train.parquet here.\n")
    with pytest.raises(DatasetError, match=f"; {folder}/README.md says where to get it$"):
        load_dataset(str(folder / "train.parquet"))
    # The folders the toolrl and tool-n1 presets read their train files from have one.
    for folder in ("toolrl", "tool_n1"):
        assert "train.parquet" in (TOOLRL_TEST.parents[1] / folder / "README.md").read_text()
