"""Rollouts: the multi-turn loop, one-step-off-policy rollouts, and rollouts on Ray actors."""
