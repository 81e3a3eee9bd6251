"""Nemotron-Tool-N1's RL training parquet, written here by hand in the exact shape its scripts give it.

Tool-N1's own files (verl/verl/data/train.parquet and test.parquet, which qwen_rl.sh:21 trains on) are
Git LFS pointers in the repository we read and hold ToolACE and xLAM rows, so tirlab ships none of them:
these rows are made up, and every step that turns them into the file mirrors NVlabs/Tool-N1 @f9b4849:

- data_process/raw_data_process.py builds the raw rows {raw_system, tools, conversations, answer}: an
  xLAM row (lines 91-123) is one human turn with DEFAULT_PROMPT as raw_system (32-33, 119) and its calls
  as answer (114-117); a ToolACE row (35-88) keeps the system text up to "JSON format that you can
  invoke:\\n" (43-45), writes a call turn as "function_call" holding the JSON list of its calls (48-52),
  and makes one row per call turn from the conversation before it (60-62); an irrelevance row drops the
  answer's tools and answers [] (151-179). JSON-schema parameters of type "dict" are ToolACE's.
- verl/examples/data_preprocess/verl_toolcall_preprocess.py writes the parquet: dict2hg (39-50) JSON-encodes
  tools and answer; construct_prompt (52-78) makes the system message raw_system + qwen_tool_prompts
  (24-37) with one {"type": "function", "function": tool} a line (54-61), and maps human, gpt,
  observation and function_call turns to user, assistant, tool and assistant messages, a call turn's
  value JSON-encoded once more (77); process_fn (102-119) adds data_source "toolcall", prompt, ability
  "toolcall", reward_model {style "rule", ground_truth: the answer's JSON} and extra_info {split, index,
  prompt_type "qwen"}; Dataset.map (122-123) keeps the columns it was given, so tools, conversations,
  answer and raw_system stay in the file, before the new ones.

Arrow types are those Hugging Face datasets infers from these dicts: structs in key order, strings.
"""

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from trainer.protocols.prompts import TEMPLATES

# qwen_tool_prompts (verl_toolcall_preprocess.py:24-37) and DEFAULT_PROMPT (raw_data_process.py:32-33),
# as trainer.protocols.prompts transcribes them (tests/trainer/test_fidelity_prompts.py checks the text).
QWEN_TOOL_PROMPTS = TEMPLATES["tool_n1"].system or ""
DEFAULT_PROMPT = TEMPLATES["tool_n1"].own_system_default or ""
# A ToolACE row's own system text, cut after the marker (raw_data_process.py:43-45); the words are ours.
TOOLACE_SYSTEM = (
    "The current time is 2024-05-01 18:00. You are an expert in composing functions. You are given a "
    "question and a set of possible functions. Here is a list of functions in JSON format that you can invoke:\n"
)

# xLAM-style tools: parameters map each name to {description, type, default}.
WEATHER = {
    "name": "get_weather",
    "description": "Current weather of a city.",
    "parameters": {
        "city": {"description": "The city, e.g. Lyon.", "type": "str", "default": ""},
        "unit": {"description": "celsius or fahrenheit.", "type": "str, optional", "default": "celsius"},
    },
}
CONVERT = {
    "name": "convert_currency",
    "description": "Convert an amount between currencies.",
    "parameters": {
        "amount": {"description": "The amount to convert.", "type": "float", "default": ""},
        "to_currency": {"description": "ISO code to convert to.", "type": "str", "default": ""},
    },
}
# ToolACE-style tools: a JSON schema of type "dict".
BOOK = {
    "name": "book_table",
    "description": "Reserve a restaurant table.",
    "parameters": {
        "type": "dict",
        "properties": {
            "restaurant": {"type": "string", "description": "Name of the restaurant."},
            "party_size": {"type": "integer", "description": "How many people."},
            "time": {"type": "string", "description": "Time, HH:MM."},
        },
        "required": ["restaurant", "party_size"],
    },
}
CANCEL = {
    "name": "cancel_booking",
    "description": "Cancel a reservation.",
    "parameters": {
        "type": "dict",
        "properties": {"booking_id": {"type": "string", "description": "The reservation's id."}},
        "required": ["booking_id"],
    },
}


def _calls(*calls: dict) -> str:
    return json.dumps(list(calls))


BOOKED = {"name": "book_table", "arguments": {"restaurant": "Nami", "party_size": 2, "time": "20:00"}}
# The raw rows raw_data_process.py writes (its "id" is dropped by dict2hg).
RAW_ROWS: list[dict] = [
    {  # xLAM, one call
        "raw_system": DEFAULT_PROMPT,
        "tools": [WEATHER, CONVERT],
        "conversations": [{"from": "human", "value": "What's the weather in Lyon right now?"}],
        "answer": [{"name": "get_weather", "arguments": {"city": "Lyon"}}],
    },
    {  # xLAM, parallel calls
        "raw_system": DEFAULT_PROMPT,
        "tools": [CONVERT, WEATHER],
        "conversations": [{"from": "human", "value": "Convert 120 dollars to euros and to yen."}],
        "answer": [
            {"name": "convert_currency", "arguments": {"amount": 120.0, "to_currency": "EUR"}},
            {"name": "convert_currency", "arguments": {"amount": 120.0, "to_currency": "JPY"}},
        ],
    },
    {  # xLAM irrelevance row: the answer's tool removed, no call expected
        "raw_system": DEFAULT_PROMPT,
        "tools": [CONVERT],
        "conversations": [{"from": "human", "value": "What's the weather in Oslo?"}],
        "answer": [],
    },
    {  # ToolACE, single turn
        "raw_system": TOOLACE_SYSTEM,
        "tools": [BOOK, CANCEL],
        "conversations": [{"from": "human", "value": "Book a table for 4 at Chez Anna at 19:30."}],
        "answer": [{"name": "book_table", "arguments": {"restaurant": "Chez Anna", "party_size": 4, "time": "19:30"}}],
    },
    {  # ToolACE, multi-turn: the conversation before the second call turn
        "raw_system": TOOLACE_SYSTEM,
        "tools": [BOOK, CANCEL],
        "conversations": [
            {"from": "human", "value": "Book a table for 2 at Nami at 20:00."},
            {"from": "function_call", "value": _calls(BOOKED)},
            {"from": "observation", "value": '{"booking_id": "B-1042", "status": "confirmed"}'},
            {"from": "gpt", "value": "Your table at Nami is booked: B-1042."},
            {"from": "human", "value": "Actually, cancel it please."},
        ],
        "answer": [{"name": "cancel_booking", "arguments": {"booking_id": "B-1042"}}],
    },
]

_ROLES = {"human": "user", "gpt": "assistant", "observation": "tool", "function_call": "assistant"}


def construct_prompt(raw: dict) -> list[dict[str, str]]:
    """verl_toolcall_preprocess.py:52-78."""
    listing = "\n".join(json.dumps({"type": "function", "function": tool}) for tool in raw["tools"])
    prompt = [{"role": "system", "content": raw["raw_system"] + QWEN_TOOL_PROMPTS.replace("{tools}", listing)}]
    for turn in raw["conversations"]:
        value = json.dumps(turn["value"]) if turn["from"] == "function_call" else turn["value"]
        prompt.append({"role": _ROLES[turn["from"]], "content": value})
    return prompt


def tool_n1_rows(split: str = "train") -> list[dict]:
    """The parquet's rows, column by column in the file's order."""
    return [
        {
            "tools": json.dumps(raw["tools"]),
            "conversations": raw["conversations"],
            "answer": json.dumps(raw["answer"]),
            "raw_system": raw["raw_system"],
            "data_source": "toolcall",
            "prompt": construct_prompt(raw),
            "ability": "toolcall",
            "reward_model": {"style": "rule", "ground_truth": json.dumps(raw["answer"])},
            "extra_info": {"split": split, "index": index, "prompt_type": "qwen"},
        }
        for index, raw in enumerate(RAW_ROWS)
    ]


_TURN = pa.struct([("from", pa.string()), ("value", pa.string())])
_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
SCHEMA = pa.schema(
    [
        ("tools", pa.string()),
        ("conversations", pa.list_(_TURN)),
        ("answer", pa.string()),
        ("raw_system", pa.string()),
        ("data_source", pa.string()),
        ("prompt", pa.list_(_MESSAGE)),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        ("extra_info", pa.struct([("split", pa.string()), ("index", pa.int64()), ("prompt_type", pa.string())])),
    ]
)


def tool_n1_table(rows: list[dict] | None = None) -> pa.Table:
    return pa.Table.from_pylist(tool_n1_rows() if rows is None else rows, schema=SCHEMA)


def write_tool_n1_parquet(path: Path, table: pa.Table | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(tool_n1_table() if table is None else table, path)
    return path


def tool_n1_parquet_bytes() -> bytes:
    buffer = io.BytesIO()
    pq.write_table(tool_n1_table(), buffer)
    return buffer.getvalue()
