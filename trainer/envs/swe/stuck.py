"""OpenHands' stuck detector, the two rules that end a SkyRL-v0 trajectory early (its `stuck_ratio`): the same
action with the same observation four times in a row, or the same action failing three times in a row
(openhands/controller/stuck.py, StuckDetector, scenarios 1 and 2)."""

from __future__ import annotations

from collections.abc import Sequence

# (the call as written, its observation, whether it failed)
Step = tuple[str, str, bool]
SAME_OBSERVATION_REPEATS = 4
SAME_ERROR_REPEATS = 3


def is_stuck(history: Sequence[Step]) -> bool:
    """Whether the last steps repeat one action as the detector's rules say."""
    last = list(history[-SAME_OBSERVATION_REPEATS:])
    if len(last) == SAME_OBSERVATION_REPEATS and len({(call, seen) for call, seen, _ in last}) == 1:
        return True
    errors = list(history[-SAME_ERROR_REPEATS:])
    return (
        len(errors) == SAME_ERROR_REPEATS
        and all(failed for _, _, failed in errors)
        and len({call for call, _, _ in errors}) == 1
    )
