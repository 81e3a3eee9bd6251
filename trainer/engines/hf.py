"""Engine `hf`: batched sampling from a transformers causal LM with its KV cache, in our own loop.

One call prefills every distinct context once (a GRPO group's requests share their prompt), then
decodes one token per step for the whole batch, sampling each row with its own temperature, top-p
and random stream, until each row meets a stop string, EOS or its max_new_tokens. Our own loop
rather than `model.generate` because the trainer needs per-sequence stop strings, the
log-probability of every sampled token under the sampling distribution (PPO's old log-probs), a
callback the moment one sequence finishes, and KV caches that outlive the call.

Continuation after a tool output: with `keep_cache` (the default) the engine keeps, per
`cache_key`, the keys and values of every token it has encoded for that trajectory. The next call
for the same key encodes only what follows the longest common prefix of the kept tokens and the
new context (normally the last sampled token plus the appended tool output), so the prompt and
earlier turns are never re-encoded. Kept caches are valid for the current weights only: callers
`release` a trajectory when it ends and `clear_cache` after an optimizer step. Models whose cache
is not plain full attention (sliding-window or recurrent layers) re-prefill the whole context.

Batch layout: each row is [left pad | kept part | pad | new part], one 2-D attention mask with
zeros on the pads and explicit position ids, so rows with different kept and new lengths share
one forward pass. A finished row stays in the batch, fed a masked pad token, until half the rows
are finished; only then is the batch compacted, because compacting copies the whole cache.

Continuous batching: with `admit`, requests that become ready while a call runs (a trajectory
whose tool output just came back) join it at the next decode step. They are prefilled on their
own, then their cache and mask are left-padded to the running batch's length (or the batch's to
theirs) and stacked under it; explicit positions make the padding invisible to the model.
"""

import random
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

from trainer.engines.base import FinishReason, GenerationOutput, GenerationRequest, Tokenizer, check_requests
from trainer.engines.kv_cache import growing

# Tokens decoded from the end of a sequence when looking for a stop string, beyond the stop
# string's length in characters: a token is at least one character, except for byte-fallback
# pieces of a multi-byte character, which this margin covers.
_STOP_WINDOW_MARGIN = 4


@dataclass
class _Kept:
    """The KV cache of one trajectory: `layers[l]` holds keys and values of shape
    [1, heads, len(token_ids), head_dim] for exactly `token_ids`."""

    token_ids: list[int]
    layers: list[tuple[torch.Tensor, torch.Tensor]]


def _full_attention(model: torch.nn.Module) -> bool:
    """Whether the model's cache is one growing full-attention layer per decoder layer, the only
    kind whose rows can be sliced out and re-assembled into another batch."""
    cache = DynamicCache(config=model.config)
    return bool(cache.layers) and all(type(layer) is DynamicLayer for layer in cache.layers)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _stream(request: GenerationRequest) -> random.Random:
    """The request's own random stream: its seed, else one drawn from torch's generator."""
    return random.Random(request.seed if request.seed is not None else int(torch.randint(0, 2**62, (1,)).item()))


def _stack(
    cache: DynamicCache, mask: torch.Tensor, other: DynamicCache, other_mask: torch.Tensor
) -> tuple[DynamicCache, torch.Tensor]:
    """Two batches' caches and masks as one: rows of `other` under those of `cache`, the shorter
    left-padded with masked zeros (positions are explicit, so the padding changes nothing)."""
    width = max(mask.shape[1], other_mask.shape[1])

    def pad(t: torch.Tensor, length: int) -> torch.Tensor:
        if length == width:
            return t
        return torch.cat([t.new_zeros((t.shape[0], t.shape[1], width - length, t.shape[3])), t], dim=2)

    data = []
    for a, b in zip(cache.layers, other.layers, strict=True):
        keys = torch.cat([pad(a.keys, mask.shape[1]), pad(b.keys, other_mask.shape[1])])
        values = torch.cat([pad(a.values, mask.shape[1]), pad(b.values, other_mask.shape[1])])
        data.append((keys, values))
    masks = [torch.nn.functional.pad(m, (width - m.shape[1], 0)) for m in (mask, other_mask)]
    return growing(DynamicCache(ddp_cache_data=data)), torch.cat(masks)


def sample_tokens(
    logits: torch.Tensor, temperatures: torch.Tensor, top_ps: torch.Tensor, uniforms: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One token per row and its log-probability under the distribution it was drawn from.

    Rows with temperature > 0 sample from softmax(logits / T) restricted to the top-p nucleus
    (renormalised), by inverting the CDF at `uniforms` (one U[0, 1) per row, so each row's draw
    depends only on its own random stream). Rows with temperature 0 take the argmax; its
    log-probability is reported under the untempered model distribution, since the greedy policy
    itself is a point mass.
    """
    logits = logits.float()
    scaled = logits / temperatures.clamp_min(1e-6)[:, None]
    logp = torch.log_softmax(scaled, dim=-1)
    if bool((top_ps >= 1).all()):
        cdf = logp.exp().cumsum(-1)
        idx = torch.searchsorted(cdf, (uniforms * cdf[:, -1])[:, None], right=True)
        tokens = idx.clamp(max=logits.shape[-1] - 1)
        token_logp = logp.gather(-1, tokens)
    else:
        sorted_logp, order = logp.sort(dim=-1, descending=True)
        probs = sorted_logp.exp()
        # A token is in the nucleus when the mass before it is below top_p: the first always is.
        keep = ((probs.cumsum(-1) - probs) < top_ps[:, None]) | (top_ps >= 1)[:, None]
        kept = probs * keep
        mass = kept.sum(-1)
        idx = torch.searchsorted(kept.cumsum(-1), (uniforms * mass)[:, None], right=True)
        idx = torch.minimum(idx, keep.sum(-1, keepdim=True) - 1)
        tokens = order.gather(-1, idx)
        token_logp = sorted_logp.gather(-1, idx) - mass.log()[:, None]
    greedy = temperatures <= 0
    if bool(greedy.any()):
        argmax = logits.argmax(-1, keepdim=True)
        tokens = torch.where(greedy[:, None], argmax, tokens)
        token_logp = torch.where(greedy[:, None], torch.log_softmax(logits, -1).gather(-1, argmax), token_logp)
    return tokens[:, 0], token_logp[:, 0]


class HFEngine:
    """Batched sampling with a transformers causal LM (see the module docstring)."""

    def __init__(
        self, model: torch.nn.Module, tokenizer: Tokenizer, *, keep_cache: bool = True, num_threads: int | None = None
    ) -> None:
        """`num_threads` sets torch's intra-op threads while generating (restored afterwards): decode
        steps of a small model are tiny matrix products, for which spreading over cores that other
        processes are using costs far more than it gains (measured on this 2-core machine under
        load: a 128x352 linear on 8 rows took 8 ms with 2 threads, 0.02 ms with 1)."""
        self.model = model
        self.num_threads = num_threads
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        self.eos_token_id = tokenizer.eos_token_id
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.pad_token_id = pad if pad is not None else 0
        # Only plain full-attention caches can be sliced and stacked: kept across calls, or joined.
        self.stackable = _full_attention(model)
        self.keep_cache = keep_cache and self.stackable
        self._kept: dict[Hashable, _Kept] = {}
        # release() comes from the event-loop thread while generate() runs on a worker thread.
        self._lock = threading.Lock()

    def release(self, cache_key: Hashable) -> None:
        with self._lock:
            self._kept.pop(cache_key, None)

    def clear_cache(self) -> None:
        """Drop every kept cache (after the weights change)."""
        with self._lock:
            self._kept.clear()

    @property
    def kept_keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._kept)

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        on_finish: Callable[[int, GenerationOutput], None] | None = None,
        admit: Callable[[], Sequence[GenerationRequest]] | None = None,
    ) -> list[GenerationOutput]:
        check_requests(requests)
        if not requests:
            return []
        threads = torch.get_num_threads()
        if self.num_threads is not None:
            torch.set_num_threads(self.num_threads)
        try:
            with torch.inference_mode():
                return self._generate(list(requests), on_finish, admit)
        finally:
            torch.set_num_threads(threads)

    def _take_kept(self, request: GenerationRequest) -> tuple[int, list[tuple[torch.Tensor, torch.Tensor]] | None]:
        """How many leading context tokens are already encoded for this request, and their cache."""
        if not self.keep_cache or request.cache_key is None:
            return 0, None
        with self._lock:
            kept = self._kept.pop(request.cache_key, None)
        if kept is None:
            return 0, None
        # At least one token must be fed to get the next token's logits.
        n = min(_common_prefix(kept.token_ids, request.token_ids), len(request.token_ids) - 1)
        if n == 0:
            return 0, None
        return n, [(k[:, :, :n], v[:, :, :n]) for k, v in kept.layers]

    def _prefill(
        self, requests: list[GenerationRequest]
    ) -> tuple[DynamicCache, torch.Tensor, torch.Tensor, list[int]]:
        """Encode every request's uncached context; returns the cache, the attention mask, the
        last position's logits and how many tokens each row encoded."""
        kept = [self._take_kept(r) for r in requests]
        if all(n == 0 for n, _ in kept):
            return self._prefill_distinct(requests)
        return self._prefill_rows(requests, kept)

    def _prefill_distinct(
        self, requests: list[GenerationRequest]
    ) -> tuple[DynamicCache, torch.Tensor, torch.Tensor, list[int]]:
        """Prefill each distinct context once and give every row its context's cache: a GRPO group's
        G requests share one prompt, which the first call of a rollout would otherwise encode G times
        (a third of a function-calling mini's generation time, py-spy). A row's numbers do not depend
        on the other rows of the batch, so the rows are those a prefill of every request computes."""
        first: dict[tuple[int, ...], int] = {}
        rows = [first.setdefault(tuple(r.token_ids), len(first)) for r in requests]
        if len(first) == len(requests):
            return self._prefill_rows(requests, [(0, None)] * len(requests))
        distinct = [requests[rows.index(i)] for i in range(len(first))]
        cache, mask, logits, _ = self._prefill_rows(distinct, [(0, None)] * len(distinct))
        index = torch.tensor(rows, dtype=torch.long, device=self.device)
        cache.batch_select_indices(index)
        return cache, mask[index], logits[index], [len(r.token_ids) for r in requests]

    def _prefill_rows(
        self, requests: list[GenerationRequest], kept: list[tuple[int, list[tuple[torch.Tensor, torch.Tensor]] | None]]
    ) -> tuple[DynamicCache, torch.Tensor, torch.Tensor, list[int]]:
        """Encode each request's context after its `kept` part, one row per request."""
        new = [list(r.token_ids[n:]) for r, (n, _) in zip(requests, kept, strict=True)]
        n_rows = len(requests)
        kept_len = max(n for n, _ in kept)
        new_len = max(len(ids) for ids in new)
        input_ids = torch.full((n_rows, new_len), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((n_rows, kept_len + new_len), dtype=torch.long)
        positions = torch.zeros((n_rows, new_len), dtype=torch.long)
        for row, ((n, _), ids) in enumerate(zip(kept, new, strict=True)):
            input_ids[row, new_len - len(ids) :] = torch.tensor(ids, dtype=torch.long)
            mask[row, kept_len - n : kept_len] = 1
            mask[row, kept_len + new_len - len(ids) :] = 1
            positions[row, new_len - len(ids) :] = torch.arange(n, n + len(ids))
        if kept_len:
            layers = next(layers for _, layers in kept if layers is not None)
            data = []
            for layer, (k0, v0) in enumerate(layers):
                keys = k0.new_zeros((n_rows, k0.shape[1], kept_len, k0.shape[3]))
                values = v0.new_zeros((n_rows, v0.shape[1], kept_len, v0.shape[3]))
                for row, (n, row_layers) in enumerate(kept):
                    if row_layers is not None:
                        keys[row, :, kept_len - n :] = row_layers[layer][0][0]
                        values[row, :, kept_len - n :] = row_layers[layer][1][0]
                data.append((keys, values))
            cache = growing(DynamicCache(ddp_cache_data=data))
        else:
            cache = growing(DynamicCache(config=self.model.config))
        mask = mask.to(self.device)
        out = self.model(
            input_ids=input_ids.to(self.device),
            attention_mask=mask,
            position_ids=positions.to(self.device),
            past_key_values=cache,
            use_cache=True,
        )
        return out.past_key_values, mask, out.logits[:, -1, :], [len(ids) for ids in new]

    def _finish_reason(self, request: GenerationRequest, new_ids: list[int]) -> tuple[FinishReason, str | None] | None:
        if request.stop_strings:
            window = max(len(s) for s in request.stop_strings) + _STOP_WINDOW_MARGIN
            tail = self.tokenizer.decode(new_ids[-window:], skip_special_tokens=True)
            found = [(tail.find(s), s) for s in request.stop_strings if s and s in tail]
            if found:
                return "stop", min(found)[1]
        if self.eos_token_id is not None and new_ids[-1] == self.eos_token_id:
            return "eos", None
        if len(new_ids) >= request.max_new_tokens:
            return "length", None
        return None

    def _keep(self, request: GenerationRequest, new_ids: list[int], cache: DynamicCache, mask_row: torch.Tensor,
              row: int) -> None:
        """Store the cache of a finished row: every token fed so far, i.e. all but the last sampled."""
        if not self.keep_cache or request.cache_key is None:
            return
        real = mask_row[: cache.get_seq_length()].nonzero()[:, 0]
        layers = [(layer.keys[row : row + 1, :, real], layer.values[row : row + 1, :, real]) for layer in cache.layers]
        kept = _Kept(list(request.token_ids) + new_ids[:-1], layers)
        with self._lock:
            self._kept[request.cache_key] = kept

    def _generate(
        self,
        requests: list[GenerationRequest],
        on_finish: Callable[[int, GenerationOutput], None] | None,
        admit: Callable[[], Sequence[GenerationRequest]] | None = None,
    ) -> list[GenerationOutput]:
        cache, mask, logits, prefilled = self._prefill(requests)
        # Unseeded requests draw their stream's seed from torch's generator, so torch.manual_seed
        # makes a whole rollout reproducible.
        rngs = [_stream(r) for r in requests]
        temperatures = torch.tensor([r.temperature for r in requests], dtype=torch.float32, device=self.device)
        top_ps = torch.tensor([r.top_p for r in requests], dtype=torch.float32, device=self.device)
        next_pos = torch.tensor([len(r.token_ids) for r in requests], dtype=torch.long)
        new_ids: list[list[int]] = [[] for _ in requests]
        logprobs: list[list[float]] = [[] for _ in requests]
        outputs: list[GenerationOutput | None] = [None] * len(requests)
        rows = list(range(len(requests)))  # batch row -> request index
        finished = [False] * len(rows)
        while True:
            joining = list(admit()) if admit is not None and self.stackable else []
            if joining:
                check_requests(joining)
                first = len(requests)
                requests += joining
                join_cache, join_mask, join_logits, join_prefilled = self._prefill(joining)
                cache, mask = _stack(cache, mask, join_cache, join_mask)
                logits = torch.cat([logits, join_logits])
                rngs += [_stream(r) for r in joining]
                temperatures = torch.cat([temperatures, temperatures.new_tensor([r.temperature for r in joining])])
                top_ps = torch.cat([top_ps, top_ps.new_tensor([r.top_p for r in joining])])
                next_pos = torch.cat([next_pos, torch.tensor([len(r.token_ids) for r in joining], dtype=torch.long)])
                prefilled += join_prefilled
                new_ids += [[] for _ in joining]
                logprobs += [[] for _ in joining]
                outputs += [None] * len(joining)
                rows += range(first, len(requests))
                finished += [False] * len(joining)
            uniforms = torch.tensor([rngs[j].random() for j in rows], dtype=torch.float32, device=self.device)
            tokens, token_logp = sample_tokens(logits, temperatures, top_ps, uniforms)
            tokens_list, logp_list = tokens.tolist(), token_logp.tolist()
            for row, j in enumerate(rows):
                if finished[row]:
                    continue
                new_ids[j].append(tokens_list[row])
                logprobs[j].append(logp_list[row])
                done = self._finish_reason(requests[j], new_ids[j])
                if done is None:
                    continue
                finished[row] = True
                self._keep(requests[j], new_ids[j], cache, mask[row], row)
                output = GenerationOutput(
                    new_token_ids=new_ids[j],
                    text=self.tokenizer.decode(new_ids[j], skip_special_tokens=True),
                    logprobs=logprobs[j],
                    finish_reason=done[0],
                    stop_string=done[1],
                    prefill_tokens=prefilled[j],
                )
                outputs[j] = output
                if on_finish is not None:
                    on_finish(j, output)
            if all(finished):
                break
            if 2 * sum(finished) >= len(rows):
                alive = [row for row in range(len(rows)) if not finished[row]]
                index = torch.tensor(alive, dtype=torch.long, device=self.device)
                cache.batch_select_indices(index)
                mask, temperatures, top_ps = mask[index], temperatures[index], top_ps[index]
                rows = [rows[row] for row in alive]
                finished = [False] * len(rows)
            feed = torch.tensor(
                [[self.pad_token_id if finished[row] else new_ids[j][-1]] for row, j in enumerate(rows)],
                dtype=torch.long,
                device=self.device,
            )
            live = torch.tensor([[0 if done else 1] for done in finished], dtype=torch.long, device=self.device)
            mask = torch.cat([mask, live], dim=1)
            positions = next_pos[rows][:, None].to(self.device)
            next_pos[rows] += 1
            out = self.model(
                input_ids=feed, attention_mask=mask, position_ids=positions, past_key_values=cache, use_cache=True
            )
            cache, logits = out.past_key_values, out.logits[:, -1, :]
        return [o for o in outputs if o is not None]
