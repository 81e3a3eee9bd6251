"""Rollouts on Ray: policy replicas and sandbox executors as actors that a cluster spreads over nodes.

The driver (the trainer process; on a cluster, a Ray job's entrypoint) keeps the policy it trains.
Each `RolloutReplica` holds its own copy of the policy in an HFEngine and runs `arollout` on a
share of the step's prompts, whole GRPO groups each; its tool calls go to the `SandboxActor`s,
each running them in its own SandboxPool on the node it landed on. After every update the driver
puts the new weights in the object store once and every replica loads them from there.

Sampling is seeded per trajectory and turn, independent of batching (GenerationRequest.seed), and
each share is rolled out at its place in the step (arollout's `first_index`): the replicas sample
exactly the trajectories the local backend samples.

Where RAY_ADDRESS is set (a Ray job's entrypoint has it) the trainer joins that cluster; otherwise
it starts a local Ray instance, and stops it when the run ends: on one machine the same code runs.
"""

from __future__ import annotations

import copy
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import ray
import torch
from ray.actor import ActorHandle

import sandbox
from trainer.engines.base import Tokenizer
from trainer.engines.hf import HFEngine
from trainer.rollout.multi_turn import RolloutResult, RolloutSettings, arollout

# Logical CPUs each actor reserves. A replica's generation is one engine call at a time; a sandbox
# actor's pool forks one zygote of each kind per reserved CPU (sandbox.pool), whose children run
# the model's code.
REPLICA_CPUS = 1
SANDBOX_ACTOR_CPUS = 1
# How long the actors may take to be placed and started before the run gives up: a cluster too
# small for them would otherwise leave the run waiting for ever.
ACTOR_START_TIMEOUT_S = 300.0
# Actors are spread over the cluster's nodes rather than packed on the first one with room.
SPREAD = "SPREAD"


@ray.remote(num_cpus=SANDBOX_ACTOR_CPUS)
class SandboxActor:
    """Executes tool calls on the node it lands on, in a SandboxPool of its own."""

    def __init__(self) -> None:
        self.pool = sandbox.SandboxPool(zygotes=SANDBOX_ACTOR_CPUS)

    async def run(self, code: str, timeout_s: float, memory_mb: int) -> dict[str, Any]:
        result = await self.pool.arun(code, timeout_s=timeout_s, memory_mb=memory_mb)
        return result.to_dict()

    def close(self) -> None:
        """Stop the pool's zygotes before the actor is killed, so none outlives it."""
        self.pool.close()


@ray.remote(num_cpus=REPLICA_CPUS)
class RolloutReplica:
    """A copy of the policy with its own HFEngine, rolling out shares of the driver's rollouts."""

    def __init__(
        self, policy: tuple[torch.nn.Module, Tokenizer], sandboxes: list[ActorHandle], num_threads: int | None
    ) -> None:
        model, tokenizer = policy
        self.engine = HFEngine(model.eval(), tokenizer, num_threads=num_threads)
        self.sandboxes = sandboxes
        self.in_flight = [0] * len(sandboxes)

    async def run_code(self, code: str, *, timeout_s: float, memory_mb: int) -> sandbox.Result:
        """One tool call on the sandbox actor with the fewest of this replica's calls in flight."""
        index = min(range(len(self.sandboxes)), key=self.in_flight.__getitem__)
        self.in_flight[index] += 1
        try:
            data = await self.sandboxes[index].run.remote(code, timeout_s, memory_mb)
        finally:
            self.in_flight[index] -= 1
        return sandbox.Result.from_dict(data)

    async def rollout(
        self,
        prompts: list[list[int]],
        settings: RolloutSettings,
        seed: int | None,
        first_index: int,
        tools: list[list[dict] | None] | None = None,
        tasks: list[dict | None] | None = None,
    ) -> RolloutResult:
        try:
            return await arollout(
                self.engine,
                prompts,
                settings,
                seed=seed,
                run_code=self.run_code,
                first_index=first_index,
                tools=tools,
                tasks=tasks,
            )
        finally:
            self.engine.clear_cache()

    def load_weights(self, state_dict: dict[str, torch.Tensor]) -> None:
        self.engine.model.load_state_dict(state_dict)
        # Kept KV caches were computed with the old weights.
        self.engine.clear_cache()


def connect_ray(num_cpus: int) -> bool:
    """Join the cluster at RAY_ADDRESS, else start a local Ray instance with `num_cpus` logical CPUs.
    True when this call started the instance, which its caller then stops (`ray.shutdown`)."""
    if ray.is_initialized():
        return False
    address = os.environ.get("RAY_ADDRESS")
    main_thread = threading.current_thread() is threading.main_thread()
    # ray.init replaces the SIGTERM handler with one that exits at once; the trainer's own (finish
    # the step, checkpoint, report) must stay in force.
    sigterm = signal.getsignal(signal.SIGTERM) if main_thread else None
    try:
        if not address:
            ray.init(num_cpus=num_cpus, include_dashboard=False)
            return True
        if address.startswith(("http://", "https://")):
            # The dashboard's job API (what the webapp is given), not a cluster address: join the
            # cluster running on this node. ray.init reads RAY_ADDRESS itself, so it must go meanwhile.
            del os.environ["RAY_ADDRESS"]
            try:
                ray.init(address="auto")
            finally:
                os.environ["RAY_ADDRESS"] = address
        else:
            ray.init(address=address)
        return False
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, sigterm)


class RayRollout:
    """The driver's side: starts the actors, splits rollouts over the replicas, syncs weights, stops."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Tokenizer,
        *,
        replicas: int,
        sandbox_actors: int,
        num_threads: int | None = None,
        log: Callable[[str], None] = print,
    ) -> None:
        self.sandboxes: list[ActorHandle] = []
        self.replicas: list[ActorHandle] = []
        needed = replicas * REPLICA_CPUS + sandbox_actors * SANDBOX_ACTOR_CPUS
        self.started_ray = connect_ray(num_cpus=max(os.cpu_count() or 1, needed))
        try:
            spread = {"scheduling_strategy": SPREAD}
            self.sandboxes = [SandboxActor.options(**spread).remote() for _ in range(sandbox_actors)]
            # Replicas generate on CPU actors: a policy trained on the GPU (model.device) is sent as a CPU copy.
            on_cpu = model if next(model.parameters()).device.type == "cpu" else copy.deepcopy(model).cpu()
            policy = ray.put((on_cpu, tokenizer))
            self.replicas = [
                RolloutReplica.options(**spread).remote(policy, self.sandboxes, num_threads) for _ in range(replicas)
            ]
            started = time.perf_counter()
            try:
                ray.get([actor.__ray_ready__.remote() for actor in self.sandboxes + self.replicas],
                        timeout=ACTOR_START_TIMEOUT_S)  # fmt: skip
            except ray.exceptions.GetTimeoutError:
                raise RuntimeError(
                    f"Ray could not start {replicas} rollout replicas and {sandbox_actors} sandbox actors "
                    f"({needed} CPUs) within {ACTOR_START_TIMEOUT_S:.0f} s; cluster resources: "
                    f"{ray.cluster_resources()}"
                ) from None
        except BaseException:
            self.close()
            raise
        nodes = len({node["NodeID"] for node in ray.nodes() if node["Alive"]})
        log(
            f"rollouts on Ray: {replicas} replicas and {sandbox_actors} sandbox actors on {nodes} node(s), "
            f"started in {time.perf_counter() - started:.1f} s"
        )

    def rollout(
        self,
        prompts: Sequence[Sequence[int]],
        settings: RolloutSettings,
        *,
        seed: int | None,
        group_size: int,
        tools: Sequence[list[dict] | None] | None = None,
        tasks: Sequence[dict | None] | None = None,
    ) -> RolloutResult:
        """`arollout` over the replicas, whole groups of `group_size` prompts each, results in order
        (`tools` and `tasks`: each prompt's offered tools and environment task, as arollout takes them).

        The replicas run side by side, so gen_s and tool_s are those of the slowest share."""
        started = time.perf_counter()
        groups = len(prompts) // group_size
        bounds = [round(r * groups / len(self.replicas)) * group_size for r in range(len(self.replicas) + 1)]
        bounds[-1] = len(prompts)
        calls = [
            replica.rollout.remote(
                [list(p) for p in prompts[low:high]],
                settings,
                seed,
                low,
                None if tools is None else list(tools[low:high]),
                None if tasks is None else list(tasks[low:high]),
            )
            for replica, low, high in zip(self.replicas, bounds, bounds[1:], strict=False)
            if low < high
        ]
        results: list[RolloutResult] = ray.get(calls)
        return RolloutResult(
            trajectories=[t for result in results for t in result.trajectories],
            wall_s=time.perf_counter() - started,
            gen_s=max((r.gen_s for r in results), default=0.0),
            tool_s=max((r.tool_s for r in results), default=0.0),
            batch_sizes=[size for result in results for size in result.batch_sizes],
        )

    def load_weights(self, state_dict: dict[str, torch.Tensor]) -> None:
        """Put the weights in the object store once; every replica loads them from there."""
        weights = ray.put({name: tensor.cpu() for name, tensor in state_dict.items()})
        ray.get([replica.load_weights.remote(weights) for replica in self.replicas])

    def close(self) -> None:
        """Stop the actors, and the local Ray instance if this run started it. Safe to call twice."""
        if self.sandboxes:
            try:
                ray.get([actor.close.remote() for actor in self.sandboxes], timeout=30)
            except ray.exceptions.RayError:
                pass  # a dead actor has no pool left to close; ray.kill below still applies
        for actor in self.replicas + self.sandboxes:
            ray.kill(actor)
        self.replicas, self.sandboxes = [], []
        if self.started_ray:
            ray.shutdown()
            self.started_ray = False
