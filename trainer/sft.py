"""Supervised fine-tuning on tool-use traces, the way ReTool's SFT stage cold-starts a policy.

The traces are seeded arithmetic problems in the python_markdown protocol. A trace either answers
directly -- right on easy problems, a plausible wrong guess on hard ones -- or calls the tool, prints
the expression and copies the real output into \\boxed{}. The shares of each kind, and a reweighted
loss on the first token, where the policy chooses, decide how undecided the trained policy starts
(see `tool_use_traces`); trainer.models.tiny_cold_start picks them for the quickstart's tiny model.

The loss covers the model's own text and its end-of-sequence token only: prompt and tool-output
tokens are masked, as they are in RL, using the protocol's `segments`. `evaluate` measures accuracy
and tool use of a policy on arithmetic problems, executing its code in the sandbox.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from trainer.answers import answers_equivalent
from trainer.prompts import prompt_text
from trainer.protocols import get_protocol
from trainer.synthetic import arithmetic_examples
from trainer.trajectory import Example, ToolExecution

PROTOCOL = "python_markdown"
_QUESTION = re.compile(r"What is (?P<expression>.+)\?$")


@dataclass(frozen=True)
class Trace:
    """One SFT example: the rendered prompt, the response with real tool output inserted, and how
    many tool outputs it holds (the protocol masks exactly those).

    `choice_weight` is the loss weight of the response's first token, where the policy chooses
    between calling the tool and answering; `content` holds the (start, end) character spans of the
    response that carry what must be exact (the expression in print(), a right answer in
    \\boxed{}), which `encode_trace` can weigh more than the format around them."""

    prompt: str
    response: str
    tool_outputs: int
    difficulty: str
    choice_weight: float = 1.0
    content: tuple[tuple[int, int], ...] = ()


def render_prompt(tokenizer: PreTrainedTokenizerBase, example: Example, template: str) -> str:
    """The text the policy is conditioned on: the example under `template`, in the model's chat format
    or, for a raw template, as the template's text."""
    return prompt_text(tokenizer, example, PROTOCOL, template)


def tool_use_traces(
    tokenizer: PreTrainedTokenizerBase,
    size: int,
    *,
    seed: int,
    template: str,
    tool_share: float | Mapping[str, float] = 0.5,
    easy_share: float = 0.5,
) -> list[Trace]:
    """`size` seeded traces on arithmetic problems, `easy_share` of them easy and the rest hard, in a
    seeded order; a share of each difficulty's traces call the tool (`tool_share`: one share for
    all, or one per difficulty), the others answer directly.

    Whatever the shares, the choice token of each trace weighs 1/2 over the share of its kind
    (`Trace.choice_weight`): the weighted shares of calling and answering are then 1/2 each, so the
    cold-started policy calls the tool about half the time on every difficulty, while the mix can
    give the slow skills (easy answers from memory, copying on hard problems) more examples.
    """
    protocol = get_protocol(PROTOCOL)
    rng = random.Random(f"sft-traces:{seed}")
    traces = []
    easy = round(size * easy_share)
    problems = arithmetic_examples(easy, seed=seed, difficulty="easy", split="sft") + arithmetic_examples(
        size - easy, seed=seed, difficulty="hard", split="sft"
    )
    rng.shuffle(problems)
    for example in problems:
        expression = _expression(example)
        value = example.ground_truth
        difficulty = str(example.extra_info["difficulty"])
        share = tool_share[difficulty] if isinstance(tool_share, Mapping) else tool_share
        if not 0.0 < share < 1.0:
            raise ValueError(f"tool share must be strictly between 0 and 1, got {share} for {difficulty}")
        calls = rng.random() < share
        if calls:
            call = f"```python\nprint({expression})\n```\n"
            response = protocol.append_output(
                call, ToolExecution(call=f"print({expression})\n", status="ok", output=value + "\n")
            )
            code = call.index("print(") + len("print(")
            content = [(code, code + len(expression) + 1)]  # the expression and its closing parenthesis
            tool_outputs = 1
            answer: str | None = value
        else:
            response, content, tool_outputs = "", [], 0
            # A hard problem's direct answer is a guess: it is what the policy does, not what to learn.
            answer = value if difficulty == "easy" else None
        boxed = answer if answer is not None else _wrong_guess(int(value), rng)
        start = len(response) + len("\\boxed{")
        response += f"\\boxed{{{boxed}}}"
        if answer is not None:
            content.append((start, len(response)))  # the answer and its closing brace
        traces.append(
            Trace(
                render_prompt(tokenizer, example, template),
                response,
                tool_outputs,
                difficulty,
                choice_weight=0.5 / (share if calls else 1.0 - share),
                content=tuple(content),
            )
        )
    return traces


def _expression(example: Example) -> str:
    match = _QUESTION.match(example.prompt[-1]["content"])
    if match is None:
        raise ValueError(f"not an arithmetic question: {example.prompt[-1]['content']!r}")
    return match["expression"]


def _wrong_guess(value: int, rng: random.Random) -> str:
    """A confident-looking wrong answer: right magnitude and leading digits, wrong trailing half."""
    digits = str(abs(value))
    keep = len(digits) - max(1, len(digits) // 2)
    while True:
        tail = "".join(rng.choice("0123456789") for _ in range(len(digits) - keep))
        guess = int(digits[:keep] + tail) * (-1 if value < 0 else 1)
        if guess != value:
            return str(guess)


def encode_trace(
    tokenizer: PreTrainedTokenizerBase, trace: Trace, *, content_weight: float = 1.0
) -> tuple[list[int], list[float]]:
    """Token ids of prompt + response + eos, and per-token loss weights: 0 on the prompt and tool
    output, 1 on the rest of the model's text and eos, `trace.choice_weight` on the response's first
    token and `content_weight` on the tokens of `trace.content`.

    Model text is encoded piece by piece, split at the content spans; for the character-level
    tokenizer this is the same as encoding it whole.
    """
    ids = tokenizer.encode(trace.prompt, add_special_tokens=False)
    mask: list[float] = [0.0] * len(ids)
    first = len(ids)
    offset = 0
    for segment in get_protocol(PROTOCOL).segments(trace.response, tool_outputs=trace.tool_outputs):
        end = offset + len(segment.text)
        if segment.kind != "model":
            piece = tokenizer.encode(segment.text, add_special_tokens=False)
            ids += piece
            mask += [0.0] * len(piece)
        else:
            cuts = sorted({offset, end, *(i for span in trace.content for i in span if offset < i < end)})
            for start, stop in itertools.pairwise(cuts):
                piece = tokenizer.encode(trace.response[start:stop], add_special_tokens=False)
                inside = any(a <= start and stop <= b for a, b in trace.content)
                ids += piece
                mask += [content_weight if inside else 1.0] * len(piece)
        offset = end
    if len(ids) > first and mask[first] > 0:
        mask[first] = trace.choice_weight
    # Learning to stop is part of the behaviour: without eos the policy rambles to the length limit.
    ids.append(tokenizer.eos_token_id)
    mask.append(1.0)
    return ids, mask


def _batch(rows: Sequence[tuple[list[int], list[float]]], pad_id: int) -> tuple[torch.Tensor, ...]:
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    loss_mask = torch.zeros((len(rows), width), dtype=torch.float32)
    for row, (ids, mask) in enumerate(rows):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        attention[row, : len(ids)] = 1
        loss_mask[row, : len(mask)] = torch.tensor(mask, dtype=torch.float32)
    return input_ids, attention, loss_mask


def masked_nll(
    model: PreTrainedModel, input_ids: torch.Tensor, attention: torch.Tensor, loss_mask: torch.Tensor
) -> torch.Tensor:
    """Negative log-likelihood of each token given its prefix, averaged with the loss mask's weights."""
    logits = model(input_ids=input_ids, attention_mask=attention).logits[:, :-1].float()
    targets = input_ids[:, 1:]
    nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    weights = loss_mask[:, 1:]
    return (nll * weights).sum() / weights.sum().clamp(min=1.0)


def sft_train(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    traces: Sequence[Trace],
    *,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    content_weight: float = 1.0,
    log: Callable[[str], None] = print,
) -> list[float]:
    """Train on `traces` with AdamW, linear warmup and cosine decay; returns the loss of every step
    (the weighted mean over the step's trained tokens, see `encode_trace`)."""
    rows = [encode_trace(tokenizer, trace, content_weight=content_weight) for trace in traces]
    steps = epochs * math.ceil(len(rows) / batch_size)
    warmup = max(1, steps // 20)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)
    # Decay to a tenth of the peak: the last steps polish digits rather than relearn the format.
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda step: (step + 1) / warmup
        if step < warmup
        else 0.1 + 0.45 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup))),
    )
    order = random.Random(f"sft-order:{seed}")
    model.train()
    losses: list[float] = []
    started = time.monotonic()
    for epoch in range(epochs):
        indices = list(range(len(rows)))
        order.shuffle(indices)
        for start in range(0, len(indices), batch_size):
            input_ids, attention, loss_mask = _batch(
                [rows[i] for i in indices[start : start + batch_size]], tokenizer.pad_token_id
            )
            loss = masked_nll(model, input_ids, attention, loss_mask)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            if len(losses) % 50 == 0 or len(losses) == steps:
                recent = losses[-50:]
                log(
                    f"sft epoch {epoch + 1}/{epochs} step {len(losses)}/{steps} "
                    f"loss {sum(recent) / len(recent):.4f} ({time.monotonic() - started:.0f}s)"
                )
    model.eval()
    return losses


@torch.no_grad()
def _continue(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    texts: list[str],
    *,
    max_new_tokens: int,
    stop: list[str],
    temperature: float,
) -> list[str]:
    """Continuations of `texts`, greedy at temperature 0 (stop strings kept, special tokens dropped)."""
    tokenizer.padding_side = "left"
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    output = model.generate(
        **batch,
        do_sample=temperature > 0,
        temperature=temperature if temperature > 0 else None,
        top_p=None,
        top_k=None,
        max_new_tokens=max_new_tokens,
        stop_strings=stop or None,
        tokenizer=tokenizer if stop else None,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return tokenizer.batch_decode(output[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)


def evaluate(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    examples: Sequence[Example],
    *,
    template: str,
    temperature: float = 0.0,
    seed: int = 0,
    max_new_tokens: int = 96,
    batch_size: int = 100,
) -> dict[str, Any]:
    """Accuracy and tool-call ratio, overall and per difficulty, with at most one real tool call each;
    greedy at temperature 0, else sampled (seeded).

    Greedy decoding of an undecided policy takes whichever of "answer" and "call" is a hair more
    likely, so it shows the policy's argmax, not its mix; sampling at the RL temperature shows the
    mix GRPO starts from. The model's code runs in the sandbox, as in RL; answers are judged with
    the rewards' equivalence.
    """
    import sandbox  # the sandbox forks its workers on first use; only evaluation needs it

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _evaluate(model, tokenizer, examples, sandbox.run, template, temperature, max_new_tokens, batch_size)


def _evaluate(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    examples: Sequence[Example],
    run_code: Callable[..., Any],
    template: str,
    temperature: float,
    max_new_tokens: int,
    batch_size: int,
) -> dict[str, Any]:
    protocol = get_protocol(PROTOCOL)
    results: list[tuple[str, bool, bool]] = []
    for start in range(0, len(examples), batch_size):
        chunk = list(examples[start : start + batch_size])
        prompts = [render_prompt(tokenizer, example, template) for example in chunk]
        responses = _continue(
            model,
            tokenizer,
            prompts,
            max_new_tokens=max_new_tokens,
            stop=protocol.stop_strings(0, budget=1),
            temperature=temperature,
        )
        calls = [i for i, text in enumerate(responses) if text.endswith(protocol.stop_marker or "")]
        for i in calls:
            code = protocol.extract_call(responses[i])
            if code is None:
                execution = ToolExecution(call="", status="error", output="SyntaxError: no complete code block")
            else:
                result = run_code(code, timeout_s=5)
                execution = ToolExecution(call=code, status=result.status, output=result.stdout + result.stderr)
            responses[i] = protocol.append_output(responses[i], execution)
        if calls:
            continued = _continue(
                model,
                tokenizer,
                [prompts[i] + responses[i] for i in calls],
                max_new_tokens=max_new_tokens,
                stop=protocol.stop_strings(1, budget=1),
                temperature=temperature,
            )
            for i, tail in zip(calls, continued, strict=True):
                responses[i] += tail
        for i, example in enumerate(chunk):
            outputs = 1 if i in calls else 0
            answer = protocol.final_answer(responses[i], tool_outputs=outputs)
            results.append(
                (
                    str(example.extra_info.get("difficulty", "all")),
                    answers_equivalent(answer, example.ground_truth),
                    bool(outputs),
                )
            )
    summary: dict[str, Any] = {}
    for name in ("all", "easy", "hard"):
        picked = [r for r in results if name == "all" or r[0] == name]
        if picked:
            summary[name] = {
                "n": len(picked),
                "accuracy": sum(r[1] for r in picked) / len(picked),
                "tool_use": sum(r[2] for r in picked) / len(picked),
            }
            # Accuracy of the answers given with and without the tool: on hard problems the first is
            # how well the model copies the expression and the output, the second should stay near 0.
            for key, used in (("accuracy_with_tool", True), ("accuracy_without_tool", False)):
                chosen = [r for r in picked if r[2] == used]
                if chosen:
                    summary[name][key] = sum(r[1] for r in chosen) / len(chosen)
    return summary
