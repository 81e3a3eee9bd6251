"""Command line of the trainer: ``python -m trainer <command>``.

``run`` trains: from a config file or a preset, offline into ``--out`` or reporting to the dashboard:

    python -m trainer run --preset quickstart --max-steps 20 --out var/runs/first
    python -m trainer run --config run.json --report-url URL --run-token TOKEN

``evaluate`` evaluates a saved checkpoint (or, without one, the config's model as it is) on the config's
validation data, greedily or with schedule.eval_pass_k samples a prompt, and reports the metrics overall and per
benchmark (each data source of the rows) at the checkpoint's step, with the trajectories:

    python -m trainer evaluate --checkpoint var/runs/first/checkpoints/step-20 --out var/runs/first-eval
    python -m trainer evaluate --config run.json --step 0 --report-url URL --run-token TOKEN

``rewards`` scores one completion by hand, to see why a reward gives what it gives:

    python -m trainer rewards torl --completion response.txt --ground-truth 42

The completion file holds either the response text as the protocol produced it, or a JSON object
``{"text": ..., "executions": [{"call", "status", "output"}], "truncated": false}`` for rewards that
read tool statuses. The result is printed as JSON: total, components, correct and details. Usage
errors (unknown reward, invalid parameters, unreadable files) exit with status 2 and a message.

``cold-start`` trains the tiny quickstart model's SFT cold start and prints how it does:

    python -m trainer cold-start --seed 0 --eval-size 200 --out var/models/cold-start

and ``cold-start --ship`` retrains the cold start tirlab ships in trainer/models/shipped/ (the one a
run of the tiny model starts from) and prints its new report.

``prompts`` prints the exact prompt each dataset row gives under a run config, to check it against a
paper's own code before training:

    python -m trainer prompts --preset torl --dataset test.parquet --rows 3 [--template torl] [--json]

A raw template's prompt is its text; a chat template's is the chat-templated text when a tokenizer is
at hand (``--tokenizer DIR|ID``; the tiny model's needs none), else its messages as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from trainer.config import (
    TINY_ARTIST_MODEL,
    TINY_BASE_MODEL,
    TINY_DERIVED_MODELS,
    TINY_FC_MODEL,
    TINY_MODEL,
    TINY_RETOOL_MODEL,
)
from trainer.contract import RunStatus
from trainer.protocols import PROTOCOL_NAMES
from trainer.trajectory import Completion, ToolExecution


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m trainer", description="tirlab trainer commands.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")

    rewards = commands.add_parser(
        "rewards",
        help="score one completion with a reward and print its total and components",
        description="Score one completion with a registered reward and print the result as JSON.",
    )
    rewards.add_argument("name", help="reward name, e.g. torl, retool, otc_grpo, toolrl, tool_n1")
    rewards.add_argument(
        "--completion",
        required=True,
        metavar="FILE",
        help="response text, or a JSON object with 'text' and optional 'executions' and 'truncated'; - reads stdin",
    )
    rewards.add_argument(
        "--ground-truth",
        required=True,
        metavar="TEXT",
        help="the answer, or for tool-call rewards a JSON list of calls or ToolRL's text form",
    )
    rewards.add_argument("--params", default=None, metavar="JSON", help="reward parameters as a JSON object")
    rewards.add_argument(
        "--protocol",
        default=None,
        choices=PROTOCOL_NAMES,
        help="tool-call syntax of the completion (default: the reward's)",
    )
    rewards.add_argument("--step", type=int, default=0, metavar="N", help="training step, for scheduled rewards")
    # Each command reports usage errors with its own parser, so the usage line shown is its own.
    rewards.set_defaults(handler=partial(_rewards, rewards))

    run = commands.add_parser(
        "run",
        help="train a policy with GRPO from a config file or a preset",
        description="Train with GRPO. Offline it writes metrics.jsonl, trajectories.jsonl, log.txt and "
        "checkpoints into --out; with --report-url and --run-token it also reports to the dashboard.",
    )
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", type=Path, metavar="FILE", help="run config as JSON (trainer.config.RunConfig)")
    source.add_argument("--preset", metavar="NAME", help="a preset from trainer.presets, e.g. quickstart")
    run.add_argument("--max-steps", type=int, metavar="N", help="stop after step N (default: the config's)")
    run.add_argument("--resume", type=Path, metavar="CHECKPOINT", help="continue from a checkpoint folder")
    _add_output_options(run)
    run.set_defaults(handler=partial(_run, run))

    evaluate = commands.add_parser(
        "evaluate",
        help="evaluate a checkpoint, or a config's model as it is, on the config's validation data",
        description="Evaluate a saved checkpoint (or, without --checkpoint, the config's model as it is) on "
        "data.val_dataset and data.extra_val_datasets: greedily, or with schedule.eval_pass_k samples a prompt at "
        "schedule.eval_temperature. The metrics (overall under val/, per data source under bench/<source>/) and "
        "every trajectory are reported at --step. Offline it writes metrics.jsonl and trajectories.jsonl into "
        "--out; with --report-url and --run-token it reports to the dashboard.",
    )
    evaluate_source = evaluate.add_mutually_exclusive_group()
    evaluate_source.add_argument(
        "--config", type=Path, metavar="FILE", help="run config as JSON (default: the checkpoint's config.json)"
    )
    evaluate_source.add_argument("--preset", metavar="NAME", help="a preset from trainer.presets")
    evaluate.add_argument(
        "--checkpoint", type=Path, metavar="DIR", help="a checkpoint folder the trainer saved (checkpoints/step-N)"
    )
    evaluate.add_argument(
        "--step",
        type=int,
        metavar="N",
        help="the step the results are reported at (default: N of a checkpoint folder named step-N; 0 without one)",
    )
    _add_output_options(evaluate)
    evaluate.set_defaults(handler=partial(_evaluate, evaluate))

    cold_start = commands.add_parser(
        "cold-start",
        help="train the tiny quickstart model's SFT cold start and print how it does",
        description="Train the tiny quickstart model's cold start with its default budget "
        "(trainer.models.tiny.cold_start) and print accuracy and tool use on easy and hard problems, "
        "greedy and sampled at temperature 1, as JSON.",
    )
    cold_start.add_argument("--seed", type=int, default=0, help="seed of the model and its traces")
    cold_start.add_argument("--eval-size", type=int, default=200, metavar="N", help="test problems to evaluate on")
    cold_start.add_argument("--out", type=Path, metavar="DIR", help="save the cold-started model and tokenizer here")
    cold_start.add_argument(
        "--ship",
        action="store_true",
        help="retrain the cold start tirlab ships (seed 0, trainer/models/shipped/) and rewrite its report",
    )
    cold_start.add_argument(
        "--model",
        choices=(TINY_MODEL, TINY_BASE_MODEL, *TINY_DERIVED_MODELS),
        default=TINY_MODEL,
        help=f"which tiny model: the quickstart's cold start ({TINY_MODEL}, the default), the base model zero RL "
        f"starts from ({TINY_BASE_MODEL}, trainer.models.tiny.base), or the cold start fine-tuned to ARTIST's "
        f"format ({TINY_ARTIST_MODEL}, trainer.models.tiny.artist), to ReTool's ({TINY_RETOOL_MODEL}, "
        f"trainer.models.tiny.retool) or to JSON calls ({TINY_FC_MODEL} and the "
        f"function-calling minis' starts, trainer.models.tiny.function_calling); these only with --ship or --out",
    )
    cold_start.set_defaults(handler=_cold_start)

    traces = commands.add_parser(
        "sft-traces",
        help="write one of tirlab's built-in SFT trace sets as JSONL, the format sft.dataset reads",
        description="Write a built-in SFT trace set (trainer.sft.data.BUILTIN_TRACES) as JSONL: one trace per "
        "line, the format a file named by sft.dataset takes (see trainer/data/sft_traces.py).",
    )
    traces.add_argument("name", help="built-in trace set, e.g. tiny-cold-start, retool-mini-sft")
    traces.add_argument("--out", type=Path, metavar="FILE", help="write here (default: standard output)")
    traces.add_argument("--rows", type=int, metavar="N", help="only the first N traces")
    traces.set_defaults(handler=partial(_sft_traces, traces))

    prompts = commands.add_parser(
        "prompts",
        help="print the exact prompt text the first rows of a dataset give under a run config",
        description="Print, for the first rows of a dataset, the prompt the policy is conditioned on under a "
        "run config (its protocol and prompt template): the exact text, or a chat template's messages when "
        "no tokenizer is at hand.",
    )
    config_source = prompts.add_mutually_exclusive_group()
    config_source.add_argument("--config", type=Path, metavar="FILE", help="run config as JSON (default: the defaults)")
    config_source.add_argument("--preset", metavar="NAME", help="a preset from trainer.presets, e.g. torl")
    prompts.add_argument("--dataset", metavar="REF", help="dataset file or built-in name (default: the train dataset)")
    prompts.add_argument("--template", metavar="NAME", help="prompt template (default: the config's)")
    prompts.add_argument("--rows", type=int, default=3, metavar="N", help="rows to show (default: 3)")
    prompts.add_argument(
        "--tokenizer",
        metavar="DIR|ID",
        help="tokenizer for chat templates and token counts (default: the tiny model's, when the config uses it)",
    )
    prompts.add_argument("--json", action="store_true", help="one JSON object per row, for exact comparison")
    prompts.set_defaults(handler=partial(_prompts, prompts))
    return parser


def _add_output_options(command: argparse.ArgumentParser) -> None:
    """Where a run's results go (--out, and the dashboard's --report-url and --run-token) and where models are
    cached: `run`'s and `evaluate`'s."""
    command.add_argument("--out", type=Path, metavar="DIR", help="output folder (default: var/runs/<time>)")
    command.add_argument("--report-url", metavar="URL", help="the dashboard's ingest URL for this run")
    command.add_argument(
        "--run-token",
        metavar="TOKEN",
        default=os.environ.get("TIRLAB_RUN_TOKEN") or None,
        help="the run's ingest token (default: $TIRLAB_RUN_TOKEN, which keeps it out of process listings)",
    )
    command.add_argument(
        "--model-cache",
        type=Path,
        default=Path(
            os.environ.get("TIRLAB_MODEL_CACHE") or Path(os.environ.get("TIRLAB_VAR_DIR") or "var") / "models"
        ),
        metavar="DIR",
        help="where built models are cached (default: $TIRLAB_MODEL_CACHE, else $TIRLAB_VAR_DIR/models)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.handler(args))


def _rewards(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    # Imported when used: the reward modules (math-verify included) cost nothing to other commands.
    from trainer.rewards import RewardParamsError, score_group, validate_reward_params

    params = _json_argument(parser, "--params", args.params) if args.params is not None else None
    if params is not None and not isinstance(params, dict):
        parser.error("--params must be a JSON object")
    try:
        params = validate_reward_params(args.name, params)
    except RewardParamsError as exc:
        parser.error(str(exc))
    completion = _read_completion(parser, args.completion, args.protocol, args.name)
    (result,) = score_group(args.name, [completion], _ground_truth(args.ground_truth), params=params, step=args.step)
    report = {
        "reward": args.name,
        "total": result.total,
        "components": result.components,
        "correct": result.correct,
        "details": result.details,
    }
    # Details may hold values JSON has no type for (sets, parsed calls); they are shown as text.
    print(json.dumps(report, indent=2, default=str))
    return 0


def _json_argument(parser: argparse.ArgumentParser, option: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        parser.error(f"{option} is not valid JSON ({exc.msg} at column {exc.colno})")


def _cold_start(args: argparse.Namespace) -> int:
    # Imported when used: torch and transformers cost nothing to the other commands.
    from trainer.models.tiny.base import base_report, ship_base
    from trainer.models.tiny.cold_start import SHIPPED_REPORT, TINY_SEED, cold_start_report, ship_cold_start

    base = args.model == TINY_BASE_MODEL
    if args.model in TINY_DERIVED_MODELS:
        return _derived_cold_start(args)
    if args.ship:
        if args.out is not None or args.seed != TINY_SEED:
            print(
                "--ship trains the shipped cold start (seed 0, into trainer/models/shipped/); "
                "it takes neither --out nor --seed",
                file=sys.stderr,
            )
            return 2
        shipped = (ship_base if base else ship_cold_start)(eval_size=args.eval_size)
        print(json.dumps(json.loads((shipped / SHIPPED_REPORT).read_text())))
        return 0
    print(
        json.dumps((base_report if base else cold_start_report)(seed=args.seed, eval_size=args.eval_size, out=args.out))
    )
    return 0


def _derived_cold_start(args: argparse.Namespace) -> int:
    from trainer.models.loading import DERIVED
    from trainer.models.tiny.cold_start import SHIPPED_REPORT, TINY_SEED

    recipe = DERIVED[args.model]
    cache = Path(os.environ.get("TIRLAB_MODEL_CACHE") or Path(os.environ.get("TIRLAB_VAR_DIR") or "var") / "models")
    if args.seed != TINY_SEED or args.ship == (args.out is not None):
        print(f"{args.model} is built with seed 0, either --ship or into --out", file=sys.stderr)
        return 2
    if args.ship:
        shipped = recipe.ship(cache_dir=cache)
        print(json.dumps(json.loads((shipped / SHIPPED_REPORT).read_text())))
    else:
        print(json.dumps(recipe.report(out=args.out, cache_dir=cache)))
    return 0


def _sft_traces(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from trainer.sft.data import SFTDataError, builtin_trace_rows

    if args.rows is not None and args.rows < 1:
        parser.error("--rows must be at least 1")
    try:
        rows = builtin_trace_rows(args.name)
    except SFTDataError as exc:
        parser.error(str(exc))
    lines = "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows[: args.rows])
    if args.out is None:
        sys.stdout.write(lines)
    else:
        partial_file = args.out.with_name(args.out.name + ".partial")
        partial_file.write_text(lines)
        partial_file.replace(args.out)
    return 0


def _prompts(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from trainer.config import TINY_MODEL, ConfigError, RunConfig, validate_config
    from trainer.data.datasets import DatasetError, load_dataset
    from trainer.loop.setup import run_prompt_template
    from trainer.protocols.prompts import PromptTemplateError, build_prompt

    if args.rows < 1:
        parser.error("--rows must be at least 1")
    config = _load_run_config(parser, args) if args.config or args.preset else RunConfig()
    if args.template is not None:
        data = config.model_dump(mode="json")
        data["data"]["prompt_template"] = args.template
        try:
            config = validate_config(data)
        except ConfigError as exc:
            parser.error(f"--template: {exc}")
    tokenizer_name = args.tokenizer or (TINY_MODEL if config.model.name_or_path == TINY_MODEL else None)
    tokenizer = _tokenizer(parser, tokenizer_name) if tokenizer_name else None
    try:
        examples = load_dataset(args.dataset or config.data.train_dataset, seed=config.seed, size=args.rows)
        prompts = [build_prompt(example, config.tools.protocol, run_prompt_template(config)) for example in examples]
    except (DatasetError, PromptTemplateError) as exc:
        parser.error(str(exc))
    for example, prompt in zip(examples, prompts, strict=True):
        text = prompt.render(tokenizer) if prompt.raw or tokenizer is not None else None
        row: dict[str, Any] = {"id": example.id, "raw": prompt.raw}
        if not prompt.raw:
            row["messages"] = prompt.messages
        if text is not None:
            row["text"] = text
        if tokenizer is not None:
            row["tokens"] = len(tokenizer.encode(text, add_special_tokens=False))
            row["fits"] = prompt.fits(tokenizer, config.data.max_prompt_tokens)
        if args.json:
            print(json.dumps(row, ensure_ascii=False))
            continue
        kind = "raw completion prompt, no chat template" if prompt.raw else "chat template"
        counted = f", {row['tokens']} tokens" if "tokens" in row else ""
        print(f"=== row {example.id} ({kind}{counted}) ===")
        shown = text if text is not None else json.dumps(prompt.messages, indent=2, ensure_ascii=False) + "\n"
        sys.stdout.write(shown if shown.endswith("\n") else shown + "\n")
    return 0


def _tokenizer(parser: argparse.ArgumentParser, name: str) -> Any:
    from trainer.config import TINY_MODEL

    if name == TINY_MODEL:
        from trainer.models import CharTokenizer

        return CharTokenizer()
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as exc:
        parser.error(f"cannot load --tokenizer {name}: {_one_line(exc)}")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _read_completion(parser: argparse.ArgumentParser, source: str, protocol: str | None, reward: str) -> Any:
    """Plain text stays text, so the reward infers tool calls and statuses from it, read with
    --protocol or else the reward's own protocol; a JSON trajectory becomes a Completion, whose
    executions are then the truth (none listed means no call was executed)."""
    from trainer.protocols import get_protocol
    from trainer.rewards.base import Response, registered

    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        parser.error(f"cannot read --completion {source}: {exc}")
    try:
        record = json.loads(text)
    except json.JSONDecodeError:
        record = None
    if not (isinstance(record, dict) and isinstance(record.get("text"), str)):
        # Not a trajectory (JSON or not): the file is the response text.
        return text if protocol is None else Response(text=text, protocol=get_protocol(protocol))
    try:
        executions = tuple(ToolExecution(**execution) for execution in record.get("executions", []))
    except TypeError as exc:
        parser.error(f"--completion {source}: executions must be objects with 'call' and 'status' ({exc})")
    return Completion(
        text=record["text"],
        protocol=protocol or record.get("protocol") or registered(reward).protocol,
        executions=executions,
        truncated=bool(record.get("truncated", False)),
        response_tokens=record.get("response_tokens"),
    )


def _ground_truth(text: str) -> Any:
    # Tool-call rewards take a list of calls; anything else (numbers included) stays text, the form
    # math answers are compared in.
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    return value if isinstance(value, list | dict) else text


def _load_run_config(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Any:
    from trainer.config import ConfigError, validate_config

    if args.preset is not None:
        from trainer.presets import preset_config, preset_names

        if args.preset not in preset_names():
            parser.error(f"unknown preset '{args.preset}'; choose one of: {', '.join(preset_names())}")
        return preset_config(args.preset)
    try:
        data = json.loads(args.config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        parser.error(f"cannot read --config {args.config}: {exc}")
    except json.JSONDecodeError as exc:
        parser.error(f"--config {args.config} is not valid JSON ({exc.msg} at line {exc.lineno})")
    try:
        return validate_config(data)
    except ConfigError as exc:
        parser.error(f"--config {args.config}: {exc}")


def _progress_line(result: Any, elapsed_s: float, last_step: int, first_step: int) -> str:
    metrics = result.metrics
    done = result.step + 1 - first_step
    eta = elapsed_s / max(done, 1) * (last_step - result.step - 1)
    # Per-subset tool use (train/<label>/tool_call_ratio, e.g. easy and hard): where OTC's split shows.
    subsets = ", ".join(
        f"{name.split('/')[1]} {value:.2f}"
        for name, value in sorted(metrics.items())
        if name.startswith("train/") and name.endswith("/tool_call_ratio") and name.count("/") == 2
    )
    return (
        f"step {result.step + 1}/{last_step}  accuracy {metrics.get('accuracy', float('nan')):.3f}  "
        f"tool-call ratio {metrics.get('tool_call_ratio', float('nan')):.3f}"
        + (f" ({subsets})" if subsets else "")
        + f"  {metrics['timing_s/step']:.1f} s/step  ETA {eta:.0f} s"
    )


class _StoppedBeforeTraining(BaseException):
    """SIGTERM arrived while the run was still being set up (BaseException: no handler swallows it)."""


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    import signal
    import threading
    import traceback

    from transformers.utils import logging as transformers_logging

    from trainer.loop.train import run_training

    # The console shows one progress line per step; transformers' per-load bars would bury it.
    transformers_logging.disable_progress_bar()

    if (args.report_url is None) != (args.run_token is None):
        parser.error("--report-url and --run-token go together")
    config = _load_run_config(parser, args)
    last_step = args.max_steps if args.max_steps is not None else config.schedule.max_steps
    out, reporter, log = _reporting(args, config)

    first_step: int | None = None

    def progress(result: Any, elapsed_s: float) -> None:
        nonlocal first_step
        first_step = result.step if first_step is None else first_step
        print(_progress_line(result, elapsed_s, last_step, first_step), flush=True)

    # Ray stops a job with SIGTERM (SIGKILL after a grace): finish the step, checkpoint, flush, exit.
    # Before the first step (loading the model, minutes of SFT cold start) there is no step to
    # finish: it stops at once. The model cache is written atomically, so nothing half-built stays.
    stop = threading.Event()
    training = threading.Event()

    def on_sigterm(signum: int, frame: Any) -> None:
        stop.set()
        if not training.is_set():
            raise _StoppedBeforeTraining

    signal.signal(signal.SIGTERM, on_sigterm)
    reporter.set_status(RunStatus.RUNNING)
    try:
        trainer = run_training(
            config,
            reporter=reporter,
            out_dir=out,
            model_cache=args.model_cache,
            max_steps=last_step,
            resume=args.resume,
            progress=progress,
            log=log,
            stop_requested=stop.is_set,
            on_ready=training.set,
        )
    except _StoppedBeforeTraining:
        reporter.set_status(RunStatus.CANCELLED, error="stopped (SIGTERM) before training started")
        reporter.close()
        print(f"stopped before training started, results in {out}", flush=True)
        return 0
    except KeyboardInterrupt:
        reporter.set_status(RunStatus.CANCELLED, error="interrupted")
        reporter.close()
        return 130
    except Exception as exc:  # noqa: BLE001 — any failure of training is reported, then re-raised
        reporter.log(traceback.format_exc(), level="error")
        reporter.set_status(RunStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        reporter.close()
        raise
    checkpoint = None
    if config.schedule.checkpoint_every:
        checkpoint = str(trainer.checkpoint())
        reporter.log_checkpoint(trainer.step, checkpoint)
    if reporter.stopped_by_dashboard or stop.is_set():
        # The dashboard keeps a cancelled run's final flush for a while: the checkpoint path included.
        error = "" if reporter.stopped_by_dashboard else "stopped (SIGTERM)"
        reporter.set_status(RunStatus.CANCELLED, error=error, checkpoint=checkpoint)
        reporter.close()
        print(f"stopped after {trainer.step} steps, results in {out}", flush=True)
        return 0
    reporter.set_status(RunStatus.SUCCEEDED, checkpoint=checkpoint)
    reporter.close()
    print(f"done: {trainer.step} steps, results in {out}", flush=True)
    return 0


def _reporting(args: argparse.Namespace, config: Any) -> tuple[Path, Any, Callable[[str], None]]:
    """`run`'s and `evaluate`'s output: the folder (--out, else var/runs/<time>) with the config written into it,
    the reporter to it (and to the dashboard, given --report-url), and a log that prints and reports each line."""
    import time

    from trainer.report.client import Reporter

    out = args.out or Path("var/runs") / time.strftime("%Y%m%d-%H%M%S")
    reporter = Reporter(
        out, report_url=args.report_url, run_token=args.run_token, heartbeat_s=config.schedule.heartbeat_s
    )
    (out / "config.json").write_text(json.dumps(config.model_dump(mode="json"), indent=2))

    def log(message: str) -> None:
        print(message, flush=True)
        reporter.log(message)

    return out, reporter, log


def _evaluation_config(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Any:
    """The evaluation's run config: --config or --preset, else the checkpoint's own config.json."""
    if args.config is not None or args.preset is not None:
        return _load_run_config(parser, args)
    if args.checkpoint is None:
        parser.error("give --config or --preset, or a --checkpoint whose config.json says how its run was set up")
    args.config = args.checkpoint / "config.json"
    if not args.config.is_file():
        parser.error(f"--checkpoint {args.checkpoint} has no config.json; give --config")
    return _load_run_config(parser, args)


def _evaluation_step(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.step is not None:
        if args.step < 0:
            parser.error("--step must be at least 0")
        return args.step
    if args.checkpoint is None:
        return 0
    name, _, number = args.checkpoint.resolve().name.partition("-")
    if name != "step" or not number.isdigit():
        parser.error(f"--checkpoint {args.checkpoint} is not named step-N: give --step")
    return int(number)


def _evaluate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    import signal
    import traceback

    from transformers.utils import logging as transformers_logging

    from trainer.loop.evaluate import run_evaluation

    transformers_logging.disable_progress_bar()
    if (args.report_url is None) != (args.run_token is None):
        parser.error("--report-url and --run-token go together")
    if args.checkpoint is not None and not args.checkpoint.is_dir():
        parser.error(f"--checkpoint {args.checkpoint} is not a folder")
    config = _evaluation_config(parser, args)
    step = _evaluation_step(parser, args)
    out, reporter, log = _reporting(args, config)

    def on_sigterm(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    # Ray stops a job with SIGTERM: an evaluation has no step to finish, it stops at once.
    signal.signal(signal.SIGTERM, on_sigterm)
    reporter.set_status(RunStatus.RUNNING)
    try:
        evaluation = run_evaluation(
            config, reporter=reporter, out_dir=out, model_cache=args.model_cache, step=step,
            checkpoint=args.checkpoint, log=log,
        )  # fmt: skip
    except KeyboardInterrupt:
        reporter.set_status(RunStatus.CANCELLED, error="stopped before the evaluation finished")
        reporter.close()
        return 130
    except Exception as exc:  # noqa: BLE001 — any failure is reported, then re-raised
        reporter.log(traceback.format_exc(), level="error")
        reporter.set_status(RunStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        reporter.close()
        raise
    reporter.set_status(RunStatus.SUCCEEDED)
    reporter.close()
    accuracy = evaluation.metrics.get("val/accuracy", float("nan"))
    print(f"done: step {step}, accuracy {accuracy:.3f}, results in {out}", flush=True)
    return 0
