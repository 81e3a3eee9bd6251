"""An evaluation run: a saved checkpoint of a run, or the model the run starts from, evaluated on the run's
validation data (`python -m trainer evaluate`).

It loads the policy as training does (trainer.models.load_policy, so the tiny models keep their tokenizer and
template) and, given a checkpoint, puts the checkpoint's weights into it; then makes the in-run evaluation's
passes (trainer.loop.collect.evaluate_step: greedy, and k samples per prompt at schedule.eval_temperature when
schedule.eval_pass_k > 1) and reports their metrics -- overall under ``val/``, per benchmark under
``bench/<data_source>/`` -- at `step`, the training steps the checkpoint was saved after (0 for the starting
model), with every trajectory of the pass they describe (the greedy one, or the sampled one). Nothing is
trained: no optimizer, no reference model, no SFT cold start.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path

from trainer.config import RunConfig
from trainer.contract import EVAL, LOADING
from trainer.engines.hf import HFEngine
from trainer.loop import setup
from trainer.loop.checkpoint import load_model_weights
from trainer.loop.collect import Evaluation, Group, evaluate_step, score_groups
from trainer.loop.sampling import as_groups, pass_settings, prompt_ids, rollout_inputs
from trainer.loop.train import Reporter
from trainer.models import load_policy
from trainer.protocols import get_protocol
from trainer.protocols.prompts import build_prompt
from trainer.report.trajectories import groups_report
from trainer.rewards import RewardState
from trainer.rollout.multi_turn import RolloutResult, RolloutSettings, rollout
from trainer.rollout.off_policy import torch_threads
from trainer.trajectory import Example


def run_evaluation(
    config: RunConfig,
    *,
    reporter: Reporter,
    out_dir: Path,
    model_cache: Path,
    step: int,
    checkpoint: Path | None = None,
    log: Callable[[str], None] = print,
) -> Evaluation:
    """Evaluate `checkpoint` (None: config.model as it is) and report the evaluation at `step`."""
    if config.engine == "verl":
        raise ValueError(
            "an evaluation runs tirlab's trainer: a run of engine 'verl' evaluates in verl (schedule.eval_every), "
            "and its checkpoints are verl's"
        )
    if not config.data.val_dataset:
        raise ValueError("data.val_dataset is not set: name the datasets to evaluate on")
    if config.engine == "vllm":
        setup.check_vllm_available(config)
    what = str(checkpoint) if checkpoint is not None else config.model.name_or_path
    reporter.set_phase(LOADING, 0, 1, detail=what)
    setup.seed_everything(config.seed)
    model, tokenizer = load_policy(config.model.name_or_path, dtype=config.model.dtype, cache_dir=model_cache, log=log)
    if checkpoint is not None:
        load_model_weights(checkpoint, model)
        log(f"evaluating {checkpoint} (after {step} training steps) on the weights of {config.model.name_or_path}")
    elif config.sft.enabled:
        log(f"evaluating {config.model.name_or_path} as it is, before the run's SFT cold start")
    engine = None
    if config.engine == "vllm":
        engine = setup.vllm_engine(config, model, tokenizer, out_dir)
    model.to("cuda" if engine is not None else setup.policy_device(config))
    template = setup.run_prompt_template(config)
    val = setup.val_data(config, template=template, tokenizer=tokenizer, log=log)
    if not val:
        raise ValueError("the evaluation datasets have no rows")
    threads = setup.tiny_threads(config)
    engine = engine or HFEngine(model, tokenizer, num_threads=threads)
    settings = RolloutSettings.from_config(config)

    def ids(example: Example) -> list[int]:
        return prompt_ids(example, config=config, template=template, tokenizer=tokenizer)

    def roll(
        examples: Sequence[tuple[int, Example]],
        *,
        group_size: int,
        seed: int,
        greedy: bool = False,
        temperature: float | None = None,
    ) -> tuple[list[Group], RolloutResult]:
        prompts, tools, tasks = rollout_inputs(examples, group_size, ids)
        passes = pass_settings(settings, greedy=greedy, temperature=temperature)
        result = rollout(engine, prompts, passes, seed=seed, tools=tools, tasks=tasks)
        engine.clear_cache()
        return as_groups(examples, result, group_size), result

    state = RewardState()

    def score(groups: list[Group], at: int, split: str) -> None:
        score_groups(groups, config.reward, step=at, state=state, split=split)

    samples = config.schedule.eval_pass_k
    passes = "greedy" if samples == 1 else f"greedy, and {samples} samples a prompt"
    reporter.set_phase(EVAL, 0, 1, detail=f"{len(val)} prompts, {passes}")
    with torch_threads(threads) if threads else contextlib.nullcontext():
        evaluation = evaluate_step(config, val, step, roll=roll, score=score)
    reporter.log_metrics(step, evaluation.metrics)
    reporter.log_trajectories(
        groups_report(
            evaluation.groups,
            step=step,
            protocol=get_protocol(config.tools.protocol),
            prompt=lambda example: build_prompt(example, config.tools.protocol, template),
        )
    )
    reporter.set_phase(EVAL, 1, 1)
    return evaluation
