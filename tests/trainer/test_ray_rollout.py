"""Rollouts on Ray actors sample exactly what the local rollout samples, before and after an update.

The cold-started tiny model calls the tool about half the time, so the sandbox actors run real
code. The first test joins a local Ray instance the module starts with 4 logical CPUs (2 replicas
and 2 sandbox actors); the command-line run starts and stops its own.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import ray

from trainer.config import validate_config
from trainer.loop.train import Trainer
from trainer.report.client import Reporter
from trainer.rollout.ray import connect_ray

REPO = Path(__file__).resolve().parents[2]
SEED = 3


def small_config(**rollout) -> dict:
    return {
        "seed": SEED,
        "data": {"train_dataset": "arithmetic", "max_response_tokens": 96},
        # A high learning rate, so that one update visibly changes what the policy samples.
        "optim": {"learning_rate": 3e-3},
        # Three groups over two replicas: an uneven split, two groups to one and one to the other.
        "rollout": {"prompts_per_step": 3, "group_size": 4, "trajectories_to_report": 1, **rollout},
        "schedule": {"max_steps": 2},
    }


def make_trainer(out: Path, model_cache: Path, **rollout) -> Trainer:
    return Trainer(
        validate_config(small_config(**rollout)), reporter=Reporter(out), out_dir=out, model_cache=model_cache
    )


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance with few CPUs, started through the trainer's own connect_ray."""

    def keep_going(signum, frame):
        return None

    previous = signal.signal(signal.SIGTERM, keep_going)
    try:
        started = connect_ray(num_cpus=4)
        # ray.init installs its own SIGTERM handler; the trainer's (stop after the step) must survive.
        assert signal.getsignal(signal.SIGTERM) is keep_going
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert started
    yield
    ray.shutdown()


def sampled(groups) -> list:
    """What a rollout sampled: every trajectory's tokens and masks, tool calls and reward."""
    return [
        (
            t.prompt_ids,
            t.response_ids,
            t.loss_mask,
            t.tool_mask,
            [(e.call, e.status, e.output) for e in t.completion.executions],
            t.completion.truncated,
            reward.total,
        )
        for group in groups
        for t, reward in zip(group.trajectories, group.rewards, strict=True)
    ]


def roll_and_score(trainer: Trainer, examples, seed: int):
    groups, _ = trainer.roll(examples, group_size=trainer.config.rollout.group_size, seed=seed)
    trainer.score(groups, step=0)
    return groups


def test_replicas_sample_the_local_trajectories_before_and_after_an_update(local_ray, tiny_model_cache, tmp_path):
    local = make_trainer(tmp_path / "local", tiny_model_cache)
    remote = make_trainer(tmp_path / "ray", tiny_model_cache, backend="ray", replicas=2, sandbox_actors=2)
    try:
        assert remote.ray_rollout is not None and not remote.ray_rollout.started_ray  # joined, not started
        examples = local.draw(0, 0, 3)
        before = roll_and_score(local, examples, seed=11)
        assert sampled(roll_and_score(remote, examples, seed=11)) == sampled(before)
        assert sum(len(t.completion.executions) for g in before for t in g.trajectories) > 0

        # The same update on both sides (same groups, same weights); the Ray side sends its
        # weights to the replicas.
        local.update(before)
        remote.update(before)
        remote.sync_weights()

        after = roll_and_score(local, examples, seed=11)
        assert sampled(after) != sampled(before)  # the update changed what is sampled ...
        assert sampled(roll_and_score(remote, examples, seed=11)) == sampled(after)  # ... on the replicas too
    finally:
        remote.close()
    assert remote.ray_rollout is None
    assert ray.is_initialized()  # the module's instance: not the trainer's to stop


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def session_processes(session: int) -> list[str]:
    """The processes still alive in a session, after giving the last ones a few seconds to exit."""
    deadline = time.monotonic() + 10
    while True:
        listing = subprocess.run(["ps", "-eo", "sid=,pid=,args="], capture_output=True, text=True, check=True)
        alive = [line for line in listing.stdout.splitlines() if line.split(None, 1)[0] == str(session)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.5)


def test_a_run_on_ray_writes_its_files_and_leaves_no_ray_process_behind(tiny_model_cache, tmp_path):
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(small_config(backend="ray", replicas=2, sandbox_actors=2)))
    out = tmp_path / "run"
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    # Its own session, so that everything the run starts (Ray's processes included) can be found after it.
    process = subprocess.Popen(
        [sys.executable, "-m", "trainer", "run", "--config", str(config_file), "--out", str(out),
         "--model-cache", str(tiny_model_cache)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr[-3000:]
    assert "rollouts on Ray: 2 replicas and 2 sandbox actors" in stdout
    assert "step 2/2" in stdout

    metrics = read_jsonl(out / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [0, 1]
    for m in metrics:
        for name in (
            "accuracy",
            "tool_call_ratio",
            "timing_s/gen",
            "timing_s/rollout",
            "timing_s/weight_sync",
            "actor/grad_norm",
        ):
            assert name in m["values"], name  # fmt: skip
        assert m["values"]["groups/sampled"] == 3
    trajectories = read_jsonl(out / "trajectories.jsonl")
    assert len(trajectories) == 2 * 1 * 4  # steps × reported groups × group size
    assert all(0 < t["response_tokens"] <= 96 for t in trajectories)
    assert json.loads((out / "status.json").read_text().splitlines()[-1])["status"] == "succeeded"
    assert session_processes(process.pid) == []
