"""`swe`: SkyRL-v0's software-engineering environment (trainer.envs.swe.environment), its tools, patch and grading."""

from trainer.envs.swe.environment import SweEnvironment, SweTaskError

__all__ = ["SweEnvironment", "SweTaskError"]
