"""`python -m trainer evaluate`: the quickstart's model on a dataset of three benchmarks (data sources), each
benchmark's metrics and their mean checked against a hand computation from the trajectories it reports; and a
checkpoint of a run evaluated at its step."""

import json
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trainer.config import merge_overrides
from trainer.data.arithmetic import arithmetic_examples
from trainer.presets import preset_config

REPO = Path(__file__).resolve().parents[2]
# Three benchmarks of different difficulty, as ToRL's test parquet mixes AIME24, AIME25 and MATH500.
SOURCES = {"sums": "easy", "products": "hard", "chains": "chain"}
ROWS = 10


def evaluate(out: Path, model_cache: Path, *args: str, config: dict | None = None) -> list[dict]:
    """The metric steps `python -m trainer evaluate` reports (with `config` written to a file, if given)."""
    command = [sys.executable, "-m", "trainer", "evaluate", "--out", str(out), "--model-cache", str(model_cache)]
    if config is not None:
        out.mkdir(parents=True)
        (out / "given.json").write_text(json.dumps(config))
        command += ["--config", str(out / "given.json")]
    done = subprocess.run([*command, *args], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def trajectories(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def benchmarks(tmp_path_factory) -> Path:
    """A verl parquet file of arithmetic problems in three data sources."""
    rows = []
    for source, difficulty in SOURCES.items():
        for example in arithmetic_examples(ROWS, seed=3, difficulty=difficulty, split="test"):
            rows.append(
                {
                    "data_source": source,
                    "prompt": example.prompt,
                    "ability": "math",
                    "reward_model": {"style": "rule", "ground_truth": example.ground_truth},
                }
            )
    path = tmp_path_factory.mktemp("benchmarks") / "three.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def quickstart_on(dataset: Path, schedule: dict) -> dict:
    return merge_overrides(
        preset_config("quickstart").model_dump(mode="json"),
        {"data": {"val_dataset": str(dataset)}, "schedule": schedule},
    )


@pytest.fixture(scope="module")
def greedy(benchmarks, tiny_model_cache, tmp_path_factory) -> tuple[dict, list[dict]]:
    out = tmp_path_factory.mktemp("greedy") / "out"
    (row,) = evaluate(out, tiny_model_cache, config=quickstart_on(benchmarks, {"eval_pass_k": 1}))
    assert row["step"] == 0
    return row["values"], trajectories(out)


@pytest.fixture(scope="module")
def sampled(benchmarks, tiny_model_cache, tmp_path_factory) -> tuple[dict, list[dict]]:
    out = tmp_path_factory.mktemp("sampled") / "out"
    config = quickstart_on(benchmarks, {"eval_pass_k": 4, "eval_temperature": 1.0})
    (row,) = evaluate(out, tiny_model_cache, "--step", "7", config=config)
    assert row["step"] == 7
    return row["values"], trajectories(out)


def by_source(reported: list[dict]) -> dict[str, list[dict]]:
    groups = defaultdict(list)
    for trajectory in reported:
        groups[trajectory["data_source"]].append(trajectory)
    return groups


def test_every_row_is_evaluated_once_greedily_and_reported_with_its_benchmark(greedy):
    _, reported = greedy
    assert {source: len(rows) for source, rows in by_source(reported).items()} == dict.fromkeys(SOURCES, ROWS)
    assert {t["sample_index"] for t in reported} == {0} and {t["step"] for t in reported} == {0}


def test_each_benchmark_reports_what_its_trajectories_show(greedy):
    values, reported = greedy
    for source, rows in by_source(reported).items():
        assert values[f"bench/{source}/accuracy"] == pytest.approx(mean(t["correct"] for t in rows))
        assert values[f"bench/{source}/tool_call_ratio"] == pytest.approx(mean(t["tool_call_count"] > 0 for t in rows))
        assert values[f"bench/{source}/tool_calls/mean"] == pytest.approx(mean(t["tool_call_count"] for t in rows))
        assert values[f"bench/{source}/reward/mean"] == pytest.approx(mean(t["reward"] for t in rows))
        assert values[f"bench/{source}/response_length/mean"] == pytest.approx(mean(t["response_tokens"] for t in rows))


def test_the_mean_weighs_each_benchmark_the_same(greedy):
    values, _ = greedy
    for metric in ("accuracy", "tool_call_ratio", "response_length/mean"):
        assert values[f"bench-mean/{metric}"] == pytest.approx(mean(values[f"bench/{s}/{metric}"] for s in SOURCES))
    # The pooled validation accuracy is the mean over rows; with benchmarks of one size the two agree.
    assert values["val/accuracy"] == pytest.approx(values["bench-mean/accuracy"])


def test_the_benchmarks_differ_as_their_problems_do(greedy):
    values, _ = greedy
    # The easy sums are solved more often than the chains of operations (the shipped cold start, greedy).
    assert values["bench/sums/accuracy"] > values["bench/chains/accuracy"]


def pass_at(n: int, c: int, k: int) -> float:
    return 1.0 if n - c < k else 1.0 - math.comb(n - c, k) / math.comb(n, k)


def test_k_samples_give_avg_at_k_and_pass_at_k_per_benchmark(sampled):
    values, reported = sampled
    assert {t["sample_index"] for t in reported} == {0, 1, 2, 3}
    for source, rows in by_source(reported).items():
        prompts = defaultdict(list)
        for t in rows:
            prompts[t["prompt_index"]].append(t["correct"])
        assert len(prompts) == ROWS and all(len(samples) == 4 for samples in prompts.values())
        assert values[f"bench/{source}/avg@4"] == pytest.approx(mean(t["correct"] for t in rows))
        assert values[f"bench/{source}/pass@4"] == pytest.approx(
            mean(pass_at(4, sum(samples), 4) for samples in prompts.values())
        )
    assert values["bench-mean/pass@4"] == pytest.approx(mean(values[f"bench/{s}/pass@4"] for s in SOURCES))
    # The greedy pass still gives accuracy; the samples at temperature 1 give avg@4.
    assert {f"bench/{s}/accuracy" for s in SOURCES} <= set(values)


def test_a_checkpoint_evaluates_as_its_run_did_after_the_same_updates(benchmarks, tiny_model_cache, tmp_path):
    run = tmp_path / "run"
    config = merge_overrides(
        quickstart_on(benchmarks, {"checkpoint_every": 2, "max_steps": 2, "eval_every": 2}),
        {"rollout": {"prompts_per_step": 2}},
    )
    (tmp_path / "run.json").write_text(json.dumps(config))
    done = subprocess.run(
        [sys.executable, "-m", "trainer", "run", "--config", str(tmp_path / "run.json"), "--out", str(run),
         "--model-cache", str(tiny_model_cache)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    saved = [json.loads(line) for line in (run / "checkpoints.jsonl").read_text().splitlines()]
    assert saved[0] == {"step": 2, "path": str(run / "checkpoints" / "step-2")}
    # The checkpoint's own config.json says which datasets its run evaluates on.
    (row,) = evaluate(tmp_path / "eval", tiny_model_cache, "--checkpoint", saved[0]["path"])
    assert row["step"] == 2
    assert "evaluating " + saved[0]["path"] in (tmp_path / "eval" / "log.txt").read_text()
    # Saved after two updates, the checkpoint answers greedily as the run's own evaluation after its step 1 did
    # (reported with that step: docs/evaluation.md, step numbers).
    in_run = json.loads((run / "metrics.jsonl").read_text().splitlines()[1])["values"]
    benchmark = {key: value for key, value in in_run.items() if key.startswith(("bench/", "bench-mean/"))}
    assert benchmark and {key: row["values"][key] for key in benchmark} == benchmark
