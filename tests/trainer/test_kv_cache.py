"""The in-place KV cache of the hf engine holds what transformers' own cache holds, without copying
the whole cache at each decoding step."""

import pytest
import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

from trainer.engines import GenerationRequest
from trainer.engines import hf as hf_engine
from trainer.engines.hf import HFEngine
from trainer.engines.kv_cache import GrowingLayer, growing
from trainer.models import build_tiny_model


def _states(batch: int, length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn((batch, 2, length, 8), generator=generator) for _ in range(2))


def test_appending_prefills_steps_and_dropped_rows_hold_what_concatenation_holds():
    ours, theirs = GrowingLayer(), DynamicLayer()
    buffers = set()
    batch = 6
    for step in range(400):
        keys, values = _states(batch, 37 if step == 0 else 1, seed=step)
        got = ours.update(keys, values)
        want = theirs.update(keys, values)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
        buffers.add(ours._key_buffer.data_ptr())
        if step in (120, 250):  # finished rows leave the batch, as the engine drops them
            keep = torch.arange(0, batch, 2)
            ours.batch_select_indices(keep)
            theirs.batch_select_indices(keep)
            batch = len(keep)
        if step == 300:
            ours.crop(-5)
            theirs.crop(-5)
    assert ours.get_seq_length() == theirs.get_seq_length() == 37 + 399 - 5
    # 400 appends moved the cache into a new buffer only when it ran out of room or lost rows.
    assert len(buffers) <= 5


def test_growing_keeps_a_caches_contents_and_leaves_other_layers_alone():
    keys, values = _states(3, 10, seed=1)
    cache = growing(DynamicCache(ddp_cache_data=[(keys, values), (keys + 1, values + 1)]))
    assert all(type(layer) is GrowingLayer for layer in cache.layers)
    assert cache.get_seq_length() == 10
    step = _states(3, 1, seed=2)
    got, _ = cache.layers[1].update(*step)
    assert torch.equal(got, torch.cat([keys + 1, step[0]], dim=2))

    class Other(DynamicLayer):
        pass

    other = DynamicCache()
    other.layers = [Other()]
    assert type(growing(other).layers[0]) is Other


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_the_engine_generates_the_same_tokens_as_with_transformers_cache(monkeypatch, temperature):
    model, tokenizer = build_tiny_model(seed=0)
    model.eval()
    prompts = ["What is 3+4?\nassistant: ", "Q: 12*7\nA: ", "x" * 40]
    requests = [
        GenerationRequest(tokenizer.encode(p, add_special_tokens=False), 300, temperature=temperature, seed=i)
        for i, p in enumerate(prompts)
    ]
    ours = HFEngine(model, tokenizer, num_threads=1).generate(requests)
    monkeypatch.setattr(hf_engine, "growing", lambda cache: cache)
    theirs = HFEngine(model, tokenizer, num_threads=1).generate(requests)
    assert [o.new_token_ids for o in ours] == [o.new_token_ids for o in theirs]
    assert [o.logprobs for o in ours] == [o.logprobs for o in theirs]
