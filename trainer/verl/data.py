"""The data a verl run reads: the run's dataset as verl parquet rows, and the run config file that tirlab's
agent loop and reward adapter inside verl take their settings from.

The rows are the examples tirlab's own trainer trains on: loaded and filtered by the same code
(trainer.loop.setup.run_data, so `data.overlong_prompts: drop` drops the same rows), with the prompt
each is conditioned on rendered as the trainer renders it (the run's template,
trainer.loop.setup.run_prompt_template, through the model's tokenizer: its chat template, or a raw
completion prompt as it is). verl's RLHFDataset reads `data_source`, `prompt` (chat messages; its
`raw_prompt`), `reward_model.ground_truth`, `extra_info.index` and `agent_name` (verl 0.9.1
verl/utils/dataset/rl_dataset.py:386-411, verl/experimental/agent_loop/agent_loop.py:594-597); tirlab's
agent loop (trainer.verl.agent_loop) ignores `prompt` and continues `extra_info.prompt_text`, tokenised
as the trainer tokenises it, so the model sees in verl exactly what it sees in tirlab. Structured values
travel as JSON text (`extra_info.ground_truth`, `extra_info.tools`): one column type for every row,
whatever the dataset's ground truths are (a number's text, a list of calls, ARTIST's calls and state).

Nothing here imports verl.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq
from transformers import AutoTokenizer

from trainer.config import TINY_MODELS, ConfigError, RunConfig, validate_config
from trainer.loop.setup import run_data, run_prompt_template
from trainer.protocols.prompts import build_prompt
from trainer.trajectory import Example

# The name tirlab's agent loop is registered under in verl (trainer.verl.agent_loop).
AGENT_NAME = "tirlab"


class RunConfigFileError(ValueError):
    """The run config file named to verl's workers is missing or not a valid tirlab run config."""


@functools.lru_cache(maxsize=8)
def load_run_config(path: str) -> RunConfig:
    """The run config in the JSON file at `path` (the run's resolved snapshot), validated; read once per
    process, since verl builds an agent loop per sample and calls the reward per sample."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunConfigFileError(f"run_config: no file {path}") from None
    except json.JSONDecodeError as exc:
        raise RunConfigFileError(f"run_config: {path} is not JSON ({exc})") from None
    try:
        return validate_config(data)
    except ConfigError as exc:
        raise RunConfigFileError(f"run_config: {path} is not a valid run config: {exc}") from None


def verl_rows(config: RunConfig, examples: list[Example], *, split: str, tokenizer: Any) -> list[dict[str, Any]]:
    """The verl rows of `examples`, their prompts rendered by the run's template with `tokenizer`."""
    template = run_prompt_template(config)
    protocol = config.tools.protocol
    rows = []
    for index, example in enumerate(examples):
        prompt_text = build_prompt(example, protocol, template).render(tokenizer)
        rows.append(
            {
                "data_source": example.data_source,
                "prompt": [{"role": "user", "content": _question(example)}],
                "ability": config.tools.run_environment,
                "reward_model": {"style": "rule", "ground_truth": _ground_truth_text(example.ground_truth)},
                "extra_info": {
                    "index": index,
                    "split": split,
                    "example_id": example.id,
                    "prompt_text": prompt_text,
                    "ground_truth": json.dumps(example.ground_truth, ensure_ascii=False),
                    "tools": json.dumps(example.tools, ensure_ascii=False),
                },
                "agent_name": AGENT_NAME,
            }
        )
    return rows


def write_verl_dataset(
    config: RunConfig,
    *,
    split: Literal["train", "val"],
    path: Path,
    tokenizer: Any = None,
    log: Callable[[str], None] = print,
) -> int:
    """Write the run's `split` rows to the parquet file `path` and return how many there are.

    `tokenizer` renders chat prompts and counts tokens for `data.overlong_prompts: drop`; None loads the
    model's own with transformers' AutoTokenizer, as verl loads it (verl/utils/tokenizer.py hf_tokenizer).
    """
    if split not in ("train", "val"):
        raise ValueError(f"split must be 'train' or 'val', not {split!r}")
    if split == "val" and not config.data.val_dataset:
        raise ValueError("data.val_dataset is not set: the run has no validation rows to write")
    if tokenizer is None:
        tokenizer = model_tokenizer(config)
    train, val = run_data(config, template=run_prompt_template(config), tokenizer=tokenizer, log=log)
    rows = verl_rows(config, train if split == "train" else val, split=split, tokenizer=tokenizer)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return len(rows)


def model_tokenizer(config: RunConfig) -> Any:
    """The tokenizer of `model.name_or_path` as verl loads it; tirlab's tiny models have none it can load."""
    name = config.model.name_or_path
    if name in TINY_MODELS:
        raise ValueError(
            f"model.name_or_path {name!r} is one of tirlab's tiny CPU models, whose character tokenizer verl "
            "cannot load; pass its tokenizer explicitly or use a Hugging Face model"
        )
    return AutoTokenizer.from_pretrained(name)


def _question(example: Example) -> str:
    for message in reversed(example.prompt):
        if message["role"] == "user":
            return message["content"]
    raise ValueError(f"example {example.id} has no user message to take the question from")


def _ground_truth_text(value: Any) -> str:
    """reward_model.ground_truth as text: a string as it is, anything else as JSON (one column type)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
