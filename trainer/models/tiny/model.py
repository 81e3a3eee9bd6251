"""The quickstart policy: a character-level tokenizer and a ~0.8M-parameter Llama built from scratch.

The machine has no model hub, so the CPU quickstart trains a model the project builds itself. The
tokenizer is a real transformers `PreTrainedTokenizer`, so an HF engine treats it like any other:
`tokenizer(texts, padding=True)`, `apply_chat_template`, `generate(stop_strings=..., tokenizer=...)`
(which reads `get_vocab`), `save_pretrained` / `from_pretrained`. One character is one token, which
keeps stop strings such as "```output" exact and makes digits individually learnable.
"""

from __future__ import annotations

import json
import os
from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizer

PAD_TOKEN = "<|pad|>"
BOS_TOKEN = "<|bos|>"
EOS_TOKEN = "<|eos|>"
UNK_TOKEN = "<|unk|>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD_TOKEN, BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)
_SPECIAL_IDS = frozenset(range(len(SPECIAL_TOKENS)))
# Newline and printable ASCII: everything the arithmetic prompts, Python code and its output need.
CHARACTERS: tuple[str, ...] = ("\n", *(chr(code) for code in range(32, 127)))

# Each message on its own "role: content" line. A chat format of plain characters costs the tiny
# model nothing to learn, and the "assistant: " generation prompt tells it where its turn starts.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)

# The prompt template (trainer.protocols.prompts) the tiny model is cold-started with. Its context is short and
# every prompt character costs compute at each step, so it sees the bare question; RL runs on this
# model must use the same template to find the behaviour the cold start taught.
TINY_PROMPT_TEMPLATE = "plain"


class CharTokenizer(PreTrainedTokenizer):
    """One token per character of newline + printable ASCII, after four special tokens.

    Ids are fixed (pad 0, bos 1, eos 2, unk 3, then "\\n", " ", "!", ..., "~"); any other character
    encodes as unk. `encode` adds no special tokens: the chat template writes the bos token.
    """

    vocab_files_names = {"vocab_file": "vocab.json"}
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self, vocab_file: str | None = None, **kwargs: Any) -> None:
        tokens = list(SPECIAL_TOKENS) + list(CHARACTERS)
        if vocab_file is not None:
            with open(vocab_file, encoding="utf-8") as handle:
                saved: dict[str, int] = json.load(handle)
            if saved != {token: index for index, token in enumerate(tokens)}:
                raise ValueError(f"{vocab_file} is not the vocabulary of this CharTokenizer version")
        self._token_to_id = {token: index for index, token in enumerate(tokens)}
        self._id_to_token = dict(enumerate(tokens))
        kwargs.setdefault("pad_token", PAD_TOKEN)
        kwargs.setdefault("bos_token", BOS_TOKEN)
        kwargs.setdefault("eos_token", EOS_TOKEN)
        kwargs.setdefault("unk_token", UNK_TOKEN)
        kwargs.setdefault("chat_template", CHAT_TEMPLATE)
        kwargs.setdefault("special_tokens_pattern", "none")
        super().__init__(**kwargs)

    @property
    def vocab_size(self) -> int:
        return len(self._token_to_id)

    def get_vocab(self) -> dict[str, int]:
        return dict(self._token_to_id)

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        return list(text)

    def _convert_token_to_id(self, token: str) -> int:
        return self._token_to_id.get(token, self._token_to_id[UNK_TOKEN])

    def _convert_id_to_token(self, index: int) -> str:
        return self._id_to_token.get(index, UNK_TOKEN)

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return "".join(tokens)

    def _decode(
        self,
        token_ids: int | list[int],
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: bool | None = None,
        **kwargs: Any,
    ) -> str:
        """What transformers' generic decoding gives (this tokenizer adds no tokens and cleans up no
        spaces), as one lookup per id: the generic path rebuilt the list of special ids on every call,
        40 us for the 13-token tail the HF engine decodes for each row at each decoding step to look for
        a stop string, 5 ms of a 128-row step."""
        if isinstance(token_ids, int):
            return self._id_to_token.get(token_ids, UNK_TOKEN)  # a lone id is never skipped, as there
        skipped = _SPECIAL_IDS if skip_special_tokens else frozenset()
        return "".join(self._id_to_token.get(i, UNK_TOKEN) for i in token_ids if i not in skipped)

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str]:
        name = (filename_prefix + "-" if filename_prefix else "") + self.vocab_files_names["vocab_file"]
        path = os.path.join(save_directory, name)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(self._token_to_id, handle, ensure_ascii=True, indent=0)
        return (path,)


def tiny_config(tokenizer: CharTokenizer) -> LlamaConfig:
    """4 layers of width 128: ~0.82M parameters, the size the issue's prototype learned with on 2 cores."""
    return LlamaConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=128,
        intermediate_size=352,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )


def build_tiny_model(*, seed: int) -> tuple[LlamaForCausalLM, CharTokenizer]:
    """A freshly initialised tiny Llama and its tokenizer; the same seed gives the same weights."""
    tokenizer = CharTokenizer()
    # fork_rng keeps the caller's global RNG stream untouched by model construction.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(tiny_config(tokenizer))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model, tokenizer
