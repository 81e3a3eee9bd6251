"""Supervised fine-tuning: the SFT loop, its trace datasets and generators, and a run's SFT phase."""
