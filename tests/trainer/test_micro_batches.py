"""How the update splits a mini-batch into micro-batches (trainer.loop.micro_batches): the cheaper split,
every response exactly once."""

from trainer.loop.micro_batches import MICRO_BATCH, MICRO_BATCH_TOKENS, cost, split


def _groups(prompt_length: int, response_lengths: list[int], groups: int) -> list[tuple[list[int], list[int]]]:
    """`groups` GRPO groups, each its own prompt and one response of each length."""
    return [([g] * prompt_length, [g] * length) for g in range(groups) for length in response_lengths]


def _split(items):
    return split(items, lambda item: item[0], lambda item: item[1])


def _cost(batches):
    return cost(batches, lambda item: item[0], lambda item: item[1])


def test_the_cost_counts_each_distinct_prompt_once_and_pads_the_responses():
    items = [([1] * 30, [7] * 10), ([1] * 30, [7] * 70), ([2] * 40, [7] * 5)]
    assert _cost([items]) == 30 + 40 + 3 * 70
    assert _cost([items[:2], items[2:]]) == (30 + 2 * 70) + (40 + 5)


def test_short_prompts_and_responses_of_two_lengths_go_by_length():
    # A step-0 quickstart group: half answer in 13 tokens, half call the tool in 74; prompts of 35.
    items = _groups(35, [13] * 4 + [74] * 4, groups=16)
    batches = _split(items)
    assert all(len({len(response) for _, response in batch}) == 1 for batch in batches)
    assert all(len(batch) * max(len(r) for _, r in batch) <= MICRO_BATCH_TOKENS for batch in batches)
    by_group = [items[i : i + MICRO_BATCH] for i in range(0, len(items), MICRO_BATCH)]
    assert _cost(batches) < 0.8 * _cost(by_group)
    assert sorted(map(id, (item for batch in batches for item in batch))) == sorted(map(id, items))


def test_long_prompts_keep_their_groups_together():
    # Function-calling prompts of 400 tokens: sorting by length would encode most of them in every micro-batch.
    items = _groups(400, [40, 60, 80, 100, 120, 140, 160, 256], groups=16)
    assert _split(items) == [items[i : i + MICRO_BATCH] for i in range(0, len(items), MICRO_BATCH)]


def test_the_update_is_the_same_whichever_way_the_responses_are_split(random_tiny, tmp_path, monkeypatch):
    """One update of a collected step by whole groups and by single responses: the same weights after it
    (to float rounding) and the same loss statistics, so the split is only a matter of speed."""
    import copy

    import torch

    import trainer.loop.train as train_module
    import trainer.loop.update as update_module
    from tests.model_cache import MODEL_CACHE
    from tests.trainer.test_train import small_config
    from trainer.config import validate_config

    class Quiet:
        stopped_by_dashboard = False

        def set_phase(self, *args, **kwargs): ...
        def log(self, *args, **kwargs): ...

    config = validate_config(small_config(str(random_tiny), grpo={"kl_coef": 0.1}))
    trainer = train_module.Trainer(
        config, reporter=Quiet(), out_dir=tmp_path, model_cache=MODEL_CACHE, log=lambda _: None
    )
    groups, _ = trainer.collect(0)
    start = copy.deepcopy(trainer.model.state_dict()), copy.deepcopy(trainer.optimizer.state_dict())
    results = []
    for how in (lambda items, prompt, response: [items], lambda items, prompt, response: [[i] for i in items]):
        trainer.model.load_state_dict(start[0])
        trainer.optimizer.load_state_dict(start[1])
        monkeypatch.setattr(update_module, "split", how)
        stats = trainer.update(groups)
        results.append(({k: v.clone() for k, v in trainer.model.state_dict().items()}, stats))
    (whole, whole_stats), (single, single_stats) = results
    for name in whole:
        torch.testing.assert_close(whole[name], single[name], rtol=1e-4, atol=1e-6)
    for name in ("actor/pg_loss", "actor/kl", "actor/entropy", "actor/grad_norm", "actor/trained_tokens"):
        assert abs(whole_stats[name] - single_stats[name]) <= 1e-4 * max(1.0, abs(whole_stats[name])), name
