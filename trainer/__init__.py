"""tirlab's GRPO trainer for tool-integrated reasoning; knows nothing of Django."""
