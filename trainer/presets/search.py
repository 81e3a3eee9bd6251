"""Search-R1 and OTC's search setting: the model asks a search engine between its thoughts (trainer.envs.search)."""

from trainer.config import TINY_SEARCH_MODEL, merge_overrides
from trainer.data.search_mini import TOPK
from trainer.presets.base import register_preset
from trainer.presets.common import QUICKSTART

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

# search-r1-mini: Search-R1's loop and exact-match reward on the tiny model, from its cold start
# ('tirlab/tiny-char-search': its last traces answer at once half the time and search once or twice a quarter each,
# whatever the question needs; greedy, it answers at once: trainer.models.tiny.search),
# over search-mini's generated knowledge base (trainer.data.search_mini). It trains on questions about the training
# people and organisations and is evaluated, before the first step and after the last, on questions about the
# held-out ones, which only searching answers (tests/trainer/test_search_r1_mini_learns.py). Search-R1's protocol;
# top-1, where Search-R1 retrieves 3, as the tiny model learned to read one passage (trainer.data.search_mini.TOPK);
# the quickstart's recipe for 2 cores; 2 turns (Search-R1's max_turns), so a 2-hop question can be answered in the
# last one.
SEARCH_R1_MINI = merge_overrides(
    QUICKSTART,
    {
        "model": {"name_or_path": TINY_SEARCH_MODEL},
        "data": {
            "train_dataset": "search-mini",
            "val_dataset": "search-mini",
            "prompt_template": "search_r1_mini",
            "max_prompt_tokens": 200,
            "max_response_tokens": 400,
        },
        "tools": {
            "protocol": "search_r1",
            "environment": "search",
            "max_tool_calls": 2,
            "search_corpus": "search-mini",
            "search_topk": TOPK,
            # The default back: the quickstart's tool-output wording does not apply to passages.
            "feedback": "torl",
        },
        "reward": {"name": "search_r1", "params": {}},
        "schedule": {"max_steps": 20, "eval_every": 20, "eval_before_train": True},
    },
)
register_preset(
    "search-r1-mini",
    SEARCH_R1_MINI,
    description="Search-R1 on CPU: the tiny model learns to search once for 1-hop questions and twice for 2-hop.",
    with_async=True,
)

# otc-search-mini: the same with OTC-GRPO's reward (as otc-search: c = 3, a wrong answer 0), so a search that
# a sibling answered without costs reward: searches on 0-hop questions, whose fact the question states, go.
register_preset(
    "otc-search-mini",
    merge_overrides(SEARCH_R1_MINI, {"reward": {"name": "otc_grpo", "params": {"c": 3.0, "wrong_reward": 0.0}}}),
    description="OTC-GRPO in search-r1-mini: the same accuracy with fewer searches, none on 0-hop questions.",
    with_async=True,
)
