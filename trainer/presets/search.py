"""Search-R1 and OTC's search setting: the model asks a search engine between its thoughts (trainer.envs.search)."""

from trainer.config import merge_overrides
from trainer.presets.base import register_preset

# Search-R1's GRPO script, PeterGriffinJin/Search-R1 @a14dc3a train_grpo.sh ("sh:<line>"); what it leaves to its
# verl fork keeps verl's default, cited as such. The data is Search-R1's own (scripts/data_process/nq_search.py:
# NQ from FlashRAG, each row's prompt already Search-R1's template), which tirlab does not ship: data/search_r1/
# README.md says how to make it. Retrieval is Search-R1's own server (E5 over wiki-18) at the script's URL; tirlab's
# BM25 service (`python -m retrieval serve --corpus wiki-18.jsonl`) answers the same requests. Not expressible
# here: max_obs_length=500 (sh:39; an observation is cut only by the response budget) and parameter offloading.
SEARCH_R1 = {
    "model": {"name_or_path": "Qwen/Qwen2.5-3B", "dtype": "bfloat16"},  # BASE_MODEL, sh:15; verl trains in bf16
    "engine": "vllm",  # sh:55
    "data": {
        "train_dataset": "data/search_r1/train.parquet",  # $TRAIN_DATA_DIR/train.parquet, sh:30
        "val_dataset": "data/search_r1/test.parquet",  # sh:31
        # The rows hold Search-R1's whole prompt (make_prefix, nq_search.py:26-39): the template adds nothing.
        "prompt_template": "plain",
        "max_prompt_tokens": 2048,  # max_start_length, sh:38
        # tirlab counts every turn and observation after the prompt: 3 turns of max_response_length 500 (sh:37) and
        # 2 observations of max_obs_length 500 (sh:39), within max_prompt_length 4096 (sh:36, 27).
        "max_response_tokens": 2500,
    },
    "tools": {
        "protocol": "search_r1",
        "environment": "search",
        "max_tool_calls": 2,  # max_turns, sh:79
        "search_url": "http://127.0.0.1:8000/retrieve",  # retriever.url, sh:80
        "search_topk": 3,  # retriever.topk, sh:81
    },
    "reward": {"name": "search_r1", "params": {}},  # exact match (the -em experiments, sh:16)
    "rollout": {
        "prompts_per_step": 512,  # train_batch_size, sh:34
        "group_size": 5,  # n_agent, sh:62
        "temperature": 1.0,  # sh:63
        "top_p": 0.95,  # its verl fork's default, verl/trainer/config/ppo_trainer.yaml:71
        "async_rollouts": False,  # verl's main_ppo: sample, then train
    },
    "optim": {
        "learning_rate": 1e-6,  # sh:45
        "lr_schedule": "constant",  # warmup_style, ppo_trainer.yaml:46
        "warmup_steps": 286,  # lr_warmup_steps_ratio 0.285 (sh:46) of 1005 steps
        "grad_clip": 1.0,  # its verl fork's default, ppo_trainer.yaml:32
        "ppo_epochs": 1,  # ppo_trainer.yaml:39
        "mini_batch_prompts": 256,  # ppo_mini_batch_size, sh:48
    },
    "grpo": {
        "clip_low": 0.2,  # its verl fork's clip_ratio, ppo_trainer.yaml:34
        "clip_high": 0.2,
        "kl_coef": 1e-3,  # use_kl_loss with low_var_kl, kl_loss_coef 0.001, sh:47,59-60
        "loss_agg": "token-mean",  # verl's default
        "scale_by_std": True,  # verl's GRPO default
        "entropy_coef": 0.001,  # its verl fork's entropy_coeff, ppo_trainer.yaml:35 (dp_actor.py:247-261)
    },
    "schedule": {
        "max_steps": 1005,  # total_training_steps, sh:76
        "eval_every": 50,  # test_freq, sh:72
        "eval_before_train": True,  # val_before_train, sh:67
        "checkpoint_every": 100,  # save_freq, sh:71
    },
}
register_preset(
    "search-r1",
    SEARCH_R1,
    description="Search-R1's GRPO script: Qwen2.5-3B searches a retrieval server, exact-match reward, 2 turns (GPU).",
)

# OTC-PO's search setting changes only the reward: OTC-GRPO with m = the searches and Search-R1's exact match as its
# correctness (trainer.rewards.otc). We found no released OTC training script; everything else is Search-R1's
# (OTC builds on it), and c is the value of OTC's code setting (ARCHITECTURE.md), not one read from OTC for search.
register_preset(
    "otc-search",
    merge_overrides(SEARCH_R1, {"reward": {"name": "otc_grpo", "params": {"c": 3.0, "wrong_reward": 0.0}}}),
    description="OTC-GRPO in Search-R1's setting: exact-match answers with the fewest searches (GPU).",
)
