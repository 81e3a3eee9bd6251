"""Engine `vllm`: rollouts on vLLM, colocated in the trainer's process, on a GPU.

NOT YET RUN ON A GPU. No GPU machine was available when this was written: the request building,
output mapping, weight-name mapping and the generation loop's scheduling are unit-tested
(tests/trainer/test_vllm_engine.py, against a test double of vLLM's engine API); the end-to-end
test there runs only where vllm and CUDA are present.

Pinned to vllm==0.30.0 (requirements-gpu.txt); every vLLM API used here was read in that release's
source (the wheel's vllm/...):

- Logprobs of the sampling distribution. vLLM returns raw log-probs (before temperature and top-p)
  unless the engine is built with `logprobs_mode="processed_logprobs"` (vllm/config/model.py:
  "Processed means the values after applying all processors, including temperature and
  top_k/top_p"). The V1 sampler (vllm/v1/sample/sampler.py, Sampler.sample) then returns
  log_softmax of the temperature-scaled, top-p-masked logits (vllm/v1/sample/ops/
  topk_topp_sampler.py, forward_native; FlashInfer is not used in that mode), i.e. the sampled
  token's log-prob renormalised over the nucleus, as the contract in engines/base.py asks. Greedy
  rows (temperature 0) get the untempered model log-prob, as in the hf engine.
- The loop drives `LLM.llm_engine` (vllm/v1/engine/llm_engine.py) the way `LLM._run_engine` does
  (vllm/entrypoints/offline_utils.py): `add_request(request_id, prompt, params)`, then `step()`
  while `has_unfinished_requests()`, with `RequestOutputKind.FINAL_ONLY` as `LLM._add_request` sets.
  The prompt is a TokensPrompt dict; the engine's input processor renders it exactly as
  `LLM._preprocess_cmpl` would (vllm/v1/engine/input_processor.py, with a deprecation notice).
  Between steps it calls `admit()`; the requests returned are added to the engine and the
  scheduler puts them into the running batch at its next step (continuous batching).
- Colocation: `VLLM_ENABLE_V1_MULTIPROCESSING=0` makes LLMEngine use the in-process engine core
  (InprocClient, vllm/v1/engine/core_client.py) and the uni-process executor, whose
  `collective_rpc` calls the worker directly (vllm/v1/executor/uniproc_executor.py). So
  `LLM.apply_model(fn)` runs `fn(model)` in this process on the live model, and the trainer's
  tensors reach it without serialisation.
- Weight sync: `model.load_weights(iterable of (HF name, tensor))` of vLLM's Llama/Qwen2 classes
  (vllm/model_executor/models/llama.py: AutoWeightsLoader with hf_to_vllm_mapper, which stacks
  q/k/v_proj into qkv_proj and gate/up_proj into gate_up_proj), as verl and OpenRLHF do for a
  colocated engine; then `LLM.reset_prefix_cache()`, because cached KV blocks were computed with the
  old weights. `engine_weight_names` mirrors that mapping so that a weight the engine would not
  know fails loudly before anything is pushed.
- Prefix caching (`enable_prefix_caching=True`) replaces the hf engine's kept KV caches: a turn that
  continues after a tool output shares its prompt and earlier turns with the previous call, and
  vLLM finds those blocks by hash. `release()` therefore has nothing to free.

Stop strings use vLLM's own detokenizer check (`stop`, `include_stop_str_in_output=True`), so the
model's tokenizer must be one vLLM can load (any Hugging Face tokenizer; not the tiny quickstart
model's CharTokenizer). The output's text is decoded from the token ids with the trainer's
tokenizer, as the hf engine does, so that text and ids agree (vLLM's text stops at the end of the
stop string even when the last token runs past it).
"""

from __future__ import annotations

import itertools
import os
import threading
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.engines.base import FinishReason, GenerationOutput, GenerationRequest, Tokenizer, check_requests

VLLM_VERSION = "0.30.0"

# Engine arguments the contract depends on (see the module docstring).
ENGINE_ARGS: dict[str, Any] = {
    "logprobs_mode": "processed_logprobs",
    "enable_prefix_caching": True,
    # No sampling defaults from the model's generation_config (each request sets all of them anyway;
    # its stop token ids still apply and end a sequence as "eos").
    "generation_config": "vllm",
}

# HF parameter-name fragments that vLLM's Llama/Qwen2 classes load into one stacked parameter,
# with the shard id their weight loader takes (vllm/model_executor/models/llama.py).
STACKED_PARAMS: tuple[tuple[str, str, str | int], ...] = (
    (".q_proj.", ".qkv_proj.", "q"),
    (".k_proj.", ".qkv_proj.", "k"),
    (".v_proj.", ".qkv_proj.", "v"),
    (".gate_proj.", ".gate_up_proj.", 0),
    (".up_proj.", ".gate_up_proj.", 1),
)


@dataclass(frozen=True)
class EngineWeight:
    """Where one trainer weight goes in the engine: a parameter name, and the shard of it that the
    weight fills (None when the weight is the whole parameter)."""

    name: str
    shard: str | int | None = None


# -- requests and outputs (pure: no vllm needed) --------------------------------------------------


def build_request(request: GenerationRequest) -> tuple[dict[str, list[int]], dict[str, Any]]:
    """The vLLM prompt (a TokensPrompt) and SamplingParams keyword arguments for one request."""
    greedy = request.temperature <= 0
    kwargs: dict[str, Any] = {
        "n": 1,
        "temperature": 0.0 if greedy else float(request.temperature),
        # The sampling distribution is softmax(logits / T) on the top-p nucleus, nothing else.
        "top_p": 1.0 if greedy else float(request.top_p),
        "top_k": 0,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "max_tokens": int(request.max_new_tokens),
        "seed": request.seed,
        "stop": list(request.stop_strings),
        # The token that completes a stop string is part of the output, as in the hf engine.
        "include_stop_str_in_output": True,
        # 0: no alternatives, only the sampled token's log-prob.
        "logprobs": 0,
        # Stop strings are matched on text without special tokens, as the hf engine does.
        "skip_special_tokens": True,
        "detokenize": True,
    }
    return {"prompt_token_ids": list(request.token_ids)}, kwargs


def sampled_logprobs(token_ids: Sequence[int], logprobs: Sequence[Mapping[int, Any]] | None) -> list[float]:
    """The log-prob of each sampled token from vLLM's per-position {token_id: Logprob} dicts."""
    if logprobs is None:
        raise RuntimeError("vLLM returned no logprobs; the request must ask for logprobs=0")
    if len(logprobs) != len(token_ids):
        raise RuntimeError(f"vLLM returned {len(logprobs)} logprob positions for {len(token_ids)} tokens")
    values = []
    for position, (token, candidates) in enumerate(zip(token_ids, logprobs, strict=True)):
        if not candidates or token not in candidates:
            raise RuntimeError(f"vLLM returned no logprob for sampled token {token} at position {position}")
        entry = candidates[token]
        values.append(float(getattr(entry, "logprob", entry)))
    return values


def finish_of(finish_reason: str | None, stop_reason: str | int | None) -> tuple[FinishReason, str | None]:
    """vLLM's finish_reason / stop_reason as the contract's finish_reason and stop_string.

    vLLM says "stop" for a stop string (stop_reason is the string), for EOS (stop_reason None) and
    for a stop token id from the model's generation config (stop_reason is that id, an EOS of the
    chat format such as <|im_end|>); "length" for max_tokens or the model's context length.
    """
    if isinstance(stop_reason, str) and finish_reason in ("stop", "length"):
        return "stop", stop_reason
    if finish_reason == "stop":
        return "eos", None
    if finish_reason == "length":
        return "length", None
    raise RuntimeError(f"vLLM ended a request with finish_reason {finish_reason!r} ({stop_reason!r})")


def output_from_completion(
    completion: Any, *, decode: Callable[[list[int]], str], prefill_tokens: int = 0
) -> GenerationOutput:
    """A vLLM CompletionOutput (token_ids, logprobs, finish_reason, stop_reason) as a GenerationOutput.

    The text is `decode(token_ids)` (the trainer's tokenizer, skipping special tokens), not vLLM's
    text, which is cut at the end of the stop string even when the last token runs past it."""
    token_ids = [int(t) for t in completion.token_ids]
    finish_reason, stop_string = finish_of(completion.finish_reason, completion.stop_reason)
    return GenerationOutput(
        new_token_ids=token_ids,
        text=decode(token_ids),
        logprobs=sampled_logprobs(token_ids, completion.logprobs),
        finish_reason=finish_reason,
        stop_string=stop_string,
        prefill_tokens=prefill_tokens,
    )


# -- weight names (pure) ------------------------------------------------------------------------


def engine_weight_names(hf_names: Iterable[str], *, tie_word_embeddings: bool) -> dict[str, EngineWeight | None]:
    """Map trainer (transformers) parameter names of a Llama/Qwen2-family model to the parameters of
    vLLM's model: q/k/v_proj -> qkv_proj shards "q", "k", "v"; gate/up_proj -> gate_up_proj shards
    0, 1; everything else by its own name. None marks a weight deliberately not pushed: rotary
    inv_freq (computed, not learned) and lm_head.weight when the embeddings are tied (vLLM's lm_head
    is then the embedding itself)."""
    mapping: dict[str, EngineWeight | None] = {}
    for name in hf_names:
        if "rotary_emb.inv_freq" in name or (tie_word_embeddings and name == "lm_head.weight"):
            mapping[name] = None
            continue
        for hf_part, engine_part, shard in STACKED_PARAMS:
            if hf_part in name:
                mapping[name] = EngineWeight(name.replace(hf_part, engine_part), shard)
                break
        else:
            mapping[name] = EngineWeight(name)
    return mapping


def check_weights(
    hf_names: Iterable[str], engine_names: Iterable[str], *, tie_word_embeddings: bool
) -> dict[str, EngineWeight | None]:
    """The mapping of `engine_weight_names`, after checking that every weight maps to a parameter
    the engine's model has; raises ValueError naming those that do not."""
    mapping = engine_weight_names(hf_names, tie_word_embeddings=tie_word_embeddings)
    known = set(engine_names)
    unknown = [f"{name} -> {target.name}" for name, target in mapping.items() if target and target.name not in known]
    if unknown:
        raise ValueError(
            f"the vLLM engine's model has no parameter for {len(unknown)} trainer weight(s): "
            + ", ".join(unknown[:10])
            + (" ..." if len(unknown) > 10 else "")
        )
    return mapping


# -- the generation loop --------------------------------------------------------------------------


def run_engine(
    engine: Any,
    requests: Sequence[GenerationRequest],
    *,
    make_params: Callable[[dict[str, Any]], Any],
    to_output: Callable[[Any, GenerationRequest], GenerationOutput],
    request_ids: Iterable[str],
    on_finish: Callable[[int, GenerationOutput], None] | None = None,
    admit: Callable[[], Sequence[GenerationRequest]] | None = None,
) -> list[GenerationOutput]:
    """Drive a vLLM LLMEngine-like object (add_request / step / has_unfinished_requests /
    abort_request) step by step, as LLM._run_engine does, over `requests` and whatever `admit`
    returns between steps. `to_output(request_output, request)` maps a finished RequestOutput;
    `request_ids` yields ids unique over the engine's lifetime."""
    requests = list(requests)
    check_requests(requests)
    outputs: list[GenerationOutput | None] = [None] * len(requests)
    running: dict[str, int] = {}  # request id -> index

    def add(index: int, request: GenerationRequest) -> None:
        prompt, kwargs = build_request(request)
        request_id = next(iter_ids)
        running[request_id] = index
        engine.add_request(request_id, prompt, make_params(kwargs))

    iter_ids = iter(request_ids)
    try:
        for index, request in enumerate(requests):
            add(index, request)
        while engine.has_unfinished_requests():
            joining = list(admit()) if admit is not None else []
            if joining:
                check_requests(joining)
                for request in joining:
                    requests.append(request)
                    outputs.append(None)
                    add(len(requests) - 1, request)
            for step_output in engine.step():
                if not step_output.finished:
                    continue
                index = running.pop(step_output.request_id, None)
                if index is None:
                    continue  # not one of this call's requests
                output = to_output(step_output, requests[index])
                outputs[index] = output
                if on_finish is not None:
                    on_finish(index, output)
    finally:
        if running:
            # An exception (or a caller's on_finish raising) must not leave requests in the engine.
            engine.abort_request(list(running))
    missing = [i for i, o in enumerate(outputs) if o is None]
    if missing:
        raise RuntimeError(f"vLLM finished without an output for request(s) {missing}")
    return [o for o in outputs if o is not None]


class VLLMEngine:
    """The Engine protocol on vLLM (see the module docstring). Needs vllm and a CUDA GPU."""

    def __init__(
        self,
        model: str | Path,
        tokenizer: Tokenizer,
        *,
        dtype: str = "auto",
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.4,
        seed: int = 0,
        enforce_eager: bool = False,
        **engine_args: Any,
    ) -> None:
        """`model`: a directory or hub id vLLM loads (its config and tokenizer; the weights are
        replaced by `load_weights`). `gpu_memory_utilization` is the share of the GPU this engine
        takes for weights and KV cache; the trainer's policy, optimizer and activations need the
        rest."""
        # In-process engine core and executor: the colocated model is reachable from this process.
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        import vllm
        from vllm.sampling_params import RequestOutputKind

        if vllm.__version__ != VLLM_VERSION:
            # Not fatal: the APIs may still match. The loop and weight sync were written for 0.30.0.
            warnings.warn(
                f"vllm {vllm.__version__} is installed; the vllm engine was written for {VLLM_VERSION}", stacklevel=2
            )
        self._sampling_params = vllm.SamplingParams
        self._final_only = RequestOutputKind.FINAL_ONLY
        self.tokenizer = tokenizer
        self.llm = vllm.LLM(
            model=str(model),
            dtype=dtype,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            seed=seed,
            enforce_eager=enforce_eager,
            **{**ENGINE_ARGS, **engine_args},
        )
        hf_config = self.llm.llm_engine.model_config.hf_config
        self.tie_word_embeddings = bool(getattr(hf_config, "tie_word_embeddings", False))
        self.engine_parameter_names: list[str] = self.llm.apply_model(
            lambda m: [name for name, _ in m.named_parameters()]
        )[0]
        self._ids = (f"tirlab-{n}" for n in itertools.count())
        # generate() runs on the rollout's worker thread; load_weights on the trainer's.
        self._lock = threading.Lock()
        self.released = 0

    def _params(self, kwargs: dict[str, Any]) -> Any:
        return self._sampling_params(**kwargs, output_kind=self._final_only)

    def _output(self, request_output: Any, request: GenerationRequest) -> GenerationOutput:
        cached = getattr(request_output, "num_cached_tokens", None) or 0
        return output_from_completion(
            request_output.outputs[0],
            decode=lambda ids: self.tokenizer.decode(ids, skip_special_tokens=True),
            prefill_tokens=max(0, len(request.token_ids) - cached),
        )

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        on_finish: Callable[[int, GenerationOutput], None] | None = None,
        admit: Callable[[], Sequence[GenerationRequest]] | None = None,
    ) -> list[GenerationOutput]:
        if not requests:
            check_requests(requests)
            return []
        with self._lock:
            return run_engine(
                self.llm.llm_engine,
                requests,
                make_params=self._params,
                to_output=self._output,
                request_ids=self._ids,
                on_finish=on_finish,
                admit=admit,
            )

    def release(self, cache_key: Hashable) -> None:
        """Nothing to free: vLLM's prefix cache keeps (and evicts) the blocks of every context."""
        self.released += 1

    def clear_cache(self) -> None:
        """Forget cached KV blocks (after the weights change)."""
        with self._lock:
            self.llm.reset_prefix_cache()

    def load_weights(self, named_tensors: Iterable[tuple[str, Any]]) -> None:
        """Push the trainer policy's weights (HF names) into the engine's model, after checking that
        each has a home there, then drop the prefix cache computed with the old weights."""
        weights = [(name, tensor.detach()) for name, tensor in named_tensors]
        mapping = check_weights(
            [name for name, _ in weights], self.engine_parameter_names, tie_word_embeddings=self.tie_word_embeddings
        )
        pushed = [(name, tensor) for name, tensor in weights if mapping[name] is not None]
        with self._lock:
            self.llm.apply_model(lambda model: model.load_weights(iter(pushed)))
            self.llm.reset_prefix_cache()
