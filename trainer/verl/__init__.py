"""Engine 'verl': a tirlab run trained by verl 0.9.1 (`python -m verl.trainer.main_ppo key=value ...`) across
a GPU cluster, with tirlab's prompts, tool protocol and reward inside it.

- overrides: the translation of a RunConfig into verl's hydra overrides, and the refusal of what verl
  cannot do as tirlab does it (the dashboard shows and checks it);
- validate: verl's own check of those overrides (hydra composition, verl's validate_config, its config
  dataclasses), run in verl's environment; `check_with_verl` calls it from tirlab's;
- agent_loop: tirlab's agent loop registered in verl ("tirlab"): tirlab's trajectory loop against verl's server;
- reward: verl's custom reward function, tirlab's registered reward per sample;
- data: the parquet rows and run-config file verl and the two above read;
- launch, command, prepare, samples: the Ray job's wrapper, the shell command, the files written before
  main_ppo starts, and verl's rollout dumps read back as tirlab's metrics and trajectories.

verl lives in its own virtualenv (requirements-verl.txt, `make verl-deps`): only agent_loop and validate's
`main` import verl, and they run only there; the others import without it (the dashboard imports overrides).
"""
