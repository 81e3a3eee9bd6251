"""Setting a run up: the policy on its device, the engine that samples it, the run's data and prompt
template, the threads the tiny models run on. trainer.loop.train builds a Trainer from these.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from trainer.config import TINY_MODELS, RunConfig
from trainer.data.datasets import load_dataset
from trainer.models import SMOLLM2_MODEL, TINY_PROMPT_TEMPLATE, CharTokenizer
from trainer.protocols.prompts import build_prompt
from trainer.trajectory import Example

Log = Callable[[str], None]


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


# tirlab's trainer is one process; a run of engine 'verl' is verl's own program (trainer.verl.launch).
VERL_ENGINE_ELSEWHERE = (
    "engine 'verl' is trained by verl, not by tirlab's trainer: launch it from the dashboard, or run "
    "`python -m trainer.verl.launch --config FILE` in verl's environment (docs/verl.md)"
)


def check_vllm_available(config: RunConfig) -> None:
    """Engine 'vllm' needs the vllm package (requirements-gpu.txt) and a CUDA GPU; say which is missing."""
    missing = []
    if importlib.util.find_spec("vllm") is None:
        missing.append("the vllm package is not installed (make gpu-deps)")
    if not torch.cuda.is_available():
        missing.append("no CUDA GPU is visible")
    if missing:
        raise ValueError(
            "engine 'vllm' is not available here: the vLLM engine needs a GPU machine and requirements-gpu.txt, and "
            + " and ".join(missing)
            + "; use engine 'hf'"
        )
    if config.model.name_or_path in TINY_MODELS:
        raise ValueError(
            f"engine 'vllm' cannot load {config.model.name_or_path}: vLLM does not know its character "
            "tokenizer; use engine 'hf'"
        )
    if config.rollout.backend != "local":
        raise ValueError("engine 'vllm' runs in the trainer's process; use rollout.backend 'local'")


def policy_device(config: RunConfig) -> str:
    """Where the policy lives with engine 'hf': `model.device`, 'auto' being the GPU when one is visible."""
    wanted = config.model.device
    if wanted == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if wanted == "cuda" and not torch.cuda.is_available():
        raise ValueError("model.device 'cuda': no CUDA GPU is visible to the trainer; use 'auto' or 'cpu'")
    return wanted


def run_prompt_template(config: RunConfig) -> str | None:
    """The prompt template a run applies: the config's; else the tiny model's own (the one its cold
    start was trained on); else None, the protocol's default."""
    return config.data.prompt_template or (TINY_PROMPT_TEMPLATE if config.model.name_or_path in TINY_MODELS else None)


def tiny_threads(config: RunConfig) -> int | None:
    """One intra-op thread for the tiny models, None (torch's choice) for the rest: the tiny model's small
    matmuls run slower with two on two cores (on a busy machine an SFT step of it took 4 s with two
    threads, 0.6 s with one)."""
    return 1 if config.model.name_or_path in TINY_MODELS else None


def run_data(
    config: RunConfig, *, template: str | None, tokenizer: Any, log: Log
) -> tuple[list[Example], list[Example]]:
    """The run's training and validation examples, as data.overlong_prompts keeps them."""
    data = config.data
    train = fitting(
        load_dataset(data.train_dataset, split="train", seed=config.seed),
        "train_dataset",
        config=config,
        template=template,
        tokenizer=tokenizer,
        log=log,
    )
    if not train:
        raise ValueError(f"dataset {data.train_dataset!r} has no examples")
    if config.tools.run_environment == "swe":
        check_runnable_here(train, "train_dataset")
    return train, val_data(config, template=template, tokenizer=tokenizer, log=log)


def val_data(config: RunConfig, *, template: str | None, tokenizer: Any, log: Log) -> list[Example]:
    """The run's evaluation examples: data.val_dataset's, then each of data.extra_val_datasets', as
    data.overlong_prompts keeps them. An extra dataset's ids are prefixed with its reference, so that no two
    evaluated rows share an id (OTC's per-prompt state is kept by id)."""
    data = config.data
    if not data.val_dataset:
        return []
    examples: list[Example] = []
    for number, ref in enumerate([data.val_dataset, *data.extra_val_datasets]):
        field = "val_dataset" if number == 0 else f"extra_val_datasets.{number - 1}"
        rows = fitting(
            load_dataset(ref, split="test", seed=config.seed),
            field,
            config=config,
            template=template,
            tokenizer=tokenizer,
            log=log,
            ref=ref,
        )
        if config.tools.run_environment == "swe":
            check_runnable_here(rows, field)
        examples += rows if number == 0 else [dataclasses.replace(row, id=f"{ref}#{row.id}") for row in rows]
    return examples


def check_runnable_here(examples: list[Example], field: str) -> None:
    """Refuse a swe run whose rows need their instance's container image (real SWE-Gym / SWE-bench rows):
    tirlab's sandbox runs the repositories it is given (`instance["files"]`), and this machine has no
    container runtime for the rest."""
    from trainer.data.swe_rows import requires_container

    for number, example in enumerate(examples):
        instance = (example.extra_info or {}).get("instance")
        if not isinstance(instance, dict):
            raise ValueError(
                f"{field}: row {number} is not a software-engineering row (no instance) for the swe environment"
            )
        if (reason := requires_container(instance)) is not None:
            raise ValueError(f"{field}: row {number} ({instance.get('instance_id')}): {reason}")


def fitting(
    examples: list[Example],
    field: str,
    *,
    config: RunConfig,
    template: str | None,
    tokenizer: Any,
    log: Log,
    ref: str | None = None,
) -> list[Example]:
    """With data.overlong_prompts 'drop', the examples whose prompt ToRL's length filter keeps; `ref` is the
    dataset's reference (default: the config's data.<field>)."""
    data = config.data
    if data.overlong_prompts != "drop" or not examples:
        return examples
    ref = getattr(data, field) if ref is None else ref
    protocol = config.tools.protocol
    kept = [
        example
        for example in examples
        if build_prompt(example, protocol, template).fits(tokenizer, data.max_prompt_tokens)
    ]
    dropped = len(examples) - len(kept)
    log(
        f"data.overlong_prompts 'drop': dropped {dropped} of {len(examples)} rows of {ref!r} "
        f"whose prompt is longer than data.max_prompt_tokens ({data.max_prompt_tokens}) allows"
    )
    if not kept:
        raise ValueError(
            f"data.overlong_prompts 'drop' dropped every row of data.{field} {ref!r}: "
            f"no prompt fits in data.max_prompt_tokens = {data.max_prompt_tokens} "
            "(raw templates need 10 tokens to spare); raise it or use 'truncate'"
        )
    return kept


def vllm_engine(config: RunConfig, model: Any, tokenizer: Any, out_dir: Path) -> Any:
    """The colocated vLLM engine, loaded from the policy's own files and then given its weights."""
    from trainer.engines.vllm import VLLMEngine

    if isinstance(tokenizer, CharTokenizer):
        raise ValueError("engine 'vllm' cannot use a CharTokenizer model: vLLM does not know it; use engine 'hf'")
    source = config.model.name_or_path
    if source == SMOLLM2_MODEL:
        # vLLM reads a transformers directory: the policy as loaded (from its GGUF) is saved as one.
        path = out_dir / "vllm-model"
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
        source = str(path)
    engine = VLLMEngine(
        source,
        tokenizer,
        dtype=config.model.dtype,
        max_model_len=config.data.max_prompt_tokens + config.data.max_response_tokens,
        seed=config.seed,
    )
    engine.load_weights(model.state_dict().items())
    return engine
