"""The vllm engine's parts that need neither vllm nor a GPU: request building, output mapping, the
trainer-to-engine weight-name mapping and the generation loop's scheduling (against FakeLLMEngine,
a test double of the add_request / step / has_unfinished_requests API of vLLM's LLMEngine; it is
not vLLM). The end-to-end test at the bottom runs only where vllm and CUDA are both present."""

import importlib.util
import math
from types import SimpleNamespace

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from trainer.engines import GenerationRequest
from trainer.engines.vllm import (
    EngineWeight,
    build_request,
    check_weights,
    engine_weight_names,
    finish_of,
    output_from_completion,
    run_engine,
    sampled_logprobs,
)
from trainer.models import build_tiny_model

# -- request building -----------------------------------------------------------------------------


def test_request_carries_prompt_ids_stop_strings_seed_and_budget():
    request = GenerationRequest(
        token_ids=(5, 6, 7),
        max_new_tokens=12,
        stop_strings=("```output", "</code>"),
        temperature=0.7,
        top_p=0.9,
        seed=42,
    )
    prompt, kwargs = build_request(request)
    assert prompt == {"prompt_token_ids": [5, 6, 7]}
    assert kwargs["n"] == 1
    assert kwargs["max_tokens"] == 12
    assert kwargs["seed"] == 42
    assert kwargs["stop"] == ["```output", "</code>"]
    assert kwargs["include_stop_str_in_output"] is True
    assert kwargs["temperature"] == pytest.approx(0.7)
    assert kwargs["top_p"] == pytest.approx(0.9)
    # Only the sampled token's log-prob; nothing reshapes the distribution beyond T and top-p.
    assert kwargs["logprobs"] == 0
    assert (kwargs["top_k"], kwargs["min_p"], kwargs["repetition_penalty"]) == (0, 0.0, 1.0)
    assert (kwargs["presence_penalty"], kwargs["frequency_penalty"]) == (0.0, 0.0)
    assert kwargs["skip_special_tokens"] is True


def test_greedy_request_has_temperature_zero_and_no_nucleus():
    _, kwargs = build_request(GenerationRequest([1], 3, temperature=0, top_p=0.5))
    assert kwargs["temperature"] == 0.0
    assert kwargs["top_p"] == 1.0
    _, kwargs = build_request(GenerationRequest([1], 3))
    assert kwargs["stop"] == [] and kwargs["seed"] is None


def test_prompt_ids_are_a_fresh_list():
    ids = [1, 2, 3]
    prompt, _ = build_request(GenerationRequest(ids, 1))
    assert prompt["prompt_token_ids"] == ids and prompt["prompt_token_ids"] is not ids


# -- output mapping -------------------------------------------------------------------------------


class Logprob:
    """Shaped like vllm.logprobs.Logprob (logprob, rank, decoded_token)."""

    def __init__(self, logprob, rank=1):
        self.logprob, self.rank, self.decoded_token = logprob, rank, None


def completion(token_ids, logps, finish_reason, stop_reason=None):
    """Shaped like vllm.outputs.CompletionOutput with logprobs=0: one {sampled id: Logprob} per token."""
    return SimpleNamespace(
        token_ids=token_ids,
        logprobs=[{t: Logprob(lp)} for t, lp in zip(token_ids, logps, strict=True)],
        finish_reason=finish_reason,
        stop_reason=stop_reason,
        text="(vLLM's text, not used)",
    )


@pytest.fixture(scope="module")
def tiny():
    model, tokenizer = build_tiny_model(seed=0)
    return model, tokenizer


def _decoder(tokenizer):
    return lambda ids: tokenizer.decode(ids, skip_special_tokens=True)


def test_stop_string_output_keeps_the_completing_token_and_its_text(tiny):
    _, tok = tiny
    # Character tokens: the last one completes "```output" and the stop string ends the text.
    ids = tok.encode("x=1\n```output", add_special_tokens=False)
    out = output_from_completion(
        completion(ids, [-0.1 * (i + 1) for i in range(len(ids))], "stop", "```output"),
        decode=_decoder(tok),
        prefill_tokens=7,
    )
    assert out.finish_reason == "stop" and out.stop_string == "```output"
    assert out.new_token_ids == ids
    assert out.text == "x=1\n```output" and out.text.endswith(out.stop_string)
    assert out.logprobs == pytest.approx([-0.1 * (i + 1) for i in range(len(ids))])
    assert out.prefill_tokens == 7


def test_text_is_decoded_from_the_ids_even_past_the_stop_string():
    # A multi-character token can run past the stop string; vLLM cuts its text there, the contract
    # (and the rollout's text/ids bookkeeping) wants the decoded ids.
    pieces = {10: "ab", 11: "c</code>xy"}
    out = output_from_completion(
        completion([10, 11], [-1.0, -2.0], "stop", "</code>"),
        decode=lambda ids: "".join(pieces[i] for i in ids),
    )
    assert out.text == "abc</code>xy"
    assert out.finish_reason == "stop" and out.stop_string == "</code>"


def test_eos_and_stop_token_ids_end_as_eos(tiny):
    _, tok = tiny
    ids = tok.encode("42", add_special_tokens=False) + [tok.eos_token_id]
    out = output_from_completion(completion(ids, [-0.5, -0.25, -0.125], "stop", None), decode=_decoder(tok))
    assert out.finish_reason == "eos" and out.stop_string is None
    assert out.new_token_ids[-1] == tok.eos_token_id
    assert out.text == "42"  # the EOS token is special: not in the text
    assert out.logprobs == pytest.approx([-0.5, -0.25, -0.125])
    # A stop token id from the model's generation config (e.g. <|im_end|>) is an EOS too.
    assert finish_of("stop", 151645) == ("eos", None)


def test_length_and_odd_endings():
    out = output_from_completion(completion([3, 4], [-1.0, -1.5], "length"), decode=lambda ids: "..")
    assert out.finish_reason == "length" and out.stop_string is None
    # A stop string completed by the very last allowed token still counts as the stop string.
    assert finish_of("length", "```output") == ("stop", "```output")
    with pytest.raises(RuntimeError, match="abort"):
        finish_of("abort", None)


def test_logprob_extraction_is_aligned_and_strict():
    # Positions may carry more than the sampled token (a top-k entry merged in): take the sampled one.
    logprobs = [{7: Logprob(-0.3), 9: Logprob(-1.2)}, {9: Logprob(-0.05)}]
    assert sampled_logprobs([7, 9], logprobs) == pytest.approx([-0.3, -0.05])
    with pytest.raises(RuntimeError, match="no logprobs"):
        sampled_logprobs([7], None)
    with pytest.raises(RuntimeError, match="positions"):
        sampled_logprobs([7, 9], logprobs[:1])
    with pytest.raises(RuntimeError, match="sampled token 8"):
        sampled_logprobs([8, 9], logprobs)


# -- weight names ---------------------------------------------------------------------------------


def vllm_decoder_parameter_names(layers: int, *, tied: bool, qkv_bias: bool) -> set[str]:
    """The parameter names of vLLM's LlamaForCausalLM / Qwen2ForCausalLM for `layers` layers, as
    their module tree (vllm/model_executor/models/llama.py, qwen2.py at 0.30.0) names them: fused
    qkv_proj and gate_up_proj; no lm_head parameter of its own when the embeddings are tied."""
    names = {"model.embed_tokens.weight", "model.norm.weight"}
    for i in range(layers):
        p = f"model.layers.{i}."
        names |= {
            p + "self_attn.qkv_proj.weight",
            p + "self_attn.o_proj.weight",
            p + "mlp.gate_up_proj.weight",
            p + "mlp.down_proj.weight",
            p + "input_layernorm.weight",
            p + "post_attention_layernorm.weight",
        }
        if qkv_bias:
            names.add(p + "self_attn.qkv_proj.bias")
    if not tied:
        names.add("lm_head.weight")
    return names


def _trainer_names(model: torch.nn.Module) -> list[str]:
    # What the trainer pushes: its state dict (tied lm_head included, as state_dict lists it).
    return list(model.state_dict())


def test_tiny_model_weights_all_map_and_the_tied_head_is_skipped(tiny):
    model, _ = tiny
    assert model.config.tie_word_embeddings
    names = _trainer_names(model) + ["model.rotary_emb.inv_freq"]
    mapping = check_weights(
        names,
        vllm_decoder_parameter_names(model.config.num_hidden_layers, tied=True, qkv_bias=False),
        tie_word_embeddings=True,
    )
    assert set(mapping) == set(names)
    assert mapping["lm_head.weight"] is None
    assert mapping["model.rotary_emb.inv_freq"] is None
    assert mapping["model.layers.0.self_attn.q_proj.weight"] == EngineWeight(
        "model.layers.0.self_attn.qkv_proj.weight", "q"
    )
    assert mapping["model.layers.0.self_attn.k_proj.weight"] == EngineWeight(
        "model.layers.0.self_attn.qkv_proj.weight", "k"
    )
    assert mapping["model.layers.3.self_attn.v_proj.weight"] == EngineWeight(
        "model.layers.3.self_attn.qkv_proj.weight", "v"
    )
    assert mapping["model.layers.1.mlp.gate_proj.weight"] == EngineWeight("model.layers.1.mlp.gate_up_proj.weight", 0)
    assert mapping["model.layers.1.mlp.up_proj.weight"] == EngineWeight("model.layers.1.mlp.gate_up_proj.weight", 1)
    assert mapping["model.layers.2.mlp.down_proj.weight"] == EngineWeight("model.layers.2.mlp.down_proj.weight")
    assert mapping["model.embed_tokens.weight"] == EngineWeight("model.embed_tokens.weight")
    # Every engine parameter receives something: q, k, v fill qkv_proj; gate, up fill gate_up_proj.
    targets = {t.name for t in mapping.values() if t is not None}
    assert targets == vllm_decoder_parameter_names(model.config.num_hidden_layers, tied=True, qkv_bias=False)


def test_untied_llama_keeps_its_head():
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=False,
    )
    names = _trainer_names(LlamaForCausalLM(config))
    engine = vllm_decoder_parameter_names(2, tied=False, qkv_bias=False)
    mapping = check_weights(names, engine, tie_word_embeddings=False)
    assert mapping["lm_head.weight"] == EngineWeight("lm_head.weight")
    assert {t.name for t in mapping.values() if t is not None} == engine
    # With tied embeddings the same head would have no engine parameter to go to.
    with pytest.raises(ValueError, match="lm_head.weight"):
        check_weights(names, vllm_decoder_parameter_names(2, tied=True, qkv_bias=False), tie_word_embeddings=False)


def test_qwen2_biases_go_to_the_qkv_shards():
    config = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    )
    names = _trainer_names(Qwen2ForCausalLM(config))
    engine = vllm_decoder_parameter_names(2, tied=True, qkv_bias=True)
    mapping = check_weights(names, engine, tie_word_embeddings=True)
    assert mapping["model.layers.1.self_attn.k_proj.bias"] == EngineWeight(
        "model.layers.1.self_attn.qkv_proj.bias", "k"
    )
    assert {t.name for t in mapping.values() if t is not None} == engine


def test_unknown_weights_fail_before_anything_is_pushed():
    names = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_norm.weight", "score.weight"]
    with pytest.raises(ValueError, match="2 trainer weight") as caught:
        check_weights(names, {"model.embed_tokens.weight"}, tie_word_embeddings=True)
    assert "score.weight" in str(caught.value) and "q_norm" in str(caught.value)
    assert engine_weight_names([], tie_word_embeddings=False) == {}


# -- the generation loop, against a test double of vLLM's LLMEngine API ---------------------------


class FakeLLMEngine:
    """A test double of vllm.v1.engine.llm_engine.LLMEngine's add_request / step /
    has_unfinished_requests / abort_request (NOT vLLM): every step, each running request gains one
    token (its own prompt length + step count), and a request is finished, reported once with
    FINAL_ONLY semantics, when it has `max_tokens` tokens. `log` records what happened, in order."""

    def __init__(self):
        self.running: dict[str, dict] = {}
        self.log: list[tuple] = []
        self.steps = 0
        self.aborted: list[str] = []

    def add_request(self, request_id, prompt, params):
        assert request_id not in self.running
        self.running[request_id] = {"prompt": prompt["prompt_token_ids"], "params": params, "ids": []}
        self.log.append(("add", request_id, self.steps))

    def has_unfinished_requests(self):
        return bool(self.running)

    def abort_request(self, request_ids, internal=False):
        for request_id in request_ids:
            self.running.pop(request_id, None)
        self.aborted += request_ids

    def step(self):
        self.steps += 1
        outputs = []
        for request_id, state in list(self.running.items()):
            state["ids"].append(len(state["prompt"]) * 100 + len(state["ids"]))
            done = len(state["ids"]) >= state["params"]["max_tokens"]
            outputs.append(
                SimpleNamespace(
                    request_id=request_id,
                    finished=done,
                    num_cached_tokens=0,
                    outputs=[completion(list(state["ids"]), [-1.0] * len(state["ids"]), "length")] if done else [],
                )
            )
            if done:
                del self.running[request_id]
                self.log.append(("finish", request_id, self.steps))
        return outputs


def _to_output(request_output, request):
    return output_from_completion(
        request_output.outputs[0], decode=lambda ids: "", prefill_tokens=len(request.token_ids)
    )


def _run(engine, requests, ids=None, **kwargs):
    return run_engine(
        engine,
        requests,
        make_params=dict,
        to_output=_to_output,
        request_ids=iter(ids or (f"r{n}" for n in range(100))),
        **kwargs,
    )


def test_outputs_in_request_order_and_on_finish_as_each_finishes():
    engine = FakeLLMEngine()
    finished = []
    requests = [GenerationRequest([1] * 3, 4), GenerationRequest([1] * 2, 1), GenerationRequest([1], 2)]
    outputs = _run(engine, requests, on_finish=lambda i, out: finished.append((i, engine.steps)))
    assert finished == [(1, 1), (2, 2), (0, 4)]
    assert [o.new_token_ids for o in outputs] == [[300, 301, 302, 303], [200], [100, 101]]
    assert [o.prefill_tokens for o in outputs] == [3, 2, 1]
    assert all(o.finish_reason == "length" for o in outputs)


def test_admitted_requests_join_the_running_batch_and_take_later_indices():
    engine = FakeLLMEngine()
    queue = [[], [GenerationRequest([1] * 5, 1)], [], [GenerationRequest([1] * 6, 1), GenerationRequest([1] * 7, 2)]]
    calls = []

    def admit():
        calls.append(engine.steps)
        return queue.pop(0) if queue else []

    finished = []
    outputs = _run(
        engine,
        [GenerationRequest([1], 6), GenerationRequest([1] * 2, 2)],
        on_finish=lambda i, out: finished.append(i),
        admit=admit,
    )
    # admit runs before every step while requests are running, so joiners enter mid-call.
    assert calls == [0, 1, 2, 3, 4, 5]
    added = [(rid, step) for kind, rid, step in engine.log if kind == "add"]
    assert added == [("r0", 0), ("r1", 0), ("r2", 1), ("r3", 3), ("r4", 3)]
    assert len(outputs) == 5
    assert [o.new_token_ids[0] // 100 for o in outputs] == [1, 2, 5, 6, 7]
    assert finished == [1, 2, 3, 4, 0]


def test_request_ids_never_repeat_across_calls():
    engine = FakeLLMEngine()
    ids = (f"tirlab-{n}" for n in range(100))
    _run(engine, [GenerationRequest([1], 1)], ids=ids)
    _run(engine, [GenerationRequest([1], 1), GenerationRequest([2], 1)], ids=ids)
    assert [rid for kind, rid, _ in engine.log if kind == "add"] == ["tirlab-0", "tirlab-1", "tirlab-2"]


def test_a_failing_callback_leaves_no_request_behind():
    engine = FakeLLMEngine()

    def boom(index, output):
        raise KeyError("callback failed")

    with pytest.raises(KeyError):
        _run(engine, [GenerationRequest([1], 1), GenerationRequest([1], 5)], on_finish=boom)
    assert not engine.running and engine.aborted == ["r1"]


def test_invalid_requests_are_refused_before_the_engine_sees_them():
    engine = FakeLLMEngine()
    with pytest.raises(ValueError, match="at least one context token"):
        _run(engine, [GenerationRequest([], 3)])
    with pytest.raises(ValueError, match="max_new_tokens"):
        _run(engine, [GenerationRequest([1], 0)])
    assert engine.log == []
    assert _run(engine, []) == []


# -- the trainer's engine selection ----------------------------------------------------------------


@pytest.mark.parametrize(
    "has_vllm,has_gpu,says",
    [
        (False, False, ["vllm package is not installed", "no CUDA GPU"]),
        (True, False, ["no CUDA GPU"]),
        (False, True, ["vllm package is not installed"]),
    ],
)
def test_trainer_says_which_vllm_requirement_is_missing(monkeypatch, has_vllm, has_gpu, says):
    from trainer.config import RunConfig
    from trainer.loop import setup

    find_spec = setup.importlib.util.find_spec
    monkeypatch.setattr(
        setup.importlib.util,
        "find_spec",
        lambda name, *a: (object() if has_vllm else None) if name == "vllm" else find_spec(name, *a),
    )
    monkeypatch.setattr(setup.torch.cuda, "is_available", lambda: has_gpu)
    with pytest.raises(ValueError, match="vLLM engine needs a GPU") as caught:
        setup.check_vllm_available(
            RunConfig.model_validate({"engine": "vllm", "model": {"name_or_path": "some/model"}})
        )
    for text in says:
        assert text in str(caught.value)
    if has_vllm:
        assert "not installed" not in str(caught.value)
    if has_gpu:
        assert "no CUDA GPU" not in str(caught.value)


def test_trainer_refuses_vllm_with_the_tiny_model_or_ray_rollouts(monkeypatch):
    from trainer.config import TINY_MODEL, RunConfig
    from trainer.loop import setup

    monkeypatch.setattr(setup.importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.setattr(setup.torch.cuda, "is_available", lambda: True)
    with pytest.raises(ValueError, match="character tokenizer"):
        setup.check_vllm_available(RunConfig.model_validate({"engine": "vllm", "model": {"name_or_path": TINY_MODEL}}))
    ray = {"engine": "vllm", "model": {"name_or_path": "some/model"}, "rollout": {"backend": "ray"}}
    with pytest.raises(ValueError, match="backend 'local'"):
        setup.check_vllm_available(RunConfig.model_validate(ray))
    setup.check_vllm_available(RunConfig.model_validate({"engine": "vllm", "model": {"name_or_path": "some/model"}}))


# -- end to end, where vllm and a GPU exist -------------------------------------------------------

HAS_VLLM_AND_GPU = importlib.util.find_spec("vllm") is not None and torch.cuda.is_available()


def _byte_level_model_dir(path, seed=0):
    """A tiny random Llama with a byte-level BPE tokenizer (no merges) that vLLM's AutoTokenizer can
    load, saved to `path`: the project's CharTokenizer is not one vLLM knows."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {"<|pad|>": 0, "<|bos|>": 1, "<|eos|>": 2} | {ch: i + 3 for i, ch in enumerate(alphabet)}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<|pad|>", bos_token="<|bos|>", eos_token="<|eos|>"
    )
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return model, tokenizer


@pytest.mark.skipif(not HAS_VLLM_AND_GPU, reason="needs vllm (requirements-gpu.txt) and a CUDA GPU")
def test_vllm_engine_end_to_end_on_a_gpu(tmp_path):
    from trainer.engines.vllm import VLLMEngine

    model, tokenizer = _byte_level_model_dir(tmp_path / "model")
    engine = VLLMEngine(tmp_path / "model", tokenizer, dtype="float32", max_model_len=256, enforce_eager=True)
    engine.load_weights(model.state_dict().items())
    prompt = tokenizer.encode("What is 3+4?\nassistant: ", add_special_tokens=False)

    def forward_logits(m, ids):
        with torch.inference_mode():
            return m(input_ids=torch.tensor([ids])).logits[0].float()

    # Greedy: the argmax of the model's own forward pass at every position.
    out = engine.generate([GenerationRequest(prompt, 16, temperature=0)])[0]
    logits = forward_logits(model, prompt + out.new_token_ids)
    positions = range(len(prompt) - 1, len(prompt) - 1 + len(out.new_token_ids))
    assert out.new_token_ids == [int(logits[p].argmax()) for p in positions]
    assert out.text == tokenizer.decode(out.new_token_ids, skip_special_tokens=True)

    # Sampled: log-probs under softmax(logits / T) renormalised over the top-p nucleus.
    temperature, top_p = 0.8, 0.9
    out = engine.generate([GenerationRequest(prompt, 20, temperature=temperature, top_p=top_p, seed=3)])[0]
    assert len(out.logprobs) == len(out.new_token_ids)
    logp = torch.log_softmax(forward_logits(model, prompt + out.new_token_ids) / temperature, dim=-1)
    for step, token in enumerate(out.new_token_ids):
        row = logp[len(prompt) - 1 + step]
        sorted_logp, order = row.sort(descending=True)
        probs = sorted_logp.exp()
        nucleus = order[(probs.cumsum(0) - probs) < top_p]
        assert math.isclose(out.logprobs[step], float(row[token] - torch.logsumexp(row[nucleus], 0)), abs_tol=2e-3)

    # A stop string ends the sequence; the completing token is kept.
    text = tokenizer.decode(out.new_token_ids[:6], skip_special_tokens=True)
    stop = text[-2:]
    seeded = GenerationRequest(prompt, 20, temperature=temperature, top_p=top_p, seed=3, stop_strings=(stop,))
    stopped = engine.generate([seeded])[0]
    assert stopped.finish_reason == "stop" and stopped.stop_string == stop
    assert stopped.text.find(stop) >= 0 and len(stopped.new_token_ids) <= 6

    # Continuous batching: a request admitted mid-call is generated within the same call.
    pending = [[GenerationRequest(prompt, 4, temperature=0)]]
    outs = engine.generate(
        [GenerationRequest(prompt, 12, temperature=0)], admit=lambda: pending.pop() if pending else []
    )
    assert len(outs) == 2 and len(outs[1].new_token_ids) == 4

    # Weight sync: after a change pushed to the engine, greedy decoding follows the new weights.
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.5)
    engine.load_weights(model.state_dict().items())
    engine.clear_cache()
    out = engine.generate([GenerationRequest(prompt, 8, temperature=0)])[0]
    logits = forward_logits(model, prompt + out.new_token_ids)
    positions = range(len(prompt) - 1, len(prompt) - 1 + len(out.new_token_ids))
    assert out.new_token_ids == [int(logits[p].argmax()) for p in positions]
