"""Sampled generations that other trainers log as artifacts, turned into the run's trajectories.

Three shapes are read, each when its file arrives (and again when it changes):

- verl's validation generations (`trainer.log_val_generations > 0`, verl/utils/tracking.py
  `ValidationGenerationsLogger.log_generations_to_mlflow`): `val_step{N}.json`, a list of
  `{"input", "output", "score"}`, become step N's trajectories;
- tables from `mlflow.log_table` (`.json` in pandas' split orient, or `.parquet`) once the run's tag
  `mlflow.loggedArtifacts` lists them as tables;
- TRL's GRPO completions (`<output_dir>/completions/completions_{step:05d}.parquet`: step, prompt,
  completion, one column per reward function, advantage), uploaded under `completions/` by
  integrations/tirlab_trl.py (its TirlabCompletionsCallback during a run, or its command after one).

Columns of a table are read by name: the prompt from prompt/input/question/query, the response
from completion/output/response/generation, the reward from reward/score (else the sum of the
numeric columns, as TRL sums its reward functions with their default weight 1), `correct` from
correct/is_correct (else reward > 0), the ground truth from ground_truth/target/answer_gt/solution, the
step from step (else the run's last step). Other numeric columns are the reward's components (TRL's
advantage among them). Rows sharing a prompt at a step form one group, as GRPO's do. A file that
cannot be read as samples stays a file; the run's log says why.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from trainer.contract import INT_MAX, MAX_TRAJECTORIES, TrajectoryIn, is_metric_key
from webapp.runs.events import publish_run_events
from webapp.runs.ingest import write_trajectories
from webapp.runs.models import Run
from webapp.runs.transitions import run_log
from webapp.tracking.storage import artifact_root

VERL_VALIDATION = re.compile(r"(?:^|/)val_step(\d+)\.json$")
TRL_COMPLETIONS = re.compile(r"(?:^|/)completions_(\d+)\.parquet$")
PROMPT_COLUMNS = ("prompt", "input", "inputs", "question", "query", "instruction")
RESPONSE_COLUMNS = ("completion", "output", "outputs", "response", "generation", "prediction")
REWARD_COLUMNS = ("reward", "score", "rewards", "total_reward")
CORRECT_COLUMNS = ("correct", "is_correct")
TRUTH_COLUMNS = ("ground_truth", "target", "answer_gt", "solution", "reference")
NOT_COMPONENTS = {"step", "index", "prompt_index", "sample_index"}


class NotSamples(ValueError):
    """A file that is not one of the shapes read as samples."""


def samples_from_upload(run: Run, relative: str) -> None:
    """Read the artifact just stored at `relative` if it is samples (see the module's docstring)."""
    if match := VERL_VALIDATION.search(relative):
        _convert(run, relative, lambda path: _verl_rows(path, int(match.group(1))))
    elif match := TRL_COMPLETIONS.search(relative):
        _convert(run, relative, lambda path: _table_rows(_read_table(path), default_step=int(match.group(1))))
    elif relative in _listed_tables(run):
        _convert(run, relative, lambda path: _table_rows(_read_table(path), default_step=run.last_step or 0))


def tables_from_tag(run: Run, tag_value: str) -> None:
    """Read every table the `mlflow.loggedArtifacts` tag lists and the run already has."""
    for relative in _parse_logged_artifacts(tag_value):
        if (artifact_root(run) / relative).is_file():
            _convert(run, relative, lambda path: _table_rows(_read_table(path), default_step=run.last_step or 0))


def _parse_logged_artifacts(tag_value: str) -> list[str]:
    try:
        entries = json.loads(tag_value)
    except json.JSONDecodeError:
        return []
    if not isinstance(entries, list):
        return []
    return [
        e["path"]
        for e in entries
        if isinstance(e, dict) and e.get("type") == "table" and isinstance(e.get("path"), str)
    ]


def _listed_tables(run: Run) -> list[str]:
    tags = run.mlflow.tags if hasattr(run, "mlflow") else {}
    return _parse_logged_artifacts(tags.get("mlflow.loggedArtifacts", "[]"))


def _convert(run: Run, relative: str, read) -> None:
    path = artifact_root(run) / relative
    try:
        items = list(read(path))
    except NotSamples as exc:
        run_log(run=run, message=f"artifact {relative}: not read as samples ({exc}); kept as a file", level="warning")
        return
    if not items:
        return
    if len(items) > MAX_TRAJECTORIES:
        run_log(
            run=run,
            message=f"artifact {relative}: {len(items)} samples; the first {MAX_TRAJECTORIES} are trajectories",
            level="warning",
        )
        items = items[:MAX_TRAJECTORIES]
    written = write_trajectories(run, items)
    publish_run_events(run, [("trajectories", {"trajectories": written})])


def _verl_rows(path: Path, step: int) -> Iterable[TrajectoryIn]:
    try:
        samples = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise NotSamples(f"not JSON: {exc}") from None
    if not isinstance(samples, list) or not all(
        isinstance(s, dict) and {"input", "output", "score"} <= s.keys() for s in samples
    ):
        raise NotSamples('verl writes a list of {"input", "output", "score"}')
    rows = [{"step": step, "prompt": s["input"], "completion": s["output"], "score": s["score"]} for s in samples]
    return _table_rows(rows, default_step=step)


def _read_table(path: Path) -> list[dict[str, Any]]:
    """A logged table's rows: pandas' split-orient JSON, or parquet."""
    if path.suffix == ".parquet":
        import pyarrow
        import pyarrow.parquet as pq

        try:
            return pq.read_table(path).to_pylist()
        except (pyarrow.ArrowException, OSError) as exc:
            raise NotSamples(f"not a parquet table: {exc}") from None
    try:
        table = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise NotSamples(f"not JSON: {exc}") from None
    if (
        not isinstance(table, dict)
        or not isinstance(table.get("columns"), list)
        or not isinstance(table.get("data"), list)
    ):
        raise NotSamples('a table is {"columns": [...], "data": [[...], ...]} (pandas, orient="split")')
    columns = table["columns"]
    return [dict(zip(columns, row, strict=False)) for row in table["data"] if isinstance(row, list)]


def _pick(columns: Iterable[str], names: tuple[str, ...]) -> str | None:
    lowered = {c.lower(): c for c in columns}
    return next((lowered[n] for n in names if n in lowered), None)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) or math.isinf(value) else float(value)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(m, dict) and "content" in m for m in value):
        return "\n".join(_text(m["content"]) for m in value)
    return json.dumps(value, default=str)


def _prompt(value: Any) -> str | list[dict[str, str]]:
    """A prompt as text, or as chat messages when it is a conversation (TRL's conversational data)."""
    if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m and "content" in m for m in value):
        return [{"role": str(m["role"]), "content": _text(m["content"])} for m in value]
    return _text(value)


def _turns(value: Any) -> list[dict[str, str]]:
    if isinstance(value, list) and all(isinstance(m, dict) and "content" in m for m in value):
        return [{"kind": "tool" if m.get("role") == "tool" else "model", "text": _text(m["content"])} for m in value]
    return [{"kind": "model", "text": _text(value)}]


def _component_name(column: str) -> str:
    name = re.sub(r"[^\w.:/@\- ]", "_", column)[:250] or "value"
    return name if is_metric_key(name) else "column"


def _table_rows(rows: list[dict[str, Any]], *, default_step: int) -> list[TrajectoryIn]:
    if not rows:
        return []
    columns = list(dict.fromkeys(c for row in rows for c in row))
    prompt_col, response_col = _pick(columns, PROMPT_COLUMNS), _pick(columns, RESPONSE_COLUMNS)
    if prompt_col is None or response_col is None:
        raise NotSamples(
            f"needs a prompt column ({', '.join(PROMPT_COLUMNS)}) and a response column "
            f"({', '.join(RESPONSE_COLUMNS)}); it has {', '.join(map(str, columns))}"
        )
    reward_col = _pick(columns, REWARD_COLUMNS)
    correct_col = _pick(columns, CORRECT_COLUMNS)
    truth_col = _pick(columns, TRUTH_COLUMNS)
    step_col = _pick(columns, ("step",))
    taken = {prompt_col, response_col, reward_col, correct_col, truth_col, step_col}
    numeric = [
        c
        for c in columns
        if c not in taken
        and c.lower() not in NOT_COMPONENTS
        and all(_number(r.get(c)) is not None or r.get(c) is None for r in rows)
        and any(_number(r.get(c)) is not None for r in rows)
    ]
    if reward_col is None and not numeric:
        raise NotSamples(f"no reward column ({', '.join(REWARD_COLUMNS)}) and no numeric column to sum")
    reward_parts = [c for c in numeric if c.lower() != "advantage"]
    groups: dict[int, dict[str, int]] = {}
    sizes: dict[tuple[int, int], int] = {}
    items = []
    for row in rows:
        if reward_col is None:
            # TRL's reward: its functions' values summed, NaN (a function with no opinion) left out.
            reward = sum(_number(row.get(c)) or 0.0 for c in reward_parts)
        elif (reward := _number(row.get(reward_col))) is None:
            continue  # a sample without a reward is not shown as one with a made-up reward
        step = row.get(step_col) if step_col else default_step
        step = int(step) if _number(step) is not None and 0 <= step <= INT_MAX else default_step
        prompt = _prompt(row.get(prompt_col))
        by_prompt = groups.setdefault(step, {})
        prompt_index = by_prompt.setdefault(json.dumps(prompt, sort_keys=True), len(by_prompt))
        sample_index = sizes.get((step, prompt_index), 0)
        sizes[(step, prompt_index)] = sample_index + 1
        components = {_component_name(c): _number(row.get(c)) for c in numeric}
        correct = row.get(correct_col) if correct_col else None
        try:
            items.append(
                TrajectoryIn(
                    step=step,
                    prompt_index=prompt_index,
                    sample_index=sample_index,
                    prompt=prompt,
                    turns=_turns(row.get(response_col)),
                    ground_truth=row.get(truth_col) if truth_col else None,
                    reward=reward,
                    reward_components=components,
                    correct=bool(correct) if isinstance(correct, bool | int | float) else reward > 0,
                )
            )
        except ValidationError as exc:
            raise NotSamples(f"row {len(items)}: {exc.errors(include_url=False)[0]['msg']}") from None
    return items
