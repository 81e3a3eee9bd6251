"""ToRL's evaluation parquet, written here by hand in the shape of the real file.

ToRL's data/torl_data/test.parquet (GAIR-NLP/ToRL @cb78cf1, blob e8ca20f; scripts/torl_1.5b.sh:21 validates on
it) has no licence, so tirlab ships none of it: these rows are made up, and only the shape is ToRL's. Its 374
rows come in three runs, in this order: data_source "aime24" (rows 0-119), "math500" (120-253), "aime25"
(254-373); columns data_source, prompt (a system then a user message, each struct {content, role}), ability
("other"), reward_model {ground_truth, stype} ("stype" sic, "rule") and extra_info {id (a uuid), split "test"}.
ToRL's verl splits its validation score by that column (verl/trainer/ppo/ray_trainer.py:678-699).
"""

import io
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

SOURCES = ("aime24", "math500", "aime25")
_MESSAGE = pa.struct([("content", pa.string()), ("role", pa.string())])
SCHEMA = pa.schema(
    [
        ("data_source", pa.string()),
        ("prompt", pa.list_(_MESSAGE)),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("ground_truth", pa.string()), ("stype", pa.string())])),
        ("extra_info", pa.struct([("id", pa.string()), ("split", pa.string())])),
    ]
)
SYSTEM = "Reason step by step and give the final answer in \\boxed{}."


def torl_rows(counts: dict[str, int]) -> list[dict]:
    """Made-up rows, `counts[source]` of each source in a run of its own, in the order of `counts`."""
    rows = []
    for source, count in counts.items():
        for i in range(count):
            rows.append(
                {
                    "data_source": source,
                    "prompt": [
                        {"content": SYSTEM, "role": "system"},
                        {"content": f"{source} problem {i + 1}: what is {i} + {len(source)}?", "role": "user"},
                    ],
                    "ability": "other",
                    "reward_model": {"ground_truth": str(i + len(source)), "stype": "rule"},
                    "extra_info": {"id": str(uuid.UUID(int=len(rows))), "split": "test"},
                }
            )
    return rows


def torl_test_parquet_bytes(counts: dict[str, int]) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(torl_rows(counts), schema=SCHEMA), buffer)
    return buffer.getvalue()
