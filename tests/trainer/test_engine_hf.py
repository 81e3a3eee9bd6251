"""The hf engine against the model's own forward pass, on the tiny randomly initialised Llama."""

import math

import pytest
import torch

from trainer.engines import GenerationRequest
from trainer.engines.hf import HFEngine, sample_tokens
from trainer.models import build_tiny_model

PROMPTS = ["What is 3+4?\nassistant: ", "Q: 12*7\nA: ", "x"]


@pytest.fixture(scope="module")
def model_and_tokenizer():
    model, tokenizer = build_tiny_model(seed=0)
    return model.eval(), tokenizer


@pytest.fixture
def engine(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    return HFEngine(model, tokenizer, num_threads=1)


def _ids(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False)


def _forward_logits(model, ids: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return model(input_ids=torch.tensor([ids])).logits[0].float()


def test_greedy_batched_equals_unbatched(engine):
    tok = engine.tokenizer
    requests = [GenerationRequest(_ids(tok, p), 24, temperature=0) for p in PROMPTS]
    batched = engine.generate(requests)
    for request, out in zip(requests, batched, strict=True):
        alone = engine.generate([request])[0]
        assert out.new_token_ids == alone.new_token_ids
        assert out.logprobs == pytest.approx(alone.logprobs, abs=1e-4)


def test_greedy_matches_argmax_of_a_full_forward(engine, model_and_tokenizer):
    model, tok = model_and_tokenizer
    prompt = _ids(tok, PROMPTS[0])
    out = engine.generate([GenerationRequest(prompt, 16, temperature=0)])[0]
    logits = _forward_logits(model, prompt + out.new_token_ids)
    positions = range(len(prompt) - 1, len(prompt) - 1 + len(out.new_token_ids))
    assert out.new_token_ids == [int(logits[p].argmax()) for p in positions]


@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.7, 1.0), (1.3, 0.8)])
def test_logprobs_match_a_recomputation(engine, model_and_tokenizer, temperature, top_p):
    model, tok = model_and_tokenizer
    prompt = _ids(tok, PROMPTS[1])
    out = engine.generate([GenerationRequest(prompt, 20, temperature=temperature, top_p=top_p, seed=3)])[0]
    assert len(out.logprobs) == len(out.new_token_ids) == 20
    logp = torch.log_softmax(_forward_logits(model, prompt + out.new_token_ids) / temperature, dim=-1)
    for step, token in enumerate(out.new_token_ids):
        row = logp[len(prompt) - 1 + step]
        sorted_logp, order = row.sort(descending=True)
        probs = sorted_logp.exp()
        nucleus = order[(probs.cumsum(0) - probs) < top_p] if top_p < 1 else order
        assert token in nucleus.tolist(), "sampled a token outside the top-p nucleus"
        expected = float(row[token] - torch.logsumexp(row[nucleus], 0))
        assert out.logprobs[step] == pytest.approx(expected, abs=1e-4)


def test_sample_tokens_draws_from_the_distribution():
    # Inverse-CDF sampling: uniforms land in the expected bins, and top-p renormalises.
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2]]))
    tokens, logp = sample_tokens(logits, torch.tensor([1.0, 1.0]), torch.tensor([1.0, 1.0]), torch.tensor([0.1, 0.7]))
    assert tokens.tolist() == [0, 1]
    assert logp.tolist() == pytest.approx([math.log(0.5), math.log(0.3)], abs=1e-6)
    tokens, logp = sample_tokens(logits[:1], torch.tensor([1.0]), torch.tensor([0.7]), torch.tensor([0.9]))
    assert tokens.tolist() == [1]  # nucleus {0, 1}: 0.9 of its mass falls on token 1
    assert logp.tolist() == pytest.approx([math.log(0.3 / 0.8)], abs=1e-6)
    tokens, logp = sample_tokens(logits[:1], torch.tensor([0.0]), torch.tensor([1.0]), torch.tensor([0.99]))
    assert tokens.tolist() == [0] and logp.tolist() == pytest.approx([math.log(0.5)], abs=1e-6)


def test_seeded_samples_do_not_depend_on_batch_companions(engine):
    tok = engine.tokenizer
    request = GenerationRequest(_ids(tok, PROMPTS[0]), 20, temperature=1.0, seed=11)
    others = [GenerationRequest(_ids(tok, p), 7, temperature=1.0, seed=i) for i, p in enumerate(PROMPTS)]
    alone = engine.generate([request])[0]
    together = engine.generate([*others, request])[-1]
    assert together.new_token_ids == alone.new_token_ids


def test_a_context_shared_by_a_group_is_encoded_once_and_samples_as_it_would_alone(engine, model_and_tokenizer):
    model, tok = model_and_tokenizer
    # A GRPO group: the same prompt G times (and a second group), each sample with its own stream.
    requests = [GenerationRequest(_ids(tok, p), 12, temperature=1.0, seed=s) for p in PROMPTS[:2] for s in range(3)]
    encoded: list[int] = []
    hook = model.register_forward_pre_hook(
        lambda _, args, kwargs: encoded.append(kwargs["input_ids"].numel()), with_kwargs=True
    )
    try:
        together = engine.generate(requests)
    finally:
        hook.remove()
    # The first forward pass is the prefill: each distinct prompt once, left-padded to the longer.
    assert encoded[0] == 2 * max(len(_ids(tok, p)) for p in PROMPTS[:2])
    for request, output in zip(requests, together, strict=True):
        alone = engine.generate([request])[0]
        assert output.new_token_ids == alone.new_token_ids
        assert output.logprobs == pytest.approx(alone.logprobs, abs=1e-5)
        assert output.prefill_tokens == len(request.token_ids)


class _Retokened:
    """The char tokenizer with another EOS id (None: no EOS, so a random model runs to its limit)."""

    def __init__(self, tokenizer, eos_token_id):
        self.eos_token_id = eos_token_id
        self.pad_token_id = tokenizer.pad_token_id
        self.encode = tokenizer.encode
        self.decode = tokenizer.decode


def test_stop_string_ends_generation_at_its_first_occurrence(model_and_tokenizer):
    model, tok = model_and_tokenizer
    engine = HFEngine(model, _Retokened(tok, None), num_threads=1)
    prompt = _ids(tok, PROMPTS[0])
    free = engine.generate([GenerationRequest(prompt, 30, temperature=1.0, seed=5)])[0]
    stop = free.text[6:9]
    # The random model also samples special tokens, which decode to nothing: find the first
    # token count whose text holds the stop string.
    end = next(k for k in range(1, 31) if stop in tok.decode(free.new_token_ids[:k], skip_special_tokens=True))
    out = engine.generate([GenerationRequest(prompt, 30, stop_strings=["never", stop], temperature=1.0, seed=5)])[0]
    assert out.finish_reason == "stop" and out.stop_string == stop
    assert out.new_token_ids == free.new_token_ids[:end]
    assert out.text.endswith(stop) and out.text.count(stop) == 1


def test_length_and_eos(model_and_tokenizer):
    model, tok = model_and_tokenizer
    request = GenerationRequest(_ids(tok, PROMPTS[2]), 10, temperature=0)
    free = HFEngine(model, _Retokened(tok, None), num_threads=1).generate([request])[0]
    assert free.finish_reason == "length" and len(free.new_token_ids) == 10

    eos = free.new_token_ids[3]
    first = free.new_token_ids.index(eos)
    out = HFEngine(model, _Retokened(tok, eos), num_threads=1).generate([request])[0]
    assert out.finish_reason == "eos"
    assert out.new_token_ids == free.new_token_ids[: first + 1]


def test_on_finish_reports_each_sequence_when_it_stops(engine):
    tok = engine.tokenizer
    lengths = [12, 3, 7]
    requests = [GenerationRequest(_ids(tok, p), n, temperature=0) for p, n in zip(PROMPTS, lengths, strict=True)]
    seen: list[tuple[int, int]] = []
    outputs = engine.generate(requests, on_finish=lambda i, out: seen.append((i, len(out.new_token_ids))))
    assert seen == [(1, 3), (2, 7), (0, 12)]
    assert [len(o.new_token_ids) for o in outputs] == lengths


def test_continuation_reuses_the_kept_cache_and_matches_a_fresh_prefill(engine):
    tok = engine.tokenizer
    first = [GenerationRequest(_ids(tok, p), 9 + i, temperature=0, cache_key=i) for i, p in enumerate(PROMPTS)]
    outs = engine.generate(first)
    assert sorted(engine.kept_keys) == [0, 1, 2]
    appended = ["\n```output\n42\n```\n", "ok", "\n```output\nError\n```\n"]
    follow = [
        GenerationRequest(list(r.token_ids) + o.new_token_ids + _ids(tok, a), 8, temperature=0, cache_key=r.cache_key)
        for r, o, a in zip(first, outs, appended, strict=True)
    ]
    # Only two of the three continue now, batched with a fresh prompt: mixed kept and new rows.
    fresh = GenerationRequest(_ids(tok, "fresh prompt"), 8, temperature=0, cache_key="fresh")
    cached = engine.generate([follow[0], fresh, follow[2]])
    reference = HFEngine(engine.model, tok, keep_cache=False, num_threads=1)
    for request, out in zip([follow[0], fresh, follow[2]], cached, strict=True):
        expected = reference.generate([request])[0]
        assert out.new_token_ids == expected.new_token_ids
        assert out.logprobs == pytest.approx(expected.logprobs, abs=1e-4)
    # The last sampled token of turn one and the appended text were all that was encoded.
    assert cached[0].prefill_tokens == 1 + len(appended[0])
    assert cached[2].prefill_tokens == 1 + len(appended[2])
    assert cached[1].prefill_tokens == len(fresh.token_ids)


def test_continuation_after_a_rewritten_tail_crops_the_cache(engine):
    # The rollout may replace the end of what was generated (a protocol inserting a newline before
    # its marker): the kept cache is cut at the common prefix.
    tok = engine.tokenizer
    prompt = _ids(tok, PROMPTS[0])
    out = engine.generate([GenerationRequest(prompt, 10, temperature=0, cache_key="k")])[0]
    context = prompt + out.new_token_ids[:6] + _ids(tok, "\n```output\n7\n```\n")
    cached = engine.generate([GenerationRequest(context, 6, temperature=0, cache_key="k")])[0]
    expected = HFEngine(engine.model, tok, keep_cache=False, num_threads=1).generate(
        [GenerationRequest(context, 6, temperature=0)]
    )[0]
    assert cached.new_token_ids == expected.new_token_ids
    assert cached.prefill_tokens == len(context) - len(prompt) - 6
    engine.release("k")
    assert "k" not in engine.kept_keys


def test_a_request_admitted_mid_call_samples_what_it_would_alone_and_finishes_first(engine):
    tok = engine.tokenizer
    long = GenerationRequest(_ids(tok, PROMPTS[0]), 60, temperature=1.0, seed=3)
    late = GenerationRequest(_ids(tok, PROMPTS[1]), 12, temperature=1.0, seed=4)
    alone = engine.generate([late])[0]
    engine.clear_cache()
    calls, finished = [], []

    def admit():
        calls.append(len(calls))
        return [late] if len(calls) == 5 else []  # joins at the fifth decode step

    outputs = engine.generate([long], on_finish=lambda i, out: finished.append(i), admit=admit)
    assert outputs[1].new_token_ids == alone.new_token_ids
    assert outputs[1].logprobs == pytest.approx(alone.logprobs, abs=1e-4)
    assert outputs[0].new_token_ids == engine.generate([long])[0].new_token_ids  # the running row is undisturbed
    assert finished == [1, 0] and len(outputs[0].new_token_ids) == 60


def test_an_admitted_continuation_reuses_its_kept_cache(engine):
    tok = engine.tokenizer
    first = GenerationRequest(_ids(tok, PROMPTS[2]), 5, temperature=1.0, seed=9, cache_key="t")
    head = engine.generate([first])[0]
    context = [*first.token_ids, *head.new_token_ids, *_ids(tok, "\n```output\n42\n```\n")]
    follow = GenerationRequest(context, 8, temperature=1.0, seed=10, cache_key="t")
    runner = GenerationRequest(_ids(tok, PROMPTS[0]), 30, temperature=1.0, seed=1)
    queue = [[follow]]
    outputs = engine.generate([runner], admit=lambda: queue.pop() if queue else [])
    assert outputs[1].prefill_tokens == len(context) - len(first.token_ids) - len(head.new_token_ids) + 1
    engine.clear_cache()
    fresh = engine.generate([follow])[0]
    assert outputs[1].new_token_ids == fresh.new_token_ids
