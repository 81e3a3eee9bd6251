"""Supervised fine-tuning on tool-use traces: the cold start before RL, as ReTool's SFT stage.

`sft_train` trains any policy the trainer loads on SFT rows (trainer.sft.data: a built-in trace
set or a researcher's JSONL), with linear warmup and cosine decay. Each prompt is rendered with the
run's prompt template exactly as RL renders it, and the loss covers the model's own text and its
end-of-sequence token only: prompt and tool-output tokens are masked, as they are in RL, using the
protocol's `segments`. A row may weigh its first token (where the policy chooses between calling
the tool and answering) and spans of its response (what must be exact) differently: tirlab's
own cold-start traces do (trainer.sft.traces.arithmetic). `evaluate` measures accuracy and tool use of a
policy on arithmetic problems, executing its code in the sandbox.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from trainer.answers import answers_equivalent
from trainer.data.sft_traces import SFTRow
from trainer.protocols import Feedback, FeedbackStyle, get_protocol
from trainer.protocols.prompts import prompt_text
from trainer.trajectory import Example, ToolExecution

# Called after every optimizer step with (step, total steps, loss, seconds since the start).
Progress = Callable[[int, int, float, float], None]


def encode_trace(
    tokenizer: PreTrainedTokenizerBase, row: SFTRow, *, protocol: str, template: str | None
) -> tuple[list[int], list[float]]:
    """Token ids of prompt + response + eos, and per-token loss weights: 0 on the prompt and tool
    output, 1 on the rest of the model's text and eos, `row.choice_weight` on the response's first
    token and each weighted span's weight on the tokens inside it.

    The prompt is `row.example` under `template`, rendered as RL renders it (trainer.protocols.prompts). Model
    text is encoded piece by piece, split at the weighted spans; for the character-level tokenizer
    this is the same as encoding it whole.
    """
    ids = tokenizer.encode(prompt_text(tokenizer, row.example, protocol, template), add_special_tokens=False)
    mask: list[float] = [0.0] * len(ids)
    first = len(ids)
    offset = 0
    spans = row.weighted_spans
    for segment in get_protocol(protocol).segments(row.response, tool_outputs=row.tool_outputs):
        end = offset + len(segment.text)
        if segment.kind != "model":
            piece = tokenizer.encode(segment.text, add_special_tokens=False)
            ids += piece
            mask += [0.0] * len(piece)
        else:
            cuts = sorted({offset, end, *(i for a, b, _ in spans for i in (a, b) if offset < i < end)})
            for start, stop in itertools.pairwise(cuts):
                piece = tokenizer.encode(row.response[start:stop], add_special_tokens=False)
                weight = next((w for a, b, w in spans if a <= start and stop <= b), 1.0)
                ids += piece
                mask += [weight] * len(piece)
        offset = end
    if len(ids) > first and mask[first] > 0:
        mask[first] = row.choice_weight
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
    rows: Sequence[SFTRow],
    *,
    protocol: str,
    template: str | None,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    log: Callable[[str], None] = print,
    progress: Progress | None = None,
) -> list[float]:
    """Train on `rows` with AdamW, linear warmup and cosine decay to a tenth of `lr`; returns the
    loss of every step (the weighted mean over the step's trained tokens, see `encode_trace`)."""
    encoded = [encode_trace(tokenizer, row, protocol=protocol, template=template) for row in rows]
    steps = epochs * math.ceil(len(encoded) / batch_size)
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
    device = next(model.parameters()).device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model.train()
    losses: list[float] = []
    started = time.monotonic()
    for epoch in range(epochs):
        indices = list(range(len(encoded)))
        order.shuffle(indices)
        for start in range(0, len(indices), batch_size):
            input_ids, attention, loss_mask = (
                t.to(device) for t in _batch([encoded[i] for i in indices[start : start + batch_size]], pad)
            )
            loss = masked_nll(model, input_ids, attention, loss_mask)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            elapsed = time.monotonic() - started
            if progress is not None:
                progress(len(losses), steps, losses[-1], elapsed)
            if len(losses) % 50 == 0 or len(losses) == steps:
                recent = losses[-50:]
                log(
                    f"sft epoch {epoch + 1}/{epochs} step {len(losses)}/{steps} "
                    f"loss {sum(recent) / len(recent):.4f} ({elapsed:.0f}s)"
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
    protocol: str = "python_markdown",
    feedback: FeedbackStyle = "tirlab",
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
        return _evaluate(
            model,
            tokenizer,
            examples,
            sandbox.run,
            template,
            protocol,
            Feedback(feedback),
            temperature,
            max_new_tokens,
            batch_size,
        )


def _evaluate(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    examples: Sequence[Example],
    run_code: Callable[..., Any],
    template: str,
    protocol_name: str,
    feedback: Feedback,
    temperature: float,
    max_new_tokens: int,
    batch_size: int,
) -> dict[str, Any]:
    protocol = get_protocol(protocol_name)
    results: list[tuple[str, bool, bool]] = []
    for start in range(0, len(examples), batch_size):
        chunk = list(examples[start : start + batch_size])
        prompts = [prompt_text(tokenizer, example, protocol_name, template) for example in chunk]
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
                result = run_code(protocol.prepare_code(code), timeout_s=5)
                execution = ToolExecution(
                    call=code, status=result.status, output=result.stdout + result.stderr, stderr=result.stderr
                )
            responses[i] = protocol.append_output(responses[i], execution, feedback=feedback)
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
