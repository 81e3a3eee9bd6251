"""A KV cache layer for the HF engine's decoding loop that appends in place.

transformers' `DynamicLayer.update` appends a token with `torch.cat`, which copies the whole cache
of every layer at every decoding step: for 128 sequences of a 300-token function-calling prompt it
cost as much as the attention itself (16% of a `toolrl-mini` step, py-spy). `GrowingLayer` keeps
its keys and values in buffers with room to spare and exposes views of their filled part, so a step
writes one column and a copy happens only when the room runs out (a few times per call). The views
hold the same numbers `torch.cat` would have produced; the attention reads them in place.

Anything that replaces `keys`/`values` with another tensor (`batch_select_indices` when finished
rows are dropped, `crop`, `reorder_cache`) leaves the layer holding a tensor that is not a view of
its buffer; the next `update` notices and moves it into a new buffer, as `torch.cat` would have.
"""

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

# Room added when a buffer is (re)allocated: at least this many tokens, or half the length so far.
_MIN_ROOM = 256


class GrowingLayer(DynamicLayer):
    def __init__(self) -> None:
        super().__init__()
        self._key_buffer: torch.Tensor | None = None
        self._value_buffer: torch.Tensor | None = None

    def _views_own_buffer(self) -> bool:
        buffer = self._key_buffer
        return (
            buffer is not None
            and self.keys.dim() == 4
            and self.keys.data_ptr() == buffer.data_ptr()
            and self.values.data_ptr() == self._value_buffer.data_ptr()
            and self.keys.shape[0] == buffer.shape[0]
        )

    def _moved(self, held: torch.Tensor, like: torch.Tensor, length: int, capacity: int) -> torch.Tensor:
        buffer = like.new_empty((like.shape[0], like.shape[1], capacity, like.shape[3]))
        if length:
            buffer[:, :, :length] = held
        return buffer

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        length = self.keys.shape[-2] if self.keys.numel() else 0
        end = length + key_states.shape[-2]
        owned = self._views_own_buffer()
        if not owned or end > self._key_buffer.shape[-2]:
            capacity = end + max(_MIN_ROOM, end // 2)
            self._key_buffer = self._moved(self.keys, key_states, length, capacity)
            self._value_buffer = self._moved(self.values, value_states, length, capacity)
        self._key_buffer[:, :, length:end] = key_states
        self._value_buffer[:, :, length:end] = value_states
        self.keys = self._key_buffer[:, :, :end]
        self.values = self._value_buffer[:, :, :end]
        return self.keys, self.values


def growing(cache: DynamicCache) -> DynamicCache:
    """`cache` with its full-attention layers appending in place (other kinds of layer are left as
    they are); the layers' contents are kept."""
    layers = []
    for layer in cache.layers:
        if type(layer) is not DynamicLayer:
            layers.append(layer)
            continue
        grown = GrowingLayer()
        if layer.is_initialized:
            grown.dtype, grown.device, grown.is_initialized = layer.dtype, layer.device, True
            grown.keys, grown.values = layer.keys, layer.values
        layers.append(grown)
    cache.layers = layers
    return cache
