import random
import threading

import torch

from trainer.config import TINY_MODEL
from trainer.models import CharTokenizer, build_tiny_model, load_policy, tiny_checkpoint
from trainer.models.tiny import cold_start as tiny_cold_start


def test_tokenizer_round_trips_printable_ascii_and_newlines() -> None:
    tokenizer = CharTokenizer()
    text = "What is 12 * 3?\n```python\nprint(12 * 3)\n```\n```output\n36\n```\n\\boxed{36}"
    ids = tokenizer.encode(text)
    assert len(ids) == len(text)  # one token per character, no special tokens added
    assert tokenizer.decode(ids) == text
    assert tokenizer.vocab_size == len(tokenizer) == 100
    assert (tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id) == (0, 1, 2)


def test_tokenizer_maps_unknown_characters_to_unk_and_skips_specials_on_request() -> None:
    tokenizer = CharTokenizer()
    assert tokenizer.encode("é") == [tokenizer.unk_token_id]
    ids = tokenizer.encode("7") + [tokenizer.eos_token_id]
    assert tokenizer.decode(ids) == "7<|eos|>"
    assert tokenizer.decode(ids, skip_special_tokens=True) == "7"


def test_tokenizer_decodes_as_transformers_generic_decoding_does() -> None:
    from transformers.tokenization_python import PythonBackend

    tokenizer = CharTokenizer()
    rng = random.Random(0)
    # Every id (special, printable, beyond the vocabulary), alone and in random sequences.
    sequences = [[i] for i in range(-2, 110)] + [
        [rng.randrange(-2, 110) for _ in range(rng.randrange(30))] for _ in range(500)
    ]
    for ids in sequences:
        for skip in (False, True):
            assert tokenizer.decode(ids, skip_special_tokens=skip) == PythonBackend._decode(tokenizer, ids, skip)
    for i in range(-2, 110):
        for skip in (False, True):
            assert tokenizer.decode(i, skip_special_tokens=skip) == PythonBackend._decode(tokenizer, i, skip)
    assert tokenizer.decode(torch.tensor([45, 46, 2]), skip_special_tokens=True) == "HI"
    assert tokenizer.batch_decode([[45], [46, 0]], skip_special_tokens=True) == ["H", "I"]


def test_tokenizer_pads_batches_and_renders_the_chat_template() -> None:
    tokenizer = CharTokenizer()
    tokenizer.padding_side = "left"
    batch = tokenizer(["ab", "abcd"], padding=True, return_tensors="pt")
    assert batch["input_ids"][0].tolist()[:2] == [tokenizer.pad_token_id] * 2
    assert batch["attention_mask"].tolist() == [[0, 0, 1, 1], [1, 1, 1, 1]]
    messages = [{"role": "user", "content": "What is 1 + 2?"}]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text == "<|bos|>user: What is 1 + 2?\nassistant: "
    assert tokenizer.encode(text)[0] == tokenizer.bos_token_id


def test_tokenizer_saves_and_loads(tmp_path) -> None:
    tokenizer = CharTokenizer()
    tokenizer.save_pretrained(tmp_path)
    loaded = CharTokenizer.from_pretrained(tmp_path)
    assert loaded.get_vocab() == tokenizer.get_vocab()
    assert loaded.chat_template == tokenizer.chat_template
    assert loaded.encode("x = 1\n") == tokenizer.encode("x = 1\n")


def test_tiny_model_size_and_determinism() -> None:
    model, tokenizer = build_tiny_model(seed=3)
    again, _ = build_tiny_model(seed=3)
    parameters = sum(p.numel() for p in model.parameters())
    assert 700_000 < parameters < 900_000
    assert model.config.num_hidden_layers == 4 and model.config.max_position_embeddings >= 512
    for a, b in zip(model.parameters(), again.parameters(), strict=True):
        assert torch.equal(a, b)
    logits = model(torch.tensor([tokenizer.encode("1 + 1")])).logits
    assert logits.shape == (1, 5, tokenizer.vocab_size)


def test_load_policy_reads_a_local_hf_directory(tmp_path) -> None:
    model, tokenizer = build_tiny_model(seed=5)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded, loaded_tokenizer = load_policy(str(tmp_path), cache_dir=tmp_path / "cache")
    assert isinstance(loaded_tokenizer, CharTokenizer)
    assert not loaded.training
    for a, b in zip(model.parameters(), loaded.parameters(), strict=True):
        assert torch.equal(a, b)
    half, _ = load_policy(str(tmp_path), dtype="bfloat16", cache_dir=tmp_path / "cache")
    assert next(half.parameters()).dtype == torch.bfloat16


def test_tiny_model_is_cold_started_once_and_then_loaded_from_the_cache(tmp_path, monkeypatch) -> None:
    # A two-step budget stands in for the real four-minute cold start; the fingerprint includes it.
    monkeypatch.setattr(
        tiny_cold_start, "TINY_SFT", tiny_cold_start.SFTBudget(traces=32, epochs=1, lr=1e-3, batch_size=16)
    )
    logs: list[str] = []
    results: list[str] = []

    def load() -> None:
        results.append(str(tiny_checkpoint(tmp_path, log=logs.append)))

    # Two concurrent loaders: the lock makes the second wait for the first one's checkpoint.
    threads = [threading.Thread(target=load) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1
    assert sum("cold-starting" in line for line in logs) == 1
    assert not list(tmp_path.glob("*.partial"))

    logs.clear()
    model, tokenizer = load_policy(TINY_MODEL, cache_dir=tmp_path, log=logs.append)
    assert logs == []
    assert isinstance(tokenizer, CharTokenizer) and model.config.num_hidden_layers == 4
