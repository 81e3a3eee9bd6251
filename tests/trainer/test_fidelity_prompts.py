"""Issue 13, items 1-3 and the shipped test sets: prompts and data equal to the papers' own code.

Expected values are written out by hand from the papers' code (cited file:line @commit) on rows
built here in the shape of the papers' own parquet files; nothing reads the papers' repositories.
Names are looked up on the modules inside each test, so one missing name fails one test only.
"""

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import trainer.data.datasets as data
import trainer.protocols.prompts as prompts
import trainer.sft.train as sft
from trainer.cli import main
from trainer.config import ConfigError, validate_config
from trainer.data.sft_traces import SFTRow
from trainer.loop.train import Trainer
from trainer.models import CharTokenizer
from trainer.report.client import Reporter
from trainer.trajectory import Example

# ToRL's own test.parquet rows: a system message ToRL discards, then the question as chat[1]
# (GAIR-NLP/ToRL data/torl_data/test.parquet @cb78cf1; reward_model spells its style key "stype").
TORL_SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."
TORL_QUESTIONS = ["What is 2+3?", "Find $x$ if $2x = 10$.\nGive $x$ only."]

# tir_base_0309 (verl/utils/dataset/rl_dataset.py:33-34 @cb78cf1) with [PROMPT] replaced by chat[1]'s
# content (rl_dataset.py:177-178): the Python literal's "\\boxed" is one backslash, "\n" a newline,
# and the literal ends with the newline typed after "Assistant:".
TORL_HEAD = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it.\n"
    "User: Please integrate natural language reasoning with programs to solve the problem above, "
    "and put your final answer within \\boxed{}.\n"
)


def torl_text(question: str) -> str:
    return TORL_HEAD + question + "\nAssistant:\n"


def torl_row(question: str, index: int) -> dict:
    return {
        "data_source": "aime24",
        "prompt": [{"role": "system", "content": TORL_SYSTEM}, {"role": "user", "content": question}],
        "ability": "math",
        "reward_model": {"ground_truth": str(index), "stype": "rule"},
        "extra_info": {"id": f"q{index}", "split": "test"},
    }


def write_parquet(path: Path, rows: list[dict]) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def math_example(*messages: dict[str, str]) -> Example:
    return Example(id="1", prompt=list(messages), ground_truth="5", data_source="test")


# -- item 1: ToRL's raw completion prompt -------------------------------------------------------


def test_torl_template_is_tir_base_0309_as_raw_text_without_the_rows_system_message():
    example = math_example({"role": "system", "content": TORL_SYSTEM}, {"role": "user", "content": "What is 2+3?"})
    prompt = prompts.build_prompt(example, "python_markdown", "torl")
    assert prompt.raw and prompt.messages is None
    assert prompt.text == (
        "A conversation between User and Assistant. The user asks a question, and the Assistant solves it.\n"
        "User: Please integrate natural language reasoning with programs to solve the problem above, and put "
        "your final answer within \\boxed{}.\nWhat is 2+3?\nAssistant:\n"
    )


def test_torl_prompt_ids_are_the_raw_text_encoded_without_special_tokens():
    # ToRL's rollout is fed tokenizer.encode(raw_prompt, add_special_tokens=False) (rl_dataset.py:226):
    # no chat template, so no "<|bos|>user: " of the tiny model's chat format in front.
    tokenizer = CharTokenizer()
    trainer = SimpleNamespace(
        config=SimpleNamespace(
            tools=SimpleNamespace(protocol="python_markdown"), data=SimpleNamespace(max_prompt_tokens=512)
        ),
        template="torl",
        tokenizer=tokenizer,
    )
    example = math_example({"role": "system", "content": TORL_SYSTEM}, {"role": "user", "content": "What is 2+3?"})
    ids = Trainer.prompt_ids(trainer, example)
    assert ids == tokenizer.encode(torl_text("What is 2+3?"), add_special_tokens=False)
    assert len(ids) == 257  # 245 characters of template and 12 of question, one token each
    assert ids[0] != tokenizer.bos_token_id


def test_torl_parquet_rows_give_torl_text_byte_for_byte(tmp_path):
    path = write_parquet(tmp_path / "test.parquet", [torl_row(q, i) for i, q in enumerate(TORL_QUESTIONS)])
    texts = [prompts.build_prompt(e, "python_markdown", "torl").text for e in data.load_dataset(str(path))]
    assert texts == [torl_text(q) for q in TORL_QUESTIONS]


def test_prompts_command_prints_the_exact_text_of_each_row(tmp_path):
    path = write_parquet(tmp_path / "test.parquet", [torl_row(q, i) for i, q in enumerate(TORL_QUESTIONS * 2)])
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(
            ["prompts", "--preset", "torl", "--template", "torl", "--dataset", str(path), "--rows", "3", "--json"]
        )
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 0
    assert [(row["raw"], row["text"]) for row in rows] == [(True, torl_text(q)) for q in (TORL_QUESTIONS * 2)[:3]]


def test_sft_renders_a_raw_template_as_its_text():
    example = math_example({"role": "user", "content": "What is 2+3?"})
    row = SFTRow(example=example, response="\\boxed{5}", tool_outputs=0)
    tokenizer = CharTokenizer()
    ids, mask = sft.encode_trace(tokenizer, row, protocol="python_markdown", template="torl")
    prompt = [i for i, m in zip(ids, mask, strict=True) if not m]
    assert tokenizer.decode(prompt) == torl_text("What is 2+3?")


def test_the_chat_form_of_torls_prompt_stays_the_python_markdown_default():
    # smollm2-gsm8k-cpu (template None, python_markdown, GSM8K rows without a system message) must see
    # the prompt it saw before the raw template existed, byte for byte.
    example = math_example({"role": "user", "content": "Natalia sold clips?"})
    system = (
        "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. "
        "Please integrate natural language reasoning with programs to solve the problem above, and put your "
        "final answer within \\boxed{}."
    )
    expected = [{"role": "system", "content": system}, {"role": "user", "content": "Natalia sold clips?"}]
    assert prompts.apply_template(example, "python_markdown") == expected
    assert prompts.apply_template(example, "python_markdown", "torl-chat") == expected


def test_the_quickstart_prompt_text_is_unchanged():
    # The tiny model's shipped cold start was trained on "plain" prompts in its chat format.
    tokenizer = CharTokenizer()
    trainer = SimpleNamespace(
        config=SimpleNamespace(
            tools=SimpleNamespace(protocol="python_markdown"), data=SimpleNamespace(max_prompt_tokens=256)
        ),
        template="plain",
        tokenizer=tokenizer,
    )
    ids = Trainer.prompt_ids(trainer, math_example({"role": "user", "content": "What is 6 - 3?"}))
    assert tokenizer.decode(ids) == "<|bos|>user: What is 6 - 3?\nassistant: "


def test_a_raw_template_has_no_chat_messages():
    with pytest.raises(prompts.PromptTemplateError, match="raw completion prompt"):
        prompts.apply_template(math_example({"role": "user", "content": "Q"}), "python_markdown", "torl")


# -- item 2: ToRL's filter of over-long prompts -------------------------------------------------


class CountingTokenizer:
    """One token per character, plus a BOS when special tokens are asked for, as many tokenizers do."""

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [1] * (len(text) + (1 if add_special_tokens else 0))

    def apply_chat_template(self, messages, add_generation_prompt: bool, tokenize: bool) -> str:
        return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "


def test_overlong_prompts_is_a_config_choice():
    assert validate_config({}).data.overlong_prompts == "truncate"
    assert validate_config({"data": {"overlong_prompts": "drop"}}).data.overlong_prompts == "drop"
    with pytest.raises(ConfigError) as error:
        validate_config({"data": {"overlong_prompts": "cut"}})
    assert list(error.value.errors) == ["data.overlong_prompts"]


def test_a_raw_prompt_fits_with_ten_tokens_to_spare_counted_with_special_tokens():
    # rl_dataset.py:149: keep iff len(tokenizer.encode(text)) <= max_prompt_length - 10, and encode
    # adds special tokens by default. The text has 257 characters, so 258 tokens here.
    prompt = prompts.build_prompt(math_example({"role": "user", "content": "What is 2+3?"}), "python_markdown", "torl")
    assert prompt.fits(CountingTokenizer(), 268)
    assert not prompt.fits(CountingTokenizer(), 267)


def test_a_chat_prompt_fits_in_max_prompt_tokens_exactly():
    # rl_dataset.py:143-145 (verl's default template type): keep iff the chat-templated ids number at
    # most max_prompt_length. "user: What is 2+3?\nassistant: " is 30 characters.
    prompt = prompts.build_prompt(math_example({"role": "user", "content": "What is 2+3?"}), "python_markdown", "plain")
    assert prompt.fits(CountingTokenizer(), 30)
    assert not prompt.fits(CountingTokenizer(), 29)



def qa_file(path: Path, questions: list[str]) -> str:
    path.write_text("".join(json.dumps({"question": q, "answer": "1"}) + "\n" for q in questions))
    return str(path)


def make_trainer(model: Path, tmp_path: Path, data_config: dict, logs: list[str]) -> Trainer:
    config = validate_config(
        {"model": {"name_or_path": str(model)}, "data": {"prompt_template": "plain", **data_config}}
    )
    reporter = Reporter(tmp_path / "out")
    try:
        return Trainer(config, reporter=reporter, out_dir=tmp_path / "out", model_cache=tmp_path, log=logs.append)
    finally:
        reporter.close()


def test_drop_removes_overlong_train_and_validation_rows_at_load(random_tiny, tmp_path):
    # The tiny chat format: "<|bos|>" (1 token) + "user: " + question + "\n" + "assistant: " = 19 + len(question).
    # With 29 tokens, questions of up to 10 characters stay: "What is 1?" (10) does, "What is 12?" (11) not.
    train = qa_file(tmp_path / "train.jsonl", ["What is 1?", "What is 12?", "What is 3?"])
    val = qa_file(tmp_path / "val.jsonl", ["What is 12?", "What is 4?"])
    logs: list[str] = []
    trainer = make_trainer(
        random_tiny,
        tmp_path,
        {"train_dataset": train, "val_dataset": val, "max_prompt_tokens": 29, "overlong_prompts": "drop"},
        logs,
    )
    assert [e.prompt[-1]["content"] for e in trainer.train_data] == ["What is 1?", "What is 3?"]
    assert [e.prompt[-1]["content"] for e in trainer.val_data] == ["What is 4?"]
    assert any("dropped 1 of 3 rows" in line for line in logs) and any("dropped 1 of 2 rows" in line for line in logs)


def test_truncate_keeps_every_row(random_tiny, tmp_path):
    train = qa_file(tmp_path / "train.jsonl", ["What is 1?", "What is 12?"])
    trainer = make_trainer(random_tiny, tmp_path, {"train_dataset": train, "max_prompt_tokens": 29}, [])
    assert len(trainer.train_data) == 2


def test_drop_of_every_row_is_a_clear_error(random_tiny, tmp_path):
    train = qa_file(tmp_path / "train.jsonl", ["What is 12?"])
    with pytest.raises(ValueError, match="dropped every row of data.train_dataset.*max_prompt_tokens = 29"):
        make_trainer(
            random_tiny, tmp_path, {"train_dataset": train, "max_prompt_tokens": 29, "overlong_prompts": "drop"}, []
        )


# -- item 3: ToolRL's and Tool-N1's system prompts ------------------------------------------------

# ToolRL's system text around the tool list, as rlla_rl.json's instructions write it (the system
# message of dataset/rlla_4k/*.parquet via dataset/rlla_4k_raw/rlla.py:55 @8cee13e).
TOOLRL_HEAD = (
    "You are a helpful multi-turn dialogue assistant capable of leveraging tool calls to solve user tasks and "
    "provide structured chat responses.\n\n**Available Tools**\nIn your response, you can use the following tools:\n"
)
TOOLRL_TAIL_START = "\n\n**Steps for Each Turn**\n1. **Think:** Recall relevant context"
TOOLRL_TAIL_END = "any tool feedback noted as `<obs>` (if exists)."
WEATHER = {"name": "get_weather", "description": "Current weather", "parameters": {"city": {"type": "str"}}}


def tool_example(*messages: dict[str, str], tools: list[dict] | None) -> Example:
    return Example(id="2", prompt=list(messages), ground_truth=[], data_source="rlla", tools=tools)


def test_toolrl_template_text_is_toolrls_own():
    (system, _) = prompts.apply_template(
        tool_example({"role": "user", "content": "Weather?"}, tools=[WEATHER]), "tool_call_json", "toolrl"
    )
    listing = '1. Name: get_weather\nDescription: Current weather\nParameters: {"city": {"type": "str"}}'
    assert system["content"].startswith(TOOLRL_HEAD + listing + TOOLRL_TAIL_START)
    assert system["content"].endswith(TOOLRL_TAIL_END)


def test_toolrl_template_on_toolrls_parquet_keeps_the_system_text_that_lists_the_tools():
    # ToolRL feeds apply_chat_template([system, user]) of its parquet (verl/utils/dataset/rl_dataset.py:129-131
    # @8cee13e): the tools exist only in that system text, and the row has no tools column.
    own = TOOLRL_HEAD + "1. Name: GetNews\nDescription: Azure news\nParameters: {}" + TOOLRL_TAIL_START + " ..."
    user = {"role": "user", "content": "**Dialogue Records History**\n<user> News? </user>"}
    example = tool_example({"role": "system", "content": own}, user, tools=None)
    assert prompts.apply_template(example, "tool_call_json", "toolrl") == [{"role": "system", "content": own}, user]


def test_toolrl_lists_a_json_schemas_properties():
    # benchmarks/BFCL/rlla_qwen.py:58 @8cee13e lists tools["parameters"].get("properties", {}).
    schema = {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "int"}}}}
    (system, _) = prompts.apply_template(
        tool_example({"role": "user", "content": "Q"}, tools=[schema]), "tool_call_json"
    )
    assert '1. Name: f\nDescription: d\nParameters: {"x": {"type": "int"}}\n' in system["content"]


# qwen_tool_prompts (NVlabs/Tool-N1 verl/examples/data_preprocess/verl_toolcall_preprocess.py:24-37
# @f9b4849) after .format(tools=...), "{{" being "{": note the spaces ending lines 32 and 36.
def tool_n1_tools(listing: str) -> str:
    return (
        "# Tool\n\nHere is a list of functions in JSON format that you can invoke:\n\n<tools>\n"
        + listing
        + "\n</tools>\n\nIn each action step, you MUST: \n1. Think about the reasoning process in the mind and "
        "enclosed your reasoning within <think> </think> XML tags.\n2. Then, provide a json object with function "
        'names and arguments within <tool_call></tool_call> XML tags. i.e., <tool_call>[{"name": <function-name>, '
        '"arguments": <args-json-object>}, {"name": <function-name2>, "arguments": <args-json-object2>}, ...]'
        "</tool_call>\n3. Make sure both the reasoning and the tool call steps are included together in one single "
        "reply.\nA complete reply example is: <think>To address the query, I need to send the email to Bob and "
        'then buy the banana through walmart. </think> <tool_call> [{"name": "email", "arguments": {"receiver": '
        '"Bob", "content": "I will bug banana through walmart"}}, {"name": "walmart", "arguments": {"input": '
        '"banana"}}]</tool_call>. Please make sure the type of the arguments is correct. \n'
    )


WEATHER_SIGNATURE = (
    '{"type": "function", "function": {"name": "get_weather", "description": "Current weather", '
    '"parameters": {"city": {"type": "str"}}}}'
)
# DEFAULT_PROMPT, data_process/raw_data_process.py:32-33 @f9b4849: xLAM rows' raw_system (line 119).
TOOL_N1_DEFAULT = (
    "You are an expert in composing functions. You are given a question and a set of possible functions. \n"
    "Based on the question, you will need to make one or more function/tool calls to achieve the purpose. \n"
    "If none of the function can be used, point it out. If the given question lacks the parameters required by "
    "the function,\nalso point it out. You should only return the function call in tools call sections. Here is "
    "a list of functions in JSON format that you can invoke:\n"
)


def test_tool_n1_system_is_default_prompt_then_qwen_tool_prompts_for_a_row_without_one():
    # construct_prompt: system = raw_system + qwen_tool_prompts.format(tools) (verl_toolcall_preprocess.py:64-68).
    example = tool_example({"role": "user", "content": "Weather in Paris?"}, tools=[WEATHER])
    system, user = prompts.apply_template(example, "tool_call_json", "tool_n1")
    assert system == {"role": "system", "content": TOOL_N1_DEFAULT + tool_n1_tools(WEATHER_SIGNATURE)}
    assert user == {"role": "user", "content": "Weather in Paris?"}


def test_tool_n1_keeps_the_rows_own_system_text_cut_after_the_function_list_marker():
    # ToolACE rows: raw_system = system[: find("JSON format that you can invoke:\n") + len(marker)]
    # (raw_data_process.py:43-45), so the embedded function list after the marker goes.
    own = "You are a helper. Here is a list of functions in JSON format that you can invoke:\n[{...}]. Be brief."
    example = tool_example({"role": "system", "content": own}, {"role": "user", "content": "Q"}, tools=[WEATHER])
    system, _ = prompts.apply_template(example, "tool_call_json", "tool_n1")
    kept = "You are a helper. Here is a list of functions in JSON format that you can invoke:\n"
    assert system["content"] == kept + tool_n1_tools(WEATHER_SIGNATURE)


def test_tool_n1_keeps_the_turns_after_the_last_user_message():
    # ToolACE multi-turn rows end with the call's observation (raw_data_process.py:62, roles from
    # verl_toolcall_preprocess.py:69-77): the prompt is the whole conversation so far.
    turns = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": '[{"name": "get_weather", "arguments": {"city": "Paris"}}]'},
        {"role": "tool", "content": "sunny"},
    ]
    messages = prompts.apply_template(tool_example(*turns, tools=[WEATHER]), "tool_call_json", "tool_n1")
    assert messages[1:] == turns


# -- shipped test sets ------------------------------------------------------------------------------


def test_toolrl_test_is_a_builtin_with_its_licence_and_notice():
    builtin = data.BUILTIN_FILES["toolrl-test"]
    folder = builtin.path.parent
    assert (folder / "LICENSE").read_text().startswith("\n                                 Apache License")
    assert "qiancheng0/ToolRL" in (folder / "NOTICE").read_text()
    examples = data.load_dataset("toolrl-test")
    assert len(examples) == 80
    assert all(e.prompt[0]["content"].startswith(TOOLRL_HEAD) for e in examples)


def test_torl_test_is_not_shipped_and_says_where_to_put_it(tmp_path, monkeypatch):
    assert "torl-test" not in data.BUILTIN_FILES  # the dashboard seeds only what is shipped
    missing = data.BuiltinDataset("torl-test", tmp_path / "torl" / "test.parquet", "ToRL's test set.")
    monkeypatch.setitem(data.USER_FILES, "torl-test", missing)
    with pytest.raises(
        data.DatasetError, match=f"no file for 'torl-test'.*Download it to {tmp_path}/torl/test.parquet"
    ):
        data.load_dataset("torl-test")
    missing.path.parent.mkdir()
    write_parquet(missing.path, [torl_row("What is 2+3?", 0)])
    assert data.load_dataset("torl-test")[0].prompt[1]["content"] == "What is 2+3?"
