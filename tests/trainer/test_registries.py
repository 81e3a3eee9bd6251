"""A reward, protocol, environment or preset is one new file: each registers itself where it is written
(trainer.registry), and the config's choices, the reward parameters' validation, the weighted reward's
terms and the presets list are read from the registries."""

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trainer.registry import Registry, UnknownName

REPO = Path(__file__).resolve().parents[2]

NEW_FILES = {
    # A reward: its parameters, its description and its rule, nothing else.
    "trainer/rewards/brevity.py": '''
        from typing import Any

        from pydantic import Field

        from trainer.rewards.base import Response, RewardContext, RewardParams, per_completion, register_reward
        from trainer.trajectory import RewardResult


        class BrevityParams(RewardParams):
            """Shorter is better."""

            limit: int = Field(10, ge=1, description="Characters that score 1.")


        def _brevity(response: Response, ground_truth: Any, ctx: RewardContext) -> RewardResult:
            score = min(1.0, ctx.params["limit"] / max(1, len(response.text)))
            return RewardResult(total=score, components={"brevity": score}, correct=False)


        register_reward("brevity", params=BrevityParams, description="Shorter is better.")(per_completion(_brevity))
    ''',
    # A protocol: ToRL's syntax under another name.
    "trainer/protocols/python_fenced.py": """
        from typing import ClassVar

        from trainer.protocols.base import register_protocol
        from trainer.protocols.python_markdown import PythonMarkdown


        @register_protocol
        class PythonFenced(PythonMarkdown):
            name: ClassVar[str] = "python_fenced"
            environments: ClassVar[tuple[str, ...]] = ("python", "echo")
    """,
    # An environment that runs nothing.
    "trainer/envs/echo.py": """
        from typing import ClassVar

        from trainer.envs.base import Environment, register_environment


        @register_environment
        class Echo(Environment):
            name: ClassVar[str] = "echo"
            description: ClassVar[str] = "runs nothing"

            def stop_strings(self, protocol, calls_made, budget):
                return []
    """,
    # A preset using all three.
    "trainer/presets/brevity.py": """
        from trainer.config import merge_overrides
        from trainer.presets.base import register_preset
        from trainer.presets.common import QUICKSTART

        register_preset(
            "brevity-mini",
            merge_overrides(
                QUICKSTART,
                {
                    "reward": {"name": "brevity", "params": {"limit": 5}},
                    "tools": {"protocol": "python_fenced", "environment": "echo"},
                },
            ),
            description="The quickstart, rewarded for short answers.",
        )
    """,
}

CHECK = """
from trainer.config import validate_config
from trainer.envs import ENVIRONMENT_NAMES
from trainer.presets import PRESET_DESCRIPTIONS, preset_config
from trainer.protocols import PROTOCOL_NAMES
from trainer.rewards import REWARD_DESCRIPTIONS, REWARD_NAMES, score, validate_reward_params

assert "brevity" in REWARD_NAMES and REWARD_DESCRIPTIONS["brevity"] == "Shorter is better."
assert "python_fenced" in PROTOCOL_NAMES and "echo" in ENVIRONMENT_NAMES
assert validate_reward_params("brevity", None) == {"limit": 10}
assert score("brevity", "0123456789", "", params={"limit": 5}).total == 0.5
config = preset_config("brevity-mini")
assert (config.reward.name, config.tools.protocol, config.tools.run_environment) == ("brevity", "python_fenced", "echo")
assert PRESET_DESCRIPTIONS["brevity-mini"]
weighted = {"terms": [{"name": "brevity"}, {"name": "torl"}]}
assert validate_reward_params("weighted", weighted)["terms"][0]["params"] == {"limit": 10}
try:
    validate_config({"tools": {"protocol": "python_markdown", "environment": "echo"}})
except ValueError as exc:
    assert "'python_markdown' runs its calls in 'python', not 'echo'" in str(exc), exc
else:
    raise AssertionError("python_markdown accepted an environment it does not list")
print("picked up")
"""


@pytest.mark.slow
def test_a_new_reward_protocol_environment_and_preset_are_each_one_new_file(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copytree(REPO / "trainer", copy / "trainer", ignore=shutil.ignore_patterns("shipped", "__pycache__"))
    shutil.copytree(REPO / "sandbox", copy / "sandbox", ignore=shutil.ignore_patterns("__pycache__"))
    for path, text in NEW_FILES.items():
        (copy / path).write_text(textwrap.dedent(text).lstrip())
    result = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=copy, capture_output=True, text=True, timeout=300, env={"PATH": ""}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "picked up"


def test_an_unknown_name_lists_the_registered_ones() -> None:
    registry: Registry[int] = Registry("widget", "trainer.protocols")
    registry.register("b", 2)
    registry.register("a", 1)
    with pytest.raises(UnknownName, match=r"unknown widget .c.; choose one of: a, b$"):
        registry.get("c")


def test_a_name_registers_once() -> None:
    registry: Registry[int] = Registry("widget", "trainer.protocols")
    registry.register("a", 1)
    with pytest.raises(ValueError, match="widget 'a' is already registered"):
        registry.register("a", 2)
