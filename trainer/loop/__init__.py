"""The GRPO training loop: setup, collecting a step's groups, the update, checkpoints."""
