"""OpenHands' stuck detector, the two rules that end a SkyRL-v0 trajectory early (its `stuck_ratio`)
(SkyRL-OpenHands @6f3ba323 openhands/controller/stuck.py:27-165; checked before every step,
openhands/controller/agent_controller.py:662-666):

1. the last four actions are the same and so are the last four observations (:107-126);
2. the last three actions are the same and each of their observations is an ErrorObservation (:128-142) -- a call
   the converter refused (trainer.envs.swe.observations.error_observation), not a failed command or editor
   error, which are ordinary observations -- checked only once four actions are in the history (:133).

"The same" is dataclass equality: an action's call and its thought; a command's observation compares only the
command and the exit code (:311-335), so the caller passes `command + exit code` as a bash step's observation.
The monologue and six-step pattern rules (:95-105) are not kept: a turn without a call is answered here, never
repeated as an agent message.
"""

from __future__ import annotations

from collections.abc import Sequence

# (the action: the call with the text before it, its observation, whether the observation is an ErrorObservation)
Step = tuple[str, str, bool]
SAME_OBSERVATION_REPEATS = 4
SAME_ERROR_REPEATS = 3


def is_stuck(history: Sequence[Step]) -> bool:
    """Whether the last steps repeat one action as the detector's two rules say."""
    if len(history) < SAME_OBSERVATION_REPEATS:
        return False
    last = list(history[-SAME_OBSERVATION_REPEATS:])
    if len({(action, seen) for action, seen, _ in last}) == 1:
        return True
    errors = list(history[-SAME_ERROR_REPEATS:])
    return all(failed for _, _, failed in errors) and len({action for action, _, _ in errors}) == 1
